//! The prettier pack against the real `prettier`: a file it would change listed by
//! check (a normal answer) and left alone, shown formatted, rewritten by write, and
//! paths that leave the folder or expand to elsewhere refused.

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

const UGLY: &str = "const a = {b:1}\n";
const PRETTY: &str = "const a = { b: 1 };\n";

fn ready() -> Option<TestEnv> {
    if !have("prettier") {
        return None;
    }
    let env = env();
    install(&env, "prettier");
    env.write("work/src/ugly.js", UGLY);
    env.write("work/src/fine.js", PRETTY);
    Some(env)
}

fn read(env: &TestEnv, file: &str) -> String {
    std::fs::read_to_string(env.work().join(file)).unwrap()
}

#[test]
fn check_lists_what_would_change_and_changes_nothing() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "prettier", "check"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"], &envelope["stdout"]),
        (0, &json!(true), &json!(1), &json!("src/ugly.js\n")),
        "{envelope}"
    );
    assert_eq!(read(&env, "src/ugly.js"), UGLY);
    let (code, envelope) = env.json(&["exec", "prettier", "check", "--", "paths=src/fine.js"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stdout"]),
        (0, &json!(0), &json!("")),
        "{envelope}"
    );
}

#[test]
fn show_prints_the_formatted_file() {
    let Some(env) = ready() else { return };
    let output = env.run(&["exec", "prettier", "show", "--", "file=src/ugly.js"]);
    assert_eq!((output.code, output.stdout.as_str()), (0, PRETTY), "{output}");
    assert_eq!(read(&env, "src/ugly.js"), UGLY);
}

#[test]
fn write_formats_in_place_and_lists_what_changed() {
    let Some(env) = ready() else { return };
    let output = env.run(&["exec", "prettier", "write", "--yes", "--", "paths=src"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "src/ugly.js\n"),
        "{output}"
    );
    assert_eq!(read(&env, "src/ugly.js"), PRETTY);
    let (_, envelope) = env.json(&["exec", "prettier", "check"]);
    assert_eq!(envelope["exitCode"], json!(0), "{envelope}");
}

#[test]
fn a_syntax_error_is_a_failed_call() {
    let Some(env) = ready() else { return };
    env.write("work/src/broken.js", "const = ;\n");
    let (code, envelope) = env.json(&["exec", "prettier", "check", "--", "paths=src/broken.js"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(2)),
        "{envelope}"
    );
    assert!(
        envelope["stderr"].as_str().unwrap().contains("SyntaxError"),
        "{envelope}"
    );
}

#[test]
fn paths_that_leave_or_expand_out_of_the_folder_are_refused() {
    let Some(env) = ready() else { return };
    for (word, message) in [
        ("paths=../src", "parameter `paths` leaves the working directory"),
        (
            "paths={..,src}/ugly.js",
            "parameter `paths` contains what this parameter refuses ([{}])",
        ),
    ] {
        let (code, envelope) = env.json(&["exec", "prettier", "write", "--yes", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // A file named like an option is a file: it comes after `--`.
    env.write("work/--write.js", UGLY);
    let (_, envelope) = env.json(&["exec", "prettier", "check", "--", "paths=--write.js"]);
    assert_eq!(
        (&envelope["exitCode"], &envelope["stdout"]),
        (&json!(1), &json!("--write.js\n")),
        "{envelope}"
    );
    assert_eq!(read(&env, "--write.js"), UGLY);
}
