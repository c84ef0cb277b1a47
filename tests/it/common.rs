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

/// `hcpx mcp --http ...` (or `--unix`) running as a child, with the address it printed.
pub(crate) struct HttpServer {
    pub(crate) child: std::process::Child,
    /// The TCP address it listens on (unspecified for a unix socket).
    pub(crate) address: std::net::SocketAddr,
    /// The socket file, when it serves on one.
    pub(crate) unix: Option<PathBuf>,
    /// Everything it wrote to stderr so far.
    pub(crate) stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// No test runs calls in this process while this one connects (see [`calls_here`]).
    _room: InRoom,
}

impl HttpServer {
    /// Starts `hcpx mcp --http ADDRESS EXTRA...` and waits for the address line.
    pub(crate) fn start(env: &TestEnv, address: &str, extra: &[&str]) -> Self {
        let mut args = vec!["mcp", "--http", address];
        args.extend_from_slice(extra);
        Self::start_command(env.command(&args))
    }

    /// Starts `hcpx mcp --unix PATH EXTRA...` and waits for its line.
    pub(crate) fn start_unix(env: &TestEnv, path: &Path, extra: &[&str]) -> Self {
        let path_text = path.to_str().unwrap();
        let mut args = vec!["mcp", "--unix", path_text];
        args.extend_from_slice(extra);
        let mut server = Self::start_command(env.command(&args));
        server.unix = Some(path.to_path_buf());
        server
    }

    /// Starts a prepared `hcpx mcp` command and waits for the line saying where it
    /// serves.
    pub(crate) fn start_command(mut command: Command) -> Self {
        use std::io::BufRead as _;
        let room = enter(Kind::HttpClient);
        let mut child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (found, serving) = std::sync::mpsc::channel();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let log = stderr.clone();
        std::thread::spawn(move || {
            while let Some(Ok(line)) = lines.next() {
                {
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
                if line.contains("serving MCP") {
                    let _ = found.send(line);
                }
            }
        });
        let line = serving
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no address printed; stderr: {}", stderr.lock().unwrap()));
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split("/mcp").next())
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
        Self {
            child,
            address,
            unix: None,
            stderr,
            _room: room,
        }
    }

    /// The address to connect to: loopback on the bound port.
    pub(crate) fn loopback(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.address.port()))
    }

    /// One request, over the unix socket when the server has one, else to loopback.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> HttpResponse {
        match &self.unix {
            Some(socket) => http_exchange(
                std::os::unix::net::UnixStream::connect(socket).unwrap(),
                "localhost",
                method,
                path,
                headers,
                body,
            ),
            None => http_request(self.loopback(), method, path, headers, body),
        }
    }

    /// One request to `/mcp` with the usual MCP headers plus `headers`.
    pub(crate) fn post(&self, headers: &[(&str, &str)], body: &serde_json::Value) -> HttpResponse {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        self.request("POST", "/mcp", &all, body.to_string().as_bytes())
    }

    /// `initialize` on protocol 2025-11-25, then `notifications/initialized`: the
    /// session id.
    pub(crate) fn session(&self, headers: &[(&str, &str)]) -> String {
        let response = self.post(
            headers,
            &serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "hcpx-tests", "version": "0" } } }),
        );
        assert_eq!(response.status, 200, "{response:?}");
        let session = response.header("mcp-session-id").unwrap().to_owned();
        let mut with = headers.to_vec();
        with.extend_from_slice(&[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]);
        let response = self.post(
            &with,
            &serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        );
        assert_eq!(response.status, 202, "{response:?}");
        session
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub(crate) struct HttpResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl HttpResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The JSON-RPC messages of the body: the body itself, or each SSE `data:` line.
    pub(crate) fn messages(&self) -> Vec<serde_json::Value> {
        if let Ok(value) = serde_json::from_str(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }
}

/// One HTTP/1.1 request written by hand (`Connection: close`), its response read
/// to the end (a chunked body is decoded). `Host` is the address unless `headers`
/// sets one.
pub(crate) fn http_request(
    address: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let stream = std::net::TcpStream::connect(address).unwrap();
    http_exchange(stream, &address.to_string(), method, path, headers, body)
}

/// [`http_request`] on a connected stream (TCP or a unix socket), `host` the
/// default `Host`.
pub(crate) fn http_exchange<S: std::io::Read + std::io::Write + ReadTimeout>(
    mut stream: S,
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    stream.read_timeout(std::time::Duration::from_secs(30));
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(key, _)| key.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {host}\r\n"));
    }
    for (key, value) in headers {
        head.push_str(&format!("{key}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).unwrap();
    // A server that refuses a body may answer (and close) before reading all of it.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let mut buffer = [0_u8; 64 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => raw.extend_from_slice(&buffer[..read]),
            Err(error) if raw.is_empty() => panic!("no response: {error}"),
            Err(_) => break,
        }
    }
    parse_response(&raw)
}

/// An HTTP/1.1 response as read from the wire, its chunked body decoded.
pub(crate) fn parse_response(raw: &[u8]) -> HttpResponse {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let rest = &raw[split + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {head:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(key, value)| key.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    HttpResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A stream whose reads can be bounded in time.
pub(crate) trait ReadTimeout {
    fn read_timeout(&self, limit: std::time::Duration);
}

impl ReadTimeout for std::net::TcpStream {
    fn read_timeout(&self, limit: std::time::Duration) {
        self.set_read_timeout(Some(limit)).unwrap();
    }
}

impl ReadTimeout for std::os::unix::net::UnixStream {
    fn read_timeout(&self, limit: std::time::Duration) {
        self.set_read_timeout(Some(limit)).unwrap();
    }
}

pub(crate) fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = rest.windows(2).position(|window| window == b"\r\n") {
        let Ok(size) = usize::from_str_radix(String::from_utf8_lossy(&rest[..end]).trim(), 16) else {
            break;
        };
        let after = &rest[end + 2..];
        if size == 0 || after.len() < size {
            body.extend_from_slice(&after[..size.min(after.len())]);
            break;
        }
        body.extend_from_slice(&after[..size]);
        rest = after[size..].strip_prefix(b"\r\n").unwrap_or(&after[size..]);
    }
    body
}

/// The first line `child` prints on its piped stdout, waited for at most 10 s
/// (`None`: none came), and the thread that reads the rest (joined once the child is
/// gone).
pub(crate) fn first_line(
    child: &mut std::process::Child,
) -> (Option<String>, std::thread::JoinHandle<String>) {
    use std::io::{BufRead as _, Read as _};
    let stdout = child.stdout.take().expect("stdout is piped");
    let (sender, received) = std::sync::mpsc::channel();
    let rest = std::thread::spawn(move || {
        let mut stdout = std::io::BufReader::new(stdout);
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let _ = sender.send(line);
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        rest
    });
    (
        received.recv_timeout(std::time::Duration::from_secs(10)).ok(),
        rest,
    )
}
