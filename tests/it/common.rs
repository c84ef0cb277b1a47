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

    pub(crate) fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
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
        use std::io::Write as _;
        let mut bind = self
            .command(&["bind", pack, key])
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
pub(crate) fn require(available: bool, what: &str) -> bool {
    if available {
        return true;
    }
    assert!(
        std::env::var_os("HCP_CI").is_none(),
        "this test needs {what}, which CI must provide"
    );
    eprintln!("note: skipped, this machine lacks {what}");
    false
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
