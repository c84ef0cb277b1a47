//! Header bindings: TLS ends at the proxy, the header is set, and the request goes
//! on to a real TLS server (its own CA, given to `Upstream` as the extra root).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::support::{Answer, Proxy, Setup, connect, header, proxy, send};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

type Body = BoxBody<Bytes, Infallible>;

/// `/auth` answers with the Authorization and Host headers it got; `/stream`
/// sends one line, waits for `release`, then another.
async fn respond(req: Request<Incoming>, release: Arc<Notify>) -> Response<Body> {
    let got = |name: &str| {
        req.headers()
            .get(name)
            .map_or("(none)".to_owned(), |v| v.to_str().unwrap().to_owned())
    };
    if req.uri().path() == "/stream" {
        let (mut sender, body) = http_body_util::channel::Channel::<Bytes, Infallible>::new(1);
        tokio::spawn(async move {
            sender.send_data(Bytes::from("first\n")).await.unwrap();
            release.notified().await;
            sender.send_data(Bytes::from("second\n")).await.unwrap();
        });
        return Response::new(body.boxed());
    }
    let mut text = format!(
        "{} authorization: {} host: {}",
        req.uri(),
        got("authorization"),
        got("host")
    );
    if req.headers().contains_key("x-api-key") {
        text.push_str(&format!(" x-api-key: {}", got("x-api-key")));
    }
    Response::new(Full::new(Bytes::from(text)).boxed())
}

/// A server on loopback: `tls` with a leaf for `localhost` and `127.0.0.1` from
/// its own CA (the PEM it returns), else plain HTTP.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    pub(crate) ca_pem: String,
    pub(crate) release: Arc<Notify>,
}

pub(crate) async fn server(tls: bool) -> Server {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let release = Arc::new(Notify::new());
    let notify = Arc::clone(&release);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (acceptor, release) = (acceptor.clone(), Arc::clone(&notify));
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let release = Arc::clone(&release);
                    async move { Ok::<_, Infallible>(respond(req, release).await) }
                });
                let http = hyper::server::conn::http1::Builder::new();
                if tls {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                } else {
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                }
            });
        }
    });
    Server {
        addr,
        ca_pem,
        release,
    }
}

/// A client that CONNECTs through the proxy and speaks TLS to `name`, trusting only `roots`.
async fn client(
    proxy: SocketAddr,
    target: &str,
    name: &str,
    roots: &str,
) -> Result<hyper::client::conn::http1::SendRequest<Empty<Bytes>>, String> {
    let tunnel = connect(proxy, target).await.unwrap();
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(roots.as_bytes()) {
        store.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth();
    let name = ServerName::try_from(name.to_owned()).unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tunnel)
        .await
        .map_err(|e| e.to_string())?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection);
    Ok(sender)
}

async fn get(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    path: &str,
    authorization: Option<&str>,
) -> Response<Incoming> {
    let mut request = Request::get(path).header("host", "wrong.test");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    sender.ready().await.unwrap();
    sender
        .send_request(request.body(Empty::new()).unwrap())
        .await
        .unwrap()
}

async fn text(response: Response<Incoming>) -> (StatusCode, String) {
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// A proxy that allows `server` both as `localhost` and as `127.0.0.1`, with a bound
/// header for `localhost` (and what ending TLS takes, unless `without_tls`); the two
/// allowlist entries.
fn header_for_localhost(server: &Server, without_tls: bool) -> (Proxy, String, String) {
    let port = server.addr.port();
    let (named, ip) = (format!("localhost:{port}"), format!("127.0.0.1:{port}"));
    let proxy = proxy(Setup {
        allow: &[&named, &ip],
        names: &[("localhost", "127.0.0.1")],
        headers: vec![header("Authorization", "Bearer s3cret", &["localhost"])],
        extra_root: Some(&server.ca_pem),
        without_tls,
        ..Setup::default()
    });
    (proxy, named, ip)
}

/// Through `proxy`, `entry` is a plain tunnel: the client talks TLS with the real
/// server, which gets no header.
async fn plain_tunnel(proxy: &Proxy, entry: &str, server: &Server) {
    let mut plain = client(proxy.addr, entry, "127.0.0.1", &server.ca_pem)
        .await
        .unwrap();
    let got = text(get(&mut plain, "/auth", None).await).await;
    assert_eq!(
        got,
        (
            StatusCode::OK,
            "/auth authorization: (none) host: wrong.test".into()
        )
    );
}

#[tokio::test]
async fn a_bound_header_replaces_the_clients_and_reaches_only_its_host() {
    let server = server(true).await;
    let port = server.addr.port();
    let (proxy, named, ip) = header_for_localhost(&server, false);
    let ca = proxy.authority.cert_pem().to_owned();
    // The client trusts the proxy's CA for the bound host, and sends a placeholder.
    let mut bound = client(proxy.addr, &named, "localhost", &ca).await.unwrap();
    for path in ["/auth", "/again?x=1"] {
        let got = text(get(&mut bound, path, Some("Bearer placeholder")).await).await;
        let expected = format!("{path} authorization: Bearer s3cret host: localhost:{port}");
        assert_eq!(got, (StatusCode::OK, expected));
    }
    // The other host is a plain tunnel: the client talks to the real server.
    assert!(client(proxy.addr, &ip, "127.0.0.1", &ca).await.is_err());
    plain_tunnel(&proxy, &ip, &server).await;
    assert_eq!(proxy.call.refusals(), vec![]);
}

#[tokio::test]
async fn a_response_streams_through_a_terminated_connection() {
    let server = server(true).await;
    let entry = format!("localhost:{}", server.addr.port());
    let proxy = proxy(Setup {
        allow: &[&entry],
        names: &[("localhost", "127.0.0.1")],
        headers: vec![header("Authorization", "Bearer s3cret", &["localhost"])],
        extra_root: Some(&server.ca_pem),
        ..Setup::default()
    });
    let ca = proxy.authority.cert_pem().to_owned();
    let mut sender = client(proxy.addr, &entry, "localhost", &ca).await.unwrap();
    let head = get(&mut sender, "/stream", None);
    let mut body = tokio::time::timeout(std::time::Duration::from_secs(5), head)
        .await
        .expect("the proxy held the response back")
        .into_body();
    // The first line arrives while the server still holds back the second.
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame())
        .await
        .expect("the proxy held the body back")
        .unwrap()
        .unwrap()
        .into_data()
        .unwrap();
    assert_eq!(first, "first\n");
    server.release.notify_one();
    let rest = body.collect().await.unwrap().to_bytes();
    assert_eq!(rest, "second\n");
}

#[tokio::test]
async fn the_real_server_must_be_verified() {
    let server = server(true).await;
    let entry = format!("localhost:{}", server.addr.port());
    // The server's CA is not among the roots: no header leaves the proxy.
    let proxy = proxy(Setup {
        allow: &[&entry],
        names: &[("localhost", "127.0.0.1")],
        headers: vec![header("Authorization", "Bearer s3cret", &["localhost"])],
        ..Setup::default()
    });
    let ca = proxy.authority.cert_pem().to_owned();
    let mut sender = client(proxy.addr, &entry, "localhost", &ca).await.unwrap();
    let (status, body) = text(get(&mut sender, "/auth", None).await).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(
        body.starts_with("hcpx could not reach it: TLS with localhost: invalid peer certificate"),
        "{body}"
    );
    assert!(!body.contains("s3cret"), "{body}");
}

#[tokio::test]
async fn plain_http_goes_through_without_headers() {
    let server = server(false).await;
    let entry = server.addr.to_string();
    let proxy = proxy(Setup {
        allow: &[&entry],
        headers: vec![header("Authorization", "Bearer s3cret", &["127.0.0.1"])],
        ..Setup::default()
    });
    let answer = send(proxy.addr, &format!("http://{entry}/plain?q=1"), &entry).await;
    assert_eq!(
        answer,
        Answer {
            status: StatusCode::OK,
            body: format!("/plain?q=1 authorization: (none) host: {entry}"),
        }
    );
    assert_eq!(proxy.call.refusals(), vec![]);
}

#[tokio::test]
async fn a_header_for_an_ip_host_gets_a_certificate_for_that_ip() {
    let server = server(true).await;
    let entry = server.addr.to_string();
    let proxy = proxy(Setup {
        allow: &[&entry],
        headers: vec![header("X-Api-Key", "k3y", &["127.0.0.1"])],
        extra_root: Some(&server.ca_pem),
        ..Setup::default()
    });
    let ca = proxy.authority.cert_pem().to_owned();
    let mut sender = client(proxy.addr, &entry, "127.0.0.1", &ca).await.unwrap();
    let response = get(&mut sender, "/auth", None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let (_, body) = text(response).await;
    assert_eq!(
        body,
        format!("/auth authorization: (none) host: {entry} x-api-key: k3y")
    );
}

#[tokio::test]
async fn a_proxy_without_an_authority_refuses_what_needs_headers_and_tunnels_the_rest() {
    let server = server(true).await;
    let (proxy, named, ip) = header_for_localhost(&server, true);
    // The host that should get the header: refused, never tunnelled without it.
    let answer = connect(proxy.addr, &named).await.unwrap_err();
    assert_eq!(
        answer,
        Answer {
            status: StatusCode::BAD_GATEWAY,
            body: "hcpx could not reach it: the headers for localhost cannot be added: this proxy was started without a certificate authority\n".into(),
        }
    );
    // Any other host is the plain tunnel it always is.
    plain_tunnel(&proxy, &ip, &server).await;
}

#[tokio::test]
async fn a_value_that_cannot_be_a_header_is_never_sent() {
    let server = server(true).await;
    let entry = format!("localhost:{}", server.addr.port());
    let proxy = proxy(Setup {
        allow: &[&entry],
        names: &[("localhost", "127.0.0.1")],
        headers: vec![header("Authorization", "Bearer a\nb", &["localhost"])],
        extra_root: Some(&server.ca_pem),
        ..Setup::default()
    });
    let answer = connect(proxy.addr, &entry).await.unwrap_err();
    assert_eq!(
        answer,
        Answer {
            status: StatusCode::BAD_GATEWAY,
            body: "hcpx could not reach it: the value bound to header Authorization is not a valid header value\n".into(),
        }
    );
}
