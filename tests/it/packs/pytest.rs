//! The pytest pack against the real `pytest`: a failing and a passing test in a
//! project made here, failures as an answer (exit 1) but a run that could not happen
//! as a failed call, one test by node id, collection that writes nothing, and node
//! ids that would leave the folder or read as options refused.

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

fn ready() -> Option<TestEnv> {
    if !have("pytest") {
        return None;
    }
    let env = env();
    install(&env, "pytest");
    env.write(
        "work/tests/test_math.py",
        "def add(a, b):\n    return a + b\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_broken():\n    assert add(2, 2) == 5\n",
    );
    Some(env)
}

/// The last line of pytest's report.
fn summary(stdout: &str) -> &str {
    stdout.lines().rfind(|line| !line.is_empty()).unwrap_or_default()
}

#[test]
fn run_reports_a_failure_as_an_answer() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "pytest", "run", "--yes", "--", "tb=line"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(
        stdout.contains("FAILED tests/test_math.py::test_broken - assert 4 == 5\n"),
        "{stdout}"
    );
    assert!(summary(stdout).starts_with("1 failed, 1 passed in "), "{stdout}");
}

#[test]
fn test_runs_one_test_by_node_id() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&[
        "exec",
        "pytest",
        "test",
        "--yes",
        "--",
        "node=tests/test_math.py::test_add",
    ]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(0)),
        "{envelope}"
    );
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(stdout.contains("tests/test_math.py::test_add PASSED"), "{stdout}");
    assert!(!stdout.contains("test_broken"), "{stdout}");
    // A node id that names no test is no answer: a failed call (exit 4).
    let (code, envelope) = env.json(&[
        "exec",
        "pytest",
        "test",
        "--yes",
        "--",
        "node=tests/test_math.py::test_none",
    ]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(4)),
        "{envelope}"
    );
}

#[test]
fn run_selects_by_keyword_and_no_test_is_a_failed_call() {
    let Some(env) = ready() else { return };
    let (_, envelope) = env.json(&["exec", "pytest", "run", "--yes", "--", "k=add and not broken"]);
    assert_eq!(envelope["exitCode"], json!(0), "{envelope}");
    assert!(
        summary(envelope["stdout"].as_str().unwrap()).starts_with("1 passed, 1 deselected in "),
        "{envelope}"
    );
    let (code, envelope) = env.json(&["exec", "pytest", "run", "--yes", "--", "k=nothing_matches"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(5)),
        "{envelope}"
    );
}

#[test]
fn collect_lists_node_ids_and_writes_nothing() {
    let Some(env) = ready() else { return };
    let output = env.run(&["exec", "pytest", "collect"]);
    assert_eq!(output.code, 0, "{output}");
    let ids: Vec<&str> = output.stdout.lines().take(2).collect();
    assert_eq!(
        ids,
        ["tests/test_math.py::test_add", "tests/test_math.py::test_broken"]
    );
    assert!(output.stdout.contains("2 tests collected in "), "{output}");
    assert!(!env.work().join(".pytest_cache").exists());
    // Finding no test is an answer for collect.
    let (code, envelope) = env.json(&["exec", "pytest", "collect", "--", "k=nothing_matches"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(5)),
        "{envelope}"
    );
}

#[test]
fn node_ids_and_paths_that_leave_the_folder_or_read_as_options_are_refused() {
    let Some(env) = ready() else { return };
    let pattern = "([A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*\\.py(::[A-Za-z_][A-Za-z0-9_]*){0,3}(\\[[^\\]\\x00-\\x1f]{0,500}\\])?";
    for node in [
        "../elsewhere/test_x.py::test_a",
        "/tmp/test_x.py::test_a",
        "--pdb",
        "-p",
        "tests/test_math.py::test_add --pdb",
    ] {
        let word = format!("node={node}");
        let (code, envelope) = env.json(&["exec", "pytest", "test", "--yes", "--", &word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (
                2,
                &json!(false),
                &json!(format!("parameter `node` does not match the pattern {pattern}"))
            ),
            "{node}: {envelope}"
        );
    }
    let (code, envelope) = env.json(&["exec", "pytest", "run", "--yes", "--", "paths=../x"]);
    assert_eq!(
        (code, &envelope["error"]["message"]),
        (2, &json!("parameter `paths` leaves the working directory")),
        "{envelope}"
    );
    // A keyword expression is fused to -k: one that looks like an option is still the
    // expression (pytest refuses it as one), never an option of its own.
    let (_, envelope) = env.json(&["exec", "pytest", "run", "--yes", "--dry-run", "--", "k=--pdb"]);
    assert_eq!(
        envelope["data"]["child"].as_array().unwrap()[1..],
        [
            json!("--verbosity=-1"),
            json!("--color=no"),
            json!("--tb=short"),
            json!("-k--pdb"),
            json!("--")
        ],
        "{envelope}"
    );
}
