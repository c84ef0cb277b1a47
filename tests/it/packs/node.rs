//! The node pack against the real `node`: a script run with arguments that look like
//! options, node --test on a passing and a failing test, a syntax check that runs
//! nothing, the versions as JSON, and values that would leave the folder refused.

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

const TESTS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => assert.strictEqual(1 + 1, 2));\ntest('breaks', () => assert.strictEqual(2 + 2, 5));\n";

fn ready() -> Option<TestEnv> {
    if !have("node") {
        return None;
    }
    let env = env();
    install(&env, "node");
    env.write("work/args.js", "console.log(JSON.stringify(process.argv.slice(2)));\nrequire('fs').writeFileSync('out.txt', 'written');\n");
    env.write("work/math.test.js", TESTS);
    Some(env)
}

#[test]
fn run_passes_option_like_arguments_to_the_script() {
    let Some(env) = ready() else { return };
    let output = env.run(&[
        "exec",
        "node",
        "run",
        "--yes",
        "--",
        "script=args.js",
        "args=--inspect",
        "args=-e",
    ]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "[\"--inspect\",\"-e\"]\n"),
        "{output}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "written"
    );
    env.write("work/fail.js", "process.exit(7);\n");
    let (code, envelope) = env.json(&["exec", "node", "run", "--yes", "--", "script=fail.js"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(7)),
        "{envelope}"
    );
}

#[test]
fn test_reports_each_test_and_a_failure_fails_the_call() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "node", "test", "--yes", "--", "files=math.test.js"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(1)),
        "{envelope}"
    );
    let stdout = envelope["stdout"].as_str().unwrap();
    for line in ["✔ adds", "✖ breaks", "ℹ tests 2", "ℹ pass 1", "ℹ fail 1"] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let (code, envelope) = env.json(&[
        "exec",
        "node",
        "test",
        "--yes",
        "--",
        "files=math.test.js",
        "name=^adds$",
        "reporter=tap",
    ]);
    assert_eq!((code, &envelope["exitCode"]), (0, &json!(0)), "{envelope}");
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("TAP version 13\n"), "{stdout}");
    assert!(stdout.contains("ok 1 - adds"), "{stdout}");
    assert!(stdout.contains("# pass 1\n"), "{stdout}");
}

#[test]
fn check_parses_without_running() {
    let Some(env) = ready() else { return };
    let output = env.run(&["exec", "node", "check", "--", "file=args.js"]);
    assert_eq!((output.code, output.stdout.as_str()), (0, ""), "{output}");
    assert!(!env.work().join("out.txt").exists(), "check ran the script");
    env.write("work/broken.js", "const = 1;\n");
    let (code, envelope) = env.json(&["exec", "node", "check", "--", "file=broken.js"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert!(
        envelope["stderr"].as_str().unwrap().contains("SyntaxError"),
        "{envelope}"
    );
}

#[test]
fn version_is_json() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "node", "version"]);
    assert_eq!(code, 0, "{envelope}");
    let data = &envelope["data"];
    assert_eq!(
        (data["node"].as_str().unwrap().starts_with('v'), &data["platform"]),
        (true, &json!(std::env::consts::OS)),
        "{envelope}"
    );
    assert!(data["v8"].is_string(), "{envelope}");
}

#[test]
fn values_that_leave_the_folder_are_refused_and_option_like_files_are_files() {
    let Some(env) = ready() else { return };
    for (command, word, message) in [
        (
            "run",
            "script=../x.js",
            "parameter `script` leaves the working directory",
        ),
        (
            "test",
            "files=/etc/passwd",
            "parameter `files` is not a relative path inside the working directory",
        ),
        (
            "check",
            "file=../../x.js",
            "parameter `file` leaves the working directory",
        ),
    ] {
        let (code, envelope) = env.json(&["exec", "node", command, "--yes", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    env.write("work/--eval.js", "console.log('the file ran');\n");
    let output = env.run(&["exec", "node", "run", "--yes", "--", "script=--eval.js"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "the file ran\n"),
        "{output}"
    );
}
