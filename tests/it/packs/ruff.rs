//! The ruff pack against the real `ruff`: lint problems as JSON (a problem found is a
//! normal answer), fixes and formatting written only by the write commands, and the
//! values that could make ruff do something else refused.

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

fn ready() -> Option<TestEnv> {
    if !have("ruff") {
        return None;
    }
    let env = env();
    install(&env, "ruff");
    // The rules this test relies on, whatever ruff's defaults become.
    env.write("work/ruff.toml", "[lint]\nselect = [\"F\"]\n");
    env.write("work/bad.py", "import os\nx=1\n");
    env.write("work/clean.py", "x = 1\n");
    Some(env)
}

/// `(code, file name, row, column)` of each problem in `data`.
fn problems(data: &Value) -> Vec<(String, String, u64, u64)> {
    data.as_array()
        .unwrap_or_else(|| panic!("data is not a list: {data}"))
        .iter()
        .map(|problem| {
            let file = problem["filename"].as_str().unwrap();
            (
                problem["code"].as_str().unwrap().to_owned(),
                file.rsplit('/').next().unwrap().to_owned(),
                problem["location"]["row"].as_u64().unwrap(),
                problem["location"]["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn check_lists_problems_as_json_and_exit_1_is_an_answer() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "ruff", "check", "--", "paths=bad.py", "paths=clean.py"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert_eq!(
        problems(&envelope["data"]),
        [("F401".to_owned(), "bad.py".to_owned(), 1, 8)]
    );
    let (code, envelope) = env.json(&["exec", "ruff", "check", "--", "paths=clean.py"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["data"]),
        (0, &json!(0), &json!([])),
        "{envelope}"
    );
    // A read writes nothing: no cache folder in the project.
    assert!(!env.work().join(".ruff_cache").exists());
}

#[test]
fn check_statistics_counts_per_rule() {
    let Some(env) = ready() else { return };
    let (_, envelope) = env.json(&["exec", "ruff", "check", "--", "statistics=true", "select=F401"]);
    assert_eq!(
        envelope["data"],
        json!([{"code": "F401", "name": "unused-import", "count": 1, "fixable": true, "fixable_count": 1}]),
        "{envelope}"
    );
}

#[test]
fn fix_rewrites_the_file_and_lists_nothing_left() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "ruff", "fix", "--yes", "--", "paths=bad.py"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["data"]),
        (0, &json!(0), &json!([])),
        "{envelope}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("bad.py")).unwrap(),
        "x=1\n"
    );
}

#[test]
fn format_check_and_diff_change_nothing_and_format_rewrites() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&[
        "exec",
        "ruff",
        "format-check",
        "--",
        "paths=bad.py",
        "paths=clean.py",
    ]);
    assert_eq!((code, &envelope["exitCode"]), (0, &json!(1)), "{envelope}");
    assert_eq!(
        problems(&envelope["data"]),
        [("unformatted".to_owned(), "bad.py".to_owned(), 2, 1)]
    );
    let output = env.run(&["exec", "ruff", "format-diff", "--", "paths=bad.py"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            0,
            "--- bad.py\n+++ bad.py\n@@ -1,2 +1,3 @@\n import os\n-x=1\n+\n+x = 1\n\n"
        ),
        "{output}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("bad.py")).unwrap(),
        "import os\nx=1\n"
    );
    let output = env.run(&["exec", "ruff", "format", "--yes", "--", "paths=bad.py"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("bad.py")).unwrap(),
        "import os\n\nx = 1\n"
    );
}

#[test]
fn rule_explains_a_rule_as_json() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "ruff", "rule", "--", "code=F401"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        (
            &envelope["data"]["code"],
            &envelope["data"]["name"],
            &envelope["data"]["linter"]
        ),
        (&json!("F401"), &json!("unused-import"), &json!("Pyflakes"))
    );
}

#[test]
fn values_that_would_be_options_or_leave_the_folder_are_refused() {
    let Some(env) = ready() else { return };
    for (word, message) in [
        ("paths=../x.py", "parameter `paths` leaves the working directory"),
        (
            "select=--fix",
            "parameter `select` does not match the pattern [A-Z]{1,5}[0-9]{0,4}|ALL",
        ),
        (
            "ignore=E501 --fix",
            "parameter `ignore` does not match the pattern [A-Z]{1,5}[0-9]{0,4}",
        ),
    ] {
        let (code, envelope) = env.json(&["exec", "ruff", "check", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    let (code, envelope) = env.json(&["exec", "ruff", "rule", "--", "code=--all"]);
    assert_eq!((code, &envelope["spawned"]), (2, &json!(false)), "{envelope}");
    // A file whose name looks like an option is still a file: it comes after `--`.
    env.write("work/-x.py", "import sys\n");
    let (_, envelope) = env.json(&["exec", "ruff", "check", "--", "paths=-x.py"]);
    assert_eq!(
        problems(&envelope["data"]),
        [("F401".to_owned(), "-x.py".to_owned(), 1, 8)],
        "{envelope}"
    );
}
