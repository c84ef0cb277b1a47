//! `network.allow`: the bypass suite. A pack allowed only `127.0.0.1:PORT` tries
//! every way past it (the fixture `egress`): through the proxy to places it does not
//! name, past the proxy (`--noproxy`, raw TCP and UDP, other loopback addresses,
//! IPv6, DNS, the metadata address), with a listener of its own to relay through,
//! with a raw socket. Places outside the namespace record every connection and
//! datagram they get: none may reach them. The proxy's refusals are on the result
//! and in the audit log. Run as root and as an unprivileged user.

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{Nobody, TestEnv, fixture, is_root, require, require_kernel_layers};

/// A place outside the namespace: every TCP connection and UDP datagram it gets is
/// counted; the allowed one answers HTTP.
struct Place {
    reached: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl Place {
    fn start(address: &str, answer: bool) -> Self {
        let tcp = TcpListener::bind(address).unwrap();
        let port = tcp.local_addr().unwrap().port();
        Self::start_on(tcp, None, answer, port)
    }

    fn start_on(tcp: TcpListener, udp: Option<UdpSocket>, answer: bool, port: u16) -> Self {
        let reached = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        tcp.set_nonblocking(true).unwrap();
        let (count, done) = (Arc::clone(&reached), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                match tcp.accept() {
                    Ok((mut stream, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        if answer {
                            stream.set_nonblocking(false).unwrap();
                            stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                            let mut buffer = [0_u8; 1024];
                            let _ = stream.read(&mut buffer);
                            let _ =
                                stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nallowed-ok");
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        if let Some(udp) = udp {
            udp.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            let (count, done) = (Arc::clone(&reached), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut buffer = [0_u8; 64];
                while !done.load(Ordering::SeqCst) {
                    if udp.recv_from(&mut buffer).is_ok() {
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        Self { reached, stop, port }
    }

    fn reached(&self) -> usize {
        self.reached.load(Ordering::SeqCst)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The places: the allowed one, a forbidden port (TCP and UDP) on 127.0.0.1, the
/// allowed port on 127.0.0.2, and a forbidden port on ::1 (TCP and UDP).
struct Places {
    allowed: Place,
    forbidden: Place,
    other_loopback: Place,
    forbidden6: Place,
}

impl Places {
    fn start() -> Self {
        let allowed = Place::start("127.0.0.1:0", true);
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        let forbidden = Place::start_on(tcp, UdpSocket::bind(("127.0.0.1", port)).ok(), false, port);
        let other = TcpListener::bind(("127.0.0.2", allowed.port)).unwrap();
        let other_loopback = Place::start_on(other, None, false, allowed.port);
        let tcp6 = TcpListener::bind("[::1]:0").unwrap();
        let port6 = tcp6.local_addr().unwrap().port();
        let forbidden6 = Place::start_on(tcp6, UdpSocket::bind(("::1", port6)).ok(), false, port6);
        Self {
            allowed,
            forbidden,
            other_loopback,
            forbidden6,
        }
    }

    fn params(&self) -> [String; 3] {
        [
            format!("allowed={}", self.allowed.port),
            format!("forbidden={}", self.forbidden.port),
            format!("forbidden6={}", self.forbidden6.port),
        ]
    }
}

/// The fixture with its allowlist naming `port`, written into `packs`.
fn egress_pack(packs: &Path, port: u16) {
    let dir = packs.join("egress");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["egress", "SKILL.md"] {
        std::fs::copy(fixture("egress").join(file), dir.join(file)).unwrap();
    }
    let manifest = std::fs::read_to_string(fixture("egress").join("hcp.json"))
        .unwrap()
        .replace("@ALLOWED@", &port.to_string());
    std::fs::write(dir.join("hcp.json"), manifest).unwrap();
}

/// The attacks that must fail, by the fixture's names (the UDP ones "succeed" at
/// sending into a namespace where nothing listens: what counts is that nothing
/// outside got them).
const MUST_FAIL: [&str; 17] = [
    "curl-noproxy",
    "direct-ipv6",
    "direct-ipv6-allowed-port",
    "direct-metadata",
    "direct-other-loopback",
    "direct-other-port",
    "dns",
    "dns-raw",
    "proxy-connect-127-1",
    "proxy-connect-ipv6",
    "proxy-connect-itself",
    "proxy-connect-localhost-dot",
    "proxy-connect-metadata",
    "proxy-connect-name",
    "proxy-connect-other-port",
    "proxy-get-other-port",
    "relay-listener",
];

/// The connections the proxy refuses (and audits), as host:port.
fn proxy_refusals(places: &Places, proxy_port: Option<u16>) -> BTreeSet<String> {
    let (allowed, forbidden, forbidden6) =
        (places.allowed.port, places.forbidden.port, places.forbidden6.port);
    let mut refused: BTreeSet<String> = [
        format!("127.0.0.1:{forbidden}"),
        format!("localhost.:{allowed}"),
        format!("127.1:{allowed}"),
        "169.254.169.254:80".to_owned(),
        format!("[::1]:{forbidden6}"),
        "example.com:443".to_owned(),
    ]
    .into_iter()
    .collect();
    if let Some(port) = proxy_port {
        refused.insert(format!("127.0.0.1:{port}"));
    }
    refused
}

fn check(places: &Places, code: i32, stdout: &str, audit: &str) {
    let envelope: serde_json::Value = serde_json::from_str(stdout).unwrap_or_else(|_| panic!("{stdout}"));
    assert_eq!(code, 0, "{envelope:#}");
    let results: serde_json::Value =
        serde_json::from_str(envelope["stdout"].as_str().unwrap()).unwrap_or_else(|_| panic!("{envelope:#}"));
    let results = results.as_object().unwrap();
    for name in ["proxy-connect-allowed", "proxy-get-allowed", "forward-allowed"] {
        assert!(
            results[name].as_str().unwrap().starts_with("reached: "),
            "{name} should reach the allowed place: {}",
            results[name]
        );
    }
    let escaped: Vec<String> = MUST_FAIL
        .iter()
        .filter(|name| !results[**name].as_str().unwrap().starts_with("failed: "))
        .map(|name| format!("{name}: {}", results[*name]))
        .collect();
    assert_eq!(escaped, Vec::<String>::new(), "ways out that worked");
    assert_eq!(
        results["raw-socket"],
        "failed: PermissionError: [Errno 1] Operation not permitted"
    );
    // Let the recorders see anything late.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        (
            places.forbidden.reached(),
            places.other_loopback.reached(),
            places.forbidden6.reached()
        ),
        (0, 0, 0),
        "a forbidden place was reached"
    );
    // Three connections the pack was allowed: through the proxy twice, and forwarded.
    assert_eq!(places.allowed.reached(), 3);
    // Every refusal of the proxy is on the result and in the audit log.
    let proxy = results["proxy"].as_str().unwrap();
    let proxy_port: Option<u16> = proxy
        .strip_prefix("http://127.0.0.1:")
        .and_then(|port| port.parse().ok());
    assert!(proxy_port.is_some(), "HTTPS_PROXY is {proxy}");
    let expected = proxy_refusals(places, proxy_port);
    let warned: BTreeSet<String> = envelope["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|warning| {
            let text = warning.as_str()?;
            let rest = text.strip_prefix("the pack tried to reach ")?;
            Some(rest.split(", which hcpx refused").next()?.to_owned())
        })
        .collect();
    assert_eq!(warned, expected, "{:#}", envelope["warnings"]);
    let audited: BTreeSet<String> = audit
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|line| line["decision"] == "connection_refused")
        .map(|line| {
            assert_eq!(line["pack"], "egress");
            assert!(!line["why"].as_str().unwrap().is_empty(), "{line}");
            format!("{}:{}", line["host"].as_str().unwrap(), line["port"])
        })
        .collect();
    assert_eq!(audited, expected);
}

fn have_tools() -> bool {
    require(
        ["/usr/bin/python3", "/usr/bin/curl"]
            .iter()
            .all(|tool| Path::new(tool).exists()),
        "python3 and curl in /usr/bin",
    ) && require_kernel_layers()
}

#[test]
fn nothing_gets_past_an_allowlist_as_root() {
    if !have_tools() || !require(is_root(), "root") {
        return;
    }
    let places = Places::start();
    let env = TestEnv::new();
    egress_pack(&env.home().join("packs"), places.allowed.port);
    let params = places.params();
    let mut args = vec!["exec", "egress", "attack", "--json", "--"];
    args.extend(params.iter().map(String::as_str));
    let output = env.run(&args);
    let audit = std::fs::read_to_string(env.home().join("audit.log")).unwrap_or_default();
    check(&places, output.code, &output.stdout, &audit);
}

#[test]
fn nothing_gets_past_an_allowlist_unprivileged() {
    if !have_tools() {
        return;
    }
    let places = Places::start();
    let Some(_) = crate::common::as_user(65534, "true") else {
        return;
    };
    let nobody = Nobody::with(&["home/packs", "work", "user"]);
    egress_pack(&nobody.base.join("home/packs"), places.allowed.port);
    nobody.give();
    let params = places.params();
    let mut args = vec!["exec", "egress", "attack", "--json", "--"];
    args.extend(params.iter().map(String::as_str));
    let (code, stdout, stderr) = nobody.run(&args);
    let audit = std::fs::read_to_string(nobody.base.join("home/audit.log")).unwrap_or_default();
    assert!(stderr.is_empty() || code == 0, "{stderr}");
    check(&places, code, &stdout, &audit);
}

/// `hcpx doctor` tries the network namespace a pack with `network.allow` needs for
/// real: where the system's settings allow one but making it fails (here
/// `user.max_net_namespaces = 0`, set in a user namespace of the test's own), it
/// says the egress layer is missing, and why; where only the mount namespace that
/// forwarded names need cannot be made (`user.max_mnt_namespaces = 0`), it says that.
#[test]
fn doctor_reports_a_network_namespace_it_cannot_make() {
    let userns = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "true"])
        .status()
        .is_ok_and(|status| status.success());
    if !require(userns, "unshare --user --map-root-user (a user namespace)") {
        return;
    }
    let env = TestEnv::new();
    let egress = |before: &str| {
        let script = format!("{before}exec \"$0\" doctor --json");
        let output = env
            .command_of(
                Path::new("unshare"),
                &[
                    "--user",
                    "--map-root-user",
                    "sh",
                    "-c",
                    &script,
                    crate::common::BIN,
                ],
            )
            .output()
            .unwrap();
        let doctor: serde_json::Value =
            serde_json::from_slice(&output.stdout).unwrap_or_else(|error| panic!("{error}: {output:?}"));
        let layers = doctor["data"]["sandbox"]["layers"].as_array().unwrap();
        layers
            .iter()
            .find(|layer| layer["layer"] == "egress")
            .cloned()
            .unwrap()
    };
    // The control: the same user namespace, no limit.
    let allowed = egress("");
    assert_eq!(allowed["enforced"], true, "{allowed}");
    let detail = allowed["detail"].as_str().unwrap().to_owned();
    // Network namespaces, but no mount namespace: entries that name a host by name
    // cannot be forwarded, which doctor says (the layer itself holds).
    let no_mounts = egress("echo 0 > /proc/sys/user/max_mnt_namespaces && ");
    assert_eq!(
        no_mounts,
        serde_json::json!({
            "layer": "egress",
            "enforced": true,
            "needed": false,
            "detail": format!("{detail}; but not the mount namespace a call needs when its allowlist names a host by name (for its hosts file): No space left on device (os error 28), so such a call fails"),
        })
    );
    let forbidden = egress("echo 0 > /proc/sys/user/max_net_namespaces && ");
    assert_eq!(
        forbidden,
        serde_json::json!({
            "layer": "egress",
            "enforced": false,
            "needed": false,
            "detail": "for packs with network.allow: the system's settings allow a network namespace, but making one failed: No space left on device (os error 28)",
        })
    );
}
