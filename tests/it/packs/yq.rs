//! The `yq` catalog pack against the real yq (kislyuk's, with jq).

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

const COMPOSE: &str = "# the services\nservices:\n  web:\n    image: nginx:1.27\n    ports: [\"8080:80\"]\n  db:\n    image: postgres:16\n";

fn yq_env() -> TestEnv {
    let env = env();
    env.write("work/compose.yml", COMPOSE);
    env.write(
        "work/k8s/all.yaml",
        "kind: Deployment\nmetadata: {name: web}\n---\nkind: Service\nmetadata: {name: web}\n",
    );
    install(&env, "yq");
    env
}

fn text(env: &TestEnv, params: &[&str]) -> (i32, String) {
    let mut args = vec!["exec", "yq", "filter", "--"];
    args.extend_from_slice(params);
    let output = env.run(&args);
    assert_eq!(output.stderr, "", "{output}");
    (output.code, output.stdout)
}

fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "yq", command, "--yes", "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

#[test]
fn yq_filters_yaml_into_json_or_yaml() {
    if !have("yq") || !have("jq") {
        return;
    }
    let env = yq_env();
    assert_eq!(
        text(&env, &["filter=.services | keys", "files=compose.yml"]),
        (0, "[\n  \"db\",\n  \"web\"\n]\n".to_owned())
    );
    assert_eq!(
        text(
            &env,
            &["filter=.services.web.image", "files=compose.yml", "raw=true"]
        ),
        (0, "nginx:1.27\n".to_owned())
    );
    assert_eq!(
        text(&env, &["filter=.services.web", "files=compose.yml", "yaml=true"]),
        (0, "image: nginx:1.27\nports:\n  - 8080:80\n".to_owned())
    );
    // One result per document, or all of them as one array.
    assert_eq!(
        text(&env, &["filter=.kind", "files=k8s/all.yaml", "raw=true"]),
        (0, "Deployment\nService\n".to_owned())
    );
    let (code, envelope) = exec(
        &env,
        "filter",
        &["filter=map(.kind)", "files=k8s/all.yaml", "slurp=true"],
    );
    assert_eq!(
        (code, &envelope["data"]),
        (0, &json!(["Deployment", "Service"])),
        "{envelope}"
    );
    let (code, envelope) = exec(
        &env,
        "filter",
        &["filter=.services[] | .image", "files=compose.yml"],
    );
    assert_eq!(
        (code, &envelope["data"]),
        (0, &json!(["nginx:1.27", "postgres:16"])),
        "{envelope}"
    );
}

#[test]
fn yq_reports_bad_yaml_bad_filters_and_missing_files() {
    if !have("yq") || !have("jq") {
        return;
    }
    let env = yq_env();
    env.write("work/bad.yaml", "a: [\n");
    for (params, exit, says) in [
        (
            &["filter=.", "files=bad.yaml"][..],
            1,
            "did not find expected node content",
        ),
        (
            &["filter=.", "files=absent.yaml"],
            2,
            "can't open './absent.yaml'",
        ),
        (&["filter=.a |", "files=compose.yml"], 3, "jq: 1 compile error"),
        (
            &["filter=.services.web.ports.x", "files=compose.yml"],
            5,
            "Cannot index array with string \"x\"",
        ),
    ] {
        let (code, envelope) = exec(&env, "filter", params);
        assert_eq!(
            (code, &envelope["exitCode"]),
            (1, &json!(exit)),
            "{params:?}: {envelope}"
        );
        assert!(
            envelope["stderr"].as_str().unwrap().contains(says),
            "{says}: {envelope}"
        );
    }
}

/// `edit` rewrites the file (its comment is lost), so it is destructive: an agent
/// cannot confirm it; a person's policy can make it a plain confirmation.
#[test]
fn yq_edit_rewrites_the_file_and_is_destructive() {
    if !have("yq") || !have("jq") {
        return;
    }
    let env = yq_env();
    let agent = env
        .command(&[
            "--json",
            "exec",
            "yq",
            "edit",
            "--yes",
            "--",
            "filter=.a = 1",
            "files=compose.yml",
        ])
        .env("HCP_AGENT", "1")
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&agent.stdout).unwrap();
    assert_eq!(
        (
            agent.status.code(),
            &envelope["spawned"],
            &envelope["data"]["decision"]
        ),
        (Some(2), &json!(false), &json!("confirm-human")),
        "{envelope}"
    );
    assert_eq!(env.run(&["policy", "set", "yq.edit", "confirm"]).code, 0);
    let (code, envelope) = exec(
        &env,
        "edit",
        &["filter=.services.web.image = \"nginx:1.28\"", "files=compose.yml"],
    );
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("compose.yml")).unwrap(),
        "services:\n  web:\n    image: nginx:1.28\n    ports:\n      - 8080:80\n  db:\n    image: postgres:16\n"
    );
}

/// A filter never becomes an option of yq or jq (yq reads `-i` in any short option
/// as "in place"); files stay inside the working directory, and `-` (stdin) is
/// refused.
#[test]
fn yq_values_never_become_options_or_paths_outside() {
    if !have("yq") || !have("jq") {
        return;
    }
    let env = yq_env();
    for (params, message) in [
        (
            &["filter=-yi", "files=compose.yml"][..],
            "parameter `filter` starts with `-`, which a positional value may not (it would read as an option)",
        ),
        (
            &["filter=.", "files=../x.yaml"],
            "parameter `files` leaves the working directory",
        ),
        (
            &["filter=.", "files=/etc/hosts"],
            "parameter `files` is not a relative path inside the working directory",
        ),
    ] {
        let (code, envelope) = exec(&env, "filter", params);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    let (code, envelope) = exec(&env, "filter", &["filter=.", "files=-"]);
    assert_eq!(
        (code, &envelope["spawned"], &envelope["error"]["reason"]),
        (2, &json!(false), &json!("invalid_param")),
        "{envelope}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("compose.yml")).unwrap(),
        COMPOSE
    );
}

/// mikefarah's Go yq, first on PATH, is reported as the wrong variant: its version
/// line does not match the pack's versionPattern.
#[test]
fn yq_tells_mikefarahs_yq_from_kislyuks() {
    if !have("yq") {
        return;
    }
    let mut env = yq_env();
    let fake = env.root.path().join("go-yq");
    std::fs::create_dir(&fake).unwrap();
    let script = fake.join("yq");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'yq (https://github.com/mikefarah/yq/) version v4.44.1'\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.path = format!("{}:{}", fake.display(), env.path);
    let (_, envelope) = env.json(&["availability", "yq"]);
    assert_eq!(
        (
            &envelope["data"]["runnable"],
            &envelope["data"]["program"]["version"]
        ),
        (
            &json!(false),
            &json!("yq (https://github.com/mikefarah/yq/) version v4.44.1")
        ),
        "{envelope}"
    );
}
