//! The `kubectl` catalog pack against the real kubectl, with a kubeconfig the test
//! writes and no cluster: what runs offline, the argv of each command, the failure
//! against a cluster that does not answer, and the refusals.

use serde_json::{Value, json};

use super::{env, have, install, on_tools_path};
use crate::common::TestEnv;

/// A TestEnv whose user has `~/.kube/config` for a cluster on a closed loopback port.
fn configured() -> (TestEnv, u16) {
    let env = env();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    env.write(
        "user/.kube/config",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster: {{server: \"https://127.0.0.1:{port}\"}}\n\
             contexts:\n- name: lab\n  context: {{cluster: lab, user: dev, namespace: shop}}\n- name: other\n  context: {{cluster: lab, user: dev}}\n\
             current-context: lab\nusers:\n- name: dev\n  user: {{token: not-a-real-token}}\n"
        ),
    );
    env.write(
        "work/k8s/web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: \"1\"}\n",
    );
    install(&env, "kubectl");
    (env, port)
}

fn plan(env: &TestEnv, command: &str, params: &[&str]) -> Value {
    super::plan(env, "kubectl", command, params)
}

/// The kubeconfig under `~` is read without KUBECONFIG, and `contexts` and
/// `version` need no cluster and no network.
#[test]
fn kubectl_reads_the_kubeconfig_offline() {
    if !have("kubectl") {
        return;
    }
    let (env, _) = configured();
    let output = env.run(&["exec", "kubectl", "contexts"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            0,
            "CURRENT   NAME    CLUSTER   AUTHINFO   NAMESPACE\n*         lab     lab       dev        shop\n          other   lab       dev        \n"
        ),
        "{output}"
    );
    let (code, envelope) = env.json(&["exec", "kubectl", "version"]);
    assert_eq!(
        (code, &envelope["data"]["clientVersion"]["major"]),
        (0, &json!("1")),
        "{envelope}"
    );
    for command in ["contexts", "version"] {
        assert_eq!(
            plan(&env, command, &[])["sandbox"]["network"],
            json!(false),
            "{command}"
        );
    }
}

#[test]
fn kubectl_commands_render_their_argv() {
    if !have("kubectl") {
        return;
    }
    let (env, _) = configured();
    let kubectl = on_tools_path("kubectl").unwrap().display().to_string();
    let child = |command: &str, params: &[&str]| plan(&env, command, params)["child"].clone();
    assert_eq!(
        child(
            "get",
            &["resource=pods,svc", "namespace=shop", "selector=app=web,tier!=db"]
        ),
        json!([
            kubectl,
            "get",
            "pods,svc",
            "--namespace=shop",
            "--selector=app=web,tier!=db",
            "--output=json"
        ])
    );
    assert_eq!(
        child("logs", &["pod=deploy/web", "previous=true", "since=10m"]),
        json!([
            kubectl,
            "logs",
            "deploy/web",
            "--tail=200",
            "--since=10m",
            "--previous"
        ])
    );
    assert_eq!(
        child("apply", &["file=k8s/web.yaml", "dry-run=client"]),
        json!([
            kubectl,
            "apply",
            "--filename=./k8s/web.yaml",
            "--dry-run=client",
            "--output=json"
        ])
    );
    assert_eq!(
        child(
            "delete",
            &["resource=pod", "name=web-1", "name=web-2", "dry-run=server"]
        ),
        json!([
            kubectl,
            "delete",
            "pod",
            "--dry-run=server",
            "--wait=false",
            "--",
            "web-1",
            "web-2"
        ])
    );
    assert_eq!(
        child("rollout-restart", &["workload=deployment/web"]),
        json!([kubectl, "rollout", "restart", "deployment/web", "--dry-run=none"])
    );
    let (_, envelope) = env.json(&[
        "exec",
        "kubectl",
        "get",
        "--dry-run",
        "--json",
        "--",
        "resource=pods",
    ]);
    assert_eq!(
        envelope["data"]["child"],
        json!([kubectl, "get", "pods", "--output=json"])
    );
    for (command, params, effect, decision) in [
        ("get", &["resource=pods"][..], "read", "allow"),
        ("apply", &["file=k8s/web.yaml"], "write", "confirm"),
        (
            "delete",
            &["resource=pod", "name=x"],
            "destructive",
            "confirm-human",
        ),
    ] {
        let data = plan(&env, command, params);
        assert_eq!(
            (&data["effect"], &data["decision"], &data["sandbox"]["network"]),
            (&json!(effect), &json!(decision), &json!(true)),
            "{command}"
        );
    }
}

/// With no cluster behind the kubeconfig's address, a command that needs it fails
/// with kubectl's own message; `apply --dry-run=client` too (it asks the cluster
/// for its API types).
#[test]
fn kubectl_reports_a_cluster_that_does_not_answer() {
    if !have("kubectl") {
        return;
    }
    let (env, port) = configured();
    let (code, envelope) = env.json(&["exec", "kubectl", "get", "--", "resource=pods"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    let stderr = envelope["stderr"].as_str().unwrap();
    assert!(
        stderr.ends_with(&format!(
            "The connection to the server 127.0.0.1:{port} was refused - did you specify the right host or port?\n"
        )),
        "{stderr}"
    );
    let (code, envelope) = env.json(&[
        "exec",
        "kubectl",
        "apply",
        "--yes",
        "--",
        "file=k8s/web.yaml",
        "dry-run=client",
    ]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .contains(&format!("dial tcp 127.0.0.1:{port}: connect: connection refused")),
        "{envelope}"
    );
}

/// Manifests are files of the working directory: not stdin, not a URL, not a file
/// elsewhere; values never become options.
#[test]
fn kubectl_refuses_files_outside_and_values_read_as_options() {
    if !have("kubectl") {
        return;
    }
    let (env, _) = configured();
    for (command, params, message) in [
        (
            "apply",
            &["file=/etc/kubernetes/admin.yaml"][..],
            "parameter `file` is not a relative path inside the working directory",
        ),
        (
            "apply",
            &["file=../x.yaml"],
            "parameter `file` leaves the working directory",
        ),
        (
            "get",
            &["resource=--raw=/api"],
            "parameter `resource` does not match the pattern [a-z][a-z0-9.-]{0,252}(,[a-z][a-z0-9.-]{0,252}){0,15}",
        ),
        (
            "get",
            &["resource=pods", "namespace=-A"],
            "parameter `namespace` does not match the pattern [a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
        ),
        (
            "logs",
            &["pod=web", "since=1d"],
            "parameter `since` does not match the pattern [0-9]{1,6}(s|m|h)",
        ),
        (
            "delete",
            &["resource=pods", "name=--all"],
            "parameter `name` does not match the pattern [a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
        ),
        (
            "rollout-restart",
            &["workload=web"],
            "parameter `workload` does not match the pattern (deployment|deploy|daemonset|ds|statefulset|sts)/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
        ),
    ] {
        let mut args = vec!["exec", "kubectl", command, "--yes", "--"];
        args.extend_from_slice(params);
        let (code, envelope) = env.json(&args);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // What would be stdin or a URL to kubectl is a file name here.
    assert_eq!(
        plan(&env, "apply", &["file=-"])["child"][2],
        json!("--filename=./-")
    );
    assert_eq!(
        plan(&env, "apply", &["file=https://evil.example/x.yaml"])["child"][2],
        json!("--filename=./https://evil.example/x.yaml")
    );
}
