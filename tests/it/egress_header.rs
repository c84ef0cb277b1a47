//! A header binding end to end: a pack whose CLI is curl (run by a script that first
//! shows everything it holds) calls an HTTPS server on loopback with an authority of
//! its own. The server gets `Authorization: Bearer VALUE`; the pack's environment,
//! its files and its output never hold the value, and hcpx had nothing to redact.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::common::{TestEnv, require, require_kernel_layers};

const VALUE: &str = "tok-5a1f9e77c0de";

/// An HTTPS server on 127.0.0.1 with a certificate from a fresh authority; each
/// request's head lines are kept.
struct Server {
    port: u16,
    ca_pem: String,
    heads: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Server {
    fn start() -> Self {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "hcpx test authority");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf_params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let Ok(connection) = rustls::ServerConnection::new(Arc::clone(&config)) else {
                    continue;
                };
                let mut tls = rustls::StreamOwned::new(connection, stream);
                let mut reader = BufReader::new(&mut tls);
                let mut head = Vec::new();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|read| read > 2) {
                    head.push(line.trim_end().to_owned());
                    line.clear();
                }
                kept.lock().unwrap().push(head);
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n");
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        });
        Self {
            port,
            ca_pem: ca.pem(),
            heads,
        }
    }
}

/// The pack: its CLI prints its environment and every file of its temporary folder,
/// then fetches the server's page with curl.
fn write_pack(dir: &std::path::Path, port: u16) {
    std::fs::create_dir_all(dir).unwrap();
    let manifest = serde_json::json!({
        "hcp": 1, "id": "api", "version": "1.0.0",
        "description": "Test fixture: an HTTPS API whose token the proxy adds",
        "bin": ["./api"],
        "bindings": {
            "API_TOKEN": {
                "as": "header", "header": "Authorization", "format": "Bearer {value}",
                "hosts": ["127.0.0.1"], "required": true
            }
        },
        "sandbox": {
            "network": { "allow": [format!("127.0.0.1:{port}")] },
            "env": { "API_TOKEN": "placeholder" }
        },
        "commands": {
            "hello": {
                "summary": "Fetch the greeting", "effect": "read",
                "argv": [format!("https://127.0.0.1:{port}/hello")]
            }
        }
    });
    std::fs::write(dir.join("hcp.json"), manifest.to_string()).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: api\ndescription: Test fixture for header bindings.\n---\n\n# api\n\nOnly for tests.\n",
    )
    .unwrap();
    let script = "#!/bin/sh\n\
        echo '--- env'; env | sort\n\
        echo '--- files'; for f in \"$TMPDIR\"/* \"$TMPDIR\"/.[!.]*; do [ -f \"$f\" ] && echo \"== $f\" && cat \"$f\"; done\n\
        echo '--- curl'; curl -sS -H 'Authorization: Bearer placeholder' \"$1\"\n";
    let path = dir.join("api");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_header_binding_reaches_the_server_and_never_the_pack() {
    if !require(std::path::Path::new("/usr/bin/curl").exists(), "curl in /usr/bin")
        || !require_kernel_layers()
    {
        return;
    }
    let server = Server::start();
    let env = TestEnv::new();
    write_pack(&env.home().join("packs/api"), server.port);
    let roots = env.write("roots.pem", &server.ca_pem);
    let env = env.env("HCP_EGRESS_ROOTS", roots.to_str().unwrap());
    env.bind("api", "API_TOKEN", VALUE);
    let (code, reply) = env.json(&["exec", "api", "hello"]);
    assert_eq!(code, 0, "{reply:#}");
    let stdout = reply["stdout"].as_str().unwrap();
    // curl verified the proxy's certificate (hcpx's authority) and got the page.
    assert!(stdout.ends_with("--- curl\nhello\n"), "{stdout}");
    // The pack was told where the proxy and the authority are...
    for variable in [
        "HTTPS_PROXY=http://127.0.0.1:",
        "SSL_CERT_FILE=",
        "CURL_CA_BUNDLE=",
        "NODE_EXTRA_CA_CERTS=",
    ] {
        assert!(stdout.contains(variable), "{variable} is not in {stdout}");
    }
    // ...and never held the value: not in its variables, its files or its output,
    // so there was nothing to redact either.
    assert!(
        !stdout.contains(VALUE) && !stdout.contains("[REDACTED"),
        "{stdout}"
    );
    assert!(stdout.contains("API_TOKEN=placeholder\n"), "{stdout}");
    let heads = server.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let authorization: Vec<&String> = heads[0]
        .iter()
        .filter(|line| line.to_ascii_lowercase().starts_with("authorization:"))
        .collect();
    assert_eq!(
        authorization,
        [&format!("authorization: Bearer {VALUE}")],
        "{:?}",
        heads[0]
    );
    assert_eq!(heads[0][0], "GET /hello HTTP/1.1");
    // The authority's key stays in HCP_HOME, where no pack reads.
    let egress = env.home().join("egress");
    assert!(egress.join("ca.key").is_file() && egress.join("ca.pem").is_file());
}

/// Only a call that ends TLS (one with header bindings) needs hcpx's authority and
/// the roots real servers are checked against: any other allowlisted call neither
/// makes the authority nor reads the roots (every file of `/etc/ssl/certs`, 5 ms a
/// call), so roots that cannot be read stop only the calls that need them.
#[test]
fn only_a_call_with_header_bindings_loads_the_authority_and_the_roots() {
    // The header call stops before its CLI runs: no curl needed.
    if !require_kernel_layers() {
        return;
    }
    let env = TestEnv::new();
    let missing = env.home().join("no-such-roots.pem");
    let env = env.env("HCP_EGRESS_ROOTS", missing.to_str().unwrap());
    let plain = env.home().join("packs/plain");
    std::fs::create_dir_all(&plain).unwrap();
    let manifest = serde_json::json!({
        "hcp": 1, "id": "plain", "version": "1.0.0",
        "description": "Test fixture: an allowlist without header bindings",
        "bin": ["./plain"],
        "sandbox": { "network": { "allow": ["127.0.0.1:9"] } },
        "commands": { "env": { "summary": "Print the environment", "effect": "read", "argv": [] } }
    });
    std::fs::write(plain.join("hcp.json"), manifest.to_string()).unwrap();
    std::fs::write(
        plain.join("SKILL.md"),
        "---\nname: plain\ndescription: Test fixture for an allowlist.\n---\n\n# plain\n\nOnly for tests.\n",
    )
    .unwrap();
    std::fs::write(plain.join("plain"), "#!/bin/sh\nenv | sort\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(plain.join("plain"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, reply) = env.json(&["exec", "plain", "env"]);
    assert_eq!(code, 0, "{reply:#}");
    let stdout = reply["stdout"].as_str().unwrap();
    assert!(stdout.contains("HTTPS_PROXY=http://127.0.0.1:"), "{stdout}");
    assert!(!stdout.contains("SSL_CERT_FILE="), "{stdout}");
    assert!(!env.home().join("egress").exists(), "the authority was made");
    // A call that ends TLS does need the roots, and says which cannot be read.
    write_pack(&env.home().join("packs/api"), 9);
    env.bind("api", "API_TOKEN", VALUE);
    let (code, reply) = env.json(&["exec", "api", "hello"]);
    assert_eq!(
        (code, reply["error"]["reason"].as_str()),
        (2, Some("not_runnable")),
        "{reply:#}"
    );
    let details = reply["data"]["details"].as_array().unwrap();
    assert_eq!(details.len(), 1, "{reply:#}");
    let detail = details[0].as_str().unwrap();
    assert!(
        detail.starts_with("the roots the proxy trusts: ") && detail.contains("no-such-roots.pem"),
        "{reply:#}"
    );
}
