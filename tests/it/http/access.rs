//! Who may use a server that has no token: only the user who started it, over
//! TCP on loopback (found by the connection's owner, asked of the kernel) and
//! over `--unix PATH` (a 0600 socket file, the peer's uid from SO_PEERCRED). The
//! other user is played by `nobody`, through runuser(1), so these tests need root
//! (CI runs as root) and python3 for the other user's client.

use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::common::{HttpResponse, HttpServer, TestEnv, http_request, is_root, parse_response, require};

const TOKEN: &str = "test-token-0123456789abcdef";

/// Where a test's server makes its socket: `sock/hcp.sock` in the test's folder.
fn socket_path(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.root.path().join("sock");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("hcp.sock")
}

/// A client in python3, run as any user: connects (TCP, an IPv4-mapped IPv6
/// socket, or a unix socket), sends an `initialize` (or nothing at all, with
/// `silent`), and prints what came back, or `NO RESPONSE`.
const CLIENT: &str = r#"
import socket, sys
kind, where, mode = sys.argv[1], sys.argv[2], sys.argv[3]
token = sys.argv[4] if len(sys.argv) > 4 else ""
if kind == "unix":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(where)
    host = "localhost"
elif kind == "mapped":
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.connect(("::ffff:127.0.0.1", int(where.rsplit(":", 1)[1])))
    host = where
else:
    name, port = where.rsplit(":", 1)
    s = socket.create_connection((name.strip("[]"), int(port)))
    host = where
s.settimeout(20)
if mode == "initialize":
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"other","version":"0"}}}'
    head = "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n" % (host, len(body))
    if token:
        head += "Authorization: Bearer %s\r\n" % token
    s.sendall(head.encode() + b"\r\n" + body)
data = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except (socket.timeout, ConnectionResetError):
    pass
sys.stdout.write(data.decode("utf-8", "replace") or "NO RESPONSE")
"#;

/// runuser(1), which runs a command as another user.
fn runuser() -> &'static Path {
    ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        .into_iter()
        .map(Path::new)
        .find(|path| path.exists())
        .unwrap_or(Path::new("runuser"))
}

/// setpriv(1), which runs a command as another user in the same process (runuser
/// forks, so killing it would leave a server behind).
fn setpriv() -> &'static Path {
    ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .map(Path::new)
        .find(|path| path.exists())
        .unwrap_or(Path::new("setpriv"))
}

/// Whether another user can be played here: root, runuser(1) and setpriv(1), and a
/// python3 that `nobody` can run. Fails in CI when not.
fn other_user_available() -> bool {
    let python_as_nobody = Command::new(runuser())
        .args(["-u", "nobody", "--", "python3", "-c", "pass"])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .current_dir("/")
        .status()
        .is_ok_and(|status| status.success());
    require(
        is_root() && python_as_nobody && setpriv().exists(),
        "root, runuser(1), setpriv(1) and a python3 that nobody can run (to connect as another user)",
    )
}

/// Runs [`CLIENT`] as `user` (`None`: as the tests' own user, root) and returns
/// the response, or `None` when nothing came back.
fn client(user: Option<&str>, args: &[&str]) -> Option<HttpResponse> {
    let mut command = match user {
        Some(user) => {
            let mut command = Command::new(runuser());
            command.args(["-u", user, "--", "python3"]);
            command
        }
        None => Command::new("python3"),
    };
    let output = command
        .arg("-c")
        .arg(CLIENT)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.starts_with("HTTP/").then(|| parse_response(text.as_bytes()))
}

/// Asserts that `response` is the refusal of a connection from another user.
fn assert_refused(response: Option<HttpResponse>, what: &str) {
    let response = response.unwrap_or_else(|| panic!("{what}: no response at all"));
    assert_eq!(response.status, 403, "{what}: {response:?}");
    assert!(
        response.body.contains("--unix") && response.body.contains("token"),
        "{what}: the refusal says how to connect: {response:?}"
    );
}

fn assert_served(response: Option<HttpResponse>, what: &str) {
    let response = response.unwrap_or_else(|| panic!("{what}: no response at all"));
    assert_eq!(response.status, 200, "{what}: {response:?}");
    assert!(
        response.header("mcp-session-id").is_some(),
        "{what}: {response:?}"
    );
}

#[test]
fn without_a_token_a_loopback_server_serves_only_its_own_user() {
    if !other_user_available() {
        return;
    }
    let env = TestEnv::new();
    let server = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let address = server.loopback().to_string();
    // Another user is refused before the server reads anything: it is told so
    // without sending a byte.
    assert_refused(
        client(Some("nobody"), &["tcp", &address, "silent"]),
        "nobody, silent",
    );
    assert_refused(
        client(Some("nobody"), &["tcp", &address, "initialize"]),
        "nobody, initialize",
    );
    // The server's own user gets through, from another process as from this one.
    assert_served(client(None, &["tcp", &address, "initialize"]), "root");
    let session = server.session(&[]);
    assert!(!session.is_empty());
    let log = server.stderr.lock().unwrap().clone();
    assert!(!log.contains("ERROR"), "{log}");
}

#[test]
fn with_a_token_any_local_user_may_connect_with_it() {
    if !other_user_available() {
        return;
    }
    let env = TestEnv::new().env("HCP_MCP_TOKEN", TOKEN);
    let server = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let address = server.loopback().to_string();
    assert_served(
        client(Some("nobody"), &["tcp", &address, "initialize", TOKEN]),
        "nobody with the token",
    );
    let bare = client(Some("nobody"), &["tcp", &address, "initialize"]).unwrap();
    assert_eq!(bare.status, 401, "{bare:?}");
}

#[test]
fn ipv6_loopback_and_mapped_addresses_are_checked_too() {
    if !other_user_available()
        || !require(
            std::net::TcpListener::bind("[::1]:0").is_ok(),
            "IPv6 loopback (::1)",
        )
    {
        return;
    }
    let env = TestEnv::new();
    let six = HttpServer::start(&env, "[::1]:0", &[]);
    let address = format!("[::1]:{}", six.address.port());
    assert_refused(
        client(Some("nobody"), &["tcp", &address, "silent"]),
        "nobody over ::1",
    );
    assert_served(client(None, &["tcp", &address, "initialize"]), "root over ::1");
    // An IPv6 socket reaching the IPv4 server through ::ffff:127.0.0.1 is listed in
    // tcp6, under the mapped address.
    let four = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let address = four.loopback().to_string();
    assert_refused(
        client(Some("nobody"), &["mapped", &address, "silent"]),
        "nobody through a mapped address",
    );
    assert_served(
        client(None, &["mapped", &address, "initialize"]),
        "root through a mapped address",
    );
}

/// Root is no exception: a server that an unprivileged user started refuses root's
/// connections, over TCP and over its socket file (which root could open whatever
/// its mode).
#[test]
fn a_server_of_an_unprivileged_user_refuses_root_too() {
    if !other_user_available() {
        return;
    }
    let nobody = crate::common::Nobody::with(&["home", "work", "user", "sock"]);
    nobody.give();
    let tcp = HttpServer::start_command(nobody.command(&["mcp", "--http", "127.0.0.1:0"]));
    let address = tcp.loopback().to_string();
    assert_refused(client(None, &["tcp", &address, "silent"]), "root, silent");
    let from_here = http_request(tcp.loopback(), "POST", "/mcp", &[], b"{}");
    assert_eq!(from_here.status, 403, "{from_here:?}");
    assert_served(
        client(Some("nobody"), &["tcp", &address, "initialize"]),
        "nobody's own client",
    );

    let socket = nobody.base.join("sock/hcp.sock");
    let socket_text = socket.to_str().unwrap();
    let unix = HttpServer::start_command(nobody.command(&["mcp", "--unix", socket_text]));
    assert_refused(
        client(None, &["unix", socket_text, "silent"]),
        "root over the socket",
    );
    assert_served(
        client(Some("nobody"), &["unix", socket_text, "initialize"]),
        "nobody over its socket",
    );
    drop(unix);
}

#[test]
fn a_unix_socket_refuses_another_user_even_when_its_mode_would_let_them() {
    if !other_user_available() {
        return;
    }
    let env = TestEnv::new();
    // A folder nobody may enter, so that only the socket's own mode and the peer
    // check stand in the way.
    let dir = env.root.path().join("sock");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.join("hcp.sock");
    let server = HttpServer::start_unix(&env, &socket, &[]);
    let socket_text = socket.to_str().unwrap();
    // By its mode, nobody cannot even connect.
    let denied = Command::new(runuser())
        .args(["-u", "nobody", "--", "python3", "-c"])
        .arg(CLIENT)
        .args(["unix", socket_text, "silent"])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("PermissionError"),
        "{denied:?}"
    );
    // Opened up by hand, the peer check still refuses it.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_refused(
        client(Some("nobody"), &["unix", socket_text, "silent"]),
        "nobody over a 0666 socket",
    );
    assert_served(client(None, &["unix", socket_text, "initialize"]), "root");
    drop(server);
}

#[test]
fn a_unix_socket_is_made_safely_and_removed_on_stop() {
    let env = TestEnv::new();
    let socket = socket_path(&env);
    let mut server = HttpServer::start_unix(&env, &socket, &[]);
    let line = server.stderr.lock().unwrap().clone();
    assert!(line.contains(socket.to_str().unwrap()), "{line}");
    let metadata = std::fs::symlink_metadata(&socket).unwrap();
    assert!(metadata.file_type().is_socket());
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    // MCP works over it, as over TCP.
    let session = server.session(&[]);
    let listed = server.post(
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    );
    assert_eq!(listed.status, 200, "{listed:?}");
    assert_eq!(listed.messages()[0]["result"]["tools"][0]["name"], json!("hcp"));

    // A second server on the same path is refused, and the first keeps serving.
    let second = env.run(&["mcp", "--unix", socket.to_str().unwrap()]);
    assert_eq!(second.code, 1, "{second}");
    assert!(second.stderr.contains("in use"), "{second}");
    assert!(!server.session(&[]).is_empty());

    // Stopped, it takes its socket file away.
    let status = crate::common::terminate(&mut server.child).expect("stopped within 8 s");
    assert_eq!(status.code(), Some(0));
    assert!(!socket.exists(), "the socket file stayed");

    // A path that is not a socket is never replaced.
    let file = socket.with_file_name("notes.txt");
    std::fs::write(&file, "keep me").unwrap();
    let refused = env.run(&["mcp", "--unix", file.to_str().unwrap()]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(refused.stderr.contains("not a socket"), "{refused}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");

    // A socket left by a server that was killed is taken over.
    let mut killed = HttpServer::start_unix(&env, &socket, &[]);
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    assert!(socket.exists());
    let again = HttpServer::start_unix(&env, &socket, &[]);
    assert!(!again.session(&[]).is_empty());
}

/// A server killed while a helper of its own (which shares its descriptors, such as
/// the one making a namespace) still runs leaves its socket listening for a moment
/// after the server is gone: connecting succeeds, nobody answers. A server started
/// then (a restart after a crash) takes the socket over; it refuses only one whose
/// listening process lives. Played by a python3 process that listens and exits,
/// leaving a child of its own holding the socket.
#[test]
fn a_socket_whose_server_is_gone_is_taken_over_even_while_a_leftover_holds_it() {
    if !require(
        Command::new("python3").arg("-V").output().is_ok(),
        "python3 (plays the leftover)",
    ) {
        return;
    }
    let env = TestEnv::new();
    let socket = socket_path(&env);
    let leftover = Command::new("python3")
        .args([
            "-c",
            "import os, socket, sys, time\n\
             s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
             s.bind(sys.argv[1]); s.listen(8)\n\
             child = os.fork()\n\
             if child == 0:\n\
             \x20   os.setsid(); os.close(1); os.close(2); time.sleep(30); os._exit(0)\n\
             print(child, flush=True)\n\
             os._exit(0)\n",
        ])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(leftover.status.success(), "{leftover:?}");
    // The one that listened is gone; its child holds the socket and never accepts.
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());

    let server = HttpServer::start_unix(&env, &socket, &[]);
    assert!(!server.session(&[]).is_empty());
    let holder = String::from_utf8_lossy(&leftover.stdout).trim().to_owned();
    assert!(
        Command::new("kill").arg(&holder).status().unwrap().success(),
        "{holder}"
    );
}

/// Servers started at the same instant on a socket left by a server that is gone
/// (a supervisor restarting several at once, two terminals): exactly one serves;
/// each of the others is refused. Without a lock, one could remove the socket
/// another had just made, and that one would serve nobody, unreachable, unnoticed.
#[test]
fn servers_started_at_once_on_a_stale_socket_leave_exactly_one_serving() {
    use std::sync::{Arc, Mutex};
    let env = TestEnv::new();
    let socket = socket_path(&env);
    let path = socket.to_str().unwrap();
    for round in 0..25 {
        // Left by a server that is gone: bound, then closed without removing it.
        drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
        let mut servers: Vec<(std::process::Child, Arc<Mutex<String>>)> = (0..5)
            .map(|_| {
                let mut child = env
                    .command(&["mcp", "--unix", path])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let log = Arc::new(Mutex::new(String::new()));
                let (mut stderr, into) = (child.stderr.take().unwrap(), Arc::clone(&log));
                std::thread::spawn(move || {
                    let mut buffer = [0_u8; 4096];
                    while let Ok(read @ 1..) = std::io::Read::read(&mut stderr, &mut buffer) {
                        into.lock()
                            .unwrap()
                            .push_str(&String::from_utf8_lossy(&buffer[..read]));
                    }
                });
                (child, log)
            })
            .collect();
        // Each one either serves (and says so) or is refused (and exits).
        let settled = crate::common::wait_until(std::time::Duration::from_secs(20), || {
            servers.iter_mut().all(|(child, log)| {
                log.lock().unwrap().contains("serving MCP") || child.try_wait().unwrap().is_some()
            })
        });
        assert!(settled, "round {round}: a server neither serves nor exits");
        let mut serving = Vec::new();
        let mut refused = Vec::new();
        for (child, log) in &mut servers {
            match child.try_wait().unwrap() {
                None => serving.push(child.id()),
                Some(status) => {
                    // Its last words are read to the end.
                    crate::common::wait_until(std::time::Duration::from_secs(5), || {
                        log.lock().unwrap().contains("in use")
                    });
                    refused.push((status.code(), log.lock().unwrap().clone()));
                }
            }
        }
        assert_eq!(serving.len(), 1, "round {round}: {refused:?}");
        for (code, stderr) in &refused {
            assert_eq!(*code, Some(1), "round {round}: {stderr}");
            assert!(stderr.contains("in use"), "round {round}: {stderr}");
        }
        // The one that serves is the one the socket reaches.
        let stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        let peer = rustix::net::sockopt::socket_peercred(&stream).unwrap();
        assert_eq!(
            u32::try_from(peer.pid.as_raw_nonzero().get()).unwrap(),
            serving[0],
            "round {round}"
        );
        drop(stream);
        for (child, _) in &mut servers {
            if child.try_wait().unwrap().is_none() {
                crate::common::terminate(child).expect("stopped within 8 s");
            }
        }
        let _ = std::fs::remove_file(&socket);
    }
}
