//! OAuth and replicas together: `hcpx mcp --http --stateless --state-key-file PATH
//! --oauth-issuer URL --audience URL`, against the real OpenID provider of
//! [`super::oidc`]. The probes answer before the OAuth gate (which answers every
//! other path 401); a confirmation asked by one subject on one replica is answered
//! by that subject alone, on any replica; a paged output kept on disk is its
//! subject's alone on every replica.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::oauth::free_port;
use super::oidc::{self, Options};
use crate::common::{HttpResponse, HttpServer, TestEnv, wait_until};

const KEY_A: &str = "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=";

/// A stateless OAuth replica of `env`'s home, sealing with `keys`, for `audience`
/// (one for all replicas: the balancer's URL).
fn replica(env: &TestEnv, issuer: &str, audience: &str, keys: &Path) -> HttpServer {
    HttpServer::start(
        env,
        "127.0.0.1:0",
        &[
            "--stateless",
            "--state-key-file",
            keys.to_str().unwrap(),
            "--oauth-issuer",
            issuer,
            "--audience",
            audience,
        ],
    )
}

/// A 2026-07-28 `tools/call` of `hcp` with `token`, from a client that can be
/// asked; with `answer`, the `(inputResponses, requestState)` of an earlier one.
fn call(server: &HttpServer, token: &str, arguments: &Value, answer: Option<(&Value, &str)>) -> HttpResponse {
    let bearer = format!("Bearer {token}");
    let mut params = json!({ "name": "hcp", "arguments": arguments,
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
                   "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "0" } } });
    if let Some((responses, state)) = answer {
        params["inputResponses"] = responses.clone();
        params["requestState"] = json!(state);
    }
    server.post(
        &[
            ("Authorization", &bearer),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "hcp"),
        ],
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }),
    )
}

/// The result of a tool call's answer.
fn result(response: &HttpResponse) -> Value {
    assert_eq!(response.status, 200, "{response:?}");
    response.messages()[0]["result"].clone()
}

fn reason(result: &Value) -> &str {
    result["structuredContent"]["error"]["reason"]
        .as_str()
        .unwrap_or("")
}

#[test]
fn probes_answer_before_the_oauth_gate_and_say_nothing_else() {
    if !oidc::available() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let issuer = oidc::start(&keys.path().join("a.json"), &Options::default());
    let env = TestEnv::new();
    let state_keys = env.write("keys", &format!("k1 {KEY_A}\n"));
    let audience = format!("http://127.0.0.1:{}/mcp", free_port());
    let server = replica(&env, &issuer.issuer, &audience, &state_keys);
    let health = server.request("GET", "/healthz", &[], b"");
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"), "{health:?}");
    assert_eq!(health.header("www-authenticate"), None);
    let ready = || server.request("GET", "/readyz", &[], b"");
    assert!(
        wait_until(Duration::from_secs(10), || ready().status == 200),
        "{:?}",
        ready()
    );
    assert_eq!(ready().body, "ready\n");
    // A token that is no good changes nothing for a probe.
    let junk = server.request("GET", "/healthz", &[("Authorization", "Bearer junk")], b"");
    assert_eq!(junk.status, 200, "{junk:?}");
    // Everything else still meets the gate: 401 with the metadata's address.
    for path in ["/mcp", "/healthz/x", "/readyz/../mcp", "/", "/healthzx"] {
        let refused = server.request("GET", path, &[], b"");
        assert_eq!(refused.status, 401, "{path}: {refused:?}");
        assert!(
            refused
                .header("www-authenticate")
                .is_some_and(|challenge| challenge.starts_with("Bearer resource_metadata=")),
            "{path}: {refused:?}"
        );
    }
    // A key file that breaks: not ready, unauthenticated as well.
    std::fs::write(&state_keys, "k1 not-a-key\n").unwrap();
    let broken = ready();
    assert_eq!(
        (broken.status, broken.body.as_str()),
        (503, "not ready\n"),
        "{broken:?}"
    );
}

/// alice's confirmation is asked on one replica: bob cannot answer it on another
/// (and his try spends nothing), alice can. alice's paged output, kept in the
/// shared home, is hers on every replica.
#[test]
fn a_subjects_confirmations_and_outputs_are_its_own_on_every_replica() {
    if !oidc::available() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let issuer = oidc::start(&keys.path().join("a.json"), &Options::default());
    let env = TestEnv::new().env("HCP_MCP_VIEW_BYTES", "1024");
    env.install_fixture("probe", "probe");
    std::fs::create_dir_all(env.work().join("out")).unwrap();
    let state_keys = env.write("keys", &format!("k1 {KEY_A}\n"));
    let audience = format!("http://127.0.0.1:{}/mcp", free_port());
    let (first, second) = (
        replica(&env, &issuer.issuer, &audience, &state_keys),
        replica(&env, &issuer.issuer, &audience, &state_keys),
    );
    let full = "hcp.read hcp.full";
    let alice = issuer.token("alice", full, &audience, "RS256");
    let bob = issuer.token("bob", full, &audience, "ES256");

    let write = json!({ "argv": ["exec", "probe", "write", "--", "target=out/alices"] });
    let asked = result(&call(&first, &alice, &write, None));
    let state = asked["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("not asked: {asked}"));
    let yes = json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
    let written = env.work().join("out/alices");
    for (server, who) in [(&second, "bob on the other"), (&first, "bob on the same")] {
        let stolen = result(&call(server, &bob, &write, Some((&yes, state))));
        assert_eq!(reason(&stolen), "needs_confirmation", "{who}: {stolen}");
        assert!(!written.exists(), "{who} answered alice's confirmation");
    }
    let answered = result(&call(&second, &alice, &write, Some((&yes, state))));
    assert_eq!(answered["isError"], json!(false), "{answered}");
    assert!(written.is_file());
    let again = result(&call(&first, &alice, &write, Some((&yes, state))));
    assert_eq!(reason(&again), "needs_confirmation", "used once: {again}");

    let flood = result(&call(
        &first,
        &alice,
        &json!({ "argv": ["exec", "probe", "flood", "--", "mib=1"] }),
        None,
    ));
    let id = flood["structuredContent"]["outputId"]
        .as_str()
        .unwrap_or_else(|| panic!("no output id: {flood}"))
        .to_owned();
    let page = json!({ "argv": ["output", &id, "--offset", "1048000", "--limit", "1000"] });
    for server in [&first, &second] {
        let theirs = result(&call(server, &bob, &page, None));
        assert_eq!(reason(&theirs), "unknown_output", "bob paged alice's: {theirs}");
    }
    let mine = result(&call(&second, &alice, &page, None));
    assert_eq!(mine["structuredContent"]["data"]["length"], json!(576), "{mine}");
    // By resource too.
    let uri = format!("hcp://output/{id}");
    let read = |token: &str| {
        let bearer = format!("Bearer {token}");
        let answer = second.post(
            &[
                ("Authorization", &bearer),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "resources/read"),
                ("Mcp-Name", &uri),
            ],
            &json!({ "jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {
                "uri": uri,
                "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                           "io.modelcontextprotocol/clientCapabilities": {},
                           "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "0" } } } }),
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.messages()[0].clone()
    };
    assert!(read(&bob)["error"].is_object(), "bob read alice's output");
    let text = read(&alice)["result"]["contents"][0]["text"]
        .as_str()
        .map_or(0, str::len);
    assert!(text > 1_000_000, "alice reads hers: {text} bytes");
    // On disk, the capture names its owner.
    let header = std::fs::read(env.home().join("mcp/outputs").join(&id)).unwrap();
    let header =
        String::from_utf8_lossy(&header[..header.iter().position(|b| *b == b'\n').unwrap()]).into_owned();
    assert_eq!(header, "hcpx-output 2 1048576 0 s616c696365", "{header}");
}
