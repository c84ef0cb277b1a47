//! policy show and policy check against real files.

use serde_json::json;

use crate::common::TestEnv;

#[test]
fn check_uses_builtin_defaults() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["policy", "check", "git", "commit"]);
    assert_eq!(code, 0);
    assert_eq!(
        envelope["data"],
        json!({
            "pack": "git", "command": "commit", "effect": "write", "principal": "terminal",
            "decision": "confirm",
            "rule": { "scope": "builtin", "match": "defaults.write", "file": null, "index": null },
            "meaning": "asks y/N at the terminal, or takes --yes"
        })
    );
}

#[test]
fn project_policy_in_an_ancestor_tightens() {
    let env = TestEnv::new().env("HCP_AGENT", "1");
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"git.*","decision":"allow"}]}"#,
    );
    env.write(
        "work/.hcp/policy.json",
        r#"{"rules":[{"match":"git.commit","decision":"deny"}]}"#,
    );
    std::fs::create_dir_all(env.work().join("sub/dir")).unwrap();
    let output = env
        .command(&["--json", "policy", "check", "git", "commit"])
        .current_dir(env.work().join("sub/dir"))
        .output()
        .unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["data"]["decision"], json!("deny"));
    assert_eq!(envelope["data"]["principal"], json!("agent"));
    assert_eq!(envelope["data"]["rule"]["scope"], json!("project"));
    // The user's allow still holds where the project says nothing.
    let (_, envelope) = env.json(&["policy", "check", "git", "add"]);
    assert_eq!(envelope["data"]["decision"], json!("allow"));
}

#[test]
fn unparsable_policy_denies_and_says_so() {
    let env = TestEnv::new();
    env.write("home/policy.json", "{ \"rules\": [ ");
    let output = env.run(&["policy", "check", "transit", "plan"]);
    assert_eq!(output.code, 0);
    assert!(
        output
            .stdout
            .starts_with("transit.plan (read) for terminal: deny (refused)\n  by unparsable policy file"),
        "{output}"
    );
    let output = env.run(&["policy", "show"]);
    assert!(
        output.stdout.contains("is UNPARSABLE (not valid JSON"),
        "{output}"
    );
    assert!(
        output
            .stdout
            .contains("every exec and install is denied until it is fixed"),
        "{output}"
    );
    // Changing it is refused: the file is broken, not the caller's words.
    let (code, envelope) = env.json(&["policy", "set", "transit.plan", "deny"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("io_error"), "{envelope}");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "the user policy {} cannot be parsed (not valid JSON",
                env.home().join("policy.json").display()
            )),
        "{envelope}"
    );
    assert_eq!(envelope["next"], json!("hcpx policy show"));
    let (_, envelope) = env.json(&["availability", "transit"]);
    assert_eq!(envelope["data"]["permitted"], json!(false));
    assert_eq!(
        envelope["data"]["problems"][0]["fix"],
        json!(
            "fix the field named in the policy file (docs/policy.md describes the format), then run `hcpx policy show`"
        )
    );
}

/// A policy file with one bad field: exec is denied, and the denial names the file,
/// the field by its JSON path, what it holds, what is taken there and how to
/// recover; `policy show` names the same field.
#[test]
fn a_bad_field_denies_exec_and_the_denial_says_how_to_recover() {
    let env = TestEnv::new();
    env.write(
        "home/policy.json",
        r#"{"rules":[
            {"match":"git.*","decision":"confirm"},
            {"match":"git.log","decision":"allow"},
            {"match":"transit.plan","decision":"always"}
        ]}"#,
    );
    let output = env.run(&["exec", "transit", "lines"]);
    insta::assert_snapshot!(output.to_string(), @r#"
    exit_code: 2
    ----- stdout -----
    ----- stderr -----
    error: denied by unparsable policy file [TEMP]/home/policy.json (rules[2].decision is "always", where the format takes one of allow, confirm, confirm-human, deny); every exec and install is denied until the file is fixed: correct that field (docs/policy.md describes the format) or move the file away, then `hcpx policy show` shows the policy in force
    next: hcpx policy show
    [EOF]
    "#);
    let (code, envelope) = env.json(&["exec", "transit", "lines"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["data"]["rule"],
        json!({
            "scope": "user", "match": "unparsable", "file": env.home().join("policy.json"), "index": null,
            "error": "rules[2].decision is \"always\", where the format takes one of allow, confirm, confirm-human, deny"
        })
    );
    let output = env.run(&["policy", "show"]);
    assert!(
        output.stdout.starts_with(&format!(
            "user policy:    {} is UNPARSABLE (rules[2].decision is \"always\", where the format takes one of \
             allow, confirm, confirm-human, deny): every exec and install is denied until it is fixed \
             (docs/policy.md describes the format)\n",
            env.home().join("policy.json").display()
        )),
        "{output}"
    );
}

#[test]
fn show_lists_every_rule_with_its_source() {
    let env = TestEnv::new();
    env.write(
        "home/policy.json",
        r#"{"defaults":{"write":"allow"},"rules":[{"match":"git.reset-hard","decision":"deny"}]}"#,
    );
    env.write(
        "work/.hcp/policy.json",
        r#"{"rules":[{"match":"*.write","decision":"confirm"}]}"#,
    );
    let output = env.run(&["policy", "show"]);
    insta::assert_snapshot!(output.to_string(), @r"
    exit_code: 0
    ----- stdout -----
    user policy:    [TEMP]/home/policy.json
    project policy: [TEMP]/work/.hcp/policy.json

    defaults.read         allow          built-in
    defaults.write        allow          [TEMP]/home/policy.json
    defaults.destructive  confirm-human  built-in
    git.reset-hard        deny           [TEMP]/home/policy.json
    *.write               confirm        [TEMP]/work/.hcp/policy.json

    The most specific match wins (pack.command, pack.*, *.effect, defaults); the project can only tighten.
    ----- stderr -----
    [EOF]
    ");
}

#[test]
fn check_refuses_unknown_commands_with_the_list() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["policy", "check", "git", "push"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("unknown_command"));
    assert_eq!(envelope["next"], json!("hcpx skill git"));
    let (code, envelope) = env.json(&["policy", "check", "hcp", "install"]);
    assert_eq!(code, 0);
    assert_eq!(envelope["data"]["decision"], json!("confirm"));
}

/// A project policy that exists but cannot be read as a regular file (a dangling
/// link, a FIFO, a folder) denies instead of being skipped; the user's allow would
/// otherwise run the command. A FIFO must not hang the call either.
#[test]
fn unreadable_project_policy_denies() {
    #[derive(Debug)]
    enum Kind {
        DanglingLink,
        Fifo,
        Folder,
    }
    for kind in [Kind::DanglingLink, Kind::Fifo, Kind::Folder] {
        let env = TestEnv::new();
        env.write(
            "home/policy.json",
            r#"{"rules":[{"match":"transit.*","decision":"allow"}]}"#,
        );
        let dir = env.work().join(".hcp");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("policy.json");
        match kind {
            Kind::DanglingLink => std::os::unix::fs::symlink(dir.join("gone.json"), &path).unwrap(),
            Kind::Fifo => rustix::fs::mknodat(
                rustix::fs::CWD,
                &path,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )
            .unwrap(),
            Kind::Folder => std::fs::create_dir(&path).unwrap(),
        }
        let (code, envelope) = env.json(&["policy", "check", "transit", "plan"]);
        assert_eq!(code, 0, "{kind:?}");
        assert_eq!(
            envelope["data"]["decision"],
            json!("deny"),
            "{kind:?}: {envelope}"
        );
        assert_eq!(envelope["data"]["rule"]["scope"], json!("project"), "{kind:?}");
        let (code, envelope) = env.json(&["exec", "transit", "lines"]);
        assert_eq!(code, 2, "{kind:?}: {envelope}");
        assert_eq!(envelope["error"]["reason"], json!("denied_by_policy"), "{kind:?}");
        let why = match kind {
            Kind::DanglingLink => "is a link to nothing; fix or remove it",
            Kind::Fifo | Kind::Folder => {
                "is not a regular file (a folder, FIFO or device); a policy must be a regular file"
            }
        };
        assert_eq!(
            envelope["error"]["message"],
            json!(format!(
                "denied by unparsable policy file {} ({why}); every exec and install is denied until the \
                 file is fixed: correct that field (docs/policy.md describes the format) or move the file \
                 away, then `hcpx policy show` shows the policy in force",
                path.display()
            )),
            "{kind:?}"
        );
    }
}

/// The user's own policy file as a folder or a FIFO denies too (and a FIFO does not
/// hang the call).
#[test]
fn user_policy_that_is_a_folder_or_fifo_denies() {
    for fifo in [false, true] {
        let env = TestEnv::new();
        let path = env.home().join("policy.json");
        if fifo {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &path,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )
            .unwrap();
        } else {
            std::fs::create_dir_all(&path).unwrap();
        }
        let (_, envelope) = env.json(&["policy", "check", "transit", "plan"]);
        assert_eq!(envelope["data"]["decision"], json!("deny"), "{envelope}");
        assert_eq!(envelope["data"]["rule"]["scope"], json!("user"));
        assert_eq!(
            envelope["data"]["rule"]["error"],
            json!("is not a regular file (a folder, FIFO or device); a policy must be a regular file")
        );
    }
}

/// A state folder that cannot be written is an `io_error` naming what failed, not a
/// usage error that would send a caller to change its arguments.
#[test]
fn an_unwritable_home_is_an_io_error() {
    let env = TestEnv::new();
    let file = env.root.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let env = env.env("HCP_HOME", file.to_str().unwrap());
    let (code, envelope) = env.json(&["policy", "set", "git.commit", "deny"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("io_error"), "{envelope}");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the state lock: "),
        "{envelope}"
    );
}

/// docs/policy.md's worked examples are what hcpx does: its user and project files
/// written as they stand, every `$ hcpx` line of its console blocks run, and the
/// output compared whole (`/home/me/.hcp` is `$HCP_HOME`, `/home/me/proj` the project).
#[test]
fn the_worked_examples_of_docs_policy_md_hold() {
    let doc =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policy.md"))
            .unwrap();
    let blocks = |fence: &str| -> Vec<String> {
        doc.split(fence)
            .skip(1)
            .map(|rest| rest.split("\n```").next().unwrap().to_owned())
            .collect()
    };
    let json = blocks("```json\n");
    let console = blocks("```console\n");
    assert_eq!((json.len(), console.len()), (4, 3), "the doc's blocks changed");
    let (user, project) = (&json[1], &json[2]);
    let env = TestEnv::new();
    let real = |text: &str| {
        text.replace("/home/me/.hcp", &env.home().display().to_string())
            .replace("/home/me/proj", &env.work().display().to_string())
    };
    let run_block = |block: &str| {
        for command in block.split("$ hcpx ").skip(1) {
            let (line, expected) = command.split_once('\n').unwrap();
            let words = shell_words::split(line).unwrap();
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let output = env.run(&words);
            assert_eq!(
                format!("{}{}", output.stdout, output.stderr),
                real(&format!("{}\n", expected.trim_end())),
                "hcpx {line}"
            );
        }
    };
    env.write("home/policy.json", user);
    env.write("work/.hcp/policy.json", project);
    run_block(&console[0]);
    run_block(&console[1]);
    // The table's decisions.
    for (pack, command, decision) in [
        ("git", "log", "allow"),
        ("git", "commit", "confirm"),
        ("git", "reset-hard", "deny"),
        ("sqlite", "exec", "confirm"),
        ("hcp", "install", "confirm-human"),
        ("transit", "plan", "allow"),
    ] {
        let (_, envelope) = env.json(&["policy", "check", pack, command]);
        assert_eq!(envelope["data"]["decision"], json!(decision), "{pack}.{command}");
    }
    let broken = user.replace(
        r#""hcp.install", "decision": "confirm-human""#,
        r#""hcp.install", "decision": "always""#,
    );
    assert_ne!(&broken, user);
    env.write("home/policy.json", &broken);
    run_block(&console[2]);
    // The rules for OAuth callers are a policy hcpx takes, listed with their callers
    // (their decisions: src/policy/tests_callers.rs and tests/it/http/oauth.rs).
    let team = TestEnv::new();
    team.write("home/policy.json", &json[3]);
    let (code, envelope) = team.json(&["policy", "show"]);
    assert_eq!(code, 0, "{envelope}");
    let named: Vec<(&str, &str)> = envelope["data"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|rule| {
            let caller = rule.get("subject").or_else(|| rule.get("group"))?;
            Some((rule["match"].as_str()?, caller.as_str()?))
        })
        .collect();
    assert_eq!(
        named,
        [
            ("git.push", "release"),
            ("git.push", "alice@example.com"),
            ("*.write", "admins")
        ]
    );
}
