//! The pip pack against the real `pip`: a project venv made here, a wheel built by
//! hand and installed from a folder without the network, listed as JSON, shown,
//! checked and uninstalled; requirements that are URLs, paths or options refused, and
//! nothing written outside the venv.

use std::path::Path;

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

/// A project with `.venv` (made with the system's python3) and `wheels/` holding a
/// wheel of the package `demo` 0.1.
fn ready() -> Option<TestEnv> {
    if !have("pip") || !Path::new("/usr/bin/python3").exists() {
        return None;
    }
    let env = env();
    install(&env, "pip");
    let made = std::process::Command::new("/usr/bin/python3")
        .args(["-m", "venv", ".venv"])
        .current_dir(env.work())
        .status()
        .unwrap();
    if !crate::common::require(made.success(), "python3 -m venv (python3-venv)") {
        return None;
    }
    std::fs::create_dir_all(env.work().join("wheels")).unwrap();
    let wheel = "import zipfile\n\
        with zipfile.ZipFile('wheels/demo-0.1-py3-none-any.whl', 'w') as z:\n\
        \x20   z.writestr('demo/__init__.py', 'VALUE = 42\\n')\n\
        \x20   z.writestr('demo-0.1.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: demo\\nVersion: 0.1\\nSummary: a demo\\n')\n\
        \x20   z.writestr('demo-0.1.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: hand\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
        \x20   z.writestr('demo-0.1.dist-info/RECORD', 'demo/__init__.py,,\\ndemo-0.1.dist-info/METADATA,,\\ndemo-0.1.dist-info/WHEEL,,\\ndemo-0.1.dist-info/RECORD,,\\n')\n";
    let built = std::process::Command::new("/usr/bin/python3")
        .args(["-c", wheel])
        .current_dir(env.work())
        .status()
        .unwrap();
    assert!(built.success());
    Some(env)
}

fn names(data: &serde_json::Value) -> Vec<String> {
    data.as_array()
        .unwrap_or_else(|| panic!("data is not a list: {data}"))
        .iter()
        .map(|package| package["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn install_from_a_folder_then_list_show_check_and_uninstall() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "pip", "list"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        !names(&envelope["data"]).contains(&"demo".to_owned()),
        "{envelope}"
    );

    let (code, envelope) = env.json(&[
        "exec",
        "pip",
        "install",
        "--yes",
        "--",
        "packages=demo==0.1",
        "find_links=wheels",
        "no_index=true",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap()
            .contains("Successfully installed demo-0.1"),
        "{envelope}"
    );
    let installed = std::fs::read_dir(env.work().join(".venv/lib"))
        .unwrap()
        .flatten()
        .any(|dir| dir.path().join("site-packages/demo/__init__.py").is_file());
    assert!(installed, "demo is not in the venv");

    let (_, envelope) = env.json(&["exec", "pip", "list"]);
    let listed: Vec<&serde_json::Value> = envelope["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|package| package["name"] == json!("demo"))
        .collect();
    assert_eq!(listed, [&json!({"name": "demo", "version": "0.1"})], "{envelope}");

    let output = env.run(&["exec", "pip", "show", "--", "package=demo"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output
            .stdout
            .starts_with("Name: demo\nVersion: 0.1\nSummary: a demo\n"),
        "{output}"
    );
    let output = env.run(&["exec", "pip", "freeze"]);
    assert!(output.stdout.lines().any(|line| line == "demo==0.1"), "{output}");
    let (code, envelope) = env.json(&["exec", "pip", "check"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stdout"]),
        (0, &json!(0), &json!("No broken requirements found.\n")),
        "{envelope}"
    );

    // Uninstalling deletes: only a person confirms, at a prompt; --yes is not enough
    // for an agent.
    let mut agent = env.command(&[
        "--json",
        "exec",
        "pip",
        "uninstall",
        "--yes",
        "--",
        "packages=demo",
    ]);
    agent.env("HCP_AGENT", "1");
    let refused: serde_json::Value = serde_json::from_slice(&agent.output().unwrap().stdout).unwrap();
    assert_eq!(
        (&refused["ok"], &refused["spawned"]),
        (&json!(false), &json!(false)),
        "{refused}"
    );
}

#[test]
fn a_read_leaves_the_venv_alone_and_install_writes_nothing_but_the_venv() {
    let Some(env) = ready() else { return };
    let (_, plan) = env.json(&["exec", "pip", "install", "--dry-run", "--", "packages=demo"]);
    assert_eq!(
        (
            &plan["data"]["sandbox"]["write"],
            &plan["data"]["sandbox"]["network"]
        ),
        (&json!([".venv"]), &json!(true)),
        "{plan}"
    );
    let (_, plan) = env.json(&["exec", "pip", "list", "--dry-run"]);
    assert_eq!(
        (
            &plan["data"]["sandbox"]["write"],
            &plan["data"]["sandbox"]["network"]
        ),
        (&json!([]), &json!(false)),
        "{plan}"
    );
}

#[test]
fn requirements_that_are_urls_paths_or_options_are_refused() {
    let Some(env) = ready() else { return };
    for value in [
        "git+https://example.invalid/x.git",
        "./wheels/demo-0.1-py3-none-any.whl",
        "--index-url=https://example.invalid/simple",
        "-e .",
        "demo @ https://example.invalid/demo.whl",
    ] {
        let word = format!("packages={value}");
        let (code, envelope) = env.json(&["exec", "pip", "install", "--yes", "--", &word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["reason"]),
            (2, &json!(false), &json!("invalid_param")),
            "{value}: {envelope}"
        );
    }
    for word in ["venv=../other", "requirements=../r.txt", "find_links=/tmp"] {
        let (code, envelope) = env.json(&["exec", "pip", "install", "--yes", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"]),
            (2, &json!(false)),
            "{word}: {envelope}"
        );
    }
    let (code, envelope) = env.json(&["exec", "pip", "show", "--", "package=--files"]);
    assert_eq!((code, &envelope["spawned"]), (2, &json!(false)), "{envelope}");
}
