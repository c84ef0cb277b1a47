//! The integration harness: a temporary HCP_HOME, HOME and working directory per
//! test, the real `hcpx` binary run with a cleared environment, and output rendered
//! for snapshots with temporary paths replaced by `[TEMP]`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_hcpx");

/// Where the fixture packs live in the repository.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/packs")
        .join(name)
}

/// A built-in pack folder in the repository.
pub(crate) fn builtin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("packs").join(name)
}

pub(crate) struct TestEnv {
    pub(crate) root: tempfile::TempDir,
    pub(crate) extra_env: Vec<(String, String)>,
    pub(crate) path: String,
}

pub(crate) struct Output {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    root: String,
}

impl TestEnv {
    pub(crate) fn new() -> Self {
        let root = tempfile::Builder::new().prefix("hcpx-it-").tempdir().unwrap();
        for dir in ["home", "user", "work"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        Self {
            root,
            extra_env: Vec::new(),
            path: "/usr/local/bin:/usr/bin:/bin".to_owned(),
        }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    pub(crate) fn env(mut self, key: &str, value: &str) -> Self {
        self.extra_env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Copies a fixture pack into `$HCP_HOME/packs/<as_id>/`, as install would.
    pub(crate) fn install_fixture(&self, fixture_name: &str, as_id: &str) -> PathBuf {
        let target = self.home().join("packs").join(as_id);
        copy_dir(&fixture(fixture_name), &target);
        target
    }

    /// `hcpx --json install SOURCE --yes`, as an agent or a person; it must succeed.
    pub(crate) fn install_ok(&self, source: &str, agent: bool) -> serde_json::Value {
        let mut command = self.command(&["--json", "install", source, "--yes"]);
        if agent {
            command.env("HCP_AGENT", "1");
        }
        let output = command.output().unwrap();
        let envelope: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(output.status.code(), Some(0), "{envelope}");
        envelope
    }

    pub(crate) fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(BIN), args)
    }

    /// [`Self::command`] with another program, e.g. `sh` in front of hcpx.
    pub(crate) fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(self.work())
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", self.root.path().join("user"))
            .env("HCP_HOME", self.home())
            .stdin(std::process::Stdio::null());
        for (key, value) in &self.extra_env {
            command.env(key, value);
        }
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        let output = self.command(args).output().unwrap();
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            root: self.root.path().display().to_string(),
        }
    }

    /// Binds a credential as a person does, the value on stdin.
    pub(crate) fn bind(&self, pack: &str, key: &str, value: &str) {
        bind_with(self.command(&["bind", pack, key]), value);
    }

    /// A shell line run under script(1), so that it has a terminal of its own (the
    /// caller's environment as [`Self::command`] sets it); `None` without script(1).
    pub(crate) fn in_terminal(&self, line: &str) -> Option<Command> {
        let script = Path::new("/usr/bin/script");
        if !require(script.exists(), "script(1) from util-linux") {
            return None;
        }
        let mut command = Command::new(script);
        command
            .args(["-qec", line, "/dev/null"])
            .current_dir(self.work())
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", self.root.path().join("user"))
            .env("HCP_HOME", self.home());
        Some(command)
    }

    /// Runs with `--json` and parses the envelope.
    pub(crate) fn json(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.run(&all);
        let value = serde_json::from_str(&output.stdout)
            .unwrap_or_else(|error| panic!("stdout is not one JSON envelope ({error}):\n{output}"));
        (output.code, value)
    }
}

/// Runs `hcpx bind …` as `command` sets it up, the value on stdin; it must succeed.
pub(crate) fn bind_with(mut command: Command, value: &str) {
    use std::io::Write as _;
    let mut bind = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    bind.stdin
        .take()
        .unwrap()
        .write_all(format!("{value}\n").as_bytes())
        .unwrap();
    assert!(bind.wait().unwrap().success());
}

/// Copies fixture pack `name` to `target` as a pack with id `id` (its manifest's id
/// and its skill's name changed): the same code as another pack.
pub(crate) fn copy_fixture_as(name: &str, id: &str, target: &Path) {
    copy_dir(&fixture(name), target);
    for file in ["hcp.json", "SKILL.md"] {
        let path = target.join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace(&format!("\"id\": \"{name}\""), &format!("\"id\": \"{id}\""))
            .replace(&format!("name: {name}\n"), &format!("name: {id}\n"));
        std::fs::write(&path, text).unwrap();
    }
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

impl Output {
    fn clean(&self, text: &str) -> String {
        text.replace(&self.root, "[TEMP]")
    }
}

/// `exit_code`, both streams and `[EOF]`, the way uv and jj snapshot commands.
impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit_code: {}\n----- stdout -----\n{}----- stderr -----\n{}[EOF]",
            self.code,
            self.clean(&self.stdout),
            self.clean(&self.stderr)
        )
    }
}

/// Replaces `durationMs` (and other timing) so envelopes snapshot stably.
pub(crate) fn stable(mut value: serde_json::Value, root: &Path) -> serde_json::Value {
    fn walk(value: &mut serde_json::Value, root: &str) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    if key == "durationMs" {
                        *item = serde_json::json!("[ms]");
                    } else {
                        walk(item, root);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|item| walk(item, root)),
            serde_json::Value::String(text) if text.contains(root) => *text = text.replace(root, "[TEMP]"),
            _ => {}
        }
    }
    walk(&mut value, &root.display().to_string());
    value
}

/// The processes whose command line contains `pattern`, as `pid: cmdline`.
pub(crate) fn pids_of(pattern: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(pattern) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// The `decision` of every line of `$HCP_HOME/audit.log`, in order.
pub(crate) fn audit_decisions(env: &TestEnv) -> Vec<String> {
    let audit = std::fs::read_to_string(env.home().join("audit.log")).unwrap();
    audit
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["decision"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// A test that needs something this machine may lack (root, a kernel feature, a
/// tool) calls this first. Without it the test fails under CI (`.ci/run` sets
/// `HCP_CI=1`), so a missing feature is never a silent pass there; elsewhere it says
/// what it skipped and returns false.
/// Where skipped tests are listed, in cargo's temporary folder for integration tests.
pub(crate) const SKIPPED_FILE: &str = "skipped-tests.txt";

pub(crate) fn require(available: bool, what: &str) -> bool {
    if available {
        return true;
    }
    assert!(
        std::env::var_os("HCP_CI").is_none(),
        "this test needs {what}, which CI must provide"
    );
    eprintln!("note: skipped, this machine lacks {what}");
    // The test runner hides a passing test's output: the skip is also listed in a
    // file that scripts/test.sh prints at the end of the run.
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(Path::new(env!("CARGO_TARGET_TMPDIR")).join(SKIPPED_FILE))
    {
        let _ = std::io::Write::write_all(
            &mut file,
            format!("{test}: this machine lacks {what}\n").as_bytes(),
        );
    }
    false
}

/// Runs `command` as the only child of a python3 parent, and returns its stdout and
/// the peak resident memory in KiB of it and every process it started, as the kernel
/// kept it for the reaped children (`ru_maxrss`): no sampling can miss the peak.
/// `None` (said loudly, and a failure in CI) when python3 is missing.
pub(crate) fn run_measuring_peak(command: &Command) -> Option<(Vec<u8>, u64)> {
    if !require(
        Command::new("python3").arg("-V").output().is_ok(),
        "python3 (reads the peak memory of hcpx)",
    ) {
        return None;
    }
    let mut measured = Command::new("python3");
    measured
        .args([
            "-c",
            "import resource, subprocess, sys\n\
             done = subprocess.run(sys.argv[1:], capture_output=True)\n\
             sys.stderr.buffer.write(done.stdout)\n\
             print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n",
        ])
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear();
    if let Some(dir) = command.get_current_dir() {
        measured.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            measured.env(key, value);
        }
    }
    let output = measured.output().unwrap();
    let peak = String::from_utf8_lossy(&output.stdout).trim().parse().unwrap();
    Some((output.stderr, peak))
}

/// Whether this machine enforces every sandbox layer a pack needs by default
/// (Landlock with scopes, seccomp, and the rest), as `hcpx doctor` reports them. Tests
/// whose expected output says a pack is ready, or shows a layer as on, need it; on a
/// machine without them they say so and skip, and fail in CI.
pub(crate) fn require_kernel_layers() -> bool {
    static ENFORCED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let enforced = ENFORCED.get_or_init(|| {
        let output = Command::new(BIN)
            .args(["doctor", "--json"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HCP_HOME", std::env::temp_dir().join("hcpx-it-doctor"))
            .output()
            .map_err(|error| error.to_string())?;
        let envelope: serde_json::Value =
            serde_json::from_slice(&output.stdout).map_err(|error| error.to_string())?;
        let missing: Vec<String> = envelope["data"]["sandbox"]["layers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|layer| layer["needed"] == true && layer["enforced"] != true)
            .map(|layer| layer["layer"].as_str().unwrap_or("?").to_owned())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing.join(", "))
        }
    });
    match enforced {
        Ok(()) => true,
        Err(missing) => require(false, &format!("the kernel sandbox layers (missing: {missing})")),
    }
}

/// `program` run as the user `uid` (group `uid`, no other groups) through setpriv(1),
/// with a cleared environment; `None` (said, and a failure in CI) unless the tests
/// run as root and setpriv is there.
pub(crate) fn as_user(uid: u32, program: impl AsRef<std::ffi::OsStr>) -> Option<Command> {
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|path| Path::new(path).exists());
    if !require(
        is_root() && setpriv.is_some(),
        "root and setpriv(1), to run as another user",
    ) {
        return None;
    }
    let mut command = Command::new(setpriv?);
    command
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(program)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(std::process::Stdio::null());
    Some(command)
}

/// A tree `nobody` owns, with its own copy of the binary, for the unprivileged runs.
pub(crate) struct Nobody {
    _dir: tempfile::TempDir,
    pub(crate) base: PathBuf,
}

impl Nobody {
    pub(crate) fn new() -> Option<Self> {
        as_user(65534, "true")?;
        let nobody = Self::with(&["home/packs", "work/out", "user"]);
        for pack in ["probe", "attacker"] {
            copy_dir(&fixture(pack), &nobody.base.join("home/packs").join(pack));
        }
        nobody.give();
        Some(nobody)
    }

    /// The folders `subs` and a copy of hcpx (the build folder may not be reachable
    /// for `nobody`), not yet given to `nobody` (see [`Self::give`]).
    pub(crate) fn with(subs: &[&str]) -> Self {
        let dir = tempfile::Builder::new().prefix("hcpx-unpriv-").tempdir().unwrap();
        let base = dir.path().to_path_buf();
        for sub in subs {
            std::fs::create_dir_all(base.join(sub)).unwrap();
        }
        std::fs::copy(BIN, base.join("hcpx")).unwrap();
        Self { _dir: dir, base }
    }

    /// Makes `nobody` the owner of the whole tree, readable by all.
    pub(crate) fn give(&self) {
        let chown = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&self.base)
            .status()
            .unwrap();
        assert!(chown.success());
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&self.base, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        // `new` made sure that setpriv is there.
        let mut command = as_user(65534, self.base.join("hcpx")).unwrap();
        command
            .args(args)
            .current_dir(self.base.join("work"))
            .env("HOME", self.base.join("user"))
            .env("HCP_HOME", self.base.join("home"))
            .env("HCPX_PARENT_SECRET", "parent-secret-0b3f");
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.command(args).output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

/// Whether the tests run as root.
pub(crate) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(1) == Some("0"))
    })
}

/// Polls `done` every 20 ms until it holds or `limit` passes; returns whether it held.
/// Sends SIGTERM to `child` and waits up to 8 s for it to exit by itself.
pub(crate) fn terminate(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(8) {
        if let Some(exited) = child.try_wait().unwrap() {
            return Some(exited);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

pub(crate) fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What a test does that the other kind must not do meanwhile in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Runs pack calls in this process: it starts keepers.
    Calls,
    /// Connects to an `hcpx mcp --http` or `--unix` server.
    HttpClient,
}

/// The kind of test running in this process now, and how many of it.
static ROOM: std::sync::Mutex<(Option<Kind>, usize)> = std::sync::Mutex::new((None, 0));
static ROOM_FREE: std::sync::Condvar = std::sync::Condvar::new();

/// A place among the tests of one kind (see [`calls_here`]); left when dropped.
#[derive(Debug)]
pub(crate) struct InRoom;

fn enter(kind: Kind) -> InRoom {
    let mut room = ROOM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    while room.0.is_some_and(|other| other != kind) {
        room = ROOM_FREE
            .wait(room)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    *room = (Some(kind), room.1 + 1);
    InRoom
}

impl Drop for InRoom {
    fn drop(&mut self) {
        let mut room = ROOM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        room.1 -= 1;
        if room.1 == 0 {
            room.0 = None;
            ROOM_FREE.notify_all();
        }
    }
}

/// Held while a test runs pack calls in this process. The HTTP server's peer gate
/// rightly refuses every connection held by a process that starts keepers (hcpx's
/// egress proxy connects from such a process for its packs), and under `cargo test`
/// every test is a thread of one process: a test that runs calls here and one that
/// connects to an hcpx server ([`HttpServer`] holds the other place) take turns.
/// Under nextest each test is a process of its own and never waits.
pub(crate) fn calls_here() -> InRoom {
    enter(Kind::Calls)
}

mod http;
pub(crate) use http::*;
