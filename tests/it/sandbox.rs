//! The sandbox, attacked: each test is one way a pack could try to get out of its
//! call (the attacker fixture's commands), run through the real binary as root (as
//! CI and containers run it) and, where the answer differs, as an unprivileged user.
//! Each fails when the protection it names is taken out.

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{BIN, Nobody, TestEnv, is_root, pids_of, require, wait_until};
use crate::mcp::Process;
use crate::sockets::Server;

pub(crate) fn attacker_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    env.install_fixture("probe", "probe");
    env
}

pub(crate) fn set_network(env: &TestEnv, pack: &str, network: bool) {
    let manifest = env.home().join("packs").join(pack).join("hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        &format!("\"network\": {}", !network),
        &format!("\"network\": {network}"),
    );
    std::fs::write(&manifest, text).unwrap();
}

/// Processes that left the process group (setsid) and the tree (a double fork)
/// are gone as soon as the call returns, not only when it times out.
#[test]
fn processes_that_leave_the_group_and_the_tree_end_with_the_call() {
    let env = attacker_env();
    let (code, envelope) = env.json(&["exec", "attacker", "escape", "--", "tag=4101"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!("started\n"));
    // No waiting: the keeper has killed and reaped them before hcpx answered.
    assert_eq!(pids_of("sleep 4101"), Vec::<String>::new());
}

/// On timeout, the TERM-ignoring, setsid and double-forked processes all go.
#[test]
fn a_timeout_ends_every_process_of_the_call() {
    let env = attacker_env();
    let started = Instant::now();
    let (code, envelope) = env.json(&[
        "exec",
        "attacker",
        "escape",
        "--timeout-ms",
        "500",
        "--",
        "tag=4102",
        "wait=60",
    ]);
    assert_eq!(code, 124, "{envelope}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(pids_of("sleep 4102"), Vec::<String>::new());
}

/// hcpx killed with SIGKILL mid-call leaves nothing running: the keeper sees
/// its control pipe close.
#[test]
fn killing_hcpx_ends_every_process_of_the_call() {
    let env = attacker_env();
    let mut hcpx = env
        .command(&["exec", "attacker", "escape", "--", "tag=4103", "wait=60"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || pids_of("sleep 4103").len() >= 3),
        "the call started: {:?}",
        pids_of("sleep 4103")
    );
    hcpx.kill().unwrap();
    hcpx.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(2), || pids_of("sleep 4103").is_empty()),
        "left behind: {:?}",
        pids_of("sleep 4103")
    );
}

/// hcpx killed with SIGKILL at every moment of starting a call (before
/// the keeper, between the keeper and the pack's exec, as the pack forks) leaves
/// nothing running: whichever of the keeper and the child exists sees the other go.
#[test]
fn killing_hcpx_while_the_call_starts_leaves_nothing_running() {
    let env = attacker_env();
    let call = || {
        env.command(&["exec", "attacker", "escape", "--", "tag=4110", "wait=60"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    // How long a start takes here, up to the pack's processes all running.
    let mut hcpx = call();
    let begun = Instant::now();
    assert!(wait_until(Duration::from_secs(5), || pids_of("sleep 4110").len() >= 3));
    let start = begun.elapsed();
    hcpx.kill().unwrap();
    hcpx.wait().unwrap();
    assert!(wait_until(Duration::from_secs(3), || pids_of("sleep 4110").is_empty()));
    // Kills spread over the whole start and a little past it.
    let steps = 24_u32;
    for step in 0..=steps {
        let mut hcpx = call();
        std::thread::sleep(start * 5 / 4 * step / steps);
        hcpx.kill().unwrap();
        hcpx.wait().unwrap();
    }
    assert!(
        wait_until(Duration::from_secs(3), || pids_of("sleep 4110").is_empty()),
        "left behind (a start takes {start:?}): {:?}",
        pids_of("sleep 4110")
    );
}

/// Ctrl-C at the terminal (SIGINT to hcpx) ends the call and all of it.
#[test]
fn interrupting_hcpx_ends_every_process_of_the_call() {
    let env = attacker_env();
    let hcpx = env
        .command(&["exec", "attacker", "escape", "--", "tag=4108", "wait=60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(5), || pids_of("sleep 4108").len() >= 3));
    let pid = rustix::process::Pid::from_raw(i32::try_from(hcpx.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let started = Instant::now();
    let output = hcpx.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("interrupted; the command was stopped"),
        "{output:?}"
    );
    // TERM reaches the group at once; the setsid'd loop goes with the KILL 2 s later.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // The call's keeper, a process of its own, ends what is left once hcpx is gone;
    // on a loaded machine it may take a moment after hcpx exits (seen under a
    // parallel fuzz run), as for the MCP server below.
    assert!(
        wait_until(Duration::from_secs(2), || pids_of("sleep 4108").is_empty()),
        "left behind: {:?}",
        pids_of("sleep 4108")
    );
}

/// `hcpx mcp` killed with SIGKILL mid-call leaves nothing of its calls running either.
#[test]
fn killing_the_mcp_server_ends_every_process_of_its_calls() {
    let env = attacker_env();
    let mut server = Process::initialized(&env);
    server.send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "argv": ["exec", "attacker", "escape", "--", "tag=4104", "wait=60"] } } }));
    assert!(
        wait_until(Duration::from_secs(5), || pids_of("sleep 4104").len() >= 3),
        "the call started"
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(2), || pids_of("sleep 4104").is_empty()),
        "left behind: {:?}",
        pids_of("sleep 4104")
    );
}

/// A pack that SIGKILLs its parent and every hcpx it can find takes nothing
/// down: the MCP server answers that call and the next one.
#[test]
fn a_pack_cannot_kill_its_keeper_or_the_server() {
    let env = attacker_env();
    let mut server = Process::initialized(&env);
    let reply = server.call(2, json!(["exec", "attacker", "kill"]));
    let envelope = &reply["result"]["structuredContent"];
    assert_eq!(envelope["ok"], json!(true), "{reply}");
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(stdout.contains("Operation not permitted"), "{stdout}");
    assert!(!stdout.contains("killed"), "{stdout}");
    assert!(stdout.ends_with("still here\n"), "{stdout}");
    let reply = server.call(3, json!(["search", "journey"]));
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    let (code, _) = server.close();
    assert_eq!(code, 0);
}

/// A pack reads nothing of another process: not hcpx's environment (read as its
/// keeper's, the parent), not another call's bound secret, not anyone's memory. Its
/// own call's processes stay readable: the test can tell.
#[test]
fn a_pack_reads_no_other_process_environment_or_memory() {
    let env = attacker_env().env("HCPX_PARENT_SECRET", "parent-secret-7c1d");
    env.bind("probe", "PROBE_TOKEN", "bound-secret-5e9a");
    let mut other = env
        .command(&["exec", "probe", "sleep", "--", "seconds=4105"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(5), || !pids_of("sleep 4105").is_empty()));
    let output = env.run(&["exec", "attacker", "environ"]);
    other.kill().unwrap();
    other.wait().unwrap();
    assert_eq!(output.code, 0, "{output}");
    for secret in ["parent-secret-7c1d", "bound-secret-5e9a", "HCPX_PARENT_SECRET"] {
        assert!(!output.stdout.contains(secret), "{secret} leaked:\n{output}");
    }
    assert!(!output.stdout.contains("mem "), "memory read:\n{output}");
    // Its own children's environment (its own, cleared) is readable.
    assert!(output.stdout.contains("TMPDIR="), "{output}");
}

/// As root, a pack lists no process but its call's own: not hcpx, not
/// another call's (whose command line would show what it was asked), not the
/// machine's; `/proc` itself still works, also for a command whose reads are
/// confined.
#[test]
fn a_pack_sees_no_process_outside_its_call() {
    if !require(is_root(), "root, to mount a /proc of the call's own") {
        return;
    }
    let env = attacker_env();
    let mut other = env
        .command(&["exec", "probe", "sleep", "--", "seconds=4109"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(5), || !pids_of("sleep 4109").is_empty()));
    let output = env.run(&["exec", "attacker", "listing"]);
    other.kill().unwrap();
    other.wait().unwrap();
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.contains("sleep 30"),
        "its own call is listed: {output}"
    );
    assert!(output.stdout.contains("\nName:\t"), "{output}");
    for foreign in ["4109", BIN, "exec attacker"] {
        assert!(
            !output.stdout.contains(foreign),
            "{foreign} is visible:\n{output}"
        );
    }
    let (_, doctor) = env.json(&["doctor"]);
    let layers = doctor["data"]["sandbox"]["layers"].as_array().unwrap();
    let list = layers
        .iter()
        .find(|layer| layer["layer"] == json!("process-list"))
        .unwrap();
    assert_eq!(list["enforced"], json!(true), "{list}");
}

/// The pack runs with no capabilities, with `no_new_privs` and seccomp on, and with
/// no controlling terminal: as root too.
#[test]
fn the_pack_runs_without_privileges() {
    let env = attacker_env();
    let output = env.run(&["exec", "attacker", "status"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        output.stdout,
        "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n\
         CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n\
         Seccomp_filters:\t1\n0\n"
    );
}

/// With a controlling terminal, hcpx's child still has none (a session of its
/// own): it cannot push input into the caller's shell through `/dev/tty`.
#[test]
fn the_pack_has_no_controlling_terminal() {
    let env = attacker_env();
    // Under script(1) hcpx has a terminal: `ps` sees it (the control).
    let inner = format!("ps -o tty= -p $$; {BIN} exec attacker status");
    let Some(mut script) = env.in_terminal(&inner) else {
        return;
    };
    let output = script.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.first().is_some_and(|tty| tty.starts_with("pts/")), "{text}");
    // The last line is the pack's controlling terminal number: none.
    assert_eq!(lines.last(), Some(&"0"), "{text}");
}

/// Descriptors the caller had open do not reach the pack.
#[test]
fn only_descriptors_0_1_and_2_reach_the_pack() {
    let env = attacker_env();
    let outside = env.root.path().join("outside.log");
    std::fs::write(&outside, "").unwrap();
    // Descriptors 7 and 9 open, as a shell's `exec 7>>file` leaves them.
    let output = Command::new("/bin/sh")
        .args([
            "-c",
            "exec 7>>\"$OUTSIDE\" 9<\"$OUTSIDE\"; exec \"$0\" exec attacker fds",
            BIN,
        ])
        .current_dir(env.work())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HCP_HOME", env.home())
        .env("OUTSIDE", &outside)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout, "checked\n", "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "");
}

/// Renames a new link over `link`: the swap is atomic, as an attacker's would be.
fn swap_link(link: &Path, target: &Path) {
    let fresh = link.with_extension("new");
    std::os::unix::fs::symlink(target, &fresh).unwrap();
    std::fs::rename(&fresh, link).unwrap();
}

/// A `path` parameter checked while its link points inside, swapped to point
/// outside before the pack opens it: the pack still cannot read outside.
#[test]
fn a_link_swapped_after_the_check_cannot_lead_a_path_parameter_out() {
    let env = attacker_env();
    std::fs::write(env.work().join("inside.txt"), "inside\n").unwrap();
    let secret = env.root.path().join("secret.txt");
    std::fs::write(&secret, "outside-secret\n").unwrap();
    let link = env.work().join("link");
    std::os::unix::fs::symlink("inside.txt", &link).unwrap();
    // The control: unswapped, the link is read.
    let output = env.run(&["exec", "attacker", "slowread", "--", "file=link"]);
    assert_eq!((output.code, output.stdout.as_str()), (0, "inside\n"), "{output}");
    let child = env
        .command(&["exec", "attacker", "slowread", "--", "file=link"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    swap_link(&link, &secret);
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stdout.contains("outside-secret"), "{stdout}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    // Nor does a plain read of a file outside, by a command that takes paths.
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "outside-secret\n");
}

/// A write grant (`out`) that is a link to a folder outside is refused before
/// anything runs; swapped in after the grant was made, it leads nowhere.
#[test]
fn a_write_grant_cannot_be_redirected_by_a_link() {
    let env = attacker_env();
    let outside = env.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let out = env.work().join("out");
    std::os::unix::fs::symlink(&outside, &out).unwrap();
    let (code, envelope) = env.json(&["exec", "attacker", "slowwrite", "--yes", "--", "target=out/x"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("not_runnable"));
    assert_eq!(
        envelope["error"]["message"],
        json!("the pack's write path `out` leads out of the working directory through a link")
    );
    assert_eq!(envelope["spawned"], json!(false));
    // A real folder when the grant is made, a link by the time the pack writes.
    std::fs::remove_file(&out).unwrap();
    std::fs::create_dir(&out).unwrap();
    let child = env
        .command(&["exec", "attacker", "slowwrite", "--yes", "--", "target=out/x"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::rename(&out, env.work().join("out.old")).unwrap();
    std::os::unix::fs::symlink(&outside, &out).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(!outside.join("x").exists(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Permission denied"),
        "{output:?}"
    );
    // The control: unswapped, the grant works.
    std::fs::remove_file(&out).unwrap();
    std::fs::create_dir(&out).unwrap();
    let output = env.run(&["exec", "attacker", "slowwrite", "--yes", "--", "target=out/x"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(std::fs::read_to_string(out.join("x")).unwrap(), "pwned\n");
}

/// A CLI the kernel cannot execute is reported by the child before it would have
/// run, and nothing is left behind.
#[test]
fn a_cli_that_cannot_be_executed_is_refused_with_the_reason() {
    let env = attacker_env();
    std::fs::write(env.home().join("packs/attacker/attacker"), "not a program\n").unwrap();
    let (code, envelope) = env.json(&["exec", "attacker", "status"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("not_runnable"));
    assert_eq!(
        envelope["error"]["message"],
        json!("the pack's CLI could not be started; nothing of it ran")
    );
    let details = envelope["data"]["details"].to_string();
    assert!(details.contains("Exec format error"), "{envelope}");
    assert_eq!(envelope["next"], json!("hcpx availability attacker"));
}

/// Terminals and shared memory under `/dev` are hidden; the usual devices are not.
#[test]
fn only_harmless_devices_are_readable() {
    let env = attacker_env();
    for device in ["/dev/ptmx", "/dev/console", "/dev/tty0"] {
        if !Path::new(device).exists() {
            continue;
        }
        let output = env.run(&["exec", "attacker", "device", "--", &format!("dev={device}")]);
        assert_eq!(output.code, 1, "{device}: {output}");
        assert!(!output.stdout.contains("read"), "{output}");
    }
    for device in ["/dev/null", "/dev/zero", "/dev/urandom"] {
        let output = env.run(&["exec", "attacker", "device", "--", &format!("dev={device}")]);
        assert_eq!(output.code, 0, "{device}: {output}");
    }
}

/// Shared memory under `/dev` (another program's `/dev/shm` files, readable by the
/// user outside the call) is hidden: of `/dev` only the harmless devices are read.
/// As root the layer that hides the system's secrets also narrows `/dev`, so the
/// call's own allowlist is tried as `nobody` too, where that layer is not built.
#[test]
fn shared_memory_under_dev_is_hidden() {
    let env = attacker_env();
    let shared = Path::new("/dev/shm").join(format!("hcpx-it-{}", std::process::id()));
    std::fs::write(&shared, "shared-secret-61d0\n").unwrap();
    let file = format!("file={}", shared.display());
    let output = env.run(&["exec", "attacker", "cat", "--", &file]);
    let unprivileged = Nobody::new().map(|nobody| nobody.run(&["exec", "attacker", "cat", "--", &file]));
    std::fs::remove_file(&shared).unwrap();
    assert_eq!((output.code, output.stdout.as_str()), (1, ""), "{output}");
    assert!(output.stderr.contains("Permission denied"), "{output}");
    if let Some((code, stdout, stderr)) = unprivileged {
        assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
        assert!(stderr.contains("Permission denied"), "{stderr}");
    }
}

/// The syscall filter: no kernel keyrings (other processes' credentials), no io_uring
/// (which would open sockets past the filter), and on x86_64 nothing through the x32
/// ABI, whose numbers would slip past the rules (the kernel says ENOSYS, 38, where
/// it lacks x32; the filter says EPERM first).
#[test]
fn keyrings_and_io_uring_are_refused() {
    let env = attacker_env();
    let output = env.run(&["exec", "attacker", "syscalls"]);
    assert_eq!(output.code, 0, "{output}");
    let expected = if cfg!(target_arch = "x86_64") {
        "keyctl -1 1\nio_uring_setup -1 1\nx32 -1 1\n"
    } else {
        "keyctl -1 1\nio_uring_setup -1 1\n"
    };
    assert_eq!(output.stdout, expected);
}

/// Where the kernel layers do not exist (every OS but Linux, or an old kernel),
/// strict mode refuses, names the layers, and says how a person opts in.
#[tokio::test]
async fn without_the_kernel_layers_strict_mode_refuses() {
    let env = attacker_env();
    let environment = vec![
        ("PATH".to_owned(), env.path.clone()),
        ("HCP_HOME".to_owned(), env.home().display().to_string()),
    ];
    let mut ctx = hcpx::Context::new(environment.clone(), env.work(), false).unwrap();
    ctx.session = std::sync::Arc::new(hcpx::Session::with_machine(
        hcpx::sandbox::Machine::without_kernel_layers("not on this OS"),
    ));
    let argv: Vec<String> = ["--json", "exec", "attacker", "status"]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
    let mut sink = hcpx::BufferSink::default();
    let _calls = crate::common::calls_here();
    let outcome = hcpx::run_to_sink(argv.clone(), &ctx, &mut sink).await;
    assert_eq!(outcome.exit_code, 2);
    let envelope = &outcome.envelope;
    assert!(!envelope.spawned);
    let error = envelope.error.as_ref().unwrap();
    assert_eq!(error.reason, hcpx::error::Reason::NotRunnable);
    assert_eq!(
        error.message,
        "this machine cannot enforce what the pack needs: descriptors, containment, privileges, filesystem, process-isolation, network, sockets, syscall-filter"
    );
    assert_eq!(
        envelope.next.as_ref().map(ToString::to_string).as_deref(),
        Some("hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort")
    );
    // A person's explicit opt-in runs it with what there is.
    let environment = [
        environment,
        vec![("HCP_SANDBOX".to_owned(), "best-effort".to_owned())],
    ]
    .concat();
    let mut ctx = hcpx::Context::new(environment, env.work(), false).unwrap();
    ctx.session = std::sync::Arc::new(hcpx::Session::with_machine(
        hcpx::sandbox::Machine::without_kernel_layers("not on this OS"),
    ));
    let outcome = hcpx::run_to_sink(argv, &ctx, &mut hcpx::BufferSink::default()).await;
    assert_eq!(outcome.exit_code, 0, "{:?}", outcome.envelope.error);
}

/// Most people are not root: the same escapes, as `nobody`.
#[test]
fn an_unprivileged_user_gets_the_same_isolation() {
    let Some(nobody) = Nobody::new() else { return };
    let (code, stdout, stderr) = nobody.run(&["exec", "probe", "args", "--", "count=3"]);
    assert_eq!((code, stdout.as_str()), (0, "[--count=3]\n[--]\n"), "{stderr}");
    // Escaped processes end with the call.
    let (code, _, stderr) = nobody.run(&["exec", "attacker", "escape", "--", "tag=4106"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(pids_of("sleep 4106"), Vec::<String>::new());
    // hcpx's environment and other processes' memory stay out of reach.
    let (code, stdout, stderr) = nobody.run(&["exec", "attacker", "environ"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("parent-secret-0b3f"), "{stdout}");
    assert!(!stdout.contains("mem "), "{stdout}");
    // The parent survives a kill.
    let (code, stdout, stderr) = nobody.run(&["exec", "attacker", "kill"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.ends_with("still here\n") && !stdout.contains("killed"),
        "{stdout}"
    );
    // No socket, no TCP.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (code, stdout, stderr) = nobody.run(&["exec", "probe", "connect", "--", &format!("port={port}")]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("PermissionError"), "{stderr}");
    // `nobody` owns this folder, so only Landlock can refuse the write.
    let (code, _, stderr) = nobody.run(&[
        "exec",
        "probe",
        "write",
        "--yes",
        "--",
        &format!("target={}", nobody.base.join("escape.txt").display()),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(!nobody.base.join("escape.txt").exists());
    // Reads are an allowlist: nothing of its home, nothing of HCP_HOME.
    std::fs::create_dir_all(nobody.base.join("user/.ssh")).unwrap();
    std::fs::write(nobody.base.join("user/.ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    std::fs::write(nobody.base.join("home/bindings.json"), "{}\n").unwrap();
    for file in [
        "user/.ssh/id_ed25519",
        "home/bindings.json",
        "home/packs/probe/hcp.json",
    ] {
        let target = format!("file={}", nobody.base.join(file).display());
        let (code, stdout, stderr) = nobody.run(&["exec", "attacker", "cat", "--", &target]);
        assert_eq!((code, stdout.as_str()), (1, ""), "{file}: {stderr}");
        assert!(stderr.contains("Permission denied"), "{file}: {stderr}");
    }
    // No System V IPC or POSIX message queues.
    let (code, stdout, stderr) = nobody.run(&["exec", "attacker", "ipc", "--", "mode=leave", "tag=4111"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "shmget -1 1\nmsgget -1 1\nmq_open -1 1\n");
    // With the network, still no unix socket.
    let socket = nobody.base.join("user/s.sock");
    let _server = Server::serve(UnixListener::bind(&socket).unwrap());
    // Open to nobody: only the sandbox can refuse it.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let manifest = nobody.base.join("home/packs/attacker/hcp.json");
    let text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("\"network\": false", "\"network\": true");
    std::fs::write(&manifest, text).unwrap();
    let target = format!("to={}", socket.display());
    let (code, stdout, stderr) = nobody.run(&["exec", "attacker", "unix", "--", &target]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("PermissionError"), "{stderr}");
    // Declared, it is reached: hcpx connects the pack's socket, as nobody too.
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "\"timeoutMs\": 20000",
        &format!("\"sockets\": [{}],\n    \"timeoutMs\": 20000", json!(socket)),
    );
    std::fs::write(&manifest, text).unwrap();
    let (code, stdout, stderr) = nobody.run(&["exec", "attacker", "unix", "--", &target]);
    assert_eq!((code, stdout.as_str()), (0, "connected hi\n"), "{stderr}");
    // hcpx killed: nothing stays.
    let mut hcpx = nobody
        .command(&["exec", "attacker", "escape", "--", "tag=4107", "wait=60"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(5), || pids_of("sleep 4107").len() >= 3));
    // setpriv execs hcpx, so this is hcpx's pid.
    hcpx.kill().unwrap();
    hcpx.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(2), || pids_of("sleep 4107").is_empty()),
        "left behind: {:?}",
        pids_of("sleep 4107")
    );
}
