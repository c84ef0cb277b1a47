//! `network.allow` for clients that ignore proxy variables (psql, redis-cli): each
//! entry that names one host is forwarded where such a client connects. The
//! fixture `forwards` is allowed `ADDRESS:PORT` (the machine's own address, not
//! loopback), `db.hcpx.test:PORT` and `*.hcpx.test:PORT`, and connects straight to
//! them, by address and by name, and to places it is not allowed. hcpx runs in a
//! mount namespace of the test's whose hosts file says `db.hcpx.test` is ADDRESS
//! (as a DNS server would), so that the name resolves outside the sandbox only.
//! Run as root and as an unprivileged user.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{Nobody, TestEnv, fixture, is_root, require, require_kernel_layers};

/// A server on the machine's address that answers `pong` and counts connections.
struct Server {
    reached: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl Server {
    fn start(address: IpAddr) -> Self {
        let listener = TcpListener::bind((address, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let reached = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done) = (Arc::clone(&reached), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        stream.set_nonblocking(false).unwrap();
                        stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                        let mut buffer = [0_u8; 64];
                        let _ = stream.read(&mut buffer);
                        let _ = stream.write_all(b"pong");
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self { reached, stop, port }
    }

    fn reached(&self) -> usize {
        self.reached.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The machine's first IPv4 address that is not loopback, from `ip(8)`.
fn machine_address() -> Option<IpAddr> {
    let output = Command::new("ip")
        .args(["-o", "-4", "address", "show", "scope", "global"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout).lines().find_map(|line| {
        let cidr = line
            .split_whitespace()
            .skip_while(|word| *word != "inet")
            .nth(1)?;
        cidr.split('/').next()?.parse().ok()
    })
}

/// The fixture, allowed `address:port`, `db.hcpx.test:port` and `*.hcpx.test:port`.
fn forwards_pack(packs: &Path, address: IpAddr, port: u16) {
    let dir = packs.join("forwards");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["forwards", "SKILL.md"] {
        std::fs::copy(fixture("forwards").join(file), dir.join(file)).unwrap();
    }
    let manifest = std::fs::read_to_string(fixture("forwards").join("hcp.json"))
        .unwrap()
        .replace("@ADDRESS@", &address.to_string())
        .replace("@PORT@", &port.to_string());
    std::fs::write(dir.join("hcp.json"), manifest).unwrap();
}

/// `command` run in a mount namespace of its own whose `/etc/hosts` is `hosts`;
/// its mounts are shared within that namespace, so that a mount the call made
/// without keeping it to itself would show there. What `/etc/hosts` reads there
/// once the command is done is written to `after`.
fn with_hosts(command: &Command, hosts: &Path, after: &Path) -> Command {
    let script = r#"mount --make-rprivate / && mount --make-rshared / && mount --bind "$0" /etc/hosts || exit 90
"$@"; code=$?; cat /etc/hosts > "$HCP_TEST_AFTER"; exit $code"#;
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(["--mount", "sh", "-c", script])
        .arg(hosts)
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear()
        .env("HCP_TEST_AFTER", after);
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(key, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

/// The hosts file outside the sandbox: the machine's, and the test's name.
fn outside_hosts(dir: &Path, address: IpAddr) -> (PathBuf, String) {
    let machine = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let content = format!("{machine}\n{address} db.hcpx.test\n");
    let path = dir.join("outside-hosts");
    std::fs::write(&path, &content).unwrap();
    (path, content)
}

fn check(output: &std::process::Output, server: &Server, other: &Server, after: &Path, outside: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let envelope: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(output.status.code(), Some(0), "{envelope:#}");
    check_envelope(&envelope);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!((server.reached(), other.reached()), (3, 0));
    // The call's hosts file was its own: the namespace hcpx ran in reads its own.
    assert_eq!(std::fs::read_to_string(after).unwrap(), outside);
}

/// One call's result: the allowed places reached by address and by name (which
/// resolves to the forward's own address), the others not, and no refusal.
fn check_envelope(envelope: &serde_json::Value) {
    assert_eq!(envelope["exitCode"], 0, "{envelope:#}");
    let results: serde_json::Value =
        serde_json::from_str(envelope["stdout"].as_str().unwrap()).unwrap_or_else(|_| panic!("{envelope:#}"));
    let reached: Vec<(&str, &str)> = ["by-address", "by-name", "by-name-again", "resolved"]
        .into_iter()
        .map(|name| (name, results[name].as_str().unwrap()))
        .collect();
    assert_eq!(
        reached,
        [
            ("by-address", "reached: pong"),
            ("by-name", "reached: pong"),
            ("by-name-again", "reached: pong"),
            ("resolved", "reached: ['127.100.0.1']"),
        ],
        "{results:#}"
    );
    // The call's hosts file is read-only to it (and Landlock would refuse the write
    // besides).
    assert_eq!(
        results["hosts-written"],
        "failed: OSError: [Errno 30] Read-only file system: '/etc/hosts'"
    );
    for name in ["suffix-name", "other-port", "other-name"] {
        assert!(
            results[name].as_str().unwrap().starts_with("failed: "),
            "{name} got through: {results:#}"
        );
    }
    assert_eq!(envelope.get("warnings"), None, "{envelope:#}");
}

/// `exec forwards reach --json -- …`: the fixture's words for `server` and `other`.
fn reach(address: IpAddr, server: &Server, other: &Server) -> Vec<String> {
    ["exec", "forwards", "reach", "--json", "--"]
        .into_iter()
        .map(str::to_owned)
        .chain([
            format!("address={address}"),
            format!("port={}", server.port),
            format!("other={}", other.port),
        ])
        .collect()
}

fn have_tools() -> Option<IpAddr> {
    let tools = ["/usr/bin/python3", "/usr/bin/unshare", "/usr/bin/ip"]
        .iter()
        .all(|tool| Path::new(tool).exists());
    if !require(
        tools && is_root(),
        "root (to make mount namespaces), python3, unshare and ip",
    ) || !require_kernel_layers()
    {
        return None;
    }
    let address = machine_address();
    require(address.is_some(), "an IPv4 address that is not loopback").then_some(address?)
}

#[test]
fn clients_that_ignore_the_proxy_reach_allowed_addresses_and_names_as_root() {
    let Some(address) = have_tools() else {
        return;
    };
    let (server, other) = (Server::start(address), Server::start(address));
    let env = TestEnv::new();
    forwards_pack(&env.home().join("packs"), address, server.port);
    let (hosts, content) = outside_hosts(&env.home(), address);
    let after = env.home().join("after");
    let words = reach(address, &server, &other);
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    let output = with_hosts(&env.command(&args), &hosts, &after)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    check(&output, &server, &other, &after, &content);
}

#[test]
fn clients_that_ignore_the_proxy_reach_allowed_addresses_and_names_unprivileged() {
    let Some(address) = have_tools() else {
        return;
    };
    let (server, other) = (Server::start(address), Server::start(address));
    let Some(_) = crate::common::as_user(65534, "true") else {
        return;
    };
    let nobody = Nobody::with(&["home/packs", "work", "user"]);
    forwards_pack(&nobody.base.join("home/packs"), address, server.port);
    nobody.give();
    let outside = tempfile::tempdir().unwrap();
    let (hosts, content) = outside_hosts(outside.path(), address);
    let after = outside.path().join("after");
    let words = reach(address, &server, &other);
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    let output = with_hosts(&nobody.command(&args), &hosts, &after)
        .output()
        .unwrap();
    check(&output, &server, &other, &after, &content);
}

/// Through a running `hcpx mcp`, whose calls take namespaces made ahead (each made
/// with the hosts file of the call before): three calls in a row reach the same.
#[test]
fn a_server_forwards_names_call_after_call() {
    let Some(address) = have_tools() else {
        return;
    };
    let (server, other) = (Server::start(address), Server::start(address));
    let env = TestEnv::new();
    forwards_pack(&env.home().join("packs"), address, server.port);
    let (hosts, content) = outside_hosts(&env.home(), address);
    let after = env.home().join("after");
    let mut mcp = crate::mcp::Process::initialized_from(with_hosts(&env.command(&["mcp"]), &hosts, &after));
    let argv = serde_json::json!(reach(address, &server, &other));
    for id in 2..5 {
        let response = mcp.call(id, argv.clone());
        check_envelope(&response["result"]["structuredContent"]);
    }
    let (code, stderr) = mcp.close();
    assert_eq!(code, 0, "{stderr}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!((server.reached(), other.reached()), (9, 0));
    assert_eq!(std::fs::read_to_string(after).unwrap(), content);
}

/// Where the call's mount namespace cannot be made (`user.max_mnt_namespaces = 0`
/// in a user namespace of the test's own), a call whose allowlist names a host by
/// name fails, says why, and runs nothing: it never runs without its forwards'
/// names.
#[test]
fn without_a_mount_namespace_a_call_with_names_runs_nothing() {
    let Some(address) = have_tools() else {
        return;
    };
    let server = Server::start(address);
    let env = TestEnv::new();
    forwards_pack(&env.home().join("packs"), address, server.port);
    let script = "echo 0 > /proc/sys/user/max_mnt_namespaces && exec \"$0\" \"$@\"";
    let words = reach(address, &server, &server);
    let mut args = vec![
        "--user",
        "--map-root-user",
        "sh",
        "-c",
        script,
        crate::common::BIN,
    ];
    args.extend(words.iter().map(String::as_str));
    let output = env
        .command_of(Path::new("/usr/bin/unshare"), &args)
        .output()
        .unwrap();
    let envelope: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|error| panic!("{error}: {output:?}"));
    assert_eq!(
        (
            &envelope["error"]["reason"],
            &envelope["spawned"],
            &envelope["data"]["details"]
        ),
        (
            &serde_json::json!("not_runnable"),
            &serde_json::json!(false),
            &serde_json::json!([
                "cannot make the network namespace, with the mount namespace whose hosts file gives the allowlist's names their forwards: No space left on device (os error 28)"
            ])
        ),
        "{envelope:#}"
    );
    assert_eq!(server.reached(), 0);
}
