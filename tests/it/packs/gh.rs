//! The `gh` catalog pack against the real gh, offline: what runs without GitHub
//! (the version), the argv each command renders, the refusals, and the failure when
//! the host cannot be reached.

use serde_json::{Value, json};

use super::{env, have, install, on_tools_path};
use crate::common::TestEnv;

fn bound() -> TestEnv {
    let env = env();
    install(&env, "gh");
    env.bind("gh", "GH_TOKEN", "ghp_notarealtoken0000000000000000000000");
    env
}

fn plan(env: &TestEnv, command: &str, params: &[&str]) -> Value {
    super::plan(env, "gh", command, params)
}

#[test]
fn gh_needs_its_token_bound() {
    if !have("gh") {
        return;
    }
    let env = env();
    install(&env, "gh");
    let (code, envelope) = env.json(&["exec", "gh", "version"]);
    assert_eq!(
        (
            code,
            &envelope["spawned"],
            &envelope["error"]["reason"],
            &envelope["next"]
        ),
        (
            2,
            &json!(false),
            &json!("unbound"),
            &json!("a person runs: hcpx bind gh GH_TOKEN")
        ),
        "{envelope}"
    );
}

/// `version` runs without network; the API commands get it, and every command gets
/// the pack's own configuration folder and no prompt.
#[test]
fn gh_version_runs_offline() {
    if !have("gh") {
        return;
    }
    let env = bound();
    let (code, envelope) = env.json(&["exec", "gh", "version"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"].as_str().unwrap().starts_with("gh version 2."),
        "{envelope}"
    );
    assert_eq!(plan(&env, "version", &[])["sandbox"]["network"], json!(false));
    let data = plan(&env, "pr-list", &["repo=cli/cli"]);
    assert_eq!(
        data["sandbox"]["network"],
        json!({"allow": ["api.github.com:443", "uploads.github.com:443", "github.com:443", "*.githubusercontent.com:443", "*.blob.core.windows.net:443"]})
    );
    let names = data["env"].as_array().unwrap();
    for name in [
        "GH_CONFIG_DIR",
        "GH_NO_UPDATE_NOTIFIER",
        "GH_PROMPT_DISABLED",
        "GH_TOKEN",
        "NO_COLOR",
    ] {
        assert!(names.contains(&json!(name)), "{name}: {data}");
    }
}

/// The argv of the commands, with their JSON fields.
#[test]
fn gh_commands_render_their_argv_with_json_fields() {
    if !have("gh") {
        return;
    }
    let env = bound();
    let child = |command: &str, params: &[&str]| plan(&env, command, params)["child"].clone();
    let gh = on_tools_path("gh").unwrap().display().to_string();
    assert_eq!(
        child("pr-list", &["repo=cli/cli", "label=bug", "search=-label:wontfix"]),
        json!([
            gh,
            "pr",
            "list",
            "--repo",
            "cli/cli",
            "--state",
            "open",
            "--limit=30",
            "--label=bug",
            "--search=-label:wontfix",
            "--json",
            "number,title,author,state,isDraft,headRefName,baseRefName,labels,createdAt,updatedAt,url"
        ])
    );
    assert_eq!(
        child("run-view", &["run=5432101234"]),
        json!([
            gh,
            "run",
            "view",
            "5432101234",
            "--json",
            "databaseId,displayTitle,workflowName,status,conclusion,event,headBranch,headSha,createdAt,updatedAt,url,jobs"
        ])
    );
    // A title that looks like an option is the title's value.
    assert_eq!(
        child("pr-create", &["head=fix", "title=--draft", "body=-x"]),
        json!([gh, "pr", "create", "--title=--draft", "--body=-x", "--head=fix"])
    );
    assert_eq!(
        child("pr-merge", &["pr=7", "squash=true", "head-sha=1a2b3c4"]),
        json!([gh, "pr", "merge", "7", "--squash", "--match-head-commit=1a2b3c4"])
    );
    let data = plan(&env, "pr-merge", &["pr=7", "squash=true"]);
    assert_eq!(
        (&data["effect"], &data["decision"]),
        (&json!("write"), &json!("confirm"))
    );
}

#[test]
fn gh_refuses_values_that_would_be_options() {
    if !have("gh") {
        return;
    }
    let env = bound();
    for (command, params, message) in [
        (
            "pr-view",
            &["pr=--web"][..],
            "parameter `pr` does not match the pattern [0-9]{1,10}|https://[^\\s]+|[A-Za-z0-9_][A-Za-z0-9._/-]{0,254}",
        ),
        (
            "issue-view",
            &["issue=1", "repo=--hostname=x"],
            "parameter `repo` does not match the pattern ([A-Za-z0-9.-]+(:[0-9]{1,5})?/)?[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+",
        ),
        (
            "run-view",
            &["run=1 --log"],
            "parameter `run` does not match the pattern [0-9]{1,20}",
        ),
        (
            "pr-create",
            &["head=-x", "title=t", "body=b"],
            "parameter `head` does not match the pattern [A-Za-z0-9_][A-Za-z0-9._/:-]{0,254}",
        ),
        (
            "pr-list",
            &["state=draft"],
            "parameter `state` is not one of: open, closed, merged, all",
        ),
    ] {
        let mut args = vec!["exec", "gh", command, "--yes", "--"];
        args.extend_from_slice(params);
        let (code, envelope) = env.json(&args);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
}

/// gh reaches only GitHub's hosts: a repository on another host (as GitHub
/// Enterprise would be) is refused by hcpx's proxy, named in a warning, and gh
/// reports the proxy's refusal, exit code 1. The token was never gh's to send.
#[test]
fn gh_reaches_only_githubs_hosts() {
    if !have("gh") {
        return;
    }
    let env = bound();
    let (code, envelope) = env.json(&["exec", "gh", "pr-list", "--", "repo=enterprise.example/o/r"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert_eq!(
        envelope["warnings"],
        json!([
            "the pack tried to reach enterprise.example:443, which hcpx refused: enterprise.example:443 is not in the allowlist"
        ]),
        "{envelope}"
    );
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .contains("enterprise.example"),
        "{envelope}"
    );
}
