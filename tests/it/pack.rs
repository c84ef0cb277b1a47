//! pack check and pack new.

use serde_json::json;

use crate::common::{TestEnv, builtin, fixture};

#[test]
fn every_builtin_pack_passes_check() {
    let env = TestEnv::new();
    for id in ["transit", "git", "sqlite", "jq"] {
        let dir = builtin(id);
        let (code, envelope) = env.json(&["pack", "check", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{id}: {envelope}");
        assert_eq!(envelope["data"]["id"], json!(id));
    }
}

#[test]
fn broken_pack_lists_every_problem() {
    let env = TestEnv::new();
    let dir = fixture("broken");
    let output = env.run(&["pack", "check", dir.to_str().unwrap()]);
    insta::assert_snapshot!(output.to_string(), @r#"
    exit_code: 2
    ----- stdout -----
    ----- stderr -----
    error: the pack is invalid: 8 problems
      id: must match ^[a-z0-9][a-z0-9._-]{0,63}$
      version: must be a semantic version such as 1.2.0
      sandbox.timeoutMs: must be an integer from 1 to 600000
      commands.go.effect: must be read, write or destructive
      commands.go.argv[1]: "to" must be fused to an option (--to={to}), placed after a "--" element, or declared "positional": true
      commands.go.argv[2]: unknown parameter "frm"
      SKILL.md: front matter `name` is "broken", but the pack id is "Broken"
      bin[0]: ./missing is not in the pack
    next: fix each problem listed, then run hcpx pack check again
    [EOF]
    "#);
    let (code, envelope) = env.json(&["pack", "check", dir.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("invalid_arguments"));
    assert_eq!(
        envelope["data"]["problems"][5],
        json!({ "path": "commands.go.argv[2]", "message": "unknown parameter \"frm\"" })
    );
}

#[test]
fn check_refuses_a_non_executable_cli_and_a_missing_skill() {
    let env = TestEnv::new();
    let dir = env.root.path().join("work/p");
    crate::common::copy_dir(&fixture("locked"), &dir);
    std::fs::remove_file(dir.join("SKILL.md")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("locked"), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let (code, envelope) = env.json(&["pack", "check", "p"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["data"]["problems"],
        json!([
            { "path": "SKILL.md", "message": "is missing; every pack has a SKILL.md for agents" },
            { "path": "bin[0]", "message": "./locked is not executable (chmod +x locked)" }
        ])
    );
}

#[test]
fn pack_new_writes_a_pack_that_passes_check_and_runs() {
    let env = TestEnv::new();
    let output = env.run(&["pack", "new", "weather"]);
    insta::assert_snapshot!(output.to_string(), @r"
    exit_code: 0
    ----- stdout -----
    created weather/ with hcp.json, SKILL.md, weather
    next: edit them, then run hcpx pack check weather
    ----- stderr -----
    [EOF]
    ");
    let (code, _) = env.json(&["pack", "check", "weather"]);
    assert_eq!(code, 0);
    // Its CLI does what the manifest says, with a quote that needs JSON escaping.
    let out = std::process::Command::new(env.work().join("weather/weather"))
        .args(["hello", "--name=Ada \"the\" first", "--json"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value, json!({ "greeting": "Hello, Ada \"the\" first!" }));
    // A second time refuses, and bad ids are refused.
    assert_eq!(env.run(&["pack", "new", "weather"]).code, 2);
    assert_eq!(env.run(&["pack", "new", "Bad Id"]).code, 2);
}
