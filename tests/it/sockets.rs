//! Unix sockets: not "the network". Without a declaration no unix socket opens, with
//! or without `"network": true` (a root-owned socket such as `docker.sock` would be
//! a way out of every layer); a pack that declares a socket path connects to that
//! path and no other, however it spells it, checked and made by hcpx for each
//! connect (seccomp user notification).

use std::io::Write as _;
use std::os::unix::net::UnixListener;

use crate::common::TestEnv;
use crate::sandbox::set_network;

fn attacker_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    env.install_fixture("probe", "probe");
    env
}

/// A unix socket server that answers `hi` to every connection, until dropped.
pub(crate) struct Server {
    listener: UnixListener,
}

impl Server {
    pub(crate) fn serve(listener: UnixListener) -> Self {
        let server = Self {
            listener: listener.try_clone().unwrap(),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = (&stream).write_all(b"hi");
            }
        });
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.listener.set_nonblocking(true);
    }
}

/// No unix socket opens, by path or abstract name, as root too: not without
/// the network, and not with it either (`"network": true` is IPv4 and IPv6, and a
/// root-owned socket such as `docker.sock` would be a way out of every layer). TCP
/// still works with the network: the control.
#[test]
fn no_unix_socket_opens_with_or_without_the_network() {
    use std::os::linux::net::SocketAddrExt as _;
    let env = attacker_env();
    let path = env.root.path().join("outside.sock");
    let _by_path = Server::serve(UnixListener::bind(&path).unwrap());
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o660)).unwrap();
    let name = format!("hcpx-test-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _abstract = Server::serve(UnixListener::bind_addr(&address).unwrap());
    let targets = [path.display().to_string(), format!("@{name}")];
    for network in [false, true] {
        set_network(&env, "attacker", network);
        for target in &targets {
            let output = env.run(&["exec", "attacker", "unix", "--", &format!("to={target}")]);
            assert_eq!(output.code, 1, "network {network}, {target}: {output}");
            assert!(output.stderr.contains("PermissionError"), "{output}");
            assert!(!output.stdout.contains("connected"), "{output}");
        }
    }
    set_network(&env, "probe", true);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let output = env.run(&["exec", "probe", "connect", "--", &format!("port={port}")]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "connected\n"),
        "{output}"
    );
}

/// Declares `sockets` for the attacker pack.
pub(crate) fn declare(env: &TestEnv, sockets: &[&std::path::Path]) {
    let manifest = env.home().join("packs/attacker/hcp.json");
    let list: Vec<String> = sockets.iter().map(|path| path.display().to_string()).collect();
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "\"timeoutMs\": 20000",
        &format!(
            "\"sockets\": {},\n    \"timeoutMs\": 20000",
            serde_json::json!(list)
        ),
    );
    std::fs::write(&manifest, text).unwrap();
}

/// A declared socket is reached, also through a link to it or a folder link on the
/// way; an undeclared one is not, not through a link to a declared one's name, not
/// by abstract name; and the pack's sockets still have no network.
#[test]
fn a_pack_connects_only_to_the_sockets_it_declares() {
    use std::os::linux::net::SocketAddrExt as _;
    let env = attacker_env();
    let allowed = env.root.path().join("run/db.sock");
    let other = env.root.path().join("run/docker.sock");
    std::fs::create_dir_all(allowed.parent().unwrap()).unwrap();
    let _allowed = Server::serve(UnixListener::bind(&allowed).unwrap());
    let _other = Server::serve(UnixListener::bind(&other).unwrap());
    let name = format!("hcpx-declared-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _abstract = Server::serve(UnixListener::bind_addr(&address).unwrap());
    // Links anyone could make: to the declared socket, to a folder on its way.
    std::os::unix::fs::symlink(&allowed, env.work().join("db-link")).unwrap();
    std::os::unix::fs::symlink(allowed.parent().unwrap(), env.work().join("run-link")).unwrap();
    declare(&env, &[&allowed]);
    let reach = |target: &str| env.run(&["exec", "attacker", "unix", "--", &format!("to={target}")]);
    for target in [
        allowed.display().to_string(),
        env.work().join("db-link").display().to_string(),
        env.work().join("run-link/db.sock").display().to_string(),
    ] {
        let output = reach(&target);
        assert_eq!(
            (output.code, output.stdout.as_str()),
            (0, "connected hi\n"),
            "{target}: {output}"
        );
    }
    for target in [other.display().to_string(), format!("@{name}")] {
        let output = reach(&target);
        assert_eq!(output.code, 1, "{target}: {output}");
        assert!(output.stderr.contains("PermissionError"), "{target}: {output}");
    }
    // Declaring a socket opens no network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let manifest = env.home().join("packs/probe/hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "\"timeoutMs\": 20000",
        &format!(
            "\"sockets\": [{}],\n    \"timeoutMs\": 20000",
            serde_json::json!(allowed)
        ),
    );
    std::fs::write(&manifest, text).unwrap();
    let output = env.run(&["exec", "probe", "connect", "--", &format!("port={port}")]);
    assert_eq!(output.code, 1, "{output}");
    assert!(output.stderr.contains("PermissionError"), "{output}");
    // With the network too, both work.
    set_network(&env, "probe", true);
    let output = env.run(&["exec", "probe", "connect", "--", &format!("port={port}")]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "connected\n"),
        "{output}"
    );
}

/// The seccomp listener that answers a pack's connects never reaches the pack (with
/// it, the pack could answer its own connects), nor does the socket pair it was sent
/// over: every descriptor the CLI holds is a standard stream or the shell's own.
#[test]
fn the_pack_never_holds_the_listener_of_its_connects() {
    let env = attacker_env();
    let socket = env.root.path().join("db.sock");
    let _server = Server::serve(UnixListener::bind(&socket).unwrap());
    declare(&env, &[&socket]);
    let output = env.run(&["exec", "attacker", "fdlist"]);
    assert_eq!(output.code, 0, "{output}");
    let targets: Vec<&str> = output
        .stdout
        .lines()
        .filter_map(|line| line.split_once(' ').map(|(_, target)| target))
        .collect();
    assert!(targets.len() >= 3, "{output}");
    for target in targets {
        assert!(
            target == "/dev/null" || target.starts_with("pipe:") || target.ends_with("/attacker"),
            "the pack holds {target}:\n{output}"
        );
    }
}

/// The plan says which sockets a pack may reach, and `doctor` whether this machine
/// can check them.
#[test]
fn the_plan_names_the_declared_sockets() {
    let env = attacker_env();
    let socket = env.root.path().join("db.sock");
    declare(&env, &[&socket]);
    let (code, envelope) = env.json(&["exec", "attacker", "status", "--dry-run"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"]["sandbox"]["sockets"],
        serde_json::json!([socket])
    );
    let layer = envelope["data"]["sandbox"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|layer| layer["layer"] == "sockets")
        .unwrap()
        .clone();
    assert_eq!(layer["enforced"], serde_json::json!(true), "{layer}");
    assert_eq!(
        layer["detail"],
        serde_json::json!(format!(
            "connects only to {} (seccomp user notification: hcpx checks and makes each connect)",
            socket.display()
        ))
    );
}

/// A datagram carries its address in every send, so no connect is there to check:
/// a pack sends none to a unix socket path, from a socket of its own or from one end
/// of a socketpair, whether or not it declares sockets (a declared one is connected
/// to, never sent to), as root too.
#[test]
fn a_pack_sends_no_datagram_to_a_unix_socket_path() {
    use std::os::unix::net::UnixDatagram;
    for declares in [false, true] {
        let env = attacker_env();
        let path = env.root.path().join("outside-dgram.sock");
        let listener = UnixDatagram::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let declared = env.root.path().join("declared.sock");
        let _server = Server::serve(UnixListener::bind(&declared).unwrap());
        if declares {
            declare(&env, &[declared.as_path()]);
        }
        let target = path.display().to_string();
        let output = env.run(&["exec", "attacker", "dgram", "--", &format!("to={target}")]);
        let mut received = [0u8; 64];
        let got = listener
            .recv(&mut received)
            .ok()
            .map(|n| String::from_utf8_lossy(&received[..n]).into_owned());
        assert_eq!(
            (output.code, output.stdout.as_str(), got),
            (0, "socket refused 1\nsocketpair refused 1\n", None),
            "declares a socket: {declares}: {output}"
        );
    }
}
