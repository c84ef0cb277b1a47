//! Servers on loopback, a proxy for a policy, and clients that go through it.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use hcpx_egress::{Allow, Authority, Call, Header, Limits, Policy, Resolver, Running, Tls, Upstream};
use http_body_util::{BodyExt as _, Empty};
use hyper::upgrade::Upgraded;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// A TCP server on loopback that sends back what it reads.
pub(crate) async fn echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    addr
}

pub(crate) fn std_listener() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap()
}

pub(crate) struct Proxy {
    pub(crate) call: Arc<Call>,
    pub(crate) addr: SocketAddr,
    pub(crate) running: Option<Running>,
    pub(crate) authority: Arc<Authority>,
    _home: tempfile::TempDir,
}

#[derive(Default)]
pub(crate) struct Setup<'a> {
    pub(crate) allow: &'a [&'a str],
    pub(crate) names: &'a [(&'a str, &'a str)],
    pub(crate) headers: Vec<Header>,
    pub(crate) extra_root: Option<&'a str>,
    pub(crate) limits: Limits,
    pub(crate) forwards: Vec<(std::net::TcpListener, hcpx_egress::Destination)>,
    /// Started without what ending TLS takes, as hcpx starts a call without header
    /// bindings.
    pub(crate) without_tls: bool,
}

pub(crate) fn header(name: &str, value: &str, hosts: &[&str]) -> Header {
    Header {
        name: name.into(),
        value: zeroize::Zeroizing::new(value.into()),
        hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
    }
}

pub(crate) fn proxy(setup: Setup<'_>) -> Proxy {
    let home = tempfile::tempdir().unwrap();
    let authority = Arc::new(Authority::load_or_make(&home.path().join("egress")).unwrap());
    let extra = setup.extra_root.map(|pem| {
        let path = home.path().join("extra.pem");
        std::fs::write(&path, pem).unwrap();
        path
    });
    let upstream = Arc::new(Upstream::new(extra.as_deref()).unwrap());
    let policy = Policy {
        allow: setup.allow.iter().map(|a| Allow::parse(a).unwrap()).collect(),
        headers: setup.headers,
    };
    let names: HashMap<String, Vec<IpAddr>> = setup
        .names
        .iter()
        .map(|(name, ip)| ((*name).to_owned(), vec![ip.parse().unwrap()]))
        .collect();
    let tls = (!setup.without_tls).then(|| Tls {
        authority: Arc::clone(&authority),
        upstream,
    });
    let call = Call::with(policy, tls, Resolver::Map(names), setup.limits);
    let listener = std_listener();
    let addr = listener.local_addr().unwrap();
    let running = call.serve(listener, setup.forwards).unwrap();
    Proxy {
        call,
        addr,
        running: Some(running),
        authority,
        _home: home,
    }
}

/// What the proxy answered to a request it did not let through.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: String,
}

async fn answer(response: hyper::Response<hyper::body::Incoming>) -> Answer {
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

/// CONNECT through the proxy: the tunnel, or what the proxy answered instead.
pub(crate) async fn connect(proxy: SocketAddr, target: &str) -> Result<TokioIo<Upgraded>, Answer> {
    let stream = TcpStream::connect(proxy).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection.with_upgrades());
    let request = Request::connect(target)
        .header("host", target)
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    if response.status() != StatusCode::OK {
        return Err(answer(response).await);
    }
    Ok(TokioIo::new(hyper::upgrade::on(response).await.unwrap()))
}

/// A request sent to the proxy as it is (absolute-form or not).
pub(crate) async fn send(proxy: SocketAddr, uri: &str, host: &str) -> Answer {
    let stream = TcpStream::connect(proxy).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::get(uri)
        .header("host", host)
        .body(Empty::<Bytes>::new())
        .unwrap();
    answer(sender.send_request(request).await.unwrap()).await
}

/// Writes `bytes` to `io` and reads as many back.
pub(crate) async fn round_trip<T>(io: &mut T, bytes: &[u8]) -> Vec<u8>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    io.write_all(bytes).await.unwrap();
    let mut back = vec![0; bytes.len()];
    io.read_exact(&mut back).await.unwrap();
    back
}
