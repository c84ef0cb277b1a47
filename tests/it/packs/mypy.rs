//! The mypy pack against the real `mypy`: type errors as JSON (errors found are a
//! normal answer), its cache in the pack's cache folder and never in the project, and
//! values that could make mypy do something else refused.

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

fn ready() -> Option<TestEnv> {
    if !have("mypy") {
        return None;
    }
    let env = env();
    install(&env, "mypy");
    env.write("work/bad.py", "def f(x: int) -> str:\n    return x\n");
    env.write("work/good.py", "x: int = 1\n");
    Some(env)
}

const RETURN_VALUE: &str = "Incompatible return value type (got \"int\", expected \"str\")";

#[test]
fn check_reports_a_type_error_as_json_and_exit_1_is_an_answer() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "mypy", "check", "--", "paths=bad.py", "paths=good.py"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert_eq!(
        envelope["data"],
        json!({
            "file": "bad.py", "line": 2, "column": 11, "end_line": 2, "end_column": 12,
            "message": RETURN_VALUE, "hint": null, "code": "return-value", "severity": "error"
        })
    );
    // The incremental cache is the pack's, never the project's.
    assert!(!env.work().join(".mypy_cache").exists());
}

#[test]
fn check_in_text_counts_errors_and_a_clean_file_succeeds() {
    let Some(env) = ready() else { return };
    let output = env.run(&["exec", "mypy", "check", "--", "module=bad"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            0,
            "bad.py:2:12: error: Incompatible return value type (got \"int\", expected \"str\")  [return-value]\n\
             Found 1 error in 1 file (checked 1 source file)\n"
        ),
        "{output}"
    );
    let output = env.run(&["exec", "mypy", "check", "--", "paths=good.py"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "Success: no issues found in 1 source file\n"),
        "{output}"
    );
}

#[test]
fn strict_finds_what_the_default_lets_pass() {
    let Some(env) = ready() else { return };
    env.write("work/loose.py", "def g(x):\n    return x\n");
    let (_, envelope) = env.json(&["exec", "mypy", "check", "--", "paths=loose.py"]);
    assert_eq!(envelope["exitCode"], json!(0), "{envelope}");
    let (_, envelope) = env.json(&["exec", "mypy", "check", "--", "paths=loose.py", "strict=true"]);
    assert_eq!(
        (&envelope["exitCode"], &envelope["data"]["code"]),
        (&json!(1), &json!("no-untyped-def")),
        "{envelope}"
    );
}

#[test]
fn no_target_is_a_failed_call() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "mypy", "check"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(2)),
        "{envelope}"
    );
}

#[test]
fn values_that_would_be_options_or_leave_the_folder_are_refused() {
    let Some(env) = ready() else { return };
    for (word, message) in [
        (
            "paths=../bad.py",
            "parameter `paths` leaves the working directory",
        ),
        (
            "python=/usr/bin/python3",
            "parameter `python` is not a relative path inside the working directory",
        ),
        (
            "module=--install-types",
            "parameter `module` does not match the pattern [A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*",
        ),
        (
            "python_version=3.1x",
            "parameter `python_version` does not match the pattern 3\\.[0-9]{1,2}",
        ),
    ] {
        let (code, envelope) = env.json(&["exec", "mypy", "check", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // A file named like an option is checked as a file (it comes after `--`).
    env.write("work/-c.py", "y: str = 1\n");
    let (_, envelope) = env.json(&["exec", "mypy", "check", "--", "paths=-c.py"]);
    assert_eq!(
        (&envelope["data"]["file"], &envelope["data"]["code"]),
        (&json!("-c.py"), &json!("assignment")),
        "{envelope}"
    );
}
