//! A pack cannot drive hcpx. An `hcpx mcp` server of this user's, without a token,
//! serves "the user who started it", and a pack's CLI runs as that user: the uid
//! alone would let a pack reach the server (through a socket it declares, which hcpx
//! connects for it; straight over loopback with `"network": true`; through the
//! allowlist's proxy) and run any pack with its bindings, confirm for itself,
//! install. The server refuses a connection from a process of a call, or from hcpx
//! acting for one, and still serves the user (the control in each test).

use crate::common::{HttpServer, Nobody, TestEnv, as_user};
use crate::sandbox::set_network;

fn attacker_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    env
}

/// What the attacker's `drive` printed (the status line, and the body of a
/// refusal), after it ran to its end.
fn drive(env: &TestEnv, to: &str) -> String {
    let output = env.run(&["exec", "attacker", "drive", "--", &format!("to={to}")]);
    assert_eq!(output.code, 0, "{output}");
    output.stdout.trim_end().to_owned()
}

/// The 403 a pack gets, with what it came from.
fn refused(from: &str) -> String {
    format!(
        "HTTP/1.1 403 Forbidden\nForbidden: this connection comes from {from}. A pack's CLI cannot \
         drive hcpx: it would run other packs with their bindings. Call hcpx from outside the pack."
    )
}

/// The user, from outside any call, is served by the same server.
fn assert_serves_the_user(server: &HttpServer) {
    let session = server.session(&[]);
    assert!(!session.is_empty());
}

/// The socket's path declared in `sandbox.sockets`: hcpx itself connects the pack's
/// socket to it (seccomp user notification), so the server's peer is hcpx.
#[test]
fn a_pack_cannot_drive_a_server_through_a_socket_it_declares() {
    let env = attacker_env();
    let socket = env.root.path().join("run/mcp.sock");
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let server = HttpServer::start_unix(&env, &socket, &[]);
    crate::sockets::declare(&env, &[&socket]);
    // Served first, the user's ancestors are remembered as in no call: the pack's
    // connection is still refused.
    assert_serves_the_user(&server);
    assert_eq!(
        drive(&env, socket.to_str().unwrap()),
        refused("hcpx connecting for a pack's call")
    );
    assert_serves_the_user(&server);
}

/// `"network": true`: the pack's own process connects to loopback.
#[test]
fn a_pack_with_the_network_cannot_drive_a_loopback_server() {
    let env = attacker_env();
    set_network(&env, "attacker", true);
    let server = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let address = server.loopback().to_string();
    assert_eq!(drive(&env, &address), refused("a pack's call"));
    assert_serves_the_user(&server);
}

/// An allowlist that names the server's port: the proxy (hcpx) connects for the
/// pack.
#[test]
fn a_pack_cannot_drive_a_loopback_server_through_its_allowlist() {
    let env = attacker_env();
    let server = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let address = server.loopback().to_string();
    let manifest = env.home().join("packs/attacker/hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "\"network\": false",
        &format!("\"network\": {{\"allow\": [\"{address}\"]}}"),
    );
    std::fs::write(&manifest, text).unwrap();
    assert_eq!(
        drive(&env, &address),
        refused("hcpx connecting for a pack's call")
    );
    assert_serves_the_user(&server);
}

/// The same three ways as an unprivileged user (`nobody`), whose servers read only
/// its own processes' descriptors: the pack is refused, the user's own client (the
/// attacker's script run by hand, outside any call) is served.
#[test]
fn unprivileged_a_pack_cannot_drive_its_users_servers() {
    let Some(nobody) = Nobody::new() else {
        return;
    };
    let socket = nobody.base.join("work/mcp.sock");
    let manifest = nobody.base.join("home/packs/attacker/hcp.json");
    let tcp = HttpServer::start_command(nobody.command(&["mcp", "--http", "127.0.0.1:0"]));
    let unix = HttpServer::start_command(nobody.command(&["mcp", "--unix", socket.to_str().unwrap()]));
    let address = tcp.loopback().to_string();
    let original = std::fs::read_to_string(&manifest).unwrap();
    let networks = [
        (
            format!("\"sockets\": [\"{}\"],\n    \"network\": false", socket.display()),
            socket.display().to_string(),
            "hcpx connecting for a pack's call",
        ),
        ("\"network\": true".to_owned(), address.clone(), "a pack's call"),
        (
            format!("\"network\": {{\"allow\": [\"{address}\"]}}"),
            address.clone(),
            "hcpx connecting for a pack's call",
        ),
    ];
    for (network, target, from) in &networks {
        std::fs::write(&manifest, original.replace("\"network\": false", network)).unwrap();
        let (code, stdout, stderr) =
            nobody.run(&["exec", "attacker", "drive", "--", &format!("to={target}")]);
        assert_eq!(
            (code, stdout.trim_end()),
            (0, refused(from).as_str()),
            "{network}: {stderr}"
        );
    }
    // A pack that hides its descriptors (non-dumpable) cannot be found holding the
    // socket by its own user: any such call process gets the connection refused.
    std::fs::write(
        &manifest,
        original.replace("\"network\": false", "\"network\": true"),
    )
    .unwrap();
    let (code, stdout, stderr) =
        nobody.run(&["exec", "attacker", "drive-hidden", "--", &format!("to={address}")]);
    assert_eq!(
        (code, stdout.trim_end()),
        (
            0,
            "HTTP/1.1 403 Forbidden\nForbidden: a process of a pack's call hides its descriptors, so this \
             connection may come from a pack's call. A pack's CLI cannot drive hcpx: it would run other \
             packs with their bindings. Call hcpx from outside the pack."
        ),
        "{stderr}"
    );
    for target in [socket.display().to_string(), address] {
        let by_hand = as_user(65534, nobody.base.join("home/packs/attacker/attacker"))
            .unwrap()
            .args(["drive", &format!("--to={target}")])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&by_hand.stdout),
            "HTTP/1.1 200 OK\n",
            "{target}: {by_hand:?}"
        );
    }
    drop((tcp, unix));
}
