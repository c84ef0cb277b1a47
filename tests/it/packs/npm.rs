//! The npm pack against the real `npm`: a project made here with a script and a local
//! dependency (so nothing needs the registry), its scripts as JSON, a script run with
//! option-like arguments, an install that runs the dependency's install script (or
//! not, with ignore_scripts), `ls` with its problems as an answer, npm's cache in the
//! pack's folder, and package names that are paths or URLs refused.

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

const PACKAGE: &str = r#"{
  "name": "demo",
  "version": "1.0.0",
  "scripts": { "greet": "node greet.js" },
  "dependencies": { "local-lib": "file:lib" }
}
"#;

const LIB: &str = r#"{
  "name": "local-lib",
  "version": "1.0.0",
  "scripts": { "postinstall": "node -e \"require('fs').writeFileSync('installed-by-script', 'x')\"" }
}
"#;

fn ready() -> Option<TestEnv> {
    if !have("npm") || !have("node") {
        return None;
    }
    let env = env();
    install(&env, "npm");
    env.write("work/package.json", PACKAGE);
    env.write("work/lib/package.json", LIB);
    env.write(
        "work/greet.js",
        "console.log(JSON.stringify(process.argv.slice(2)));\nrequire('fs').writeFileSync('greeted', 'x');\n",
    );
    Some(env)
}

#[test]
fn scripts_are_json_and_run_passes_option_like_arguments() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "npm", "scripts"]);
    assert_eq!(
        (code, &envelope["data"]),
        (0, &json!({"greet": "node greet.js"})),
        "{envelope}"
    );
    let output = env.run(&[
        "exec",
        "npm",
        "run",
        "--yes",
        "--",
        "script=greet",
        "args=--loud",
        "args=-n",
    ]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        output.stdout.lines().rfind(|line| !line.is_empty()),
        Some("[\"--loud\",\"-n\"]"),
        "{output}"
    );
    assert!(env.work().join("greeted").is_file());
    let (code, envelope) = env.json(&["exec", "npm", "run", "--yes", "--", "script=nosuch"]);
    assert_eq!((code, &envelope["ok"]), (1, &json!(false)), "{envelope}");
}

#[test]
fn install_runs_install_scripts_in_the_sandbox_unless_told_not_to() {
    let Some(env) = ready() else { return };
    let marker = env.work().join("lib/installed-by-script");
    let (code, envelope) = env.json(&["exec", "npm", "install", "--yes", "--", "ignore_scripts=true"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(!marker.exists(), "ignore_scripts ran a script");
    std::fs::remove_dir_all(env.work().join("node_modules")).unwrap();
    let (code, envelope) = env.json(&["exec", "npm", "ci", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(marker.is_file(), "npm ci ran no install script: {envelope}");
    let (code, envelope) = env.json(&["exec", "npm", "ls"]);
    assert_eq!(
        (
            code,
            &envelope["exitCode"],
            &envelope["data"]["dependencies"]["local-lib"]["version"]
        ),
        (0, &json!(0), &json!("1.0.0")),
        "{envelope}"
    );
    // npm's cache is the pack's: the project holds none, and the home folder's
    // ~/.npm was never written.
    assert!(!env.root.path().join("user/.npm").exists());
}

#[test]
fn ls_problems_are_an_answer() {
    let Some(env) = ready() else { return };
    env.write(
        "work/package.json",
        r#"{ "name": "demo", "version": "1.0.0", "dependencies": { "left-pad": "^1.0.0" } }"#,
    );
    let (code, envelope) = env.json(&["exec", "npm", "ls"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert_eq!(
        envelope["data"]["problems"],
        json!(["missing: left-pad@^1.0.0, required by demo@1.0.0"]),
        "{envelope}"
    );
}

#[test]
fn only_the_registry_commands_have_the_network() {
    let Some(env) = ready() else { return };
    for (command, network) in [
        ("scripts", false),
        ("run", false),
        ("test", false),
        ("ls", false),
        ("ci", true),
        ("install", true),
        ("outdated", true),
        ("audit", true),
    ] {
        let mut argv = vec!["exec", "npm", command, "--dry-run"];
        if command == "run" {
            argv.extend(["--", "script=greet"]);
        }
        let (code, plan) = env.json(&argv);
        assert_eq!(
            (code, &plan["data"]["sandbox"]["network"]),
            (0, &json!(network)),
            "{command}: {plan}"
        );
    }
}

#[test]
fn packages_that_are_paths_urls_or_options_are_refused() {
    let Some(env) = ready() else { return };
    super::refused(
        &env,
        "npm",
        &[
            ("install", "packages=file:../elsewhere"),
            ("install", "packages=git+https://example.invalid/x.git"),
            ("install", "packages=https://example.invalid/x.tgz"),
            ("install", "packages=../x"),
            ("install", "packages=alias@npm:left-pad"),
            ("install", "packages=--global"),
            ("uninstall", "packages=-g"),
            ("run", "script=--help"),
            ("view", "package=--registry=https://example.invalid"),
        ],
    );
}

/// `test` runs the package's test script with the arguments given after `--`; its
/// failure fails the call.
#[test]
fn test_runs_the_test_script_and_its_failure_fails_the_call() {
    let Some(env) = ready() else { return };
    env.write(
        "work/package.json",
        r#"{"name": "demo", "version": "1.0.0", "scripts": {"test": "node check.js"}}"#,
    );
    env.write(
        "work/check.js",
        "const failing = process.argv.includes('--fail');\nconsole.log(failing ? 'not ok 1' : 'ok 1');\nprocess.exit(failing ? 1 : 0);\n",
    );
    let (code, envelope) = env.json(&["exec", "npm", "test", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"].as_str().unwrap().contains("\nok 1\n"),
        "{envelope}"
    );
    let (code, envelope) = env.json(&["exec", "npm", "test", "--yes", "--", "args=--fail"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(1)),
        "{envelope}"
    );
    assert!(
        envelope["stdout"].as_str().unwrap().contains("not ok 1"),
        "{envelope}"
    );
}
