//! `hcpx serve`: a CLI `hcpx exec` hands its call to the resident server, which
//! answers as the process would have; and every client that running the call in
//! the server would let out of its own confinement (no_new_privs, lower limits,
//! another umask, other settings, a process of a pack's call, another program,
//! another user) is refused before anything runs, and runs the call itself. Each
//! attack is run with `HCP_RESIDENT=require`, which turns a refusal into an error
//! that names it, and checked not to have run in the server.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{TestEnv, as_user, terminate, wait_until};

/// A running `hcpx serve` for a test's `HCP_HOME`, stopped when dropped.
struct Resident {
    child: Child,
    socket: PathBuf,
}

impl Resident {
    fn start(env: &TestEnv) -> Self {
        Self::start_with(env.command(&["serve"]), &env.home())
    }

    fn start_with(mut command: Command, home: &Path) -> Self {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let socket = home.join("run/exec.sock");
        let mut resident = Self { child, socket };
        assert!(
            wait_until(Duration::from_secs(10), || resident.socket.exists()
                || resident.child.try_wait().unwrap().is_some()),
            "the server did not start"
        );
        assert!(
            resident.child.try_wait().unwrap().is_none(),
            "the server stopped: {}",
            resident.stderr()
        );
        resident
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server wrote on stderr (after it stopped).
    fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            use std::io::Read as _;
            let _ = stderr.read_to_string(&mut text);
        }
        text
    }

    /// Whether the server is running a call now: a keeper is its child.
    fn runs_a_call(&self) -> bool {
        hcpx_process::runtime::tie(self.pid()) == Ok(Some(hcpx_process::runtime::Tie::ActsForCall))
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = terminate(&mut self.child);
        }
    }
}

fn probe_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    env
}

/// `hcpx ARGS` with `HCP_RESIDENT` set to `mode`: code, stdout, stderr.
fn run(env: &TestEnv, mode: &str, args: &[&str]) -> (i32, String, String) {
    let output = env.command(args).env("HCP_RESIDENT", mode).output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The same calls answered by the server and by the process: the same exit
/// codes, text and envelopes (timing apart), for a success, a failing CLI, a
/// refusal, a plan, the working folder and the environment.
#[test]
fn the_server_answers_every_call_as_the_process_would() {
    let env = probe_env();
    let _server = Resident::start(&env);
    let calls: [&[&str]; 7] = [
        &["exec", "probe", "args", "--", "word=hello", "text=a b"],
        &["exec", "probe", "fail"],
        &["exec", "probe", "args", "--", "nope=1"],
        &["exec", "probe", "pwd"],
        &["exec", "probe", "env"],
        &["exec", "probe", "args", "--dry-run", "--", "word=x"],
        &["exec", "nowhere", "run"],
    ];
    // Each call's private temporary folder has a name of its own.
    let without_tmpdir = |(code, stdout, stderr): (i32, String, String)| {
        let stdout: String = stdout
            .split_inclusive('\n')
            .filter(|line| !line.starts_with("TMPDIR="))
            .collect();
        (code, stdout, stderr)
    };
    for call in calls {
        let local = without_tmpdir(run(&env, "off", call));
        let served = without_tmpdir(run(&env, "require", call));
        assert_eq!(served, local, "{call:?}");
        let mut json = vec!["--json"];
        json.extend_from_slice(call);
        let envelope = |mode| {
            let (code, stdout, _) = run(&env, mode, &json);
            let mut value: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            if let Some(text) = value["stdout"].as_str() {
                value["stdout"] = without_tmpdir((0, text.to_owned(), String::new())).1.into();
            }
            (code, crate::common::stable(value, env.root.path()))
        };
        assert_eq!(envelope("require"), envelope("off"), "{json:?}");
    }
    let (code, stdout, _) = run(&env, "require", &["exec", "probe", "args", "--", "word=hello"]);
    assert_eq!((code, stdout.as_str()), (0, "[hello]\n[--]\n"));
}

/// A call runs in the server (a keeper is the server's child while it runs), and
/// stops, its processes killed, when its client goes away.
#[test]
fn a_call_runs_in_the_server_and_ends_with_its_client() {
    let env = probe_env();
    let server = Resident::start(&env);
    let mut client = env
        .command(&["exec", "probe", "sleep", "--", "seconds=30"])
        .env("HCP_RESIDENT", "require")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || server.runs_a_call()),
        "no call ran in the server"
    );
    client.kill().unwrap();
    client.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || !server.runs_a_call()),
        "the call outlived its client"
    );
}

/// A person at a terminal keeps their calls in the process (its prompt, its
/// progress line); an agent's call at a terminal, which no one confirms, goes to the
/// server.
#[test]
fn a_person_at_a_terminal_keeps_the_call_and_an_agent_hands_it_over() {
    let env = probe_env();
    let server = Resident::start(&env);
    let bin = crate::common::BIN;
    let Some(mut person) = env.in_terminal(&format!("HCP_RESIDENT=require {bin} exec probe args -- word=x"))
    else {
        return;
    };
    let output = person.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "a call that a person at this terminal may be asked to confirm runs in its own process"
        ),
        "{text}"
    );
    assert!(!server.runs_a_call());
    let mut agent = env
        .in_terminal(&format!(
            "HCP_AGENT=1 HCP_RESIDENT=require {bin} exec probe args -- word=x"
        ))
        .unwrap();
    let output = agent.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("[x]"), "{text}");
}

/// A server that dies during a call leaves its client failing (exit 1) with what
/// happened; the client does not run the call again, which may have done its work.
#[test]
fn a_client_whose_server_dies_fails_without_running_the_call_again() {
    let env = probe_env();
    let mut server = Resident::start(&env);
    let started = std::time::Instant::now();
    let client = env
        .command(&["exec", "probe", "sleep", "--", "seconds=30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || server.runs_a_call()),
        "no call ran in the server"
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let output = client.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: the resident server stopped before the call's result came back; the call may have \
         run, so it is not run again\n"
    );
    assert!(output.stdout.is_empty());
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// The refusal a client with `HCP_RESIDENT=require` reports, for `command` (an
/// `hcpx exec` of the probe, set up by the caller); the call must not have run in
/// the server, nor anywhere.
fn refused(server: &Resident, mut command: Command) -> String {
    let output = command
        .env("HCP_RESIDENT", "require")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(!server.runs_a_call());
    stderr
}

/// `hcpx exec probe args` in a shell line `prefix` sets up.
fn in_shell(env: &TestEnv, prefix: &str) -> Command {
    let line = format!("{prefix}; exec \"$0\" exec probe args -- word=x");
    let mut command = env.command_of(Path::new("/bin/sh"), &["-c", &line]);
    command.arg0_hcpx();
    command
}

trait Arg0 {
    fn arg0_hcpx(&mut self);
}

impl Arg0 for Command {
    /// Makes `$0` of `sh -c LINE` the hcpx binary.
    fn arg0_hcpx(&mut self) {
        self.arg(crate::common::BIN);
    }
}

/// A client with lower limits, another umask, other hcpx settings or another
/// TMPDIR would get the server's: refused, naming what differs.
#[test]
fn a_client_with_other_limits_umask_or_settings_is_refused() {
    let env = probe_env();
    let server = Resident::start(&env);
    let limits = refused(&server, in_shell(&env, "ulimit -n 64"));
    assert!(
        limits.contains("the client's limits differs from the server's"),
        "{limits}"
    );
    let umask = refused(&server, in_shell(&env, "umask 0077"));
    assert!(
        umask.contains("the client's Umask differs from the server's"),
        "{umask}"
    );
    let mut other = env.command(&["exec", "probe", "args", "--", "word=x"]);
    other.env("HCP_SANDBOX", "best-effort");
    let settings = refused(&server, other);
    assert!(
        settings.contains("the client's HCP_SANDBOX differs from the server's"),
        "{settings}"
    );
    // Another TMPDIR: the server keeps its calls' folders in one folder under its own.
    let tmp = env.root.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut other = env.command(&["exec", "probe", "args", "--", "word=x"]);
    other.env("TMPDIR", &tmp);
    let tmpdir = refused(&server, other);
    assert!(
        tmpdir.contains("the client's TMPDIR differs from the server's"),
        "{tmpdir}"
    );
    // And with them as the server has them, the same call is served.
    let (code, stdout, stderr) = run(&env, "require", &["exec", "probe", "args", "--", "word=x"]);
    assert_eq!((code, stdout.as_str()), (0, "[x]\n[--]\n"), "{stderr}");
}

/// Python, for a step the shell has no word for.
fn python(env: &TestEnv, script: &str, args: &[&str]) -> Command {
    let mut command = env.command_of(Path::new("/usr/bin/python3"), &["-c", script]);
    command.args(args);
    command
}

/// A client under no_new_privs (as every unprivileged Landlock sandbox is) would
/// step out of its sandbox through the server: refused.
#[test]
fn a_client_under_no_new_privs_is_refused() {
    let stderr = refused_under_python(
        "import ctypes, os, sys\n\
         assert ctypes.CDLL(None).prctl(38, 1, 0, 0, 0) == 0\n\
         os.execv(sys.argv[1], sys.argv[1:])",
    );
    assert!(
        stderr.contains("the client's NoNewPrivs differs from the server's"),
        "{stderr}"
    );
}

/// With `--json`, the server says in one line on stdout that it serves, where and
/// as which process, once a client can connect; people read the sentence on stderr.
#[test]
fn with_json_the_server_prints_one_ready_line() {
    let env = probe_env();
    let mut server = env
        .command(&["--json", "serve"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (line, rest) = crate::common::first_line(&mut server);
    let line = line.unwrap_or_else(|| {
        terminate(&mut server);
        panic!("no line on stdout")
    });
    let socket = env.home().join("run/exec.sock");
    let ready: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        ready,
        serde_json::json!({"serving": "exec", "socket": socket, "pid": server.id()})
    );
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    terminate(&mut server).unwrap();
    assert_eq!(rest.join().unwrap(), "", "one line only");
}

/// A process of a pack's call (one under a keeper) is refused, even when it runs
/// the same hcpx with the same surroundings.
#[test]
fn a_process_of_a_packs_call_is_refused() {
    // A parent that names itself as a call's keeper does.
    let stderr = refused_under_python(
        "import ctypes, subprocess, sys\n\
         ctypes.CDLL(None).prctl(15, b'hcpx-keeper', 0, 0, 0)\n\
         sys.exit(subprocess.run(sys.argv[1:]).returncode)",
    );
    assert!(
        stderr.contains("the client is a process of a pack's call"),
        "{stderr}"
    );
}

/// The server remembers the ancestors it found in no call, and a client under a
/// keeper below them is still refused: a Python process runs one call, which is
/// served (its ancestors remembered), then starts a second Python that names itself
/// as a keeper does, whose `hcpx exec` is refused.
#[test]
fn a_process_of_a_packs_call_is_refused_below_remembered_ancestors() {
    let env = probe_env();
    let server = Resident::start(&env);
    let script = "import subprocess, sys\n\
         first = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n\
         print('first', first.returncode, first.stdout.strip())\n\
         keeper = \"import ctypes, subprocess, sys\\n\
         ctypes.CDLL(None).prctl(15, b'hcpx-keeper', 0, 0, 0)\\n\
         sys.exit(subprocess.run(sys.argv[1:]).returncode)\"\n\
         second = subprocess.run([sys.executable, '-c', keeper] + sys.argv[1:], capture_output=True, text=True)\n\
         print('second', second.returncode, second.stderr.strip())";
    let output = python(
        &env,
        script,
        &[crate::common::BIN, "exec", "probe", "args", "--", "word=x"],
    )
    .env("HCP_RESIDENT", "require")
    .stdin(Stdio::null())
    .output()
    .unwrap();
    // The first call's output is the probe's: its arguments, one a line.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "first 0 [x]\n[--]\n\
         second 2 error: HCP_RESIDENT=require, and the resident server refused the call: the \
         client is a process of a pack's call\n",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!server.runs_a_call());
}

/// The refusal of `hcpx exec probe args` run by a Python `script` (which gets
/// that command line as its arguments), with a server running.
fn refused_under_python(script: &str) -> String {
    let env = probe_env();
    let server = Resident::start(&env);
    let command = python(
        &env,
        script,
        &[crate::common::BIN, "exec", "probe", "args", "--", "word=x"],
    );
    refused(&server, command)
}

/// Another program that speaks the server's protocol gets a refusal, and nothing
/// runs: only the server's own binary is a client.
#[test]
fn another_program_is_refused_before_its_request_is_read() {
    let env = probe_env();
    let server = Resident::start(&env);
    let script = r#"
import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
body = json.dumps({"argv": ["exec", "probe", "sleep", "--", "seconds=30"],
                   "env": sorted(os.environ.items()), "cwd": os.getcwd(),
                   "terminals": [False, False]}).encode()
try:
    s.sendall(struct.pack(">I", len(body)) + body)
except BrokenPipeError:
    pass
kind = s.recv(1)
length = struct.unpack(">I", s.recv(4))[0]
print(kind.decode() + " " + s.recv(length).decode())
"#;
    let output = python(&env, script, &[&server.socket.display().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.trim_end(),
        "R the client's exe differs from the server's",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!server.runs_a_call());
}

/// A server whose binary was replaced (an upgrade) refuses the new binary's calls,
/// which run in their own processes, and stops.
#[test]
fn a_server_whose_binary_was_replaced_stops() {
    let env = probe_env();
    let old = env.root.path().join("old-hcpx");
    std::fs::copy(crate::common::BIN, &old).unwrap();
    let mut server = Resident::start_with(env.command_of(&old, &["serve"]), &env.home());
    std::fs::remove_file(&old).unwrap();
    let mut client = env.command(&["exec", "probe", "args", "--", "word=x"]);
    client.env("HCP_RESIDENT", "require");
    let stderr = refused(&server, client);
    assert!(
        stderr
            .contains("the client runs another hcpx binary: the server's was replaced, and the server stops"),
        "{stderr}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || server
            .child
            .try_wait()
            .unwrap()
            .is_some()),
        "the server is still running"
    );
    assert!(!server.socket.exists());
    let (code, stdout, _) = run(&env, "auto", &["exec", "probe", "args", "--", "word=x"]);
    assert_eq!((code, stdout.as_str()), (0, "[x]\n[--]\n"));
}

/// A run folder that is a link (to a folder others may enter, say) is not used:
/// the server says what is wrong and does not start.
#[test]
fn a_linked_run_folder_is_refused() {
    let env = probe_env();
    let elsewhere = env.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.home().join("run")).unwrap();
    let output = env.command(&["serve", "--idle", "1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("run is not a folder; remove it"), "{stderr}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// Another user cannot reach the socket (its folder is the user's alone), and the
/// server would refuse it anyway.
#[test]
fn another_user_cannot_reach_the_server() {
    let Some(mut nobody) = as_user(65534, crate::common::BIN) else {
        return;
    };
    let env = probe_env();
    let server = Resident::start(&env);
    let mode = std::fs::metadata(env.home().join("run")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(mode.permissions().mode() & 0o777, 0o700);
    let socket = std::fs::metadata(&server.socket).unwrap();
    assert_eq!(socket.permissions().mode() & 0o777, 0o600);
    nobody
        .args(["exec", "probe", "args", "--", "word=x"])
        .current_dir("/")
        .env("HCP_HOME", env.home());
    let stderr = refused(&server, nobody);
    assert!(
        stderr.contains("cannot be reached: Permission denied"),
        "{stderr}"
    );
}

/// The server will not start inside a sandbox (it could not tell a confined
/// client from one that is not), nor twice for one `HCP_HOME`; it removes its
/// socket when it stops, a stale one does not keep the next from starting, and
/// `--idle` stops it.
#[test]
fn the_server_starts_once_per_home_outside_any_sandbox_and_cleans_up() {
    let env = probe_env();
    let script = "import ctypes, os, sys\n\
                  ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)\n\
                  os.execv(sys.argv[1], sys.argv[1:])";
    // (With `--idle`, a server that did start would stop by itself, and fail the test.)
    let confined = python(&env, script, &[crate::common::BIN, "serve", "--idle", "1"])
        .output()
        .unwrap();
    assert_eq!(confined.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&confined.stderr)
            .contains("hcpx cannot serve here: it runs with no_new_privs set"),
        "{}",
        String::from_utf8_lossy(&confined.stderr)
    );
    let doctor = |env: &TestEnv| {
        let (code, envelope) = env.json(&["doctor"]);
        assert_eq!(code, 0);
        envelope["data"]["resident"].clone()
    };
    let socket = env.home().join("run/exec.sock").display().to_string();
    assert_eq!(
        doctor(&env),
        serde_json::json!({"socket": socket, "running": false})
    );
    let mut first = Resident::start(&env);
    assert_eq!(
        doctor(&env),
        serde_json::json!({"socket": socket, "running": true})
    );
    let text = env.run(&["doctor"]).stdout;
    assert!(
        text.contains(&format!("resident   hcpx serve, at {socket}\n")),
        "{text}"
    );
    let second = env.command(&["serve"]).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("a resident server already serves"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    // Killed: its socket file stays, and the next server replaces it.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(first.socket.exists());
    assert_eq!(
        doctor(&env),
        serde_json::json!({"socket": socket, "running": false})
    );
    let (code, _, stderr) = run(&env, "require", &["exec", "probe", "args", "--", "word=x"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no resident server is running"), "{stderr}");
    let (code, stdout, _) = run(&env, "auto", &["exec", "probe", "args", "--", "word=x"]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "[x]\n[--]\n"),
        "auto runs it in the process"
    );
    let mut idle = Resident::start_with(env.command(&["serve", "--idle", "1"]), &env.home());
    let status = idle.child.wait().unwrap();
    assert!(status.success(), "{}", idle.stderr());
    assert!(!idle.socket.exists());
}

/// A server with 256 calls under way takes no more: the next call is refused
/// before anything runs, and runs in its own process. Connections that never send
/// their request hold the calls (each until the server's 10 s wait for it ends).
#[test]
fn a_server_holding_256_calls_refuses_the_next_until_one_ends() {
    let env = probe_env();
    let server = Resident::start(&env);
    let held: Vec<std::os::unix::net::UnixStream> = (0..256)
        .map(|_| std::os::unix::net::UnixStream::connect(&server.socket).unwrap())
        .collect();
    let stderr = refused(&server, env.command(&["exec", "probe", "args", "--", "word=x"]));
    assert!(
        stderr.contains("the resident server refused the call: the server runs 256 calls already"),
        "{stderr}"
    );
    // Without the mode, the refused call runs in the process itself.
    let (code, stdout, _) = run(&env, "auto", &["exec", "probe", "args", "--", "word=x"]);
    assert_eq!((code, stdout.as_str()), (0, "[x]\n[--]\n"));
    drop(held);
    assert!(
        wait_until(Duration::from_secs(10), || run(
            &env,
            "require",
            &["exec", "probe", "args", "--", "word=x"]
        )
        .0 == 0),
        "the server did not take calls again"
    );
}
