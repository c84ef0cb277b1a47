//! The python pack against the real `python3`: a virtual environment made by the pack
//! and then used as an activated one (first on PATH), a script run with arguments
//! that look like options, the unittest and pytest runners on a passing and a failing
//! test, and values that would leave the folder or read as options refused.

use std::path::Path;

use serde_json::json;

use super::{env, have, install, tools_dir};
use crate::common::TestEnv;

const UNITTEST: &str = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n\n    def test_bad(self):\n        self.assertEqual(1, 2)\n";

/// A project with `.venv` made by the pack with the system's python3, then that
/// environment first on PATH, as in a shell that activated it.
fn ready() -> Option<TestEnv> {
    if !have("python3") || !Path::new("/usr/bin/python3").exists() {
        return None;
    }
    let mut env = env();
    env.path = "/usr/local/bin:/usr/bin:/bin".to_owned();
    install(&env, "python");
    let (code, envelope) = env.json(&["exec", "python", "venv", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    env.path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        env.work().join(".venv/bin").display()
    );
    env.write("work/tests/__init__.py", "");
    env.write("work/tests/test_unit.py", UNITTEST);
    env.write(
        "work/args.py",
        "import sys\nprint(sys.argv[1:])\nopen('out.txt', 'w').write('written')\n",
    );
    Some(env)
}

#[test]
fn venv_is_made_and_info_says_it_is_the_one_in_use() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "python", "info"]);
    assert_eq!(code, 0, "{envelope}");
    let venv = env.work().join(".venv");
    let executable = envelope["data"]["executable"].as_str().unwrap();
    assert_eq!(
        (
            Path::new(executable).parent(),
            &envelope["data"]["prefix"],
            &envelope["data"]["venv"],
            &envelope["data"]["implementation"]
        ),
        (
            Some(venv.join("bin").as_path()),
            &json!(venv.display().to_string()),
            &json!(true),
            &json!("cpython")
        ),
        "{envelope}"
    );
    assert!(venv.join("pyvenv.cfg").is_file());
}

#[test]
fn run_passes_option_like_arguments_to_the_script_and_it_may_write_the_folder() {
    let Some(env) = ready() else { return };
    let output = env.run(&[
        "exec",
        "python",
        "run",
        "--yes",
        "--",
        "script=args.py",
        "args=--help",
        "args=-c",
    ]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "['--help', '-c']\n"),
        "{output}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "written"
    );
    // The script's own exit code decides.
    env.write("work/fail.py", "raise SystemExit(3)\n");
    let (code, envelope) = env.json(&["exec", "python", "run", "--yes", "--", "script=fail.py"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(3)),
        "{envelope}"
    );
}

#[test]
fn unittest_runs_named_tests_and_reports_failures() {
    let Some(env) = ready() else { return };
    let output = env.run(&[
        "exec",
        "python",
        "unittest",
        "--yes",
        "--",
        "tests=tests.test_unit.T.test_ok",
    ]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output
            .stderr
            .starts_with("test_ok (tests.test_unit.T.test_ok) ... ok\n"),
        "{output}"
    );
    assert!(output.stderr.contains("\nRan 1 test in "), "{output}");
    assert!(output.stderr.ends_with("s\n\nOK\n"), "{output}");
    let (code, envelope) = env.json(&["exec", "python", "unittest", "--yes"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    let stderr = envelope["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("FAIL: test_bad (tests.test_unit.T.test_bad)"),
        "{stderr}"
    );
    assert!(stderr.ends_with("FAILED (failures=1)\n"), "{stderr}");
}

/// pytest of the project's environment: its packages copied from the test tools'
/// environment, as `pip install pytest` would have put them there.
#[test]
fn pytest_runs_with_the_environments_pytest_and_a_failure_is_an_answer() {
    let Some(env) = ready() else { return };
    let tools = tools_dir().join("py/lib/python3.11/site-packages");
    let site = env.work().join(".venv/lib/python3.11/site-packages");
    if !require_dir(&tools) || !site.is_dir() {
        return;
    }
    for name in [
        "_pytest",
        "pytest",
        "py.py",
        "pluggy",
        "iniconfig",
        "packaging",
        "pygments",
    ] {
        copy(&tools.join(name), &site.join(name));
    }
    env.write(
        "work/test_math.py",
        "def add(a, b):\n    return a + b\n\n\ndef test_add():\n    assert add(1, 1) == 2\n\n\ndef test_broken():\n    assert add(2, 2) == 5\n",
    );
    let (code, envelope) = env.json(&[
        "exec",
        "python",
        "pytest",
        "--yes",
        "--",
        "paths=test_math.py",
        "tb=line",
    ]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(
        stdout.contains("FAILED test_math.py::test_broken - assert 4 == 5\n"),
        "{stdout}"
    );
}

fn require_dir(dir: &Path) -> bool {
    crate::common::require(dir.is_dir(), "pytest in target/tools/py for Python 3.11")
}

fn copy(from: &Path, to: &Path) {
    if from.is_dir() {
        crate::common::copy_dir(from, to);
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

#[test]
fn values_that_leave_the_folder_or_read_as_options_are_refused() {
    let Some(env) = ready() else { return };
    for (command, word, message) in [
        (
            "run",
            "script=../x.py",
            "parameter `script` leaves the working directory",
        ),
        (
            "run",
            "script=/etc/passwd",
            "parameter `script` is not a relative path inside the working directory",
        ),
        (
            "venv",
            "dir=../elsewhere",
            "parameter `dir` leaves the working directory",
        ),
        (
            "unittest",
            "tests=-c",
            "parameter `tests` does not match the pattern [A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*",
        ),
    ] {
        let (code, envelope) = env.json(&["exec", "python", command, "--yes", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // A script named like an option is still the script: it comes after `--`.
    env.write("work/-c.py", "print('the file ran')\n");
    let output = env.run(&["exec", "python", "run", "--yes", "--", "script=-c.py"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "the file ran\n"),
        "{output}"
    );
}

#[test]
fn a_script_reaches_no_network_and_nothing_outside_the_folder() {
    let Some(env) = ready() else { return };
    let outside = env.root.path().join("outside.txt");
    env.write(
        "work/escape.py",
        &format!(
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), 1)\n    print('net: yes')\nexcept OSError as e:\n    print('net: no')\ntry:\n    open({:?}, 'w').write('x')\n    print('outside: yes')\nexcept OSError:\n    print('outside: no')\n",
            outside.display().to_string()
        ),
    );
    let output = env.run(&["exec", "python", "run", "--yes", "--", "script=escape.py"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "net: no\noutside: no\n"),
        "{output}"
    );
    assert!(!outside.exists());
}
