//! policy show and policy check against real files.

use serde_json::json;

use crate::common::TestEnv;

#[test]
fn check_uses_builtin_defaults() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["policy", "check", "git", "commit"]);
    assert_eq!(code, 0);
    assert_eq!(
        envelope["data"],
        json!({
            "pack": "git", "command": "commit", "effect": "write", "principal": "terminal",
            "decision": "confirm",
            "rule": { "scope": "builtin", "match": "defaults.write", "file": null, "index": null },
            "meaning": "asks y/N at the terminal, or takes --yes"
        })
    );
}

#[test]
fn project_policy_in_an_ancestor_tightens() {
    let env = TestEnv::new().env("HCP_AGENT", "1");
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"git.*","decision":"allow"}]}"#,
    );
    env.write(
        "work/.hcp/policy.json",
        r#"{"rules":[{"match":"git.commit","decision":"deny"}]}"#,
    );
    std::fs::create_dir_all(env.work().join("sub/dir")).unwrap();
    let output = env
        .command(&["--json", "policy", "check", "git", "commit"])
        .current_dir(env.work().join("sub/dir"))
        .output()
        .unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["data"]["decision"], json!("deny"));
    assert_eq!(envelope["data"]["principal"], json!("agent"));
    assert_eq!(envelope["data"]["rule"]["scope"], json!("project"));
    // The user's allow still holds where the project says nothing.
    let (_, envelope) = env.json(&["policy", "check", "git", "add"]);
    assert_eq!(envelope["data"]["decision"], json!("allow"));
}

#[test]
fn unparsable_policy_denies_and_says_so() {
    let env = TestEnv::new();
    env.write("home/policy.json", "{ \"rules\": [ ");
    let output = env.run(&["policy", "check", "transit", "plan"]);
    assert_eq!(output.code, 0);
    assert!(
        output
            .stdout
            .starts_with("transit.plan (read) for terminal: deny (refused)\n  by unparsable policy file"),
        "{output}"
    );
    let output = env.run(&["policy", "show"]);
    assert!(
        output.stdout.contains("is UNPARSABLE (not valid JSON"),
        "{output}"
    );
    assert!(
        output
            .stdout
            .contains("every exec and install is denied until it is fixed"),
        "{output}"
    );
    let (_, envelope) = env.json(&["availability", "transit"]);
    assert_eq!(envelope["data"]["permitted"], json!(false));
    assert_eq!(
        envelope["data"]["problems"][0]["fix"],
        json!("fix the policy file, then run `hcpx policy show`")
    );
}

#[test]
fn show_lists_every_rule_with_its_source() {
    let env = TestEnv::new();
    env.write(
        "home/policy.json",
        r#"{"defaults":{"write":"allow"},"rules":[{"match":"git.reset-hard","decision":"deny"}]}"#,
    );
    env.write(
        "work/.hcp/policy.json",
        r#"{"rules":[{"match":"*.write","decision":"confirm"}]}"#,
    );
    let output = env.run(&["policy", "show"]);
    insta::assert_snapshot!(output.to_string(), @r"
    exit_code: 0
    ----- stdout -----
    user policy:    [TEMP]/home/policy.json
    project policy: [TEMP]/work/.hcp/policy.json

    defaults.read         allow          built-in
    defaults.write        allow          [TEMP]/home/policy.json
    defaults.destructive  confirm-human  built-in
    git.reset-hard        deny           [TEMP]/home/policy.json
    *.write               confirm        [TEMP]/work/.hcp/policy.json

    The most specific match wins (pack.command, pack.*, *.effect, defaults); the project can only tighten.
    ----- stderr -----
    [EOF]
    ");
}

#[test]
fn check_refuses_unknown_commands_with_the_list() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["policy", "check", "git", "push"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("unknown_command"));
    assert_eq!(envelope["next"], json!("hcpx skill git"));
    let (code, envelope) = env.json(&["policy", "check", "hcp", "install"]);
    assert_eq!(code, 0);
    assert_eq!(envelope["data"]["decision"], json!("confirm"));
}
