//! The built-in packs that wrap programs of the machine (git, jq, sqlite3), run end
//! to end under the full sandbox: what each needs to read and write must be within
//! its grants, or the sandbox breaks the tools it exists to run.

use std::process::Command;

use serde_json::json;

use crate::common::{TestEnv, require};

fn have(program: &str) -> bool {
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
