//! `hcpx mcp --http`: the real binary on a real socket, driven by HTTP/1.1 requests
//! written by hand. Each protection is checked from the outside: the bearer token
//! off loopback, the Host and Origin allow-lists, the body bound, idle sessions, and
//! an orderly stop on SIGTERM that leaves no child behind.

mod access;
mod flood;
mod oauth;
mod oauth_replicas;
mod oidc;
mod replicas;

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{HttpServer, TestEnv, http_request, pids_of, wait_until};

const TOKEN: &str = "test-token-0123456789abcdef";

fn tools_list() -> Value {
    json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })
}

fn in_session<'a>(session: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    headers
}

#[test]
fn off_loopback_every_request_needs_the_token() {
    let env = TestEnv::new();
    // Without a token, a wildcard address is refused before anything listens.
    let mut refused = env
        .command(&["mcp", "--http", "0.0.0.0:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stopped = wait_until(Duration::from_secs(5), || refused.try_wait().unwrap().is_some());
    let _ = refused.kill();
    let output = refused.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stopped, "it served 0.0.0.0 without a token: {stderr}");
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bearer token"), "{stderr}");

    let env = env.env("HCP_MCP_TOKEN", TOKEN);
    let server = HttpServer::start(&env, "0.0.0.0:0", &[]);
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } });
    let bare = server.post(&[], &initialize);
    assert_eq!(bare.status, 401, "{bare:?}");
    assert_eq!(bare.header("www-authenticate"), Some("Bearer"));
    let wrong = server.post(
        &[("Authorization", "Bearer test-token-0123456789abcdeX")],
        &initialize,
    );
    assert_eq!(wrong.status, 401, "{wrong:?}");
    let prefix = server.post(&[("Authorization", "Bearer test-token")], &initialize);
    assert_eq!(prefix.status, 401, "{prefix:?}");
    let bearer = format!("Bearer {TOKEN}");
    let session = server.session(&[("Authorization", &bearer)]);
    let listed = server.post(
        &in_session(&session, &[("Authorization", &bearer)]),
        &tools_list(),
    );
    assert_eq!(listed.status, 200, "{listed:?}");
    assert_eq!(listed.messages()[0]["result"]["tools"][0]["name"], json!("hcp"));
    // The same session without the token is refused too.
    let stolen = server.post(&in_session(&session, &[]), &tools_list());
    assert_eq!(stolen.status, 401, "{stolen:?}");
    assert!(
        !server.stderr.lock().unwrap().contains(TOKEN),
        "the token was logged"
    );
}

/// A token server has no OAuth: its discovery documents are not there (404), not
/// behind the token (401), since a 401 sends hosts (Claude Code) into OAuth discovery
/// and Dynamic Client Registration instead of sending the configured header. The
/// endpoint itself still needs the token, however its path is spelt.
#[test]
fn a_token_server_serves_no_oauth_discovery() {
    let env = TestEnv::new().env("HCP_MCP_TOKEN", TOKEN);
    let server = HttpServer::start(&env, "127.0.0.1:0", &[]);
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/mcp/.well-known/openid-configuration",
    ] {
        for method in ["GET", "POST"] {
            let answer = server.request(method, path, &[], b"");
            assert_eq!(answer.status, 404, "{method} {path}: {answer:?}");
            assert_eq!(answer.header("www-authenticate"), None, "{method} {path}");
        }
    }
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } });
    let body = initialize.to_string();
    for path in ["/mcp", "/.well-known/../mcp", "/.well-known/%2e%2e/mcp", "//mcp"] {
        let answer = server.request(
            "POST",
            path,
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            body.as_bytes(),
        );
        assert_ne!(answer.status, 200, "{path} served without the token: {answer:?}");
        assert!(
            !answer.body.contains("serverInfo"),
            "{path} served without the token: {answer:?}"
        );
    }
    let bearer = format!("Bearer {TOKEN}");
    server.session(&[("Authorization", &bearer)]);
}

#[test]
fn a_foreign_origin_or_host_is_refused() {
    let env = TestEnv::new();
    let server = HttpServer::start(
        &env,
        "127.0.0.1:0",
        &["--allow-origin", "https://app.example.com"],
    );
    let port = server.address.port();
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } });

    let foreign = server.post(&[("Origin", "http://evil.example")], &ping);
    assert_eq!(foreign.status, 403, "{foreign:?}");
    let other_port = server.post(&[("Origin", "http://127.0.0.1:1")], &ping);
    assert_eq!(other_port.status, 403, "{other_port:?}");
    let own = format!("http://127.0.0.1:{port}");
    assert_eq!(server.post(&[("Origin", &own)], &ping).status, 200);
    assert_eq!(
        server
            .post(&[("Origin", "https://app.example.com")], &ping)
            .status,
        200,
        "--allow-origin adds one"
    );

    // DNS rebinding: a name that resolves to 127.0.0.1 but is not ours.
    let rebound = server.post(&[("Host", "evil.example")], &ping);
    assert_eq!(rebound.status, 403, "{rebound:?}");
    let rebound_port = format!("evil.example:{port}");
    assert_eq!(server.post(&[("Host", &rebound_port)], &ping).status, 403);
    let local = format!("localhost:{port}");
    assert_eq!(server.post(&[("Host", &local)], &ping).status, 200);
}

#[test]
fn an_oversize_body_is_refused() {
    let env = TestEnv::new();
    let server = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let session = server.session(&[]);
    let big = "x".repeat(5 * 1024 * 1024);
    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "args": big } } });
    let refused = server.post(&in_session(&session, &[]), &call);
    assert_eq!(refused.status, 413, "{}", refused.status);
    // Just under the bound is read and answered (as a refusal of the tool's own).
    let under = "x".repeat(1024 * 1024 + 10);
    let call = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "args": under } } });
    let answered = server.post(&in_session(&session, &[]), &call);
    assert_eq!(answered.status, 200, "{answered:?}");
    let result = answered
        .messages()
        .into_iter()
        .find(|message| message["id"] == json!(4))
        .unwrap();
    assert_eq!(
        result["result"]["structuredContent"]["error"]["reason"],
        json!("too_large")
    );
}

#[test]
fn an_idle_session_expires() {
    let env = TestEnv::new();
    let server = HttpServer::start(&env, "127.0.0.1:0", &["--session-idle-secs", "2"]);
    let session = server.session(&[]);
    assert_eq!(server.post(&in_session(&session, &[]), &tools_list()).status, 200);
    // Used within the bound, it stays (three gaps that add up past it).
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(900));
        assert_eq!(server.post(&in_session(&session, &[]), &tools_list()).status, 200);
    }
    // Left alone past it, it is gone.
    std::thread::sleep(Duration::from_millis(4000));
    let expired = server.post(&in_session(&session, &[]), &tools_list());
    assert_eq!(expired.status, 404, "{expired:?}");
    // A new session works, until the client ends it.
    let fresh = server.session(&[]);
    assert_eq!(server.post(&in_session(&fresh, &[]), &tools_list()).status, 200);
    let ended = http_request(server.loopback(), "DELETE", "/mcp", &in_session(&fresh, &[]), b"");
    assert_eq!(ended.status, 204, "{ended:?}");
    assert_eq!(server.post(&in_session(&fresh, &[]), &tools_list()).status, 404);
}

#[test]
fn stateless_mode_answers_without_a_session() {
    let env = TestEnv::new();
    let server = HttpServer::start(&env, "127.0.0.1:0", &["--stateless"]);
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "argv": ["search", "journey"] } } });
    let answered = server.post(&[("MCP-Protocol-Version", "2025-11-25")], &call);
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(answered.header("mcp-session-id"), None);
    let result = &answered.messages()[0]["result"];
    assert_eq!(
        result["structuredContent"]["data"]["results"][0]["id"],
        json!("transit")
    );
}

#[test]
fn read_only_holds_over_http() {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    let server = HttpServer::start(&env, "127.0.0.1:0", &["--read-only"]);
    let session = server.session(&[]);
    let listed = server.post(&in_session(&session, &[]), &tools_list());
    assert_eq!(
        listed.messages()[0]["result"]["tools"][0]["annotations"]["readOnlyHint"],
        json!(true)
    );
    // Every command that writes, of a pack or of hcpx, confirmed: denied.
    let writes = [
        json!(["install", "transit"]),
        json!(["uninstall", "probe"]),
        json!(["exec", "probe", "write", "--", "target=x"]),
        json!(["exec", "probe", "wipe"]),
        json!(["pack", "new", "fresh"]),
    ];
    for (id, argv) in (6..).zip(writes) {
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "hcp", "arguments": { "argv": argv, "confirm": true } } });
        let refused = server.post(&in_session(&session, &[]), &call);
        let result = refused
            .messages()
            .into_iter()
            .find(|message| message["id"] == json!(id))
            .unwrap();
        let found = &result["result"]["structuredContent"];
        assert_eq!(
            found["error"]["reason"],
            json!("denied_by_policy"),
            "{argv}: {result}"
        );
        assert_eq!(found["spawned"], json!(false), "{argv}: {result}");
    }
    for path in ["x", "fresh"] {
        assert!(!env.work().join(path).exists(), "{path}");
    }
    assert!(env.home().join("packs/probe").is_dir());
    assert!(!env.home().join("packs/transit").exists());
}

/// SIGTERM while a call runs: the call is cancelled, its children are killed, and
/// the server exits 0 by itself.
#[test]
fn sigterm_during_a_long_call_stops_cleanly_and_leaves_no_child() {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    let mut server = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let session = server.session(&[]);
    let address = server.loopback();
    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "argv": ["exec", "probe", "sleep", "--", "seconds=4201"] } } });
    let caller = std::thread::spawn(move || {
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        // The connection ends with the server, answered or not.
        std::panic::catch_unwind(|| {
            http_request(address, "POST", "/mcp", &headers, call.to_string().as_bytes())
        })
    });
    assert!(
        wait_until(Duration::from_secs(10), || !pids_of("sleep 4201").is_empty()),
        "the call started; stderr: {}",
        server.stderr.lock().unwrap()
    );
    let status =
        crate::common::terminate(&mut server.child).expect("the server stopped within 8 s of SIGTERM");
    assert_eq!(
        status.code(),
        Some(0),
        "{status:?}; stderr: {}",
        server.stderr.lock().unwrap()
    );
    assert_eq!(pids_of("sleep 4201"), Vec::<String>::new());
    let _ = caller.join();
    // Nothing listens any more.
    assert!(std::net::TcpStream::connect(address).is_err());
}

/// With `--json`, `hcpx mcp --http` says in one line on stdout that it serves, at
/// which URL (port 0: the port it picked) and as which process, once it accepts
/// connections; over a unix socket, the socket too.
#[test]
fn with_json_the_server_prints_one_ready_line() {
    let env = TestEnv::new();
    let socket = env.root.path().join("mcp.sock");
    for (listen, address) in [("--http", "127.0.0.1:0"), ("--unix", socket.to_str().unwrap())] {
        let mut server = env
            .command(&["--json", "mcp", listen, address])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let (line, rest) = crate::common::first_line(&mut server);
        let line = line.unwrap_or_else(|| {
            crate::common::terminate(&mut server);
            panic!("no line on stdout for {listen}")
        });
        let ready: Value = serde_json::from_str(&line).unwrap();
        let expected = match listen {
            "--http" => {
                let url = ready["url"].as_str().unwrap_or_default().to_owned();
                let port = url
                    .strip_prefix("http://127.0.0.1:")
                    .and_then(|rest| rest.strip_suffix("/mcp"))
                    .and_then(|port| port.parse::<u16>().ok())
                    .filter(|port| *port > 0);
                let port = port.unwrap_or_else(|| panic!("no port in {line}"));
                assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
                json!({"serving": "mcp", "url": url, "pid": server.id()})
            }
            _ => {
                assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
                json!({"serving": "mcp", "url": "http://localhost/mcp", "socket": socket, "pid": server.id()})
            }
        };
        assert_eq!(ready, expected);
        crate::common::terminate(&mut server).unwrap();
        assert_eq!(rest.join().unwrap(), "", "one line only");
    }
}
