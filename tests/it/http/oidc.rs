//! A real OpenID provider on loopback: the certified `oidc-provider` package, started
//! by tests/oidc/provider.js (pinned in tests/oidc/, installed under target/oidc by
//! scripts/test.sh). Each provider is a node process of its own that lives as long
//! as the test holds its stdin; tokens come from its token endpoint with the client
//! credentials grant, for a resource indicator (the audience).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{http_request, require};

/// Where scripts/test.sh installs oidc-provider.
fn oidc_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/oidc/node_modules/oidc-provider")
}

/// Whether node and oidc-provider are here; a failure under CI when not.
pub(crate) fn available() -> bool {
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    require(
        node && oidc_dir().join("package.json").is_file(),
        "node and oidc-provider under target/oidc (scripts/test.sh installs it)",
    )
}

/// How a provider is started.
#[derive(Default)]
pub(crate) struct Options<'a> {
    /// The issuer it names (default: its own address).
    pub(crate) issuer: Option<&'a str>,
    /// Seconds added to its clock.
    pub(crate) clock_offset: i64,
    /// New keys that take the key ids of this other provider's keys file.
    pub(crate) kids_from: Option<&'a Path>,
}

/// One running provider.
pub(crate) struct Provider {
    pub(crate) issuer: String,
    pub(crate) port: u16,
    _lifeline: ChildStdin,
    child: Child,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a provider signing with the keys in `keys` (made there if missing).
pub(crate) fn start(keys: &Path, options: &Options<'_>) -> Provider {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.js");
    let mut command = Command::new("node");
    command.arg(script).arg(oidc_dir()).arg(keys);
    if let Some(issuer) = options.issuer {
        command.args(["--issuer", issuer]);
    }
    if options.clock_offset != 0 {
        command.args(["--clock-offset", &options.clock_offset.to_string()]);
    }
    if let Some(file) = options.kids_from {
        command.arg("--kids-from").arg(file);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lifeline = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let (log_sender, log) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut text);
        let _ = log_sender.send(text);
    });
    let line = receiver.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
    let mut words = line.split_whitespace();
    let (Some(port), Some(issuer)) = (words.next().and_then(|port| port.parse().ok()), words.next()) else {
        let _ = child.kill();
        panic!(
            "the provider did not start: {}",
            log.recv_timeout(Duration::from_secs(5)).unwrap_or_default()
        );
    };
    Provider {
        issuer: issuer.to_owned(),
        port,
        _lifeline: lifeline,
        child,
    }
}

/// `text` as a form value.
fn form(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            b' ' => "+".to_owned(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

impl Provider {
    /// An access token for `client` (`alice` or `bob`) with `scope`, for the
    /// audience `resource`, signed with `alg` (`RS256`, `PS256`, `ES256`, `EdDSA`,
    /// or `HS256-PUBLIC`).
    pub(crate) fn token(&self, client: &str, scope: &str, resource: &str, alg: &str) -> String {
        let body = format!(
            "grant_type=client_credentials&client_id={client}&client_secret={client}-secret&scope={}&resource={}&alg={alg}",
            form(scope),
            form(resource)
        );
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let answer = http_request(
            address,
            "POST",
            "/token",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            body.as_bytes(),
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        let token: Value = serde_json::from_str(&answer.body).unwrap();
        token["access_token"].as_str().unwrap().to_owned()
    }
}
