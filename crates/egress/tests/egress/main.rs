//! The proxy on real sockets on loopback: tunnels, refusals, limits, the end of a call.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests stop loudly")]

mod https;
mod support;

use std::time::Duration;

use hcpx_egress::{Limits, Refusal};
use hyper::StatusCode;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use support::{Answer, Setup, connect, echo, proxy, round_trip, send};

fn refusal(host: &str, port: u16, why: &str) -> Refusal {
    Refusal {
        host: host.into(),
        port,
        why: why.into(),
    }
}

fn forbidden(host: &str, port: u16, why: &str) -> Answer {
    Answer {
        status: StatusCode::FORBIDDEN,
        body: format!("hcpx refused {host}:{port}: {why}\n"),
    }
}

#[tokio::test]
async fn an_allowed_connect_tunnels_bytes() {
    let echo = echo().await;
    let entry = echo.to_string();
    let proxy = proxy(Setup {
        allow: &[&entry],
        ..Setup::default()
    });
    let mut tunnel = connect(proxy.addr, &entry).await.unwrap();
    assert_eq!(round_trip(&mut tunnel, b"hello").await, b"hello");
    assert_eq!(round_trip(&mut tunnel, &[7; 100_000]).await, vec![7; 100_000]);
    assert_eq!(proxy.call.refusals(), vec![]);
}

#[tokio::test]
async fn refusals_say_what_and_why() {
    let echo = echo().await;
    let port = echo.port();
    let ip_entry = format!("127.0.0.1:{port}");
    // Names on another port than the IP entry: that entry would name 127.0.0.1
    // for its own port.
    let allow = [
        ip_entry.as_str(),
        "loop.test:9",
        "link.test:9",
        "mapped.test:9",
        "meta.test:80",
        "*.x.test:443",
    ];
    let proxy = proxy(Setup {
        allow: &allow,
        names: &[
            ("loop.test", "127.0.0.1"),
            ("link.test", "169.254.1.1"),
            ("mapped.test", "::ffff:127.0.0.1"),
            ("meta.test", "169.254.169.254"),
        ],
        ..Setup::default()
    });
    let not_listed = |host: &str, port: u16| format!("{host}:{port} is not in the allowlist");
    let resolves = |name: &str, ip: &str, kind: &str| {
        format!("{name} resolves to {ip}, {kind}, which the allowlist does not name")
    };
    let cases = vec![
        ("other.test".to_owned(), 443, not_listed("other.test", 443)),
        (
            "loop.test".into(),
            9,
            resolves("loop.test", "127.0.0.1", "a loopback address"),
        ),
        (
            "link.test".into(),
            9,
            resolves("link.test", "169.254.1.1", "a link-local address"),
        ),
        (
            "mapped.test".into(),
            9,
            resolves("mapped.test", "127.0.0.1", "a loopback address"),
        ),
        (
            "meta.test".into(),
            80,
            resolves("meta.test", "169.254.169.254", "a cloud metadata address"),
        ),
        ("127.1".into(), port, not_listed("127.1", port)),
        ("localhost.".into(), port, not_listed("localhost.", port)),
        ("localhost".into(), port, not_listed("localhost", port)),
        (
            "[::ffff:127.0.0.1]".into(),
            port,
            not_listed("[::ffff:127.0.0.1]", port),
        ),
        ("127.0.0.1".into(), port + 1, not_listed("127.0.0.1", port + 1)),
        ("x.test".into(), 443, not_listed("x.test", 443)),
    ];
    let mut expected = Vec::new();
    for (host, port, why) in &cases {
        let answer = connect(proxy.addr, &format!("{host}:{port}"))
            .await
            .expect_err(host);
        assert_eq!(answer, forbidden(host, *port, why));
        expected.push(refusal(host, *port, why));
    }
    // A subdomain passes the allowlist (and fails only to resolve: not a refusal).
    let answer = connect(proxy.addr, "a.x.test:443").await.unwrap_err();
    assert_eq!(
        answer,
        Answer {
            status: StatusCode::BAD_GATEWAY,
            body: "hcpx could not reach it: could not resolve a.x.test: no address\n".into(),
        }
    );
    // A request that is neither CONNECT nor absolute-form.
    let answer = send(proxy.addr, "/path", &format!("127.0.0.1:{port}")).await;
    let why = "'GET /path' is not a proxy request: send an absolute URL or CONNECT";
    assert_eq!(answer, forbidden("127.0.0.1", port, why));
    expected.push(refusal("127.0.0.1", port, why));
    let answer = send(proxy.addr, &format!("https://127.0.0.1:{port}/"), "x").await;
    let why = "https URLs are not proxied: HTTPS goes through CONNECT";
    assert_eq!(answer, forbidden("127.0.0.1", port, why));
    expected.push(refusal("127.0.0.1", port, why));
    assert_eq!(proxy.call.refusals(), expected);
    assert_eq!(proxy.call.refused(), expected.len());
    assert_eq!(
        serde_json::to_value(&proxy.call.refusals()[0]).unwrap(),
        serde_json::json!({"host": "other.test", "port": 443, "why": "other.test:443 is not in the allowlist"})
    );
}

#[tokio::test]
async fn names_the_allowlist_gives_may_lead_to_special_addresses() {
    let echo = echo().await;
    let port = echo.port();
    let localhost = format!("localhost:{port}");
    let named = format!("db.test:{port}");
    let ip = format!("127.0.0.1:{port}");
    let proxy = proxy(Setup {
        allow: &[&localhost, &named, &ip],
        names: &[("localhost", "127.0.0.1"), ("db.test", "127.0.0.1")],
        ..Setup::default()
    });
    for target in [&localhost, &named] {
        let mut tunnel = connect(proxy.addr, target).await.unwrap();
        assert_eq!(round_trip(&mut tunnel, b"ok").await, b"ok");
    }
    assert_eq!(proxy.call.refusals(), vec![]);
}

#[tokio::test]
async fn connections_past_the_cap_are_refused() {
    let echo = echo().await;
    let entry = echo.to_string();
    let forward = support::std_listener();
    let forward_addr = forward.local_addr().unwrap();
    let proxy = proxy(Setup {
        allow: &[&entry],
        limits: Limits {
            connections: 2,
            ..Limits::default()
        },
        forwards: vec![(forward, echo.into())],
        ..Setup::default()
    });
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut tunnel = connect(proxy.addr, &entry).await.unwrap();
        assert_eq!(round_trip(&mut tunnel, b"x").await, b"x");
        open.push(tunnel);
    }
    let why = "the call has 2 connections open, as many as it may";
    let answer = connect(proxy.addr, &entry).await.unwrap_err();
    assert_eq!(answer, forbidden("127.0.0.1", echo.port(), why));
    // A port forward counts too: the connection is closed at once.
    let mut forwarded = TcpStream::connect(forward_addr).await.unwrap();
    let mut buf = [0; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), forwarded.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
    assert_eq!(
        proxy.call.refusals(),
        vec![
            refusal("127.0.0.1", echo.port(), why),
            refusal("127.0.0.1", echo.port(), why),
        ]
    );
    // A closed tunnel gives its place back.
    drop(open.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut tunnel = connect(proxy.addr, &entry).await.unwrap();
    assert_eq!(round_trip(&mut tunnel, b"y").await, b"y");
}

#[tokio::test]
async fn port_forwards_copy_to_their_destination() {
    let echo = echo().await;
    let forward = support::std_listener();
    let addr = forward.local_addr().unwrap();
    let entry = echo.to_string();
    let proxy = proxy(Setup {
        allow: &[&entry],
        forwards: vec![(forward, echo.into())],
        ..Setup::default()
    });
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(round_trip(&mut stream, b"PING\r\n").await, b"PING\r\n");
    assert_eq!(proxy.call.refusals(), vec![]);
}

/// A forward to a name: resolved by the proxy on each connection, and reached only
/// where the proxy would reach it (here the name leads to loopback, which the
/// allowlist names as well).
#[tokio::test]
async fn a_forward_to_a_name_reaches_what_the_name_resolves_to() {
    let echo = echo().await;
    let named = format!("db.example.test:{}", echo.port());
    let address = echo.to_string();
    let forward = support::std_listener();
    let addr = forward.local_addr().unwrap();
    let proxy = proxy(Setup {
        allow: &[&named, &address],
        names: &[("db.example.test", "127.0.0.1")],
        forwards: vec![(
            forward,
            hcpx_egress::Destination {
                host: "db.example.test".into(),
                port: echo.port(),
            },
        )],
        ..Setup::default()
    });
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(round_trip(&mut stream, b"SELECT 1").await, b"SELECT 1");
    assert_eq!(proxy.call.refusals(), vec![]);
}

/// A forward is held to the proxy's rules on every connection: a name that resolves
/// to loopback the allowlist does not name is refused, recorded, and the connection
/// closed without reaching it; so is a destination the policy does not allow.
#[tokio::test]
async fn a_forward_is_refused_what_the_proxy_would_refuse() {
    let echo = echo().await;
    let named = format!("db.example.test:{}", echo.port());
    let (by_name, by_address) = (support::std_listener(), support::std_listener());
    let (name_addr, address_addr) = (by_name.local_addr().unwrap(), by_address.local_addr().unwrap());
    let proxy = proxy(Setup {
        allow: &[&named],
        names: &[("db.example.test", "127.0.0.1")],
        forwards: vec![
            (
                by_name,
                hcpx_egress::Destination {
                    host: "db.example.test".into(),
                    port: echo.port(),
                },
            ),
            (by_address, echo.into()),
        ],
        ..Setup::default()
    });
    for addr in [name_addr, address_addr] {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let _ = stream.write_all(b"x").await;
        let mut buf = [0; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0) | Err(_))), "{addr}: {read:?}");
    }
    let port = echo.port();
    assert_eq!(
        proxy.call.refusals(),
        vec![
            refusal(
                "db.example.test",
                port,
                "db.example.test resolves to 127.0.0.1, a loopback address, which the allowlist does not name"
            ),
            refusal(
                "127.0.0.1",
                port,
                &format!("127.0.0.1:{port} is not in the allowlist")
            ),
        ]
    );
}

#[tokio::test]
async fn a_client_that_sends_no_request_is_cut_off() {
    let proxy = proxy(Setup {
        limits: Limits {
            head_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        ..Setup::default()
    });
    let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = [0; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
    assert!(
        read.is_ok(),
        "the proxy kept an idle client past its head timeout"
    );
}

#[tokio::test]
async fn dropping_running_closes_an_open_tunnel() {
    let echo = echo().await;
    let entry = echo.to_string();
    let forward = support::std_listener();
    let forward_addr = forward.local_addr().unwrap();
    let mut proxy = proxy(Setup {
        allow: &[&entry],
        forwards: vec![(forward, echo.into())],
        ..Setup::default()
    });
    let mut tunnel = connect(proxy.addr, &entry).await.unwrap();
    assert_eq!(round_trip(&mut tunnel, b"before").await, b"before");
    let mut forwarded = TcpStream::connect(forward_addr).await.unwrap();
    assert_eq!(round_trip(&mut forwarded, b"before").await, b"before");
    drop(proxy.running.take());
    let mut buf = [0; 8];
    let read = tokio::time::timeout(Duration::from_secs(5), tunnel.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "tunnel still open: {read:?}");
    let read = tokio::time::timeout(Duration::from_secs(5), forwarded.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "forward still open: {read:?}");
    // Nothing listens any more.
    assert!(TcpStream::connect(proxy.addr).await.is_err());
}
