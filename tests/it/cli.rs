//! The conventions a person expects of a CLI: `help CMD`, `--version`, completions,
//! a man page, suggestions for mistyped commands and keys.

use serde_json::json;

use crate::common::TestEnv;

/// `hcpx help exec` is `hcpx exec --help`, for nested commands too.
#[test]
fn help_subcommand_shows_a_commands_help() {
    let env = TestEnv::new();
    let direct = env.run(&["exec", "--help"]);
    let output = env.run(&["help", "exec"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(output.stdout, direct.stdout);
    assert!(output.stdout.contains("hcpx exec transit plan"), "{output}");
    let output = env.run(&["help", "policy", "set"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.contains("hcpx policy set git.commit deny"),
        "{output}"
    );
    // Over `--json` the help text is the envelope's `data.help`.
    let (code, envelope) = env.json(&["help", "skill"]);
    assert_eq!(code, 0);
    assert!(
        envelope["data"]["help"]
            .as_str()
            .unwrap()
            .contains("hcpx skill transit")
    );
}

/// `hcpx help --json` is the command tree as data: every command with its summary,
/// the nested ones under theirs; `hcpx help exec --json` one command with its usage
/// and arguments. The text is clap's, as `--help` prints it.
#[test]
fn help_json_is_the_command_tree() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["help"]);
    assert_eq!(code, 0, "{envelope}");
    let output = env.command(&["help", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let direct: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(direct["data"], envelope["data"]);
    let data = &envelope["data"];
    assert_eq!(data["help"], json!(env.run(&["--help"]).stdout));
    assert_eq!(data["command"], json!(""));
    let names: Vec<&str> = data["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "search",
            "skill",
            "availability",
            "exec",
            "install",
            "uninstall",
            "bind",
            "unbind",
            "bindings",
            "output",
            "adopt",
            "mcp",
            "serve",
            "policy",
            "pack",
            "doctor",
            "completions",
            "man"
        ]
    );
    assert_eq!(
        data["commands"][14],
        json!({
            "name": "pack", "summary": "Tools for pack authors",
            "commands": [
                { "name": "pack check", "summary": "Validate a pack folder: manifest, SKILL.md and CLI file. Lists every problem" },
                { "name": "pack new", "summary": "Write a valid starting pack into ./ID/: a CLI script of its own, or with --bin a pack around a program already on PATH" }
            ]
        })
    );
    let (code, mut envelope) = env.json(&["help", "exec", "--json"]);
    assert_eq!(code, 0, "{envelope}");
    let text = envelope["data"].as_object_mut().unwrap().remove("help").unwrap();
    assert_eq!(text, json!(env.run(&["exec", "--help"]).stdout));
    assert_eq!(
        envelope["data"],
        json!({
            "command": "exec",
            "summary": "Run a pack command through policy, binding and the sandbox",
            "usage": "hcpx exec [OPTIONS] <PACK> <COMMAND> [KEY=VALUE]...",
            "arguments": [
                { "name": "PACK", "help": "The pack id", "required": true },
                { "name": "COMMAND", "help": "The command name", "required": true },
                { "name": "--dry-run", "help": "Show the plan (decision, child argv, env names, sandbox) without running it", "required": false },
                { "name": "--yes", "help": "Confirm a command whose policy is `confirm` (not enough for `confirm-human`)", "required": false },
                { "name": "--timeout-ms N", "help": "Stop the command after this many milliseconds (at most 600000)", "required": false },
                { "name": "KEY=VALUE", "help": "KEY=VALUE parameters (after `--` when a word starts with `-`)", "required": false }
            ],
            "commands": []
        })
    );
    assert_eq!(envelope["argv"], json!(["--json", "help", "exec", "--json"]));
}

/// The version is a field of its own, not a help text to cut apart.
#[test]
fn version_json_has_a_version_field() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(
        envelope["data"],
        json!({ "name": "hcpx", "version": env!("CARGO_PKG_VERSION") })
    );
    let output = env.run(&["--version"]);
    assert_eq!(output.stdout, format!("hcpx {}\n", env!("CARGO_PKG_VERSION")));
}

/// `policy set` refuses a pack or command that does not exist, with the rule it
/// probably meant, and takes it as written with `--force`.
#[test]
fn policy_set_refuses_unknown_targets_unless_forced() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["policy", "set", "git.comit", "deny"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"],
        json!({ "code": 2, "reason": "unknown_command",
                "message": "git has no such command; did you mean git.commit?" })
    );
    assert_eq!(envelope["next"], json!("hcpx policy set git.commit deny"));
    assert!(!env.home().join("policy.json").exists());
    let output = env.run(&["policy", "set", "gti.*", "confirm"]);
    assert_eq!(output.code, 2, "{output}");
    assert_eq!(
        output.stderr,
        "error: no pack is named `gti`; did you mean git.*?\n  a rule for a pack not installed yet: add --force\n\
         next: hcpx policy set 'git.*' confirm\n"
    );
    // Known targets and effects are taken; --force takes an unknown one as written.
    for args in [
        &["policy", "set", "git.commit", "deny"][..],
        &["policy", "set", "*.write", "confirm"],
        &["policy", "set", "hcp.install", "deny"],
        &["policy", "set", "weather.forecast", "confirm", "--force"],
    ] {
        let output = env.run(args);
        assert_eq!(output.code, 0, "{args:?}: {output}");
    }
    let policy = std::fs::read_to_string(env.home().join("policy.json")).unwrap();
    assert!(
        policy.contains("weather.forecast") && policy.contains("git.commit"),
        "{policy}"
    );
}

/// `policy unset` takes a rule out of the user's policy; an unknown rule is
/// refused with the closest one.
#[test]
fn policy_unset_removes_a_rule() {
    let env = TestEnv::new();
    assert_eq!(env.run(&["policy", "set", "git.commit", "deny"]).code, 0);
    assert_eq!(env.run(&["policy", "set", "git.*", "confirm"]).code, 0);
    let (code, envelope) = env.json(&["policy", "unset", "git.comit"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"]["message"],
        json!("the user policy has no such rule; did you mean git.commit?")
    );
    assert_eq!(envelope["next"], json!("hcpx policy unset git.commit"));
    let output = env.run(&["policy", "unset", "git.commit"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.starts_with("git.commit: removed (was deny, in "),
        "{output}"
    );
    let (_, envelope) = env.json(&["policy", "check", "git", "commit"]);
    assert_eq!(envelope["data"]["decision"], json!("confirm"));
    assert_eq!(envelope["data"]["rule"]["match"], json!("git.*"));
    // An agent cannot loosen its own policy this way either.
    let (code, envelope) = env.env("HCP_AGENT", "1").json(&["policy", "unset", "git.*"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("access_refused"));
}

/// A project rule that tries to loosen the user's policy is ignored, and
/// `policy show` says so instead of listing it as in force.
#[test]
fn policy_show_marks_project_rules_that_loosen() {
    let env = TestEnv::new();
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"git.*","decision":"confirm"}]}"#,
    );
    env.write(
        "work/.hcp/policy.json",
        r#"{"rules":[{"match":"git.status","decision":"deny"},{"match":"git.commit","decision":"allow"}]}"#,
    );
    let output = env.run(&["policy", "show"]);
    assert_eq!(output.code, 0, "{output}");
    let lines: Vec<&str> = output.stdout.lines().skip(7).take(4).collect();
    assert_eq!(
        lines,
        [
            "git.status            deny           [TEMP]/work/.hcp/policy.json",
            "git.commit            allow          [TEMP]/work/.hcp/policy.json",
            "                      IGNORED: looser than confirm by the rule `git.*` (rules[0]) in \
             [TEMP]/home/policy.json; the project can only tighten",
            "",
        ]
        .map(|line| line.replace("[TEMP]", &env.root.path().display().to_string())),
        "{output}"
    );
    let (_, envelope) = env.json(&["policy", "show"]);
    let rules = envelope["data"]["rules"].as_array().unwrap();
    let commit = rules.iter().find(|rule| rule["match"] == "git.commit").unwrap();
    assert_eq!(commit["ignored"]["userDecision"], json!("confirm"));
    let status = rules.iter().find(|rule| rule["match"] == "git.status").unwrap();
    assert!(status.get("ignored").is_none(), "{status}");
    // And the decision agrees: the project's allow is not what decides.
    let (_, envelope) = env.json(&["policy", "check", "git", "commit"]);
    assert_eq!(envelope["data"]["decision"], json!("confirm"));
}

/// A mistyped command gets the closest one, and `next` is the corrected call with
/// every flag and parameter the caller gave.
#[test]
fn exec_suggests_the_closest_command_and_key() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["exec", "git", "lgo", "--dry-run", "--", "n=3"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("unknown_command"));
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the pack has no such command; closest: log; its commands: "),
        "{envelope}"
    );
    assert_eq!(envelope["next"], json!("hcpx exec git log --dry-run -- 'n=3'"));
    let output = env.run(&["exec", "git", "lgo"]);
    assert!(output.stderr.ends_with("next: hcpx exec git log\n"), "{output}");
    // A mistyped key: named in the details (never in the message) and in `data`.
    let (code, envelope) = env.json(&["exec", "transit", "plan", "--", "frm=Westgate", "to=Cannery"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"]["message"],
        json!("unknown parameter; closest: from; this command takes: from, to, at")
    );
    assert_eq!(envelope["data"]["key"], json!("frm"));
    assert_eq!(envelope["data"]["closest"], json!("from"));
    assert_eq!(
        envelope["next"],
        json!("hcpx exec transit plan -- 'from=Westgate' 'to=Cannery'")
    );
    let output = env.run(&["exec", "transit", "plan", "frm=Westgate", "to=Cannery"]);
    assert_eq!(
        output.stderr,
        "error: unknown parameter; closest: from; this command takes: from, to, at\n  \
         unknown key: `frm`; did you mean `from`?\nnext: hcpx exec transit plan -- 'from=Westgate' 'to=Cannery'\n"
    );
}

/// `next` keeps every flag the caller gave: `--scope user` above all, without
/// which the project file would be written.
#[test]
fn adopt_next_keeps_scope_and_every_flag() {
    let env = TestEnv::new();
    let output = env.run(&["adopt", "claude-code", "--scope", "user"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output
            .stdout
            .ends_with("next: hcpx adopt claude-code --scope user --write\n"),
        "{output}"
    );
    // Not at a terminal: the confirmation is asked for with the same flags.
    let (code, envelope) = env.json(&["adopt", "claude-code", "--scope", "user", "--write"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("needs_confirmation"));
    assert_eq!(
        envelope["next"],
        json!("hcpx adopt claude-code --scope user --write --yes")
    );
}

/// hcpx styles nothing, even on a terminal (so `NO_COLOR` has nothing to turn
/// off): help, errors, results and plans are plain text wherever they go.
#[test]
fn no_colour_or_styling_even_on_a_terminal() {
    let env = TestEnv::new();
    let bin = crate::common::BIN;
    let line = format!(
        "{bin} --help; {bin} help exec; {bin} search journey; {bin} policy show; {bin} exec git lgo; \
         {bin} exec transit plan --dry-run -- from=Westgate to=Harbour at=08:00; {bin} frobnicate"
    );
    let Some(mut script) = env.in_terminal(&line) else {
        return;
    };
    let output = script.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Usage: hcpx"), "{text}");
    assert!(text.contains("closest: log"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "an escape sequence reached the terminal:\n{text:?}"
    );
}

/// Completion scripts come from the same tree that parses: every command is in
/// them, and the shells accept them.
#[test]
fn completions_for_each_shell() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = env.run(&["completions", shell]);
        assert_eq!(output.code, 0, "{shell}: {output}");
        for word in ["exec", "adopt", "unset", "completions", "dry-run"] {
            assert!(output.stdout.contains(word), "{shell} lacks {word}");
        }
    }
    let script = env.write("work/hcpx.bash", &env.run(&["completions", "bash"]).stdout);
    // The script loads in bash and completes a subcommand.
    let bash = std::path::Path::new("/bin/bash");
    if crate::common::require(bash.exists(), "bash") {
        let output = std::process::Command::new(bash)
            .args(["--norc", "-c"])
            .arg(format!(
                "source {}; COMP_WORDS=(hcpx pol); COMP_CWORD=1; COMP_LINE='hcpx pol'; COMP_POINT=8; \
                 _hcpx hcpx pol hcpx; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), "policy\n", "{output:?}");
    }
    let (code, envelope) = env.json(&["completions", "fish"]);
    assert_eq!(code, 0);
    assert_eq!(envelope["data"]["shell"], json!("fish"));
    let output = env.run(&["completions", "tcsh"]);
    assert_eq!(output.code, 2, "{output}");
}

/// The bash script, sourced in a real bash, completes what only hcpx knows the way
/// bash asks at a TAB (`COMP_LINE` up to the cursor): pack ids, a pack's commands, a
/// command's keys (without the ones given), binding
/// names, installed packs for `uninstall`, the catalog's for `install`; and leaves
/// flags and subcommands to clap's words.
#[test]
fn bash_completes_packs_commands_and_keys() {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    let script = env.write("work/hcpx.bash", &env.run(&["completions", "bash"]).stdout);
    let bash = std::path::Path::new("/bin/bash");
    if !crate::common::require(bash.exists(), "bash") {
        return;
    }
    let bin = std::path::Path::new(crate::common::BIN).parent().unwrap();
    let tab = |line: &str| -> String {
        let output = env
            .command_of(bash, &["--norc", "-c"])
            .arg(format!(
                "source {}; COMP_LINE=\"$1\"; COMP_POINT=${{#1}}; read -ra COMP_WORDS <<< \"$1\"; \
                 [[ $1 == *' ' ]] && COMP_WORDS+=(''); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
                 _hcpx_dynamic hcpx \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 printf '%s|' \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .arg("bash")
            .arg(line)
            .env("PATH", format!("{}:{}", bin.display(), env.path))
            .output()
            .unwrap();
        assert!(output.stderr.is_empty(), "{line}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    for (line, expected) in [
        ("hcpx exec ", "git|jq|probe|sqlite|transit|"),
        ("hcpx exec tr", "transit|"),
        ("hcpx --json exec --dry-run g", "git|"),
        (
            "hcpx exec git ",
            "status|log|diff|show|branches|add|commit|reset-hard|",
        ),
        ("hcpx exec git l", "log|"),
        ("hcpx exec git log -- ", "n=|rev=|path=|"),
        ("hcpx exec git log -- n=3 ", "rev=|path=|"),
        ("hcpx exec git log r", "rev=|"),
        ("hcpx skill ", "git|jq|probe|sqlite|transit|"),
        // availability takes the catalog's packs, installed or not.
        ("hcpx availability s", "shellcheck|sqlite|"),
        // install offers the catalog's ids once a word is typed.
        ("hcpx install r", "redis-cli|rg|ruff|"),
        ("hcpx uninstall ", "probe|"),
        ("hcpx bind probe ", "PROBE_TOKEN|"),
        ("hcpx policy check h", "hcp|"),
        // clap's words: subcommands and flags.
        ("hcpx pol", "policy|"),
        ("hcpx exec git log --dry", "--dry-run|"),
    ] {
        assert_eq!(tab(line), expected, "{line}");
    }
}

/// `hcpx man` is a roff page of the whole CLI; `hcpx man policy set` one command's.
#[test]
fn man_pages() {
    let env = TestEnv::new();
    let output = env.run(&["man"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(output.stdout.contains(".TH hcpx 1"), "{}", output.stdout);
    assert!(output.stdout.contains(".SH SUBCOMMANDS"), "{}", output.stdout);
    let output = env.run(&["man", "policy", "set"]);
    assert!(
        output.stdout.contains(".TH hcpx-policy-set 1"),
        "{}",
        output.stdout
    );
    assert!(output.stdout.contains("\\-\\-force"), "{}", output.stdout);
    let (code, envelope) = env.json(&["man", "polcy"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["error"]["message"],
        json!("no such command; closest: policy")
    );
    assert_eq!(envelope["next"], json!("hcpx man policy"));
    // man(1) reads it, where man is installed.
    if std::path::Path::new("/usr/bin/man").exists() {
        let page = env.write("work/hcpx.1", &env.run(&["man", "exec"]).stdout);
        let output = std::process::Command::new("/usr/bin/man")
            .arg("-l")
            .arg(&page)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("hcpx-exec"), "{text}");
    }
}

/// install's `next` is the same install, quoted so a folder with a space stays one
/// word when the line is pasted into a shell.
#[test]
fn install_next_is_the_same_install_quoted() {
    let env = TestEnv::new();
    let dir = env.work().join("my pack");
    crate::common::copy_dir(&crate::common::builtin("transit"), &dir);
    let (code, envelope) = env.json(&["install", "./my pack"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("needs_confirmation"));
    assert_eq!(envelope["next"], json!("hcpx install './my pack' --yes"));
    let words = shell_words::split(envelope["next"].as_str().unwrap()).unwrap();
    assert_eq!(words, ["hcpx", "install", "./my pack", "--yes"]);
}
