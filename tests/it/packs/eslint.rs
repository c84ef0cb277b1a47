//! The eslint pack against the real `eslint`: problems as JSON (errors found are a
//! normal answer), fixes written only by fix, the configuration of a file, a missing
//! configuration as a failed call, and paths that leave the folder refused.

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

const CONFIG: &str =
    "export default [{ rules: { \"no-unused-vars\": \"error\", \"prefer-const\": \"error\" } }];\n";
const CODE: &str = "let x = 1;\nconst y = 2;\nconsole.log(x);\n";

fn ready() -> Option<TestEnv> {
    if !have("eslint") {
        return None;
    }
    let env = env();
    install(&env, "eslint");
    env.write("work/eslint.config.mjs", CONFIG);
    env.write("work/src/a.js", CODE);
    env.write("work/src/clean.js", "console.log(1);\n");
    Some(env)
}

/// A rule, line and column.
type Problem = (String, u64, u64);

/// `(file name, [(rule, line, column)])` of each file in `data`.
fn problems(data: &Value) -> Vec<(String, Vec<Problem>)> {
    data.as_array()
        .unwrap_or_else(|| panic!("data is not a list: {data}"))
        .iter()
        .map(|file| {
            let name = file["filePath"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned();
            let messages = file["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|message| {
                    (
                        message["ruleId"].as_str().unwrap_or("(fatal)").to_owned(),
                        message["line"].as_u64().unwrap(),
                        message["column"].as_u64().unwrap(),
                    )
                })
                .collect();
            (name, messages)
        })
        .collect()
}

fn rule(name: &str, line: u64, column: u64) -> Problem {
    (name.to_owned(), line, column)
}

#[test]
fn check_lists_problems_per_file_as_json_and_exit_1_is_an_answer() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&[
        "exec",
        "eslint",
        "check",
        "--",
        "paths=src/a.js",
        "paths=src/clean.js",
    ]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert_eq!(
        problems(&envelope["data"]),
        [
            (
                "a.js".to_owned(),
                vec![rule("prefer-const", 1, 5), rule("no-unused-vars", 2, 7)]
            ),
            ("clean.js".to_owned(), vec![])
        ]
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("src/a.js")).unwrap(),
        CODE
    );
    let (code, envelope) = env.json(&["exec", "eslint", "check", "--", "paths=src/clean.js"]);
    assert_eq!((code, &envelope["exitCode"]), (0, &json!(0)), "{envelope}");
}

#[test]
fn fix_rewrites_what_it_can_and_lists_what_is_left() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "eslint", "fix", "--yes", "--", "paths=src/a.js"]);
    assert_eq!((code, &envelope["exitCode"]), (0, &json!(1)), "{envelope}");
    assert_eq!(
        problems(&envelope["data"]),
        [("a.js".to_owned(), vec![rule("no-unused-vars", 2, 7)])]
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("src/a.js")).unwrap(),
        "const x = 1;\nconst y = 2;\nconsole.log(x);\n"
    );
}

#[test]
fn config_shows_the_rules_for_a_file() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "eslint", "config", "--", "file=src/a.js"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        (
            &envelope["data"]["rules"]["prefer-const"][0],
            &envelope["data"]["rules"]["no-unused-vars"][0]
        ),
        (&json!(2), &json!(2)),
        "{envelope}"
    );
}

#[test]
fn no_configuration_is_a_failed_call() {
    let Some(env) = ready() else { return };
    std::fs::remove_file(env.work().join("eslint.config.mjs")).unwrap();
    let (code, envelope) = env.json(&["exec", "eslint", "check"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(2)),
        "{envelope}"
    );
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .contains("ESLint couldn't find an eslint.config"),
        "{envelope}"
    );
}

#[test]
fn paths_that_leave_the_folder_or_read_as_options_are_refused() {
    let Some(env) = ready() else { return };
    for (command, word, message) in [
        (
            "check",
            "paths=../src",
            "parameter `paths` leaves the working directory",
        ),
        (
            "fix",
            "paths={..,.}/src",
            "parameter `paths` contains what this parameter refuses ([{}])",
        ),
        (
            "config",
            "file=/etc/passwd",
            "parameter `file` is not a relative path inside the working directory",
        ),
        (
            "check",
            "max_warnings=-1",
            "parameter `max_warnings` does not match the pattern [0-9]{1,5}",
        ),
    ] {
        let (code, envelope) = env.json(&["exec", "eslint", command, "--yes", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // A file named like an option is linted as a file.
    env.write("work/--fix.js", "let z = 1;\nconsole.log(z);\n");
    let (_, envelope) = env.json(&["exec", "eslint", "check", "--", "paths=--fix.js"]);
    assert_eq!(
        problems(&envelope["data"]),
        [("--fix.js".to_owned(), vec![rule("prefer-const", 1, 5)])],
        "{envelope}"
    );
}
