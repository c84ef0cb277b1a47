//! The `make` catalog pack against the real GNU make.

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

const MAKEFILE: &str = "VERSION := $(shell echo 1.2)\n.PHONY: all test\nall: out.txt\nout.txt: in.txt\n\tcp in.txt out.txt\ntest:\n\t@echo testing $(VERSION)\n";

fn project() -> TestEnv {
    let env = env();
    env.write("work/Makefile", MAKEFILE);
    env.write("work/in.txt", "input\n");
    env.write("work/sub/Makefile", "hello:\n\t@echo hello from sub\n");
    install(&env, "make");
    env
}

fn text(env: &TestEnv, command: &str, params: &[&str]) -> (i32, String) {
    let mut args = vec!["exec", "make", command, "--yes", "--"];
    args.extend_from_slice(params);
    let output = env.run(&args);
    (output.code, output.stdout)
}

fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "make", command, "--yes", "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

#[test]
fn make_dry_run_prints_the_commands_and_runs_none() {
    if !have("make") {
        return;
    }
    let env = project();
    assert_eq!(text(&env, "dry-run", &[]), (0, "cp in.txt out.txt\n".to_owned()));
    assert!(!env.work().join("out.txt").exists());
    assert_eq!(
        text(&env, "dry-run", &["target=test", "var=VERSION=9"]),
        (0, "echo testing 9\n".to_owned())
    );
    assert_eq!(
        text(&env, "dry-run", &["dir=sub", "target=hello"]),
        (0, "echo hello from sub\n".to_owned())
    );
}

/// make runs code while it reads a makefile ($(shell ...), and + recipes even with
/// -n): as a read, that code cannot write. The attack is a makefile that writes
/// both ways during a dry run.
#[test]
fn make_dry_run_cannot_write_whatever_the_makefile_runs() {
    if !have("make") {
        return;
    }
    let env = project();
    env.write(
        "work/Makefile",
        "X := $(shell echo planted > parse.txt; echo done)\nall:\n\t+echo planted > plus.txt\n",
    );
    let (code, envelope) = exec(&env, "dry-run", &[]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(2)), "{envelope}");
    let stderr = envelope["stderr"].as_str().unwrap();
    assert!(stderr.contains("plus.txt: Permission denied"), "{stderr}");
    assert!(stderr.contains("parse.txt: Permission denied"), "{stderr}");
    assert!(!env.work().join("parse.txt").exists() && !env.work().join("plus.txt").exists());
}

#[test]
fn make_run_builds_and_up_to_date_tells() {
    if !have("make") {
        return;
    }
    let env = project();
    let (code, envelope) = exec(&env, "up-to-date", &["target=out.txt"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert_eq!(text(&env, "run", &[]), (0, "cp in.txt out.txt\n".to_owned()));
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "input\n"
    );
    let (code, envelope) = exec(&env, "up-to-date", &["target=out.txt"]);
    assert_eq!((code, &envelope["exitCode"]), (0, &json!(0)), "{envelope}");
    assert_eq!(
        text(&env, "run", &["target=test"]),
        (0, "testing 1.2\n".to_owned())
    );
    let (code, envelope) = exec(&env, "run", &["target=absent"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stderr"]),
        (
            1,
            &json!(2),
            &json!("make: *** No rule to make target 'absent'.  Stop.\n")
        ),
        "{envelope}"
    );
}

#[test]
fn make_database_shows_the_rules() {
    if !have("make") {
        return;
    }
    let env = project();
    let (code, stdout) = text(&env, "database", &[]);
    assert_eq!(code, 0);
    for rule in [
        "\nall: out.txt\n",
        "\nout.txt: in.txt\n",
        "\ntest:\n",
        "\n.PHONY: all test\n",
        "\nVERSION := 1.2\n",
    ] {
        assert!(stdout.contains(rule), "{rule}: {stdout}");
    }
}

#[test]
fn make_refuses_folders_outside_and_values_read_as_options() {
    if !have("make") {
        return;
    }
    let env = project();
    let target = "[A-Za-z0-9_%./+][A-Za-z0-9_%./+-]{0,255}";
    for (params, message) in [
        (
            &["dir=.."][..],
            "parameter `dir` leaves the working directory".to_owned(),
        ),
        (
            &["makefile=/etc/Makefile"],
            "parameter `makefile` is not a relative path inside the working directory".to_owned(),
        ),
        (
            &["target=--eval=x"],
            format!("parameter `target` does not match the pattern {target}"),
        ),
        (
            &["target=SHELL=/bin/sh"],
            format!("parameter `target` does not match the pattern {target}"),
        ),
        (
            &["var=-j1"],
            "parameter `var` does not match the pattern [A-Za-z_][A-Za-z0-9_.]{0,127}=.*".to_owned(),
        ),
    ] {
        let (code, envelope) = exec(&env, "dry-run", params);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
}
