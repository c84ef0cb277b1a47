//! The `curl` catalog pack against the real curl and a small HTTP server on
//! loopback that answers with what it received.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

const TOKEN: &str = "tok-5ecret-value";

/// A server on 127.0.0.1 that answers every request with a JSON echo of its method,
/// path, Authorization, Content-Type and Accept headers and body; 404 for a path
/// with `missing`, and a redirect to `to` (another host name and port) for
/// `/redirect`.
struct Echo {
    port: u16,
}

impl Echo {
    fn start(redirect_to: Option<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let redirect_to = redirect_to.clone();
                std::thread::spawn(move || answer(stream, redirect_to.as_deref()));
            }
        });
        Self { port }
    }

    fn url(&self, path: &str) -> String {
        format!("url=http://127.0.0.1:{}{path}", self.port)
    }
}

fn answer(stream: TcpStream, redirect_to: Option<&str>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let mut parts = request_line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_owned(),
        parts.next().unwrap_or("").to_owned(),
    );
    let mut headers = serde_json::Map::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            let name = name.to_ascii_lowercase();
            if name == "content-length" {
                length = value.trim().parse().unwrap();
            }
            headers.insert(name, json!(value.trim()));
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let echo = json!({
        "method": method,
        "path": path,
        "authorization": headers.get("authorization"),
        "content-type": headers.get("content-type"),
        "accept": headers.get("accept"),
        "body": String::from_utf8_lossy(&body),
    })
    .to_string();
    let (status, extra) = match (path.as_str(), redirect_to) {
        ("/redirect", Some(to)) => ("302 Found", format!("Location: {to}\r\n")),
        (path, _) if path.contains("missing") => ("404 Not Found", String::new()),
        _ => ("200 OK", String::new()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        echo.len()
    );
    let mut stream = stream;
    stream.write_all(head.as_bytes()).unwrap();
    if method != "HEAD" {
        stream.write_all(echo.as_bytes()).unwrap();
    }
}

fn bound() -> TestEnv {
    let env = env();
    install(&env, "curl");
    env.bind("curl", "HTTP_TOKEN", TOKEN);
    env
}

fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "curl", command, "--yes", "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

/// GET sends the token from its file as a bearer header; --json asks for JSON and
/// parses the body. The token is on no command line.
#[test]
fn curl_get_sends_the_bound_token_and_parses_json() {
    if !have("curl") {
        return;
    }
    let server = Echo::start(None);
    let env = bound();
    let (code, envelope) = exec(
        &env,
        "get",
        &[&server.url("/v1/items?limit=2"), "header=X-Trace: 1"],
    );
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"],
        json!({
            "method": "GET",
            "path": "/v1/items?limit=2",
            "authorization": "Bearer [REDACTED:HTTP_TOKEN]",
            "content-type": null,
            "accept": "application/json",
            "body": ""
        })
    );
    let child = envelope["child"].to_string();
    assert!(
        !child.contains(TOKEN) && child.contains("\"--header\",\"@/"),
        "{child}"
    );
    let (code, envelope) = env.json(&["exec", "curl", "get", "--dry-run", "--", &server.url("/x")]);
    assert_eq!(code, 0, "{envelope}");
    assert!(!envelope.to_string().contains(TOKEN), "{envelope}");
}

/// An HTTP error is curl's exit code 22, not ok, with the body kept; HEAD shows the
/// status line whatever it is.
#[test]
fn curl_http_errors_fail_with_the_body_and_head_shows_the_status() {
    if !have("curl") {
        return;
    }
    let server = Echo::start(None);
    let env = bound();
    let (code, envelope) = exec(&env, "get", &[&server.url("/missing")]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"], &envelope["stderr"]),
        (
            1,
            &json!(false),
            &json!(22),
            &json!("curl: (22) The requested URL returned error: 404\n")
        ),
        "{envelope}"
    );
    let body: Value = serde_json::from_str(envelope["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(body["path"], json!("/missing"));
    let (code, envelope) = exec(&env, "head", &[&server.url("/missing")]);
    assert_eq!(code, 0, "{envelope}");
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(
        stdout.starts_with("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"),
        "{stdout}"
    );
}

#[test]
fn curl_post_json_sends_the_body_as_it_is() {
    if !have("curl") {
        return;
    }
    let server = Echo::start(None);
    let env = bound();
    let (code, envelope) = exec(
        &env,
        "post-json",
        &[&server.url("/v1/items"), "body={\"name\": \"pen\"}"],
    );
    assert_eq!(code, 0, "{envelope}");
    let echo: Value = serde_json::from_str(envelope["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(
        echo,
        json!({
            "method": "POST",
            "path": "/v1/items",
            "authorization": "Bearer [REDACTED:HTTP_TOKEN]",
            "content-type": "application/json",
            "accept": "application/json",
            "body": "{\"name\": \"pen\"}"
        })
    );
    // PATCH; a body naming a file is sent as text (--data-raw), never read.
    let (code, envelope) = exec(
        &env,
        "post-json",
        &[
            &server.url("/v1/items/1"),
            "method=PATCH",
            "body=[\"@/etc/passwd\"]",
        ],
    );
    assert_eq!(code, 0, "{envelope}");
    let echo: Value = serde_json::from_str(envelope["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&echo["method"], &echo["body"]),
        (&json!("PATCH"), &json!("[\"@/etc/passwd\"]"))
    );
    let (_, envelope) = env.json(&[
        "exec",
        "curl",
        "post-json",
        "--dry-run",
        "--",
        &server.url("/x"),
        "body={}",
    ]);
    assert_eq!(
        (
            &envelope["data"]["effect"],
            &envelope["data"]["decision"],
            &envelope["data"]["sandbox"]["network"]
        ),
        (&json!("write"), &json!("confirm"), &json!(true))
    );
}

/// On a redirect to another host, curl drops the token.
#[test]
fn curl_does_not_send_the_token_to_another_host_on_a_redirect() {
    if !have("curl") {
        return;
    }
    let other = Echo::start(None);
    let server = Echo::start(Some(format!("http://localhost:{}/landed", other.port)));
    let env = bound();
    let (code, envelope) = exec(&env, "get", &[&server.url("/redirect")]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        (&envelope["data"]["path"], &envelope["data"]["authorization"]),
        (&json!("/landed"), &Value::Null),
        "{envelope}"
    );
}

/// Values that would make curl read a file, use another scheme or take an option
/// are refused before it runs; without the token nothing runs.
#[test]
fn curl_refuses_files_schemes_and_options() {
    if !have("curl") {
        return;
    }
    let env = env();
    install(&env, "curl");
    let (code, envelope) = exec(&env, "get", &["url=https://example.com/"]);
    assert_eq!(
        (code, &envelope["error"]["reason"], &envelope["spawned"]),
        (2, &json!("unbound"), &json!(false)),
        "{envelope}"
    );
    env.bind("curl", "HTTP_TOKEN", TOKEN);
    let url_pattern = "parameter `url` does not match the pattern (?i)https?://[^\\s]+";
    let header_pattern =
        "parameter `header` does not match the pattern [A-Za-z0-9!#$%&'*+.^_`|~-]+:[^\\r\\n]*";
    for (command, params, message) in [
        ("get", &["url=file:///etc/passwd"][..], url_pattern),
        ("get", &["url=--config=/etc/passwd"], url_pattern),
        ("get", &["url=gopher://127.0.0.1/"], url_pattern),
        ("get", &["url=https://a.example/ -o x"], url_pattern),
        (
            "get",
            &["url=https://a.example/", "header=@/etc/passwd"],
            header_pattern,
        ),
        (
            "get",
            &["url=https://a.example/", "header=X: a\r\nHost: b"],
            header_pattern,
        ),
        (
            "post-json",
            &["url=https://a.example/", "body=@/etc/passwd"],
            "parameter `body` does not match the pattern (?s)\\s*[\\[{].*",
        ),
        (
            "post-json",
            &["url=https://a.example/", "body={}", "method=DELETE"],
            "parameter `method` is not one of: POST, PUT, PATCH",
        ),
    ] {
        let (code, envelope) = exec(&env, command, params);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{params:?}: {envelope}"
        );
    }
    // A server that is not there is curl's exit code 7.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, envelope) = exec(&env, "get", &[&format!("url=http://127.0.0.1:{closed}/")]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(7)), "{envelope}");
}

/// DELETE is destructive: an agent's `--yes` does not run it; once a person's rule
/// makes it a plain confirmation, it sends DELETE with the token.
#[test]
fn curl_delete_is_destructive_and_sends_delete_with_the_token() {
    if !have("curl") {
        return;
    }
    let server = Echo::start(None);
    let env = bound();
    let url = server.url("/v1/items/7");
    let agent = env
        .command(&["--json", "exec", "curl", "delete", "--yes", "--", &url])
        .env("HCP_AGENT", "1")
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&agent.stdout).unwrap();
    assert_eq!(
        (
            agent.status.code(),
            &envelope["spawned"],
            &envelope["error"]["reason"],
            &envelope["data"]["decision"]
        ),
        (
            Some(2),
            &json!(false),
            &json!("needs_confirmation"),
            &json!("confirm-human")
        ),
        "{envelope}"
    );
    let output = env.run(&["policy", "set", "curl.delete", "confirm"]);
    assert_eq!(output.code, 0, "{output}");
    let (code, envelope) = exec(&env, "delete", &[&url]);
    assert_eq!(code, 0, "{envelope}");
    let echo: Value = serde_json::from_str(envelope["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&echo["method"], &echo["path"], &echo["authorization"]),
        (
            &json!("DELETE"),
            &json!("/v1/items/7"),
            &json!("Bearer [REDACTED:HTTP_TOKEN]")
        ),
        "{envelope}"
    );
}
