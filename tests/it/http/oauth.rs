//! `hcpx mcp --http --oauth-issuer URL --audience URL`: the resource server against a
//! real OpenID provider on loopback ([`super::oidc`]), with tokens it issues: good
//! ones (each signature algorithm it has), and expired, for another audience, from
//! another issuer, signed with an unknown key, with a key posing under the issuer's
//! key id, HMAC-signed with the public key, and short of a scope. Then what the
//! subject is: the caller in policy, audit and kept outputs, and the owner of its
//! session.

use std::time::Duration;

use serde_json::{Value, json};

use super::oidc::{self, Options};
use crate::common::{HttpResponse, HttpServer, TestEnv, http_request, wait_until};

/// A port free right now, for a server whose audience must name it before it starts.
pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An OAuth server for `issuer` on a port of its own, and its audience.
fn serve(env: &TestEnv, issuer: &str, extra: &[&str]) -> (HttpServer, String) {
    let port = free_port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let mut args = vec!["--oauth-issuer", issuer, "--audience", &audience];
    args.extend_from_slice(extra);
    let server = HttpServer::start(env, &format!("127.0.0.1:{port}"), &args);
    (server, audience)
}

fn initialize() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } })
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The answer to `initialize` with `token`.
fn with_token(server: &HttpServer, token: &str) -> HttpResponse {
    server.post(&[("Authorization", &bearer(token))], &initialize())
}

/// A session opened with `token`: its id.
fn session(server: &HttpServer, token: &str) -> String {
    server.session(&[("Authorization", &bearer(token))])
}

/// One request in `session` with `token`: the raw answer.
fn in_session(server: &HttpServer, session: &str, token: &str, body: &Value) -> HttpResponse {
    server.post(
        &[
            ("Authorization", &bearer(token)),
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        body,
    )
}

/// A `tools/call` of `hcp` in `session` with `token`: the result's envelope.
fn call(server: &HttpServer, session: &str, token: &str, arguments: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                       "params": { "name": "hcp", "arguments": arguments } });
    let answer = in_session(server, session, token, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    answer
        .messages()
        .into_iter()
        .find(|message| message["id"] == json!(9))
        .map(|message| message["result"]["structuredContent"].clone())
        .unwrap_or_else(|| panic!("no result: {answer:?}"))
}

#[test]
fn metadata_and_challenges_lead_a_host_to_the_issuer() {
    if !oidc::available() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let issuer = oidc::start(&keys.path().join("a.json"), &Options::default());
    let env = TestEnv::new();
    let (server, audience) = serve(&env, &issuer.issuer, &[]);
    let port = server.address.port();
    let expected = json!({
        "resource": audience,
        "authorization_servers": [issuer.issuer],
        "scopes_supported": ["hcp.read", "hcp.full"],
        "bearer_methods_supported": ["header"],
        "resource_name": "hcpx",
    });
    // At the root and with the endpoint's path: hosts look in either.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let answer = server.request("GET", path, &[], b"");
        assert_eq!(answer.status, 200, "{path}: {answer:?}");
        assert_eq!(answer.header("content-type"), Some("application/json"));
        assert_eq!(
            serde_json::from_str::<Value>(&answer.body).unwrap(),
            expected,
            "{path}"
        );
        assert_eq!(server.request("POST", path, &[], b"").status, 405, "{path}");
    }
    // The server is no authorization server, and no other document is served.
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/.well-known/oauth-protected-resource/other",
        "/mcp/.well-known/openid-configuration",
    ] {
        let answer = server.request("GET", path, &[], b"");
        assert_eq!(answer.status, 404, "{path}: {answer:?}");
        assert_eq!(answer.header("www-authenticate"), None, "{path}");
    }
    // No token: 401, and where the metadata is.
    let bare = server.post(&[], &initialize());
    assert_eq!(bare.status, 401, "{bare:?}");
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        bare.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"hcp.read hcp.full\"").as_str())
    );
    // What a host does next: the metadata, the issuer's own, a token for the
    // resource the metadata names, and the request again with it.
    let (_, metadata_path) = metadata_url.split_once(&format!(":{port}")).unwrap();
    let metadata: Value = serde_json::from_str(&server.request("GET", metadata_path, &[], b"").body).unwrap();
    let provider = std::net::SocketAddr::from(([127, 0, 0, 1], issuer.port));
    let openid = http_request(provider, "GET", "/.well-known/openid-configuration", &[], b"");
    let openid: Value = serde_json::from_str(&openid.body).unwrap();
    assert_eq!(openid["issuer"], metadata["authorization_servers"][0]);
    assert!(openid["token_endpoint"].as_str().unwrap().ends_with("/token"));
    let token = issuer.token(
        "alice",
        "hcp.read hcp.full",
        metadata["resource"].as_str().unwrap(),
        "RS256",
    );
    let answer = with_token(&server, &token);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.header("mcp-session-id").is_some());
    assert!(
        !server.stderr.lock().unwrap().contains(&token),
        "the token was logged"
    );
}

/// A refused token's challenge: its status, and the error and words it names.
fn refused(server: &HttpServer, token: &str, status: u16, error: &str, words: &str) {
    let answer = with_token(server, token);
    assert_eq!(answer.status, status, "{words}: {answer:?}");
    let challenge = answer.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer resource_metadata=\"http://127.0.0.1:")
            && challenge.contains(&format!("error=\"{error}\""))
            && challenge.contains(words),
        "{words}: {challenge}"
    );
}

#[test]
fn only_good_tokens_of_the_issuer_for_this_audience_pass() {
    if !oidc::available() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let a_keys = keys.path().join("a.json");
    let issuer = oidc::start(&a_keys, &Options::default());
    let same = Some(issuer.issuer.as_str());
    // Other providers, started side by side: its own keys posing as the issuer; the
    // issuer's keys under another issuer; the issuer two hours ago; new keys under
    // the issuer's key ids.
    let (e_keys, b_keys) = (keys.path().join("e.json"), keys.path().join("b.json"));
    let (rogue, other, past, posing) = std::thread::scope(|scope| {
        let rogue = scope.spawn(|| {
            oidc::start(
                &b_keys,
                &Options {
                    issuer: same,
                    ..Options::default()
                },
            )
        });
        let other = scope.spawn(|| oidc::start(&a_keys, &Options::default()));
        let past = scope.spawn(|| {
            oidc::start(
                &a_keys,
                &Options {
                    issuer: same,
                    clock_offset: -7200,
                    ..Options::default()
                },
            )
        });
        let posing = scope.spawn(|| {
            oidc::start(
                &e_keys,
                &Options {
                    issuer: same,
                    kids_from: Some(&a_keys),
                    ..Options::default()
                },
            )
        });
        (
            rogue.join().unwrap(),
            other.join().unwrap(),
            past.join().unwrap(),
            posing.join().unwrap(),
        )
    });
    let env = TestEnv::new();
    let (server, audience) = serve(&env, &issuer.issuer, &[]);
    let full = "hcp.read hcp.full";
    for alg in ["RS256", "PS256", "ES256", "EdDSA"] {
        let answer = with_token(&server, &issuer.token("alice", full, &audience, alg));
        assert_eq!(answer.status, 200, "{alg}: {answer:?}");
    }
    let invalid = "invalid_token";
    refused(
        &server,
        &past.token("alice", full, &audience, "RS256"),
        401,
        invalid,
        "has expired",
    );
    refused(
        &server,
        &issuer.token("alice", full, "http://127.0.0.1:1/mcp", "RS256"),
        401,
        invalid,
        "for another audience",
    );
    refused(
        &server,
        &other.token("alice", full, &audience, "RS256"),
        401,
        invalid,
        "from another issuer",
    );
    for alg in ["RS256", "ES256"] {
        refused(
            &server,
            &rogue.token("alice", full, &audience, alg),
            401,
            invalid,
            "no key of the issuer",
        );
        refused(
            &server,
            &posing.token("alice", full, &audience, alg),
            401,
            invalid,
            "does not verify",
        );
    }
    refused(
        &server,
        &issuer.token("alice", full, &audience, "HS256-PUBLIC"),
        401,
        invalid,
        "an algorithm this server does not take",
    );
    // A static token, as a token server takes: not a JWT.
    refused(&server, "test-token-0123456789abcdef", 401, invalid, "not a JWT");
    // Good, but for no scope of this server.
    let other_scope = issuer.token("alice", "other", &audience, "RS256");
    refused(
        &server,
        &other_scope,
        403,
        "insufficient_scope",
        "scope=\"hcp.read\"",
    );
    // `--scope full`: the read scope alone is not served.
    let strict_env = TestEnv::new();
    let (strict, strict_audience) = serve(&strict_env, &issuer.issuer, &["--scope", "full"]);
    let read = issuer.token("alice", "hcp.read", &strict_audience, "RS256");
    refused(&strict, &read, 403, "insufficient_scope", "scope=\"hcp.full\"");
    let answer = with_token(&strict, &issuer.token("alice", full, &strict_audience, "RS256"));
    assert_eq!(answer.status, 200, "{answer:?}");
}

/// The token's subject is the call's caller: policy rules name it and its groups,
/// the read scope alone gives the read-only tool, audit lines record it, its kept
/// outputs are its own, and so is the session it opened.
#[test]
fn the_subject_is_the_caller() {
    if !oidc::available() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let issuer = oidc::start(&keys.path().join("a.json"), &Options::default());
    let env = TestEnv::new().env("HCP_MCP_VIEW_BYTES", "1024");
    env.install_fixture("probe", "probe");
    std::fs::create_dir_all(env.work().join("out")).unwrap();
    std::fs::write(
        env.home().join("policy.json"),
        json!({ "rules": [
            { "match": "probe.env", "decision": "deny" },
            { "match": "probe.env", "subject": "alice", "decision": "allow" },
            { "match": "probe.pwd", "decision": "deny" },
            { "match": "probe.pwd", "group": "admins", "decision": "allow" },
        ] })
        .to_string(),
    )
    .unwrap();
    let (server, audience) = serve(&env, &issuer.issuer, &[]);
    // alice is in the groups admins and dev, bob only in dev.
    let alice = issuer.token("alice", "hcp.read hcp.full", &audience, "RS256");
    let bob = issuer.token("bob", "hcp.read hcp.full", &audience, "ES256");
    let (alices, bobs) = (session(&server, &alice), session(&server, &bob));
    let reason = |envelope: &Value| envelope["error"]["reason"].as_str().unwrap_or("").to_owned();
    for command in ["env", "pwd"] {
        let argv = json!({ "argv": ["exec", "probe", command] });
        let mine = call(&server, &alices, &alice, argv.clone());
        assert_eq!(mine["ok"], json!(true), "alice, {command}: {mine}");
        let theirs = call(&server, &bobs, &bob, argv);
        assert_eq!(reason(&theirs), "denied_by_policy", "bob, {command}: {theirs}");
    }
    // A kept output is its subject's alone, by command and by resource.
    let flood = call(
        &server,
        &alices,
        &alice,
        json!({ "argv": ["exec", "probe", "flood", "--", "mib=1"] }),
    );
    let id = flood["outputId"].as_str().unwrap().to_owned();
    let page = json!({ "argv": ["output", &id, "--limit", "10"] });
    assert_eq!(call(&server, &alices, &alice, page.clone())["ok"], json!(true));
    assert_eq!(reason(&call(&server, &bobs, &bob, page)), "unknown_output");
    let read = |session: &str, token: &str| {
        let body = json!({ "jsonrpc": "2.0", "id": 8, "method": "resources/read",
                           "params": { "uri": format!("hcp://output/{id}") } });
        let answer = in_session(&server, session, token, &body);
        answer
            .messages()
            .into_iter()
            .find(|message| message["id"] == json!(8))
            .unwrap()
    };
    assert!(
        read(&alices, &alice)["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .len()
            > 1_000_000
    );
    assert!(read(&bobs, &bob)["error"].is_object(), "bob read alice's output");
    // A session is its subject's: bob's token in alice's session is no session.
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let stolen = in_session(&server, &alices, &bob, &list);
    assert_eq!(stolen.status, 404, "{stolen:?}");
    // The read scope alone: the read-only tool, a write denied by it.
    let reader = issuer.token("alice", "hcp.read", &audience, "EdDSA");
    let readers = session(&server, &reader);
    let listed = in_session(&server, &readers, &reader, &list);
    assert_eq!(
        listed.messages()[0]["result"]["tools"][0]["annotations"]["readOnlyHint"],
        json!(true)
    );
    let full_list = in_session(&server, &alices, &alice, &list);
    assert_eq!(
        full_list.messages()[0]["result"]["tools"][0]["annotations"]["readOnlyHint"],
        json!(false)
    );
    let write = json!({ "argv": ["exec", "probe", "write", "--", "target=out/x"], "confirm": true });
    let denied = call(&server, &readers, &reader, write.clone());
    assert_eq!(reason(&denied), "denied_by_policy", "{denied}");
    assert!(
        denied["error"]["message"].as_str().unwrap().contains("read-only"),
        "{denied}"
    );
    assert_eq!(call(&server, &alices, &alice, write)["ok"], json!(true));
    // Every audit line names its subject.
    let audit = std::fs::read_to_string(env.home().join("audit.log")).unwrap();
    let lines: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let seen: Vec<(String, String, String)> = lines
        .iter()
        .map(|line| {
            (
                line["subject"].as_str().unwrap_or("(none)").to_owned(),
                line["command"].as_str().unwrap().to_owned(),
                line["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("alice", "env", "ran"),
        ("bob", "env", "denied"),
        ("alice", "pwd", "ran"),
        ("bob", "pwd", "denied"),
        ("alice", "flood", "ran"),
        ("alice", "write", "denied"),
        ("alice", "write", "ran"),
    ]
    .iter()
    .map(|(subject, command, decision)| {
        (
            (*subject).to_owned(),
            (*command).to_owned(),
            (*decision).to_owned(),
        )
    })
    .collect();
    assert_eq!(seen, expected);
}

/// The two auth modes never meet: a static token and OAuth are not both taken
/// (the start is refused), and an OAuth server takes no static token. (A token
/// server serves no OAuth metadata: `a_token_server_serves_no_oauth_discovery`.)
#[test]
fn one_auth_mode_at_a_time() {
    if !oidc::available() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let issuer = oidc::start(&keys.path().join("a.json"), &Options::default());
    let token = "test-token-0123456789abcdef";
    let both = TestEnv::new().env("HCP_MCP_TOKEN", token);
    let token_file = both.write("token", token);
    for extra in [
        vec![],
        vec!["--token-file".to_owned(), token_file.display().to_string()],
    ] {
        let mut args = vec!["mcp", "--http", "127.0.0.1:0", "--oauth-issuer", &issuer.issuer];
        args.extend(["--audience", "http://127.0.0.1:1/mcp"]);
        args.extend(extra.iter().map(String::as_str));
        let mut child = both
            .command(&args)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stopped = wait_until(Duration::from_secs(10), || child.try_wait().unwrap().is_some());
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stopped, "it served both modes: {stderr}");
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--oauth-issuer"), "{stderr}");
    }
    let env = TestEnv::new();
    let (server, _) = serve(&env, &issuer.issuer, &[]);
    refused(&server, token, 401, "invalid_token", "not a JWT");
    // An issuer that is not there: the server does not start.
    let missing = format!("http://127.0.0.1:{}", free_port());
    let mut child = env
        .command(&[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--oauth-issuer",
            &missing,
            "--audience",
            "http://127.0.0.1:1/mcp",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stopped = wait_until(Duration::from_secs(15), || child.try_wait().unwrap().is_some());
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stopped && output.status.code() == Some(1), "{stderr}");
    assert!(
        stderr.contains("the issuer's metadata") && stderr.contains("cannot connect"),
        "{stderr}"
    );
}
