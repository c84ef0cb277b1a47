//! pack check and pack new.

use serde_json::json;

use crate::common::{TestEnv, builtin, fixture};

#[test]
fn every_builtin_pack_passes_check() {
    let env = TestEnv::new();
    for id in ["transit", "git", "sqlite", "jq"] {
        let dir = builtin(id);
        let (code, envelope) = env.json(&["pack", "check", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{id}: {envelope}");
        assert_eq!(envelope["data"]["id"], json!(id));
    }
}

#[test]
fn broken_pack_lists_every_problem() {
    let env = TestEnv::new();
    let dir = fixture("broken");
    let output = env.run(&["pack", "check", dir.to_str().unwrap()]);
    insta::assert_snapshot!(output.to_string(), @r#"
    exit_code: 2
    ----- stdout -----
    ----- stderr -----
    error: the pack is invalid: 8 problems
      id: must match ^[a-z0-9][a-z0-9._-]{0,63}$
      version: must be a semantic version such as 1.2.0
      sandbox.timeoutMs: must be an integer from 1 to 600000
      commands.go.effect: must be read, write or destructive
      commands.go.argv[1]: "to" must follow its option as the next element ("--to", "{to}"), be placed after a "--" element, or be declared "positional": true
      commands.go.argv[2]: unknown parameter "frm"
      SKILL.md: front matter `name` is "broken", but the pack id is "Broken"
      bin[0]: ./missing is not in the pack
    next: fix each problem listed, then run hcpx pack check again
    [EOF]
    "#);
    let (code, envelope) = env.json(&["pack", "check", dir.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("invalid_pack"));
    assert_eq!(
        envelope["data"]["problems"][5],
        json!({ "path": "commands.go.argv[2]", "message": "unknown parameter \"frm\"" })
    );
}

/// A CLI file that is not executable passes `pack check` with a note, since install
/// copies it executable; a missing SKILL.md is a problem.
#[test]
fn check_takes_a_non_executable_cli_with_a_note_and_refuses_a_missing_skill() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::new();
    let dir = env.root.path().join("work/p");
    crate::common::copy_dir(&fixture("locked"), &dir);
    std::fs::set_permissions(dir.join("locked"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = env.run(&["pack", "check", "p"]);
    insta::assert_snapshot!(output.to_string(), @r"
    exit_code: 0
    ----- stdout -----
    ok: locked 1.0.0 is a valid pack (1 command: open)
    note: ./locked is not executable in this folder; install copies it executable (chmod +x locked to run it from here)
    ----- stderr -----
    [EOF]
    ");
    std::fs::remove_file(dir.join("SKILL.md")).unwrap();
    let (code, envelope) = env.json(&["pack", "check", "p"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["data"]["problems"],
        json!([{ "path": "SKILL.md", "message": "is missing; every pack has a SKILL.md for agents" }])
    );
}

/// `pack check` and `install` give the same verdict on the same folder, whatever is
/// wrong with it: what passes the check installs, and what install refuses the check
/// refuses. A CLI file that is not executable passes both and runs once installed.
#[test]
fn pack_check_and_install_agree() {
    use std::os::unix::fs::PermissionsExt as _;
    type Change = fn(&std::path::Path, &std::path::Path);
    let cases: [(&str, Change, i32); 6] = [
        ("valid", |_, _| {}, 0),
        (
            "a CLI file that is not executable",
            |dir, _| {
                std::fs::set_permissions(dir.join("locked"), std::fs::Permissions::from_mode(0o644)).unwrap();
            },
            0,
        ),
        (
            "a SKILL.md that is a link",
            |dir, root| {
                std::fs::rename(dir.join("SKILL.md"), root.join("SKILL.md")).unwrap();
                std::os::unix::fs::symlink(root.join("SKILL.md"), dir.join("SKILL.md")).unwrap();
            },
            2,
        ),
        (
            "a CLI file with another hard link",
            |dir, root| {
                std::fs::hard_link(dir.join("locked"), root.join("locked-too")).unwrap();
            },
            2,
        ),
        (
            "no SKILL.md",
            |dir, _| std::fs::remove_file(dir.join("SKILL.md")).unwrap(),
            2,
        ),
        (
            "a manifest problem",
            |dir, _| {
                let text = std::fs::read_to_string(dir.join("hcp.json")).unwrap();
                std::fs::write(dir.join("hcp.json"), text.replace("\"1.0.0\"", "\"one\"")).unwrap();
            },
            2,
        ),
    ];
    for (what, change, verdict) in cases {
        let env = TestEnv::new();
        let dir = env.work().join("p");
        crate::common::copy_dir(&fixture("locked"), &dir);
        change(&dir, env.root.path());
        let check = env.run(&["pack", "check", "p"]);
        let install = env.run(&["install", "./p", "--yes"]);
        assert_eq!(
            (check.code, install.code),
            (verdict, verdict),
            "{what}:\n{check}\n{install}"
        );
        if verdict == 0 {
            let installed = env.home().join("packs/locked/locked");
            let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
            assert_eq!(mode & 0o111, 0o111, "{what}: {mode:o}");
        }
    }
}

#[test]
fn pack_new_writes_a_pack_that_passes_check_and_runs() {
    let env = TestEnv::new();
    let output = env.run(&["pack", "new", "weather"]);
    insta::assert_snapshot!(output.to_string(), @r"
    exit_code: 0
    ----- stdout -----
    created weather/ with hcp.json, SKILL.md, weather
    next: edit them, then run hcpx pack check weather
    ----- stderr -----
    [EOF]
    ");
    let (code, _) = env.json(&["pack", "check", "weather"]);
    assert_eq!(code, 0);
    // Its CLI does what the manifest says, with a quote that needs JSON escaping.
    let out = std::process::Command::new(env.work().join("weather/weather"))
        .args(["hello", "--name", "Ada \"the\" first", "--lang", "en", "--json"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        value,
        json!({ "greeting": "Hello, Ada \"the\" first!", "key": "unset" })
    );
    // A second time refuses, and bad ids are refused.
    assert_eq!(env.run(&["pack", "new", "weather"]).code, 2);
    assert_eq!(env.run(&["pack", "new", "Bad Id"]).code, 2);
    // Ids whose upper-case form is no binding name the manifest accepts fall back
    // to API_KEY; every generated pack passes its own check.
    for (id, key) in [
        ("7zip", "API_KEY"),
        ("ld", "API_KEY"),
        ("hcp-x", "API_KEY"),
        ("my.tool", "MY_TOOL_API_KEY"),
    ] {
        assert_eq!(env.run(&["pack", "new", id]).code, 0, "{id}");
        let manifest = std::fs::read_to_string(env.work().join(id).join("hcp.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        assert!(manifest["bindings"][key].is_object(), "{id}: {manifest}");
    }
}

/// The steps docs/packs.md walks through: new, check, install, exec (text and
/// `--json`), bind the declared key as the README shows, exec again.
#[test]
fn pack_new_runs_end_to_end_through_install_exec_and_bind() {
    let env = TestEnv::new();
    assert_eq!(env.run(&["pack", "new", "weather"]).code, 0);
    assert_eq!(env.run(&["pack", "check", "weather"]).code, 0);
    let (code, envelope) = env.json(&["install", "./weather", "--yes"]);
    assert_eq!(code, 0, "{envelope}");

    let output = env.run(&["exec", "weather", "hello", "--", "name=Ada"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "Hello, Ada!\n"),
        "{output}"
    );

    // Unbound, the optional key is simply absent; the enum's default is rendered.
    let (code, envelope) = env.json(&["exec", "weather", "hello", "--", "name=Ada", "lang=fr"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"],
        json!({ "greeting": "Bonjour, Ada!", "key": "unset" })
    );
    assert_eq!(
        envelope["child"].as_array().unwrap()[1..],
        json!(["hello", "--name", "Ada", "--lang", "fr", "--json"])
            .as_array()
            .unwrap()[..]
    );
    // The on/off flag: one element when true, none when false; a name that looks
    // like an option stays a value of --name.
    let (code, envelope) = env.json(&["exec", "weather", "hello", "--", "name=Ada", "loud=true"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"],
        json!({ "greeting": "HELLO, ADA!", "key": "unset" })
    );
    assert_eq!(
        envelope["child"].as_array().unwrap()[1..],
        json!(["hello", "--name", "Ada", "--lang", "en", "--loud", "--json"])
            .as_array()
            .unwrap()[..]
    );
    let (code, envelope) = env.json(&["exec", "weather", "hello", "--", "name=Ada", "loud=false"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["greeting"], json!("Hello, Ada!"));
    let (code, envelope) = env.json(&["exec", "weather", "hello", "--", "name=--loud"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("invalid_param"), "{envelope}");

    // The plan names only the variables the child would get: no unbound key.
    let (_, dry) = env.json(&["exec", "weather", "hello", "--dry-run", "--", "name=Ada"]);
    assert_eq!(dry["data"]["env"], json!(["HOME", "PATH", "TMPDIR"]), "{dry}");

    // `printf %s "$KEY" | hcpx bind weather WEATHER_API_KEY`, as in the README.
    let (code, envelope) = env.json(&["bindings"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(envelope.to_string().contains("WEATHER_API_KEY"), "{envelope}");
    env.bind("weather", "WEATHER_API_KEY", "wx-0123456789");
    let (code, envelope) = env.json(&["exec", "weather", "hello", "--", "name=Ada"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"],
        json!({ "greeting": "Hello, Ada!", "key": "set" })
    );
    assert!(!envelope.to_string().contains("wx-0123456789"));
    let (_, dry) = env.json(&["exec", "weather", "hello", "--dry-run", "--", "name=Ada"]);
    assert_eq!(
        dry["data"]["env"],
        json!(["HOME", "PATH", "TMPDIR", "WEATHER_API_KEY"]),
        "{dry}"
    );
    // Another key is refused with the one the pack declares.
    let output = env.run(&["bind", "weather", "API_KEY"]);
    assert_eq!(output.code, 2, "{output}");
    assert!(output.stderr.contains("it declares: WEATHER_API_KEY"), "{output}");
}

/// Every whole manifest in docs/packs.md passes `pack check`, and the one shown for
/// `pack new weather` is what `pack new` writes: the reference cannot drift from
/// the validator unnoticed.
#[test]
fn the_manifests_in_docs_packs_md_pass_check() {
    let env = TestEnv::new();
    let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/packs.md"))
        .unwrap();
    let blocks: Vec<serde_json::Value> = doc
        .split("```json\n")
        .skip(1)
        .filter_map(|rest| rest.split("\n```").next())
        .filter(|block| block.starts_with("{\n  \"hcp\": 1,"))
        .map(|block| serde_json::from_str(block).unwrap())
        .collect();
    assert!(blocks.len() >= 2, "{blocks:?}");
    for manifest in &blocks {
        let id = manifest["id"].as_str().unwrap();
        let dir = env.work().join("docs").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hcp.json"), manifest.to_string()).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {id}\ndescription: An example from docs/packs.md.\n---\n"),
        )
        .unwrap();
        if let Some(file) = manifest["bin"][0].as_str().unwrap().strip_prefix("./") {
            std::fs::write(dir.join(file), "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(dir.join(file), std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        let folder = format!("docs/{id}");
        let (code, envelope) = env.json(&["pack", "check", &folder]);
        assert_eq!(code, 0, "{id}: {envelope}");
    }
    assert_eq!(env.run(&["pack", "new", "weather"]).code, 0);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.work().join("weather/hcp.json")).unwrap()).unwrap();
    assert_eq!(
        blocks[0], written,
        "docs/packs.md shows another manifest than pack new writes"
    );
}

/// The fenced blocks of one `## ` section of docs/packs.md, as (language, text).
fn doc_section_blocks(heading: &str) -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/packs.md"))
        .unwrap();
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("docs/packs.md has no {heading:?}"));
    let section = &doc[start + heading.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let (lang, body) = after.split_once('\n').unwrap();
        let end = body.find("```").unwrap();
        blocks.push((lang.to_owned(), body[..end].to_owned()));
        rest = &body[end + 3..];
    }
    blocks
}

/// The "second example" of docs/packs.md (`lines`, grep over files) runs as the page
/// shows it: the manifest and SKILL.md from the page, every console line run and its
/// output compared (the dry run's first two lines), and what the page says of
/// `--json` without `json`: grep's lines in `stdout`, `data` null.
#[test]
fn the_second_example_in_docs_packs_md_runs_as_written() {
    let grep = ["/usr/bin/grep", "/bin/grep"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists());
    if !crate::common::require(grep.is_some(), "grep") {
        return;
    }
    let env = TestEnv::new();
    let blocks = doc_section_blocks("## A second example: wrapping a program on `PATH`");
    let [(_, manifest), (_, skill), (_, steps)] = blocks
        .try_into()
        .unwrap_or_else(|blocks: Vec<_>| panic!("expected json, markdown, console: {blocks:?}"));
    env.write("work/lines/hcp.json", &manifest);
    env.write("work/lines/SKILL.md", &skill);
    env.write("work/notes.txt", "a TODO\nb\n-x TODO\n");
    env.write("work/-odd.txt", "TODO 2\n");
    let mut lines = steps.lines().peekable();
    while let Some(line) = lines.next() {
        let line = line
            .strip_prefix("$ ")
            .unwrap_or_else(|| panic!("not a command: {line}"));
        let mut expected = String::new();
        while let Some(out) = lines.next_if(|next| !next.starts_with("$ ")) {
            expected.push_str(out);
            expected.push('\n');
        }
        let mut shown = String::new();
        for command in line.split(" && ") {
            let words = shell_words::split(command).unwrap();
            assert_eq!(words[0], "hcpx", "{line}");
            let words: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            let output = env.run(&words);
            assert!(!expected.is_empty() || output.code == 0, "{command}: {output}");
            shown.push_str(&output.stdout);
            shown.push_str(&output.stderr);
        }
        // The page shows the first lines of a dry run, then `...`, and not the
        // output of the install.
        let shown = match expected.strip_suffix("...\n") {
            Some(head) => shown
                .lines()
                .take(head.lines().count())
                .map(|l| format!("{l}\n"))
                .collect(),
            None if expected.is_empty() => String::new(),
            None => shown,
        };
        let shown = shown.replace(grep.unwrap(), "/usr/bin/grep");
        assert_eq!(
            shown,
            expected.trim_end_matches("...\n"),
            "`{line}` does not print what docs/packs.md shows"
        );
    }
    let (code, envelope) = env.json(&["exec", "lines", "find", "--", "pattern=TODO", "files=notes.txt"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"], json!(null));
    assert_eq!(envelope["stdout"], json!("1:a TODO\n3:-x TODO\n"));
}

/// The "third example" of docs/packs.md, step by step as a person follows it: the
/// manifest and the CLI are taken from the page, and every console line is run
/// and its output compared, so the page cannot drift. Then what the page says
/// about it: the exact argv the CLI received with the flag on and off, the
/// separated option, and the token only in its environment.
#[test]
fn the_third_example_in_docs_packs_md_runs_as_written() {
    let env = TestEnv::new();
    let blocks = doc_section_blocks("## A third example: a flag, a separate option value and a token");
    let [(_, new), (_, manifest), (_, script), (_, steps)] = blocks
        .iter()
        .filter(|(lang, _)| ["console", "json", "sh"].contains(&lang.as_str()))
        .cloned()
        .collect::<Vec<_>>()
        .try_into()
        .unwrap_or_else(|blocks: Vec<_>| panic!("expected console, json, sh, console: {blocks:?}"));
    let token = "tk-0123456789abcdef";

    // Runs one `$ ` line of the page and compares its output with the page's.
    let step = |line: &str, expected: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let output = match words.as_slice() {
            ["printf", "%s", _, "|", "hcpx", args @ ..] => {
                use std::io::Write as _;
                let mut child = env
                    .command(args)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                child.stdin.take().unwrap().write_all(token.as_bytes()).unwrap();
                let output = child.wait_with_output().unwrap();
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                )
            }
            ["hcpx", args @ ..] => {
                let output = env.run(args);
                format!("{}{}", output.stdout, output.stderr)
            }
            _ => panic!("a step the test does not know: {line}"),
        };
        let work = env.work().display().to_string();
        assert_eq!(
            output.replace(&work, "/home/me"),
            expected,
            "`{line}` does not print what docs/packs.md shows"
        );
    };
    let run_steps = |block: &str| {
        let mut lines = block.lines().peekable();
        while let Some(line) = lines.next() {
            let line = line
                .strip_prefix("$ ")
                .unwrap_or_else(|| panic!("not a command: {line}"));
            let mut expected = String::new();
            while let Some(out) = lines.next_if(|next| !next.starts_with("$ ")) {
                expected.push_str(out);
                expected.push('\n');
            }
            step(line, &expected);
        }
    };

    run_steps(&new);
    std::fs::write(env.work().join("tickets/hcp.json"), &manifest).unwrap();
    // Overwriting keeps the mode `pack new` gave the script.
    std::fs::write(env.work().join("tickets/tickets"), &script).unwrap();
    // Before the bind, the page's exec lines are refused: the token is required.
    let (code, envelope) = env.json(&["exec", "tickets", "list", "--", "project=web"]);
    assert_ne!(code, 0);
    assert_eq!(envelope["spawned"], json!(false), "{envelope}");
    run_steps(&steps);

    // The exact argv, flag on and off, and the token only in the environment.
    let child = |words: &[&str]| {
        let mut args = vec!["exec", "tickets", "list", "--"];
        args.extend_from_slice(words);
        let (code, envelope) = env.json(&args);
        assert_eq!(code, 0, "{envelope}");
        assert!(!envelope.to_string().contains(token), "{envelope}");
        let child: Vec<String> = serde_json::from_value(envelope["child"].clone()).unwrap();
        assert!(child[0].ends_with("/tickets"), "{child:?}");
        (
            child[1..].to_vec(),
            envelope["stdout"].as_str().unwrap().to_owned(),
        )
    };
    let (argv, stdout) = child(&["project=web", "label=bug", "closed=true", "since=2026-11-01"]);
    assert_eq!(
        argv,
        [
            "list",
            "--project",
            "web",
            "--label",
            "bug",
            "--since",
            "2026-11-01",
            "--all"
        ]
    );
    assert!(stdout.ends_with("token: [REDACTED:TICKETS_TOKEN]\n"), "{stdout}");
    let (argv, _) = child(&["project=web", "closed=false"]);
    assert_eq!(argv, ["list", "--project", "web"]);
    let (_, dry) = env.json(&["exec", "tickets", "list", "--dry-run", "--", "project=web"]);
    assert_eq!(
        dry["data"]["env"],
        json!(["HOME", "PATH", "TICKETS_TOKEN", "TMPDIR"]),
        "{dry}"
    );
    // The value reached the CLI itself (the redaction matched it) and nowhere else:
    // not in the audit log either.
    let audit = std::fs::read_to_string(env.home().join("audit.log")).unwrap();
    assert!(audit.contains("\"pack\":\"tickets\""), "{audit}");
    assert!(!audit.contains(token));
}

/// `pack new ID --bin PROGRAM` wraps a program on PATH with no script: `bin` is the
/// program, `program.versionArgs` comes from a `--version` that answers (with a
/// pattern from its first word), the description from the head of `--help`, and the
/// one command drafted, `help`, runs out of the box once installed.
#[test]
fn pack_new_bin_wraps_a_program_on_path() {
    let mut env = TestEnv::new();
    let script = "case $1 in\n  --version) echo 'greet 2.1.0' ;;\n  --help) printf 'Usage: greet [NAME]\\n\\nGreet people by name, politely.\\n  -l  loudly\\n' ;;\n  *) echo \"hello $1\" ;;\nesac";
    crate::programs::fake_program(&mut env, "greet", script);
    let (code, envelope) = env.json(&["pack", "new", "greeter", "--bin", "greet"]);
    assert_eq!(code, 0, "{envelope}");
    let program = env.root.path().join("bin/greet");
    assert_eq!(
        envelope["data"],
        json!({
            "id": "greeter", "dir": env.work().join("greeter"), "files": ["hcp.json", "SKILL.md"],
            "program": program,
            "drafted": { "command": "help", "descriptionFromHelp": true, "versionArgs": true, "version": "greet 2.1.0" }
        })
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.work().join("greeter/hcp.json")).unwrap()).unwrap();
    assert_eq!(
        manifest,
        json!({
            "hcp": 1, "id": "greeter", "version": "0.1.0",
            "description": "Greet people by name, politely.",
            "keywords": ["greeter", "greet"],
            "bin": ["greet"],
            "program": { "versionArgs": ["--version"], "versionPattern": "^greet" },
            "sandbox": { "network": false, "read": [], "write": [], "timeoutMs": 30000 },
            "commands": { "help": { "summary": "Show what greet says about its usage and options", "effect": "read", "argv": ["--help"] } }
        })
    );
    let skill = std::fs::read_to_string(env.work().join("greeter/SKILL.md")).unwrap();
    assert!(
        skill.starts_with("---\nname: greeter\ndescription: \"Greet people by name, politely. (Replace this"),
        "{skill}"
    );
    assert!(skill.contains("## What to edit"), "{skill}");
    let (code, envelope) = env.json(&["pack", "check", "greeter"]);
    assert_eq!(code, 0, "{envelope}");
    env.install_ok("./greeter", false);
    if !crate::common::require_kernel_layers() {
        return;
    }
    let (code, envelope) = env.json(&["exec", "greeter", "help"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        (&envelope["child"], &envelope["stdout"]),
        (
            &json!([program, "--help"]),
            &json!("Usage: greet [NAME]\n\nGreet people by name, politely.\n  -l  loudly\n")
        )
    );
    // The drafted versionPattern holds for this program.
    let (_, envelope) = env.json(&["availability", "greeter"]);
    assert_eq!(
        (
            &envelope["data"]["ready"],
            &envelope["data"]["program"]["version"]
        ),
        (&json!(true), &json!("greet 2.1.0"))
    );
}

/// A program whose `--help` fails gets the `version` command instead, and one
/// that says nothing a placeholder description; a name not on PATH is refused with
/// how to fix it, and nothing is written.
#[test]
fn pack_new_bin_drafts_what_the_program_allows_and_refuses_a_missing_one() {
    let mut env = TestEnv::new();
    crate::programs::fake_program(
        &mut env,
        "terse",
        "[ \"$1\" = --version ] && { echo 'terse-0.3'; exit 0; }\nexit 2",
    );
    let (code, envelope) = env.json(&["pack", "new", "terse", "--bin", "terse"]);
    assert_eq!(code, 0, "{envelope}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.work().join("terse/hcp.json")).unwrap()).unwrap();
    assert_eq!(
        (
            &manifest["description"],
            &manifest["program"],
            &manifest["commands"]
        ),
        (
            &json!("Run terse: describe in one line what terse does"),
            &json!({ "versionArgs": ["--version"], "versionPattern": "^terse" }),
            &json!({ "version": { "summary": "Show which terse this is and its version", "effect": "read", "argv": ["--version"] } })
        )
    );
    assert_eq!(env.json(&["pack", "check", "terse"]).0, 0);
    // Nothing answers: no program block, the help command, and the pack still checks.
    crate::programs::fake_program(&mut env, "mute", "exit 1");
    let (code, _) = env.json(&["pack", "new", "mute", "--bin", "mute"]);
    assert_eq!(code, 0);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.work().join("mute/hcp.json")).unwrap()).unwrap();
    assert_eq!(
        (&manifest["program"], &manifest["commands"]["help"]["argv"]),
        (&json!(null), &json!(["--help"]))
    );
    assert_eq!(env.json(&["pack", "check", "mute"]).0, 0);

    let (code, envelope) = env.json(&["pack", "new", "nope", "--bin", "nope-hcpx-missing"]);
    assert_eq!(code, 2);
    assert_eq!(
        (&envelope["error"], &envelope["next"]),
        (
            &json!({ "code": 2, "reason": "not_runnable",
                     "message": "no program by that name on PATH, so there is nothing to wrap; nothing was written" }),
            &json!(
                "install nope-hcpx-missing (or put the folder that holds it on PATH; `command -v nope-hcpx-missing` finds it), then run hcpx pack new nope --bin nope-hcpx-missing; a program may go by another name here (Debian's fd is fdfind)"
            )
        )
    );
    assert!(!env.work().join("nope").exists());
    for bad in ["./greet", "/usr/bin/rg", "-x", ""] {
        let (code, envelope) = env.json(&["pack", "new", "bad", "--bin", bad]);
        assert_eq!(
            (code, &envelope["error"]["reason"]),
            (2, &json!("invalid_arguments")),
            "{bad:?}"
        );
    }
    // A folder there already is refused before the program is asked anything.
    let (code, envelope) = env.json(&["pack", "new", "terse", "--bin", "terse"]);
    assert_eq!(
        (code, &envelope["error"]["reason"]),
        (2, &json!("invalid_arguments"))
    );
}

/// The real ripgrep: `pack new rgx --bin rg` passes `pack check`, and its drafted
/// command runs once installed.
#[test]
fn pack_new_bin_rg_checks_and_runs() {
    let rg = std::path::Path::new("/usr/bin/rg");
    if !crate::common::require(rg.exists(), "rg (ripgrep)") || !crate::common::require_kernel_layers() {
        return;
    }
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["pack", "new", "rgx", "--bin", "rg"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["drafted"]["command"], json!("help"));
    assert_eq!(env.json(&["pack", "check", "rgx"]).0, 0);
    env.install_ok("./rgx", false);
    let (code, envelope) = env.json(&["exec", "rgx", "help"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"].as_str().unwrap().starts_with("ripgrep "),
        "{envelope}"
    );
}
