//! The go pack against the real `go`: a module with no dependency made here, built
//! twice (the second build reuses the pack's build cache: nothing is compiled again),
//! a failing and a passing test, packages listed as JSON, and package patterns that
//! read as options or leave the folder refused.

use serde_json::json;

use super::{env, have, install};
use crate::common::TestEnv;

fn ready() -> Option<TestEnv> {
    if !have("go") {
        return None;
    }
    let env = env();
    install(&env, "go");
    env.write("work/go.mod", "module example.com/demo\n\ngo 1.18\n");
    env.write(
        "work/main.go",
        "package main\n\nimport \"fmt\"\n\nfunc Add(a, b int) int { return a + b }\n\nfunc main() { fmt.Println(Add(1, 2)) }\n",
    );
    env.write(
        "work/main_test.go",
        "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\nfunc TestBroken(t *testing.T) {\n\tif Add(2, 2) != 5 {\n\t\tt.Fatal(\"2+2 is not 5\")\n\t}\n}\n",
    );
    // An hour old: go does not index a module folder changed in the last 2 seconds
    // into its build cache, so a build right after writing it would cache less than
    // one a moment later, and how much depends on the machine's load.
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for file in ["go.mod", "main.go", "main_test.go", ""] {
        let file = std::fs::File::open(env.work().join(file)).unwrap();
        file.set_modified(hour_ago).unwrap();
    }
    Some(env)
}

#[test]
fn build_writes_the_program_into_out_and_a_second_build_compiles_nothing() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "go", "build", "--yes", "--", "out=bin"]);
    assert_eq!(code, 0, "{envelope}");
    let program = env.work().join("bin/demo");
    assert!(program.is_file(), "{envelope}");
    let ran = std::process::Command::new(&program).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "3\n");
    // The build cache is the pack's and persists: after the first build it holds the
    // compiled packages, and a second build adds nothing to it (nothing recompiled).
    let (_, plan) = env.json(&["exec", "go", "build", "--dry-run", "--yes"]);
    assert!(
        plan["data"]["env"]
            .as_array()
            .unwrap()
            .contains(&json!("GOCACHE")),
        "{plan}"
    );
    let before = cached_files(&env);
    assert!(before > 0, "the pack's build cache is empty after a build");
    let (code, envelope) = env.json(&["exec", "go", "build", "--yes"]);
    assert_eq!((code, &envelope["stderr"]), (0, &json!("")), "{envelope}");
    assert_eq!(cached_files(&env), before);
    assert!(!env.root.path().join("user/.cache/go-build").exists());
}

/// The files in the build caches of the pack's cache folders (`…/hcpx/packs/*/build`).
fn cached_files(env: &TestEnv) -> usize {
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .flatten()
                .map(|entry| match entry.file_type().map(|kind| kind.is_dir()) {
                    Ok(true) => count(&entry.path()),
                    _ => 1,
                })
                .sum()
        })
    }
    let packs = env.root.path().join("user/.cache/hcpx/packs");
    std::fs::read_dir(packs).map_or(0, |entries| {
        entries
            .flatten()
            .map(|entry| count(&entry.path().join("build")))
            .sum()
    })
}

#[test]
fn test_reports_the_failing_test_and_fails_the_call() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "go", "test", "--yes"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(1)),
        "{envelope}"
    );
    let events = envelope["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{envelope}"));
    let results: Vec<(&str, &str)> = events
        .iter()
        .filter(|event| event["Action"] == json!("pass") || event["Action"] == json!("fail"))
        .map(|event| {
            (
                event["Test"].as_str().unwrap_or("(package)"),
                event["Action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [("TestAdd", "pass"), ("TestBroken", "fail"), ("(package)", "fail")],
        "{envelope}"
    );
    let output = env.run(&["exec", "go", "test", "--yes", "--", "run=^TestAdd$", "count=1"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(output.stdout.starts_with("ok  \texample.com/demo\t"), "{output}");
}

#[test]
fn list_and_env_are_json_and_vet_passes() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "go", "list"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        (
            &envelope["data"]["ImportPath"],
            &envelope["data"]["Name"],
            &envelope["data"]["GoFiles"],
            &envelope["data"]["TestGoFiles"]
        ),
        (
            &json!("example.com/demo"),
            &json!("main"),
            &json!(["main.go"]),
            &json!(["main_test.go"])
        ),
        "{envelope}"
    );
    // go 1.19 knows no GOTOOLCHAIN and shows GOENV=off as "": the plan says both
    // are set, and go's own view shows its caches in the pack's folder.
    let (_, plan) = env.json(&["exec", "go", "env", "--dry-run"]);
    for name in ["GOTOOLCHAIN", "GOENV", "GOCACHE", "GOMODCACHE"] {
        assert!(
            plan["data"]["env"].as_array().unwrap().contains(&json!(name)),
            "{plan}"
        );
    }
    let (code, envelope) = env.json(&["exec", "go", "env"]);
    assert_eq!(code, 0, "{envelope}");
    let cache = envelope["data"]["GOCACHE"].as_str().unwrap_or_default();
    assert!(
        cache.starts_with(
            &env.root
                .path()
                .join("user/.cache/hcpx/packs/go-")
                .to_string_lossy()
                .into_owned()
        ) && cache.ends_with("/build"),
        "{envelope}"
    );
    let output = env.run(&["exec", "go", "vet"]);
    assert_eq!(output.code, 0, "{output}");
}

#[test]
fn fmt_rewrites_and_lists_the_file() {
    let Some(env) = ready() else { return };
    env.write("work/ugly.go", "package main\nfunc ugly( ) int {return 1}\n");
    let output = env.run(&["exec", "go", "fmt", "--yes"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "ugly.go\n"),
        "{output}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("ugly.go")).unwrap(),
        "package main\n\nfunc ugly() int { return 1 }\n"
    );
}

#[test]
fn package_patterns_that_read_as_options_or_leave_are_refused() {
    let Some(env) = ready() else { return };
    super::refused(
        &env,
        "go",
        &[
            ("build", "packages=-toolexec=/bin/sh"),
            ("test", "packages=-exec=/bin/sh"),
            ("vet", "packages=../elsewhere/..."),
            ("list", "packages=a/../../x"),
            ("build", "out=../bin"),
            ("test", "count=-1"),
        ],
    );
    // A test filter is fused to --run: whatever it holds, go reads it as the filter.
    let (_, plan) = env.json(&["exec", "go", "test", "--dry-run", "--yes", "--", "run=-exec=x"]);
    assert_eq!(
        plan["data"]["child"].as_array().unwrap()[1..],
        [
            json!("test"),
            json!("--run=-exec=x"),
            json!("./..."),
            json!("-json")
        ],
        "{plan}"
    );
}
