//! Replicas of `hcpx mcp --http --stateless` that share `HCP_HOME` and a state key
//! file, driven by hand on protocol 2026-07-28: a paged output made on one is read on
//! another (and said to be elsewhere when they share no home), the probes answer
//! before the token and say nothing else, and a key file that breaks makes the
//! server not ready while the keys in force stay. The balancer in front of three of
//! them, with a third-party client, is tests/interop/replicas.py.

use std::time::Duration;

use serde_json::{Value, json};

use super::TOKEN;
use crate::common::{HttpResponse, HttpServer, TestEnv, wait_until};

const KEY_A: &str = "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=";

/// A 2026-07-28 `tools/call` of `hcp` with `arguments`, with the bearer token.
fn call(server: &HttpServer, arguments: &Value) -> HttpResponse {
    let bearer = format!("Bearer {TOKEN}");
    server.post(
        &[
            ("Authorization", &bearer),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "hcp"),
        ],
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "hcp", "arguments": arguments,
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {},
                       "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "0" } } } }),
    )
}

/// The envelope of a tool call's answer.
fn envelope(response: &HttpResponse) -> Value {
    assert_eq!(response.status, 200, "{response:?}");
    response.messages()[0]["result"]["structuredContent"].clone()
}

fn replica(env: &TestEnv, keys: &std::path::Path) -> HttpServer {
    HttpServer::start(
        env,
        "127.0.0.1:0",
        &["--stateless", "--state-key-file", keys.to_str().unwrap()],
    )
}

#[test]
fn an_output_kept_by_one_replica_is_paged_on_another_sharing_its_home() {
    let env = TestEnv::new()
        .env("HCP_MCP_TOKEN", TOKEN)
        .env("HCP_MCP_VIEW_BYTES", "1024");
    env.install_fixture("probe", "probe");
    let keys = env.write("keys", &format!("k1 {KEY_A}\n"));
    let (first, second) = (replica(&env, &keys), replica(&env, &keys));
    let ran = envelope(&call(
        &first,
        &json!({ "argv": ["exec", "probe", "flood", "--", "mib=1"] }),
    ));
    assert_eq!(ran["outputTruncated"], json!(true), "{ran}");
    let id = ran["outputId"].as_str().unwrap().to_owned();
    assert!(
        id.len() == 36 && id.starts_with("out-"),
        "an unguessable id: {id}"
    );
    let page = envelope(&call(
        &second,
        &json!({ "argv": ["output", &id, "--offset", "1048000", "--limit", "1000"] }),
    ));
    assert_eq!(page["ok"], json!(true), "{page}");
    assert_eq!(page["data"]["total"], json!(1_048_576), "{page}");
    assert_eq!(page["data"]["length"], json!(576), "{page}");
    assert!(
        env.home().join("mcp/outputs").join(&id).is_file(),
        "kept in HCP_HOME"
    );

    // A replica with a home of its own does not have it, and says why.
    let apart = TestEnv::new().env("HCP_MCP_TOKEN", TOKEN);
    let keys = apart.write("keys", &format!("k1 {KEY_A}\n"));
    let alone = replica(&apart, &keys);
    let unknown = envelope(&call(&alone, &json!({ "argv": ["output", &id] })));
    assert_eq!(unknown["error"]["reason"], json!("unknown_output"), "{unknown}");
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(message.contains("share that HCP_HOME"), "{message}");
}

#[test]
fn probes_answer_before_the_token_and_say_nothing_else() {
    let env = TestEnv::new().env("HCP_MCP_TOKEN", TOKEN);
    let keys = env.write("keys", &format!("k1 {KEY_A}\n"));
    let server = replica(&env, &keys);
    let health = server.request("GET", "/healthz", &[], b"");
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"), "{health:?}");
    let ready = || server.request("GET", "/readyz", &[], b"");
    assert!(
        wait_until(Duration::from_secs(10), || ready().status == 200),
        "{:?}",
        ready()
    );
    assert_eq!(ready().body, "ready\n");
    // A probe names the replica by its address, which is no allowed host.
    let by_address = server.request("GET", "/healthz", &[("Host", "10.1.2.3:8765")], b"");
    assert_eq!(by_address.status, 200, "{by_address:?}");
    let posted = server.request("POST", "/readyz", &[], b"{}");
    assert_eq!(posted.status, 405, "{posted:?}");
    assert_eq!(posted.header("allow"), Some("GET, HEAD"));
    // Nothing else is open: the endpoint and any other path still want the token.
    for path in ["/mcp", "/healthz/x", "/readyz/../mcp", "/"] {
        let refused = server.request("GET", path, &[], b"");
        assert!(
            refused.status == 401 || refused.status == 404,
            "{path}: {refused:?}"
        );
        assert_ne!(refused.status, 200, "{path}");
    }

    // A key file that breaks: not ready (and the body says no more), ready again
    // once it is fixed.
    std::fs::write(&keys, "k1 not-a-key\n").unwrap();
    let broken = ready();
    assert_eq!(
        (broken.status, broken.body.as_str()),
        (503, "not ready\n"),
        "{broken:?}"
    );
    let replaced = env.write("keys.new", &format!("k2 {KEY_A}\n"));
    std::fs::rename(replaced, &keys).unwrap();
    assert_eq!(ready().status, 200);
}

#[test]
fn a_key_file_that_does_not_read_stops_the_start() {
    let env = TestEnv::new();
    let missing = env.root.path().join("no-keys");
    let output = env
        .command(&[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--state-key-file",
            missing.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("state key file"), "{stderr}");
    let short = env.write("short", "k1 c2hvcnQ=\n");
    let output = env
        .command(&[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--state-key-file",
            short.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("shorter than 32 bytes"), "{stderr}");
}
