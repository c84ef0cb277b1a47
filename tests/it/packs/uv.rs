//! The uv pack against the real `uv`: a project with no dependency (so nothing needs
//! the network) locked, run and listed, uv's cache in the pack's cache folder and not
//! in the home folder or the project, and names that are URLs or options refused.

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

const PYPROJECT: &str =
    "[project]\nname = \"demo\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\ndependencies = []\n";

fn ready() -> Option<TestEnv> {
    if !have("uv") || !have("python3") {
        return None;
    }
    let env = env();
    install(&env, "uv");
    env.write("work/pyproject.toml", PYPROJECT);
    env.write(
        "work/main.py",
        "import sys\nprint('args', sys.argv[1:], sys.prefix.endswith('.venv'))\n",
    );
    Some(env)
}

/// The files beneath the pack's cache folders (`…/hcpx/packs/uv-*`) in the test's
/// home, where the user's cache folder is.
fn cached_files(env: &TestEnv) -> usize {
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| match entry.file_type().map(|kind| kind.is_dir()) {
                        Ok(true) => count(&entry.path()),
                        _ => 1,
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    count(&env.root.path().join("user/.cache"))
}

#[test]
fn lock_then_run_in_the_projects_environment_offline() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "uv", "lock", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    let lock = std::fs::read_to_string(env.work().join("uv.lock")).unwrap();
    assert!(lock.contains("name = \"demo\"\nversion = \"0.1.0\""), "{lock}");

    let output = env.run(&[
        "exec",
        "uv",
        "run",
        "--yes",
        "--",
        "command=python",
        "args=main.py",
        "args=--flag",
    ]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "args ['--flag'] True\n"),
        "{output}"
    );
    assert!(env.work().join(".venv/pyvenv.cfg").is_file());

    let (code, envelope) = env.json(&["exec", "uv", "pip-list"]);
    assert_eq!((code, &envelope["data"]), (0, &json!([])), "{envelope}");
    let output = env.run(&["exec", "uv", "tree"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "demo v0.1.0\n"),
        "{output}"
    );
}

#[test]
fn the_cache_is_the_packs_and_uv_never_downloads_a_python() {
    let Some(env) = ready() else { return };
    let (_, plan) = env.json(&["exec", "uv", "run", "--dry-run", "--", "command=python"]);
    let names = plan["data"]["env"].as_array().unwrap();
    for name in ["UV_CACHE_DIR", "UV_PYTHON_DOWNLOADS", "UV_PYTHON_PREFERENCE"] {
        assert!(names.contains(&json!(name)), "{name}: {plan}");
    }
    assert_eq!(plan["data"]["sandbox"]["network"], json!(false), "{plan}");
    let (code, envelope) = env.json(&["exec", "uv", "lock", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(cached_files(&env) > 0, "uv's cache is empty after a lock");
    assert!(!env.work().join(".cache").exists());
    // A Python the machine does not have is never fetched.
    env.write("work/pyproject.toml", &PYPROJECT.replace(">=3.8", ">=3.99"));
    let (code, envelope) = env.json(&["exec", "uv", "lock", "--yes"]);
    assert_eq!((code, &envelope["ok"]), (1, &json!(false)), "{envelope}");
    assert!(
        envelope["stderr"].as_str().unwrap().contains("3.99"),
        "{envelope}"
    );
}

#[test]
fn names_that_are_urls_paths_or_options_are_refused() {
    let Some(env) = ready() else { return };
    super::refused(
        &env,
        "uv",
        &[
            ("add", "packages=git+https://example.invalid/x.git"),
            ("add", "packages=./vendor/pkg"),
            ("add", "packages=--editable"),
            ("remove", "packages=-r"),
            ("run", "command=--with=evil"),
            ("run", "command=/bin/sh"),
            ("run", "with=https://example.invalid/x.whl"),
            ("tree", "depth=-1"),
        ],
    );
    // An argument that looks like an option goes to the command, after `--`.
    let (_, plan) = env.json(&[
        "exec",
        "uv",
        "run",
        "--dry-run",
        "--",
        "command=python",
        "args=--version",
    ]);
    assert_eq!(
        plan["data"]["child"].as_array().unwrap()[1..],
        [
            json!("run"),
            json!("--offline"),
            json!("--"),
            json!("python"),
            json!("--version")
        ],
        "{plan}"
    );
}

/// `sync` locks the project and makes its environment (no dependency, so no index is
/// asked); `frozen` installs the lock as it is and leaves it unchanged.
#[test]
fn sync_makes_the_environment_and_frozen_keeps_the_lock() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "uv", "sync", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(env.work().join(".venv/pyvenv.cfg").is_file());
    assert!(env.work().join("uv.lock").is_file());
    let lock = std::fs::read_to_string(env.work().join("uv.lock")).unwrap();
    let (code, envelope) = env.json(&["exec", "uv", "sync", "--yes", "--", "frozen=true"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(std::fs::read_to_string(env.work().join("uv.lock")).unwrap(), lock);
}
