//! exec end to end: the real binary, the real sandbox helper, fixture packs whose CLI
//! is a shell script. Each protection has a test that fails if it is removed.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{TestEnv, pids_of, stable};

pub(crate) fn probe_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    env
}

pub(crate) fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[test]
fn transit_plan_prints_a_journey_and_json_has_data_and_child() {
    let env = TestEnv::new();
    let output = env.run(&[
        "exec",
        "transit",
        "plan",
        "--",
        "from=Westgate",
        "to=North Park",
        "at=08:00",
    ]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        output.stdout,
        "Westgate to North Park, leaving at or after 08:00:\n  08:00 Westgate -> 08:10 Central  Red line towards Eastfield, 3 stops\n  \
         08:21 Central -> 08:31 North Park  Blue line towards North Park, 3 stops\nArrive 08:31: 31 min from departure, 1 change.\n"
    );
    let (code, envelope) = env.json(&[
        "exec",
        "transit",
        "plan",
        "--",
        "from=Airport",
        "to=Cannery",
        "at=07:00",
    ]);
    assert_eq!(code, 0);
    assert_eq!(envelope["ok"], json!(true));
    assert_eq!(envelope["spawned"], json!(true));
    assert_eq!(envelope["exitCode"], json!(0));
    assert_eq!(envelope["data"]["arrive"], json!("07:35"));
    let child: Vec<&str> = envelope["child"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(child[0].ends_with("/transit"), "{child:?}");
    assert!(
        child[0].starts_with(env.home().join(".builtin").to_str().unwrap()),
        "{child:?}"
    );
    assert_eq!(
        &child[1..],
        ["plan", "--from=Airport", "--to=Cannery", "--at=07:00", "--json"]
    );
}

#[test]
fn no_parent_environment_reaches_the_child() {
    let env = probe_env()
        .env("AWS_SECRET_ACCESS_KEY", "parent-secret")
        .env("LD_PRELOAD", "/nonexistent.so")
        .env("GIT_DIR", "/elsewhere")
        .env("LANG", "C.UTF-8");
    let output = env.run(&["exec", "probe", "env"]);
    assert_eq!(output.code, 0, "{output}");
    let names: Vec<&str> = output
        .stdout
        .lines()
        .map(|line| line.split('=').next().unwrap())
        .collect();
    // `sh` itself adds PWD (and may add SHLVL); everything else is the allowlist.
    let unexpected: Vec<&&str> = names
        .iter()
        .filter(|n| !["HOME", "LANG", "PATH", "TMPDIR", "PWD", "SHLVL", "_"].contains(n))
        .collect();
    assert!(unexpected.is_empty(), "leaked: {unexpected:?}\n{output}");
    assert!(!output.stdout.contains("parent-secret"));
    let tmpdir = output
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("TMPDIR="))
        .unwrap();
    assert!(tmpdir.contains("hcpx-"), "{tmpdir}");
    // The private temporary folder is removed afterwards.
    assert!(!std::path::Path::new(tmpdir).exists());
}

#[test]
fn caller_values_never_become_options() {
    let env = probe_env();
    let (code, envelope) = env.json(&[
        "exec",
        "probe",
        "args",
        "--",
        "text=--upload-pack=evil",
        "rest=-rf",
        "rest=--exec=sh",
        "file=-x",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        lines(envelope["stdout"].as_str().unwrap()),
        [
            "[--text=--upload-pack=evil]",
            "[--]",
            // A path reaches the CLI anchored to the working directory.
            "[./-x]",
            "[-rf]",
            "[--exec=sh]"
        ]
    );
    // A positional value that starts with `-` is refused before anything runs.
    let (code, envelope) = env.json(&["exec", "probe", "args", "--", "word=-rf"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("invalid_param"));
    assert_eq!(envelope["spawned"], json!(false));
    assert!(!envelope["error"]["message"].as_str().unwrap().contains("-rf"));
}

#[test]
fn one_value_is_one_argument_never_split() {
    let env = probe_env();
    let (code, envelope) = env.json(&[
        "exec",
        "probe",
        "args",
        "--",
        "word=a b; rm -rf / $(x) `y` | z",
        "rest=two words",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        lines(envelope["stdout"].as_str().unwrap()),
        ["[a b; rm -rf / $(x) `y` | z]", "[--]", "[two words]"]
    );
}

#[test]
fn path_values_escaping_the_working_directory_are_refused() {
    let env = probe_env();
    std::fs::create_dir_all(env.work().join("inside")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc", env.work().join("link")).unwrap();
    for value in [
        "../outside",
        "/etc/passwd",
        "inside/../../x",
        "link/passwd",
        "link",
    ] {
        let (code, envelope) = env.json(&["exec", "probe", "args", "--", &format!("file={value}")]);
        assert_eq!(code, 2, "{value}: {envelope}");
        assert_eq!(envelope["error"]["reason"], json!("invalid_param"), "{value}");
        assert_eq!(envelope["spawned"], json!(false));
    }
    let (code, _) = env.json(&["exec", "probe", "args", "--", "file=inside/new.txt"]);
    assert_eq!(code, 0);
}

#[test]
fn parameter_refusals_name_what_is_known() {
    let env = probe_env();
    let (code, envelope) = env.json(&["exec", "probe", "args", "--", "nope=1"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["error"],
        json!({ "code": 2, "reason": "unknown_param", "message": "unknown parameter; this command takes: text, word, count, mode, file, rest" })
    );
    assert_eq!(
        envelope["data"]["known"],
        json!(["text", "word", "count", "mode", "file", "rest"])
    );
    let (_, envelope) = env.json(&["exec", "probe", "write"]);
    assert_eq!(envelope["error"]["reason"], json!("missing_param"));
    let (_, envelope) = env.json(&["exec", "probe", "args", "--", "count=many"]);
    assert_eq!(
        envelope["error"]["message"],
        json!("parameter `count` is not an integer")
    );
    let (_, envelope) = env.json(&["exec", "probe", "args", "--", "mode=turbo"]);
    assert_eq!(
        envelope["error"]["message"],
        json!("parameter `mode` is not one of: fast, slow")
    );
    let (_, envelope) = env.json(&["exec", "probe", "args", "--", "noequals"]);
    assert_eq!(envelope["error"]["reason"], json!("invalid_arguments"));
    let (_, envelope) = env.json(&["exec", "probe", "nosuch"]);
    assert_eq!(envelope["error"]["reason"], json!("unknown_command"));
    let (_, envelope) = env.json(&["exec", "nosuch", "x"]);
    assert_eq!(envelope["error"]["reason"], json!("unknown_pack"));
}

/// A misspelt pack gets, as `next`, the same exec with the closest pack and every
/// other word the caller gave; the message is fixed text naming only the pack, never
/// a value.
#[test]
fn a_misspelt_pack_suggests_the_corrected_exec() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&[
        "exec",
        "transt",
        "plan",
        "--dry-run",
        "--timeout-ms",
        "5000",
        "--",
        "from=Westgate",
        "to=North Park",
    ]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"],
        json!({ "code": 2, "reason": "unknown_pack", "message": "no pack is named `transt`; closest: transit, tar" })
    );
    assert_eq!(
        envelope["next"],
        json!("hcpx exec transit plan --dry-run --timeout-ms 5000 -- 'from=Westgate' 'to=North Park'")
    );
    let output = env.run(&["exec", "transt", "plan"]);
    assert_eq!(
        output.stderr,
        "error: no pack is named `transt`; closest: transit, tar\nnext: hcpx exec transit plan\n"
    );
    // Nothing close: where to look.
    let (_, envelope) = env.json(&["exec", "zzzzzz", "plan"]);
    assert_eq!(envelope["next"], json!("hcpx search"));
}

#[test]
fn timeout_kills_child_and_grandchild_within_the_bound() {
    let env = probe_env();
    let started = Instant::now();
    // 47 s is unique to this test, so the processes can be found.
    let (code, envelope) = env.json(&[
        "exec",
        "probe",
        "sleep",
        "--timeout-ms",
        "1000",
        "--",
        "seconds=47",
    ]);
    let elapsed = started.elapsed();
    assert_eq!(code, 124, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("timeout"));
    assert_eq!(envelope["error"]["code"], json!(124));
    assert_eq!(envelope["spawned"], json!(true));
    assert_eq!(envelope["stdout"], json!("sleeping 47\n"));
    assert!(elapsed < Duration::from_millis(1000 + 3000), "{elapsed:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(pids_of("sleep 47"), Vec::<String>::new());
}

/// Runs hcpx with `--json` and returns the envelope and the peak resident memory of
/// hcpx and everything it started (`None`: python3 missing, said loudly).
fn run_measuring_peak(env: &TestEnv, args: &[&str]) -> Option<(Value, u64)> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (stdout, peak) = crate::common::run_measuring_peak(&env.command(&all))?;
    Some((serde_json::from_slice(&stdout).unwrap(), peak))
}

#[test]
fn a_50_mib_flood_is_cut_at_8_mib_killed_and_memory_stays_bounded() {
    let env = probe_env();
    // hcpx's own size, measured in the same conditions: a call with a tiny output.
    let Some((_, baseline)) = run_measuring_peak(&env, &["exec", "probe", "sleep", "--", "seconds=1"]) else {
        return;
    };
    let Some((envelope, peak)) = run_measuring_peak(&env, &["exec", "probe", "flood", "--", "mib=50"]) else {
        return;
    };
    assert_eq!(envelope["ok"], json!(false));
    assert_eq!(envelope["error"]["reason"], json!("too_large"));
    assert_eq!(envelope["outputTruncated"], json!(true));
    assert_eq!(envelope["truncation"]["stdout"]["shown"], json!(8 * 1024 * 1024));
    assert!(envelope["truncation"]["stdout"]["total"].as_u64().unwrap() > 8 * 1024 * 1024);
    assert_eq!(envelope["stdout"].as_str().unwrap().len(), 8 * 1024 * 1024);
    assert!(envelope["data"].is_null());
    // hcpx holds the 8 MiB capture once and streams the JSON out. Holding the 50 MiB,
    // or one more copy of the capture, would pass the 12 MiB allowed here.
    assert!(baseline > 0 && peak > 0, "measured {baseline} and {peak} KiB");
    assert!(
        peak < baseline + 12 * 1024,
        "peak {peak} KiB against a baseline of {baseline} KiB"
    );
}

#[test]
fn policy_deny_refuses_and_names_the_rule() {
    let env = probe_env();
    assert_eq!(env.run(&["policy", "set", "probe.env", "deny"]).code, 0);
    let (code, envelope) = env.json(&["exec", "probe", "env"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("denied_by_policy"));
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("denied by rule `probe.env` (rules[0]) in "),
        "{message}"
    );
    assert_eq!(envelope["spawned"], json!(false));
    let (_, envelope) = env.json(&["policy", "check", "probe", "env"]);
    assert_eq!(envelope["data"]["decision"], json!("deny"));
}

#[test]
fn landlock_blocks_writes_outside_the_allowed_paths() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = probe_env();
    std::fs::create_dir_all(env.work().join("out")).unwrap();
    let outside = env.root.path().join("outside.txt");
    let output = env.run(&[
        "exec",
        "probe",
        "write",
        "--yes",
        "--",
        &format!("target={}", outside.display()),
    ]);
    assert_eq!(output.code, 1, "{output}");
    assert!(output.stderr.contains("Permission denied"), "{output}");
    assert!(!outside.exists());
    // Nor next to the allowed folder, in the working directory itself.
    let output = env.run(&["exec", "probe", "write", "--yes", "--", "target=beside.txt"]);
    assert_eq!(output.code, 1, "{output}");
    // The pack's `write` path works.
    let output = env.run(&["exec", "probe", "write", "--yes", "--", "target=out/ok.txt"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("out/ok.txt")).unwrap(),
        "written\n"
    );
}

#[test]
fn without_the_network_no_socket_opens_unless_the_pack_declares_network() {
    let env = probe_env();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let output = env.run(&["exec", "probe", "connect", "--", &format!("port={port}")]);
    assert_eq!(output.code, 1, "{output}");
    assert!(
        output
            .stderr
            .contains("PermissionError: [Errno 1] Operation not permitted"),
        "{output}"
    );
    assert!(!output.stdout.contains("connected"), "{output}");
    // The same CLI with `"network": true` does connect: the test can tell.
    let manifest = env.home().join("packs/probe/hcp.json");
    let text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("\"network\": false", "\"network\": true");
    std::fs::write(&manifest, text).unwrap();
    let output = env.run(&["exec", "probe", "connect", "--", &format!("port={port}")]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(output.stdout, "connected\n");
}

#[test]
fn unbound_and_not_runnable_refusals_say_how_to_fix() {
    let env = TestEnv::new();
    env.install_fixture("locked", "locked");
    let (code, envelope) = env.json(&["exec", "locked", "open"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("unbound"));
    assert_eq!(
        envelope["next"],
        json!("a person runs: hcpx bind locked LOCKED_KEY")
    );
    // Bound from the caller's environment by name: the value is read at exec.
    assert_eq!(
        env.run(&["bind", "locked", "LOCKED_KEY", "--from-env", "MY_LOCK"])
            .code,
        0
    );
    let env = env.env("MY_LOCK", "open-sesame");
    let output = env.run(&["exec", "locked", "open"]);
    assert_eq!((output.code, output.stdout.as_str()), (0, "open\n"), "{output}");

    let mut env = TestEnv::new();
    env.path = "/nonexistent".to_owned();
    let (code, envelope) = env.json(&["exec", "jq", "filter", "--", "filter=.", "file=x.json"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("not_runnable"));
    assert_eq!(
        envelope["next"],
        json!("install `jq`, then run hcpx availability jq")
    );
}

#[test]
fn child_failure_is_data_with_its_exit_code() {
    let env = probe_env();
    let (code, envelope) = env.json(&["exec", "probe", "fail"]);
    assert_eq!(code, 1);
    assert_eq!(envelope["ok"], json!(false));
    assert_eq!(envelope["exitCode"], json!(3));
    assert_eq!(envelope["error"]["code"], json!(1));
    assert_eq!(envelope["error"]["reason"], json!("failed"));
    assert_eq!(envelope["stderr"], json!("probe failed on purpose\n"));
}

#[test]
fn json_output_is_parsed_and_bad_json_is_reported() {
    let env = probe_env();
    let (code, envelope) = env.json(&["exec", "probe", "json"]);
    assert_eq!(code, 0);
    assert_eq!(envelope["data"], json!({ "ok": true, "n": 3 }));
    assert_eq!(envelope["child"][2], json!("--json"));
    // The CLI exited 0: the command worked, whatever it printed.
    let (code, envelope) = env.json(&["exec", "probe", "json", "--", "bad=true"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["ok"], json!(true));
    assert_eq!(envelope["data"], json!(null));
    assert_eq!(envelope["error"], json!(null));
    assert_eq!(
        envelope["warnings"],
        json!(["the pack's output is not JSON (line 2, column 0), so data is null"])
    );
    assert_eq!(envelope["stdout"], json!("{\"broken\": \n"));
    let output = env.run(&["exec", "probe", "json", "--", "bad=true"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(output.stdout, "{\"broken\": \n");
    assert_eq!(output.stderr, "");
}

#[test]
fn dry_run_shows_the_plan_and_runs_nothing() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = probe_env();
    std::fs::create_dir_all(env.work().join("out")).unwrap();
    let (code, envelope) = env.json(&["exec", "probe", "write", "--dry-run", "--", "target=out/x.txt"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(!env.work().join("out/x.txt").exists());
    let data = stable(envelope["data"].clone(), env.root.path());
    assert_eq!(data["decision"], json!("confirm"));
    assert_eq!(data["rule"]["match"], json!("defaults.write"));
    assert_eq!(
        data["child"],
        json!(["[TEMP]/home/packs/probe/probe", "write", "out/x.txt"])
    );
    // PROBE_TOKEN is declared but not bound: the child would not get it.
    assert_eq!(data["env"], json!(["HOME", "PATH", "TMPDIR"]));
    assert_eq!(data["timeoutMs"], json!(20000));
    let layers: Vec<(&str, bool)> = data["sandbox"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|layer| {
            (
                layer["layer"].as_str().unwrap(),
                layer["enforced"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(layers.len(), 15);
    assert!(layers.iter().all(|(_, enforced)| *enforced), "{layers:?}");
    assert_eq!(data["sandbox"]["write"], json!(["out"]));
    // What it reads beyond the system folders: the working directory, the folders
    // on PATH, and its own folder in HCP_HOME.
    assert_eq!(
        data["sandbox"]["read"],
        json!([
            "[TEMP]/work",
            "/usr/local/bin",
            "/usr/bin",
            "/bin",
            "[TEMP]/home/packs/probe"
        ])
    );
    // The text a person reads quotes the child's arguments as a shell needs them.
    let output = env.run(&["exec", "probe", "args", "--dry-run", "--", "text=a b"]);
    assert_eq!(output.code, 0, "{output}");
    let text = output
        .stdout
        .replace(&env.root.path().display().to_string(), "[TEMP]");
    assert!(
        text.starts_with(
            "decision: allow (built-in default `defaults.read`)\nchild:    [TEMP]/home/packs/probe/probe args '--text=a b' --\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\nreads:    the system folders, [TEMP]/work, /usr/local/bin, /usr/bin, /bin, [TEMP]/home/packs/probe\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\n  filesystem         on       Landlock: reads only the system folders, the working directory, the pack's own files and what it declares, never HCP_HOME; writes only its private temporary folder\n"
        ),
        "{text}"
    );
    assert_eq!(envelope["spawned"], json!(false));
    assert!(envelope["child"].is_null());
}

#[test]
fn concurrent_execs_each_leave_one_whole_audit_line() {
    let env = probe_env();
    let children: Vec<_> = (0..8)
        .map(|i| {
            env.command(&["exec", "probe", "args", "--", &format!("count={i}")])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let audit = std::fs::read_to_string(env.home().join("audit.log")).unwrap();
    let entries: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(entries.len(), 8);
    for entry in &entries {
        assert_eq!(entry["decision"], json!("ran"));
        assert_eq!(entry["exitCode"], json!(0));
        assert_eq!(entry["principal"], json!("terminal"));
        assert!(entry["outputBytes"].as_u64().unwrap() > 0);
    }
}

/// At a terminal `next` is the command line to type: this very call, with `--yes`
/// and the caller's own values quoted, never an ellipsis.
#[test]
fn needs_confirmation_suggests_the_same_command_with_yes() {
    let env = probe_env();
    let (code, envelope) = env.json(&[
        "exec",
        "probe",
        "write",
        "--timeout-ms",
        "5000",
        "target=out/a b.txt",
    ]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["next"],
        json!("hcpx exec probe write --yes --timeout-ms 5000 -- 'target=out/a b.txt'")
    );
    let (_, envelope) = env.json(&["exec", "probe", "wipe"]);
    assert_eq!(
        envelope["next"],
        json!("a person runs, at a terminal and without HCP_AGENT=1: hcpx exec probe wipe")
    );
}

/// exec and availability give one answer to "can this pack's CLI run": a CLI whose
/// `#!` interpreter is not on this machine is refused before anything runs, with
/// availability's reason and fix, in both.
#[test]
fn a_cli_whose_interpreter_is_missing_is_not_runnable_for_exec_as_for_availability() {
    let env = TestEnv::new();
    let dir = env.install_fixture("locked", "locked");
    let cli = dir.join("locked");
    let script = std::fs::read_to_string(&cli).unwrap();
    let body = script.split_once('\n').map_or("", |(_, rest)| rest);
    std::fs::write(&cli, format!("#!/nonexistent/interpreter\n{body}")).unwrap();
    let env = env.env("MY_LOCK", "open-sesame");
    assert_eq!(
        env.run(&["bind", "locked", "LOCKED_KEY", "--from-env", "MY_LOCK"])
            .code,
        0
    );
    let (_, availability) = env.json(&["availability", "locked"]);
    let problem = &availability["data"]["problems"][0];
    assert_eq!(problem["flag"], json!("runnable"), "{availability}");
    let (code, envelope) = env.json(&["exec", "locked", "open"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["spawned"], json!(false));
    assert_eq!(
        envelope["error"],
        json!({ "code": 2, "reason": "not_runnable", "message": problem["reason"] })
    );
    assert_eq!(envelope["next"], problem["fix"]);
}

/// A pack's CLI still open for writing somewhere when the call starts it ("Text
/// file busy": replicas sharing `HCP_HOME` write a built-in pack's CLI on their
/// first calls, and a process cloned meanwhile holds the descriptor for a moment)
/// is started again once it is free, rather than the call failing.
#[test]
fn a_cli_busy_for_a_moment_is_started_once_free() {
    let env = probe_env();
    let cli = env.home().join("packs/probe/probe");
    for _ in 0..3 {
        // Open for writing (nothing written) while the call starts, then let go.
        let writer = std::fs::OpenOptions::new().append(true).open(&cli).unwrap();
        let child = env
            .command(&["--json", "exec", "probe", "args", "--", "rest=x"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(120));
        drop(writer);
        let output = child.wait_with_output().unwrap();
        let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(envelope["ok"], json!(true), "{envelope}");
    }
}
