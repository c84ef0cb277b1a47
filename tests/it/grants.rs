//! What a command is granted beyond the pack's sandbox, end to end with the grants
//! fixture (a shell script): the exit codes that mean success, a command's own
//! `write` (a `path` parameter's folder, made at spawn) and `network`, and
//! `sandbox.env` with the pack's cache folder. Each protection is attacked here and
//! fails when it is taken out.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{TestEnv, copy_fixture_as, require, require_kernel_layers};
use crate::mcp::Process;

fn grants_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("grants", "grants");
    env
}

/// The last audit line, as JSON.
fn last_audit(env: &TestEnv) -> Value {
    let log = std::fs::read_to_string(env.home().join("audit.log")).unwrap();
    serde_json::from_str(log.lines().last().unwrap()).unwrap()
}

/// The pack's cache folder, as its `--dry-run` plan names it.
fn cache_of(env: &TestEnv, pack: &str) -> PathBuf {
    let (code, plan) = env.json(&["exec", pack, "recall", "--dry-run"]);
    assert_eq!(code, 0, "{plan}");
    PathBuf::from(plan["data"]["sandbox"]["cache"].as_str().unwrap())
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn an_exit_code_the_command_counts_as_success_is_ok_and_still_reported() {
    let env = grants_env();
    let (code, envelope) = env.json(&["exec", "grants", "search", "--", "code=1"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        (
            &envelope["ok"],
            &envelope["exitCode"],
            &envelope["error"],
            &envelope["stdout"],
            &envelope["spawned"]
        ),
        (
            &json!(true),
            &json!(1),
            &Value::Null,
            &json!("exiting 1\n"),
            &json!(true)
        )
    );
    // The audit line records the child's own code.
    let audit = last_audit(&env);
    assert_eq!(
        (&audit["decision"], &audit["exitCode"], &audit["command"]),
        (&json!("ran"), &json!(1), &json!("search"))
    );
    // A person reads that 1 meant success here; stdout stays the pack's alone.
    let output = env.run(&["exec", "grants", "search", "--", "code=1"]);
    assert_eq!(
        (output.code, output.stdout.as_str(), output.stderr.as_str()),
        (
            0,
            "exiting 1\n",
            "note: exit 1, which this command counts as success\n"
        )
    );
    let output = env.run(&["exec", "grants", "search", "--", "code=0"]);
    assert_eq!((output.code, output.stderr.as_str()), (0, ""));
    // A code it does not list fails, as 1 does for a command that lists none.
    for (command, exit) in [("search", "2"), ("strict", "1")] {
        let (code, envelope) = env.json(&["exec", "grants", command, "--", &format!("code={exit}")]);
        assert_eq!(code, 1, "{command} {exit}: {envelope}");
        assert_eq!(
            (&envelope["ok"], &envelope["exitCode"], &envelope["error"]),
            (
                &json!(false),
                &json!(exit.parse::<i32>().unwrap()),
                &json!({
                    "code": 1, "reason": "failed",
                    "message": format!("the pack's CLI failed with exit code {exit}"),
                })
            ),
            "{command} {exit}"
        );
    }
}

#[test]
fn over_mcp_an_exit_code_the_command_counts_as_success_is_no_error() {
    let env = grants_env();
    let mut server = Process::initialized(&env);
    let response = server.call(2, json!(["exec", "grants", "search", "--", "code=1"]));
    let result = &response["result"];
    assert_eq!(result["isError"], json!(false), "{response}");
    let structured = &result["structuredContent"];
    assert_eq!(
        (&structured["ok"], &structured["exitCode"], &structured["error"]),
        (&json!(true), &json!(1), &Value::Null)
    );
    assert_eq!(
        result["content"][0]["text"],
        json!("exiting 1\n(exit 1, which this command counts as success)\n")
    );
    let response = server.call(3, json!(["exec", "grants", "strict", "--", "code=1"]));
    assert_eq!(response["result"]["isError"], json!(true), "{response}");
    let (code, _) = server.close();
    assert_eq!(code, 0);
}

/// A timeout stops the call: never a success, though the codes a stop gives (124,
/// 137, 143) are all in the command's list.
#[test]
fn a_call_hcpx_stops_never_succeeds_whatever_the_exit_codes_say() {
    let env = grants_env();
    let (code, envelope) = env.json(&["exec", "grants", "hang", "--timeout-ms", "300"]);
    assert_eq!(code, 124, "{envelope}");
    assert_eq!(
        (&envelope["ok"], &envelope["error"]["reason"]),
        (&json!(false), &json!("timeout"))
    );
}

#[test]
fn a_write_grant_is_the_folder_the_path_parameter_names_and_nothing_beside_it() {
    let env = grants_env();
    // The pack's own write path, which this command's `write` replaces.
    std::fs::create_dir_all(env.work().join("pack-out")).unwrap();
    let (code, envelope) = env.json(&["exec", "grants", "extract", "--yes", "--", "into=out/deep"]);
    assert_eq!(code, 0, "{envelope}");
    // Made at spawn, with its missing parent.
    assert!(env.work().join("out/deep").is_dir());
    assert_eq!(
        std::fs::read_to_string(env.work().join("out/deep/inside.txt")).unwrap(),
        "inside\n"
    );
    if !require_kernel_layers() {
        return;
    }
    assert_eq!(
        envelope["stdout"],
        json!("wrote inside\nbeside refused\npack-out refused\n")
    );
    assert!(!env.work().join("out/beside.txt").exists());
    assert!(!env.work().join("pack-out/file.txt").exists());
    // Without the parameter the command writes nothing at all of the folder.
    let (code, envelope) = env.json(&["exec", "grants", "extract", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["stdout"],
        json!("inside refused\nbeside refused\npack-out refused\n")
    );
    let mut names: Vec<String> = std::fs::read_dir(env.work())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["out", "pack-out"]);
}

/// A folder outside the working directory, by `..` or by a link, is refused before
/// anything runs, and nothing is made there.
#[test]
fn a_write_folder_that_leaves_the_working_directory_is_refused_before_spawning() {
    let env = grants_env();
    let outside = env.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.work().join("link-to-outside")).unwrap();
    for (into, reason) in [
        ("../x", "leaves the working directory"),
        ("link-to-outside", "leaves the working directory through a link"),
        (
            "link-to-outside/new",
            "leaves the working directory through a link",
        ),
    ] {
        let (code, envelope) = env.json(&[
            "exec",
            "grants",
            "extract",
            "--yes",
            "--",
            &format!("into={into}"),
        ]);
        assert_eq!(code, 2, "{into}: {envelope}");
        assert_eq!(
            (&envelope["spawned"], &envelope["error"]),
            (
                &json!(false),
                &json!({
                    "code": 2, "reason": "invalid_param",
                    "message": format!("parameter `into` {reason}"),
                })
            ),
            "{into}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!env.root.path().join("x").exists());
}

#[test]
fn a_commands_network_replaces_the_packs() {
    let env = grants_env();
    let network = |command: &str| {
        let (code, plan) = env.json(&["exec", "grants", command, "--dry-run"]);
        assert_eq!(code, 0, "{plan}");
        plan["data"]["sandbox"]["network"].clone()
    };
    assert_eq!(
        (network("fetch"), network("offline")),
        (json!(true), json!(false))
    );
    if !require_kernel_layers() || !require(Path::new("/usr/bin/python3").exists(), "python3") {
        return;
    }
    let (_, envelope) = env.json(&["exec", "grants", "fetch"]);
    assert_eq!(envelope["stdout"], json!("socket opened\n"), "{envelope}");
    let (_, envelope) = env.json(&["exec", "grants", "offline"]);
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("socket refused"), "{envelope}");
}

/// `--dry-run` shows the grants of this very call and makes nothing; `availability`
/// shows every command's as declared.
#[test]
fn dry_run_and_availability_show_the_effective_grants() {
    let env = grants_env();
    let (code, plan) = env.json(&["exec", "grants", "extract", "--dry-run", "--", "into=out/x"]);
    assert_eq!(code, 0, "{plan}");
    let sandbox = &plan["data"]["sandbox"];
    let cache = cache_of(&env, "grants");
    assert_eq!(
        (&sandbox["write"], &sandbox["network"], &sandbox["cache"]),
        (
            &json!(["out/x"]),
            &json!(false),
            &json!(cache.display().to_string())
        )
    );
    assert_eq!(
        plan["data"]["env"],
        json!([
            "CARGO_HOME",
            "GRANTS_CACHE",
            "GRANTS_MODE",
            "HOME",
            "PATH",
            "TMPDIR"
        ])
    );
    // Names, never values, in the plan; and nothing made.
    assert!(!plan.to_string().contains("fixed-1"), "{plan}");
    assert!(!env.work().join("out").exists());
    assert!(!cache.exists());
    let filesystem = sandbox["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|layer| layer["layer"] == "filesystem")
        .unwrap();
    assert!(
        filesystem["detail"].as_str().unwrap().ends_with(&format!(
            "writes only out/x, its cache folder {} and its private temporary folder",
            cache.display()
        )),
        "{filesystem}"
    );
    let text = env.run(&["exec", "grants", "extract", "--dry-run", "--", "into=out/x"]);
    assert!(
        text.stdout
            .contains(&format!("\ncache:    {}\n", cache.display())),
        "{text}"
    );
    let (_, available) = env.json(&["availability", "grants"]);
    let commands: Vec<String> = available["data"]["grants"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|command| {
            format!(
                "{} {} {}",
                command["command"], command["network"], command["write"]
            )
        })
        .collect();
    assert_eq!(
        commands,
        [
            r#""search" false []"#,
            r#""strict" false []"#,
            r#""hang" false []"#,
            r#""extract" false ["{into}"]"#,
            r#""fetch" true []"#,
            r#""offline" false []"#,
            r#""remember" false []"#,
            r#""recall" false []"#,
            r#""peek" false []"#,
        ]
    );
    assert_eq!(
        available["data"]["grants"]["cache"],
        json!(cache.display().to_string())
    );
}

/// Fixed values reach the child as declared; `{cache}` paths are in a folder of the
/// pack's own that outlives the call, mode 0700, outside `$HCP_HOME`.
#[test]
fn sandbox_env_sets_its_values_and_the_cache_folder_outlives_the_call() {
    let env = grants_env();
    let cache = cache_of(&env, "grants");
    let user = env.root.path().join("user");
    assert!(
        cache.starts_with(user.join(".cache/hcpx/packs")),
        "{}",
        cache.display()
    );
    assert!(
        cache
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("grants-")
    );
    let (code, envelope) = env.json(&["exec", "grants", "recall"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["stdout"],
        json!(format!(
            "mode=fixed-1\ncache={0}/notes\ncargo={0}/cargo\ncargo folder exists\nno note\n",
            cache.display()
        ))
    );
    let (code, envelope) = env.json(&["exec", "grants", "remember", "--", "note=kept between calls"]);
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("remembered\n")),
        "{envelope}"
    );
    let (_, envelope) = env.json(&["exec", "grants", "recall"]);
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap()
            .ends_with("cargo folder exists\nkept between calls\n"),
        "{envelope}"
    );
    assert_eq!(mode(&cache), 0o700);
    assert_eq!(mode(&cache.join("cargo")), 0o700);
    // doctor lists it, with its pack and size; uninstall removes it and says so.
    let (_, doctor) = env.json(&["doctor"]);
    assert_eq!(
        doctor["data"]["caches"],
        json!({
            "root": user.join(".cache/hcpx/packs").display().to_string(),
            "folders": [{ "path": cache.display().to_string(), "pack": "grants", "bytes": 19 }],
        })
    );
    let text = env.run(&["doctor"]);
    assert!(
        text.stdout
            .contains(&format!("  grants                   19 B  {}\n", cache.display())),
        "{text}"
    );
    let output = env.run(&["uninstall", "grants", "--yes"]);
    assert_eq!(
        (output.code, output.stdout),
        (
            0,
            format!(
                "uninstalled grants\nremoved its cache folder {}\n",
                cache.display()
            )
        )
    );
    assert!(!cache.exists());
    assert!(user.join(".cache/hcpx/packs").is_dir());
}

/// The folder is named for the pack's id and where it came from: another folder
/// installed under the same id starts with an empty cache, and an update from the
/// same place keeps it.
#[test]
fn a_pack_of_another_source_that_takes_the_id_starts_with_an_empty_cache() {
    let env = TestEnv::new();
    let first = env.root.path().join("work/first");
    let second = env.root.path().join("work/second");
    crate::common::copy_dir(&crate::common::fixture("grants"), &first);
    crate::common::copy_dir(&crate::common::fixture("grants"), &second);
    env.install_ok("first", false);
    let recall = |env: &TestEnv| {
        let (code, envelope) = env.json(&["exec", "grants", "recall"]);
        assert_eq!(code, 0, "{envelope}");
        envelope["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_owned()
    };
    let (code, _) = env.json(&["exec", "grants", "remember", "--", "note=from first"]);
    assert_eq!(code, 0);
    assert_eq!(recall(&env), "from first");
    env.install_ok("second", false);
    assert_eq!(recall(&env), "no note");
    // The first place again (a person's update): its cache is still there.
    std::fs::write(
        first.join("hcp.json"),
        std::fs::read_to_string(first.join("hcp.json"))
            .unwrap()
            .replace("\"0.1.0\"", "\"0.2.0\""),
    )
    .unwrap();
    env.install_ok("first", false);
    assert_eq!(recall(&env), "from first");
}

/// A link planted where the cache folder is kept (in its place, or in place of a
/// folder on its way) leads nowhere: the call is refused and nothing is written
/// where it points. One that leads into `$HCP_HOME` is refused as that.
#[test]
fn a_link_planted_at_the_cache_folder_does_not_redirect_writes() {
    let env = grants_env();
    let cache = cache_of(&env, "grants");
    let target = env.root.path().join("planted");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &cache).unwrap();
    let (code, envelope) = env.json(&["exec", "grants", "remember", "--", "note=redirected"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        (&envelope["spawned"], &envelope["error"]),
        (
            &json!(false),
            &json!({
                "code": 2, "reason": "not_runnable",
                "message": format!(
                    "{} is a link or not a folder; hcpx keeps the pack's cache there and follows no link, so remove it",
                    cache.display()
                ),
            })
        )
    );
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    // `~/.cache/hcpx` leads into HCP_HOME: a link on hcpx's own way, never followed.
    std::fs::remove_file(&cache).unwrap();
    let hcpx = env.root.path().join("user/.cache/hcpx");
    std::fs::remove_dir_all(&hcpx).unwrap();
    std::fs::create_dir_all(env.home().join("stash")).unwrap();
    std::os::unix::fs::symlink(env.home().join("stash"), &hcpx).unwrap();
    let (code, envelope) = env.json(&["exec", "grants", "remember", "--", "note=into home"]);
    assert_eq!(code, 2, "{envelope}");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "the pack's cache folder {} is inside HCP_HOME",
                cache.display()
            )),
        "{envelope}"
    );
    // The user's cache folder itself (XDG_CACHE_HOME, followed as the user set it)
    // leads into HCP_HOME.
    std::fs::remove_file(&hcpx).unwrap();
    let linked = env.root.path().join("linked-cache");
    std::os::unix::fs::symlink(env.home().join("stash"), &linked).unwrap();
    let mut command = env.command(&["--json", "exec", "grants", "remember", "--", "note=into home"]);
    command.env("XDG_CACHE_HOME", &linked);
    let output = command.output().unwrap();
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(2), "{envelope}");
    assert_eq!(
        (&envelope["spawned"], &envelope["error"]["reason"]),
        (&json!(false), &json!("not_runnable"))
    );
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "the pack's cache folder {}/hcpx/packs/grants-",
                linked.display()
            )),
        "{envelope}"
    );
    assert_eq!(std::fs::read_dir(env.home().join("stash")).unwrap().count(), 0);
}

/// Pack B gets nothing of pack A's cache: not by reading its path, not by declaring a
/// read of the folder that holds the caches, not by running in it.
#[test]
fn another_pack_cannot_read_a_packs_cache() {
    let env = grants_env();
    copy_fixture_as("grants", "other", &env.home().join("packs/other"));
    let (code, envelope) = env.json(&["exec", "grants", "remember", "--", "note=a secret of grants"]);
    assert_eq!(code, 0, "{envelope}");
    let cache = cache_of(&env, "grants");
    let note = cache.join("notes/note");
    let file = format!("file={}", note.display());
    assert_ne!(cache_of(&env, "other"), cache);
    if require_kernel_layers() {
        let (_, envelope) = env.json(&["exec", "other", "peek", "--", &file]);
        assert_eq!(
            envelope["stdout"],
            json!(format!("cat: {}: Permission denied\n", note.display())),
            "{envelope}"
        );
        // Its own commands read it.
        let (_, envelope) = env.json(&["exec", "grants", "peek", "--", &file]);
        assert_eq!(envelope["stdout"], json!("a secret of grants\n"));
    }
    // A declared read of the folder that holds the caches.
    let manifest = env.home().join("packs/other/hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "\"network\": false,\n    \"write\"",
        "\"network\": false,\n    \"read\": [\"~/.cache\"],\n    \"write\"",
    );
    std::fs::write(&manifest, text).unwrap();
    let caches = env.root.path().join("user/.cache/hcpx/packs");
    let (code, envelope) = env.json(&["exec", "other", "peek", "--", &file]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        (&envelope["spawned"], &envelope["error"]["message"]),
        (
            &json!(false),
            &json!(format!(
                "the pack's sandbox.read `~/.cache` holds the folder of the packs' cache folders ({}), which only each pack's own commands read, each its own folder",
                caches.display()
            ))
        )
    );
    // Run from inside the caches.
    let output = env
        .command(&["--json", "exec", "grants", "peek", "--", "file=notes/note"])
        .current_dir(&cache)
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(2), "{envelope}");
    assert_eq!(
        envelope["error"]["message"],
        json!(format!(
            "the working directory {} is inside the folder of the packs' cache folders ({}), which no pack may read; run it from another folder",
            cache.display(),
            caches.display()
        ))
    );
}
