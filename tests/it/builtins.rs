//! The built-in packs that wrap programs of the machine (git, jq, sqlite3), run end
//! to end under the full sandbox: what each needs to read and write must be within
//! its grants, or the sandbox breaks the tools it exists to run.

use std::process::Command;

use serde_json::{Value, json};

use crate::common::{TestEnv, require};

pub(crate) fn have(program: &str) -> bool {
    require(
        ["/usr/bin", "/usr/local/bin", "/bin"]
            .iter()
            .any(|dir| std::path::Path::new(dir).join(program).exists()),
        program,
    )
}

fn git(env: &TestEnv, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(env.work())
        .env("HOME", env.root.path().join("user"))
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A command that takes paths (`log`, `add`) reads only the working directory and
/// system folders, plus what the manifest's `sandbox.read` names: git's own
/// configuration in `$HOME`, which git refuses to run without when it exists.
#[test]
fn git_runs_with_the_users_configuration() {
    if !have("git") {
        return;
    }
    let env = TestEnv::new();
    std::fs::write(
        env.root.path().join("user/.gitconfig"),
        "[user]\n\tname = Test Person\n\temail = test@example.com\n",
    )
    .unwrap();
    git(&env, &["init", "-q", "-b", "main"]);
    std::fs::write(env.work().join("a.txt"), "a\n").unwrap();
    let output = env.run(&["exec", "git", "add", "--yes", "--", "paths=a.txt"]);
    assert_eq!(output.code, 0, "{output}");
    let output = env.run(&["exec", "git", "commit", "--yes", "--", "message=First"]);
    assert_eq!(output.code, 0, "{output}");
    let output = env.run(&["exec", "git", "log", "--", "path=a.txt"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(output.stdout.ends_with("Test Person: First\n"), "{output}");
    let output = env.run(&["exec", "git", "status"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "## main\n"),
        "{output}"
    );
}

#[test]
fn jq_filters_a_file_in_the_working_directory() {
    if !have("jq") {
        return;
    }
    let env = TestEnv::new();
    std::fs::write(env.work().join("x.json"), r#"{"a": [1, 2]}"#).unwrap();
    let (code, envelope) = env.json(&["exec", "jq", "filter", "--", "filter=.a[1]", "file=x.json"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!("2\n"));
}

#[test]
fn sqlite_reads_and_writes_a_database_in_the_working_directory() {
    if !have("sqlite3") {
        return;
    }
    let env = TestEnv::new();
    let status = Command::new("sqlite3")
        .args(["t.db", "create table t(a); insert into t values (1);"])
        .current_dir(env.work())
        .status()
        .unwrap();
    assert!(status.success());
    let output = env.run(&[
        "exec",
        "sqlite",
        "exec",
        "--yes",
        "--",
        "db=t.db",
        "sql=insert into t values (2)",
    ]);
    assert_eq!(output.code, 0, "{output}");
    let output = env.run(&[
        "exec",
        "sqlite",
        "query",
        "--",
        "db=t.db",
        "sql=select sum(a) from t",
    ]);
    assert_eq!(output.code, 0, "{output}");
    assert!(output.stdout.contains('3'), "{output}");
}

/// Every built-in command that has a `--json` form, end to end: `ok` follows the
/// CLI's exit code; JSON output becomes `data`; output that is empty or not JSON
/// (an INSERT prints nothing) leaves `data` null with a warning, and never reports a
/// write that happened as a failure (an agent would retry it).
#[test]
fn every_builtin_json_command_succeeds_when_its_cli_does() {
    if !have("sqlite3") || !have("jq") {
        return;
    }
    let env = TestEnv::new();
    std::fs::write(env.work().join("x.json"), r#"{"a": [1, 2]}"#).unwrap();
    let empty = json!(["the pack's output is not JSON (the output is empty), so data is null"]);
    let cases: Vec<(Vec<&str>, Value, Value)> = vec![
        (
            vec!["jq", "filter", "--", "filter=.a[]", "file=x.json"],
            json!([1, 2]),
            json!(null),
        ),
        (
            vec!["jq", "filter", "--", "filter=.missing", "file=x.json"],
            json!(null),
            json!(null),
        ),
        (
            vec![
                "sqlite",
                "exec",
                "--yes",
                "--",
                "db=t.db",
                "sql=create table t(a)",
            ],
            json!(null),
            empty.clone(),
        ),
        (
            vec![
                "sqlite",
                "exec",
                "--yes",
                "--",
                "db=t.db",
                "sql=insert into t values (7)",
            ],
            json!(null),
            empty.clone(),
        ),
        (
            vec![
                "sqlite",
                "query",
                "--",
                "db=t.db",
                "sql=select count(*) as n from t",
            ],
            json!([{ "n": 1 }]),
            json!(null),
        ),
        (
            vec![
                "sqlite",
                "query",
                "--",
                "db=t.db",
                "sql=select a from t where a > 100",
            ],
            json!(null),
            empty,
        ),
    ];
    for (args, data, warnings) in cases {
        let mut argv = vec!["exec"];
        argv.extend(&args);
        let (code, envelope) = env.json(&argv);
        assert_eq!((code, &envelope["ok"]), (0, &json!(true)), "{args:?}: {envelope}");
        assert_eq!(envelope["data"], data, "{args:?}");
        assert_eq!(
            envelope.get("warnings").cloned().unwrap_or(json!(null)),
            warnings,
            "{args:?}"
        );
    }
    for args in [
        vec![
            "transit",
            "plan",
            "--",
            "from=Westgate",
            "to=North Park",
            "at=08:00",
        ],
        vec!["transit", "stops"],
        vec!["transit", "lines"],
        vec!["transit", "departures", "--", "stop=Westgate", "at=08:00"],
    ] {
        let mut argv = vec!["exec"];
        argv.extend(&args);
        let (code, envelope) = env.json(&argv);
        assert_eq!(code, 0, "{args:?}: {envelope}");
        assert!(
            envelope["data"].is_object() || envelope["data"].is_array(),
            "{args:?}: {envelope}"
        );
        assert_eq!(envelope.get("warnings"), None, "{args:?}");
    }
}

/// A `path` value that SQLite would read as a URI (`file:/elsewhere/x.db`) reaches
/// it anchored (`./file:/...`), a file name in the working directory: the database
/// outside is never opened, with or without the sandbox's confined reads.
#[test]
fn sqlite_never_opens_a_uri_given_as_a_path() {
    if !have("sqlite3") {
        return;
    }
    let env = TestEnv::new().env("HCP_SANDBOX", "best-effort");
    let outside = env.root.path().join("outside.db");
    let status = Command::new("sqlite3")
        .arg(&outside)
        .arg("create table s(v); insert into s values ('outside-secret');")
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir_all(env.work().join("file:")).unwrap();
    let db = format!("db=file:{}", outside.display());
    let (code, envelope) = env.json(&["exec", "sqlite", "query", "--", &db, "sql=select v from s"]);
    assert_eq!(code, 1, "{envelope}");
    let anchored = json!(format!("./file:{}", outside.display()));
    assert!(
        envelope["child"].as_array().unwrap().contains(&anchored),
        "{envelope}"
    );
    assert!(!envelope.to_string().contains("outside-secret"), "{envelope}");
}
