//! The cargo pack against the real `cargo` (the toolchain that builds these tests): a
//! crate with no dependency made here (so nothing needs the network) checked with a
//! type error as JSON diagnostics, built twice (the second compiles nothing), tested
//! with a failing and a passing test, formatted, described as JSON; cargo's home in
//! the pack's cache folder, never `~/.cargo`; values that read as options refused.

use std::path::Path;

use serde_json::{Value, json};

use super::{install, tools_path};
use crate::common::{TestEnv, require};

/// A test environment whose PATH starts with the folder of the cargo that builds this
/// test suite (a toolchain's own `bin`, with rustc, rustfmt and clippy beside it).
fn ready() -> Option<TestEnv> {
    let cargo = Path::new(env!("CARGO"));
    let bin = cargo.parent()?;
    if !require(
        bin.join("rustc").is_file(),
        "cargo and rustc in one toolchain folder",
    ) {
        return None;
    }
    let mut env = TestEnv::new();
    env.path = format!("{}:{}", bin.display(), tools_path());
    install(&env, "cargo");
    env.write(
        "work/Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    env.write(
        "work/src/main.rs",
        "fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\nfn main() {\n    println!(\"{}\", add(1, 2));\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n\n    #[test]\n    fn breaks() {\n        assert_eq!(super::add(2, 2), 5);\n    }\n}\n",
    );
    // check/build/clippy may write target and an existing Cargo.lock, not make one
    // (the SKILL says so): fetch makes it, as a person would first.
    let (code, envelope) = env.json(&["exec", "cargo", "fetch", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    Some(env)
}

/// The `(level, code, file, line)` of each compiler message in `data`.
fn diagnostics(data: &Value) -> Vec<(String, String, String, u64)> {
    data.as_array()
        .unwrap_or_else(|| panic!("data is not a list: {data}"))
        .iter()
        // Newer cargo adds a "failure-note" (`rustc --explain`): not a diagnostic.
        .filter(|message| {
            message["reason"] == json!("compiler-message")
                && message["message"]["level"] != json!("failure-note")
        })
        .map(|message| {
            let message = &message["message"];
            let span = &message["spans"][0];
            (
                message["level"].as_str().unwrap().to_owned(),
                message["code"]["code"].as_str().unwrap_or_default().to_owned(),
                span["file_name"].as_str().unwrap_or_default().to_owned(),
                span["line_start"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn check_reports_a_type_error_as_json_diagnostics() {
    let Some(env) = ready() else { return };
    env.write(
        "work/src/main.rs",
        "fn main() {\n    let x: u32 = \"text\";\n    let _ = x;\n}\n",
    );
    let (code, envelope) = env.json(&["exec", "cargo", "check", "--yes"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(101)),
        "{envelope}"
    );
    assert_eq!(
        diagnostics(&envelope["data"]),
        [(
            "error".to_owned(),
            "E0308".to_owned(),
            "src/main.rs".to_owned(),
            2
        )],
        "{envelope}"
    );
    let last = envelope["data"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last, json!({"reason": "build-finished", "success": false}));
    // target was made for it.
    assert!(env.work().join("target").is_dir());
}

#[test]
fn a_second_build_compiles_nothing_and_cargo_home_is_the_packs() {
    let Some(env) = ready() else { return };
    let output = env.run(&["exec", "cargo", "build", "--yes"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(output.stderr.contains("Compiling demo v0.1.0"), "{output}");
    let program = env.work().join("target/debug/demo");
    let ran = std::process::Command::new(&program).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "3\n");
    let output = env.run(&["exec", "cargo", "build", "--yes"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(!output.stderr.contains("Compiling"), "{output}");
    assert!(output.stderr.contains("Finished"), "{output}");
    // Cargo's home is in the pack's cache folder: ~/.cargo is never made.
    let (_, plan) = env.json(&["exec", "cargo", "build", "--dry-run", "--yes"]);
    assert!(
        plan["data"]["env"]
            .as_array()
            .unwrap()
            .contains(&json!("CARGO_HOME")),
        "{plan}"
    );
    assert!(!env.root.path().join("user/.cargo").exists());
}

#[test]
fn test_runs_the_tests_and_a_failure_fails_the_call() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "cargo", "test", "--yes"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(101)), "{envelope}");
    let stdout = envelope["stdout"].as_str().unwrap();
    for line in [
        "test tests::adds ... ok",
        "test tests::breaks ... FAILED",
        "test result: FAILED. 1 passed; 1 failed;",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let output = env.run(&[
        "exec",
        "cargo",
        "test",
        "--yes",
        "--",
        "filter=adds",
        "args=--exact",
        "args=tests::adds",
    ]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.contains("test result: ok. 1 passed; 0 failed;"),
        "{output}"
    );
}

#[test]
fn fmt_check_is_an_answer_and_fmt_rewrites() {
    let Some(env) = ready() else { return };
    env.write("work/src/main.rs", "fn main() { println!(\"hi\"); }\n");
    let (code, envelope) = env.json(&["exec", "cargo", "fmt-check"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap()
            .contains("+    println!(\"hi\");"),
        "{envelope}"
    );
    let output = env.run(&["exec", "cargo", "fmt", "--yes"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("src/main.rs")).unwrap(),
        "fn main() {\n    println!(\"hi\");\n}\n"
    );
}

#[test]
fn metadata_is_json() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "cargo", "metadata"]);
    assert_eq!(code, 0, "{envelope}");
    let package = &envelope["data"]["packages"][0];
    assert_eq!(
        (
            &package["name"],
            &package["version"],
            &package["targets"][0]["kind"],
            &package["dependencies"]
        ),
        (&json!("demo"), &json!("0.1.0"), &json!(["bin"]), &json!([])),
        "{envelope}"
    );
}

#[test]
fn values_that_read_as_options_or_leave_are_refused() {
    let Some(env) = ready() else { return };
    super::refused(
        &env,
        "cargo",
        &[
            ("check", "package=--config=build.rustc-wrapper=/bin/sh"),
            ("build", "target_dir=../elsewhere"),
            ("build", "features=a --config x"),
            ("test", "filter=--ignored"),
            ("add", "crates=--git=https://example.invalid/x"),
            ("add", "crates=../local"),
            ("tree", "invert=serde --offline"),
        ],
    );
    // Test-binary arguments come after `--`: cargo never reads them as its own.
    let (_, plan) = env.json(&[
        "exec",
        "cargo",
        "test",
        "--dry-run",
        "--yes",
        "--",
        "args=--config=x",
    ]);
    assert_eq!(
        plan["data"]["child"].as_array().unwrap()[1..],
        [json!("test"), json!("--"), json!("--config=x")],
        "{plan}"
    );
}
