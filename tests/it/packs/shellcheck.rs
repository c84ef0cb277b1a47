//! The `shellcheck` catalog pack against the real ShellCheck.

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

fn scripts() -> TestEnv {
    let env = env();
    env.write("work/bad.sh", "#!/bin/sh\necho $1\n");
    env.write("work/good.sh", "#!/bin/sh\necho \"$1\"\n");
    env.write("work/-n.sh", "#!/bin/sh\n[ $x == 1 ] && echo one\n");
    install(&env, "shellcheck");
    env
}

fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "shellcheck", command, "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

/// Problems are a normal answer (exit code 1, ok); a clean script is exit code 0.
#[test]
fn shellcheck_reports_problems_as_json_with_exit_code_1() {
    if !have("shellcheck") {
        return;
    }
    let env = scripts();
    let (code, envelope) = exec(&env, "check", &["files=bad.sh"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert_eq!(
        envelope["data"],
        json!({"comments": [{
            "file": "./bad.sh", "line": 2, "endLine": 2, "column": 6, "endColumn": 8, "level": "info", "code": 2086,
            "message": "Double quote to prevent globbing and word splitting.",
            "fix": {"replacements": [
                {"column": 6, "endColumn": 6, "endLine": 2, "insertionPoint": "afterEnd", "line": 2, "precedence": 7, "replacement": "\""},
                {"column": 8, "endColumn": 8, "endLine": 2, "insertionPoint": "beforeStart", "line": 2, "precedence": 7, "replacement": "\""}
            ]}
        }]})
    );
    let (code, envelope) = exec(&env, "check", &["files=good.sh"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["data"]),
        (0, &json!(0), &json!({"comments": []})),
        "{envelope}"
    );
    // severity, exclude, and a file whose name starts with `-` (after --).
    let (_, envelope) = exec(&env, "check", &["files=bad.sh", "severity=warning"]);
    assert_eq!(envelope["data"], json!({"comments": []}));
    let (_, envelope) = exec(&env, "check", &["files=-n.sh", "exclude=SC2086"]);
    let codes: Vec<&Value> = envelope["data"]["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["code"])
        .collect();
    assert_eq!(codes, [&json!(2154), &json!(3014)], "{envelope}");
}

#[test]
fn shellcheck_text_and_fix_diff() {
    if !have("shellcheck") {
        return;
    }
    let env = scripts();
    let output = env.run(&["exec", "shellcheck", "check", "--", "files=bad.sh"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.starts_with(
            "\nIn ./bad.sh line 2:\necho $1\n     ^-- SC2086 (info): Double quote to prevent globbing and word splitting.\n"
        ),
        "{output}"
    );
    let output = env.run(&["exec", "shellcheck", "fix-diff", "--", "files=bad.sh"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            0,
            "--- a/./bad.sh\n+++ b/./bad.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo $1\n+echo \"$1\"\n\n"
        ),
        "{output}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("bad.sh")).unwrap(),
        "#!/bin/sh\necho $1\n"
    );
}

/// A file that cannot be read is exit code 2, not ok; paths stay inside the
/// working directory.
#[test]
fn shellcheck_fails_on_missing_files_and_refuses_paths_outside() {
    if !have("shellcheck") {
        return;
    }
    let env = scripts();
    let (code, envelope) = exec(&env, "check", &["files=absent.sh"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(2)),
        "{envelope}"
    );
    for (params, message) in [
        (
            &["files=/etc/profile"][..],
            "parameter `files` is not a relative path inside the working directory",
        ),
        (
            &["files=../x.sh"],
            "parameter `files` leaves the working directory",
        ),
        (
            &["files=bad.sh", "exclude=--norc"],
            "parameter `exclude` does not match the pattern (SC)?[0-9]{4}",
        ),
    ] {
        let (code, envelope) = exec(&env, "check", params);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
}
