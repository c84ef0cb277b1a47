//! The one thing the resource server fetches: a JSON document from the issuer (its
//! metadata, its keys), with a GET over HTTPS (rustls with the system's roots, as
//! the egress proxy trusts them) or plain HTTP to loopback only. No redirects, a
//! time limit and a size limit: the issuer's answer is small, and a server that
//! cannot be reached must not hold a request for long.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use url::Url;

/// The most a fetch may take, connection and body included.
pub(super) const FETCH_TIME: Duration = Duration::from_secs(10);
/// The largest document read.
const MAX_DOCUMENT: usize = 1024 * 1024;

/// Why a document could not be had; its text says what and where.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0} is not https (plain http is taken only on loopback)")]
    NotHttps(String),
    #[error("{url}: {reason}")]
    Failed { url: String, reason: String },
}

/// Fetches JSON documents; made once, its TLS roots read on the first https fetch.
#[derive(Default)]
pub(super) struct Client {
    tls: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
}

/// Whether `url` may be fetched: https anywhere, http only on loopback.
pub(crate) fn allowed(url: &Url) -> bool {
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether `url` names this machine: `localhost` or a loopback address.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

impl Client {
    /// The JSON document at `url`: a 200 answer of at most [`MAX_DOCUMENT`] bytes,
    /// within [`FETCH_TIME`].
    pub(super) async fn json(&self, url: &Url) -> Result<serde_json::Value, FetchError> {
        if !allowed(url) {
            return Err(FetchError::NotHttps(url.to_string()));
        }
        let failed = |reason: String| FetchError::Failed {
            url: url.to_string(),
            reason,
        };
        let body = tokio::time::timeout(FETCH_TIME, self.get(url))
            .await
            .map_err(|_| failed(format!("no answer within {} s", FETCH_TIME.as_secs())))?
            .map_err(failed)?;
        serde_json::from_slice(&body).map_err(|error| failed(format!("not JSON: {error}")))
    }

    async fn get(&self, url: &Url) -> Result<Bytes, String> {
        let host = url.host_str().ok_or("no host")?.to_owned();
        let port = url.port_or_known_default().ok_or("no port")?;
        // `[::1]` is a host name in the URL and `::1` to the resolver.
        let name = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        let tcp = tokio::net::TcpStream::connect((name.as_str(), port))
            .await
            .map_err(|error| format!("cannot connect: {error}"))?;
        let _ = tcp.set_nodelay(true);
        let mut target = url.path().to_owned();
        if let Some(query) = url.query() {
            target.push('?');
            target.push_str(query);
        }
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        let request = hyper::Request::get(target)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::ACCEPT, "application/json")
            .header(
                hyper::header::USER_AGENT,
                concat!("hcpx/", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::<Bytes>::new())
            .map_err(|error| error.to_string())?;
        if url.scheme() == "https" {
            let server = rustls::pki_types::ServerName::try_from(name)
                .map_err(|error| format!("not a server name: {error}"))?;
            let connector = tokio_rustls::TlsConnector::from(self.tls()?);
            let tls = connector
                .connect(server, tcp)
                .await
                .map_err(|error| format!("TLS: {error}"))?;
            exchange(TokioIo::new(tls), request).await
        } else {
            exchange(TokioIo::new(tcp), request).await
        }
    }

    /// The TLS client settings: the system's roots (`SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` apply), read once.
    fn tls(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.tls
            .get_or_init(|| {
                hcpx_egress::Upstream::new(None)
                    .map(|upstream| upstream.config())
                    .map_err(|error| error.to_string())
            })
            .clone()
    }
}

/// One HTTP/1.1 request on a connected stream, its body read within the limit.
async fn exchange<S>(io: TokioIo<S>, request: hyper::Request<Empty<Bytes>>) -> Result<Bytes, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|error| format!("HTTP: {error}"))?;
    let driver = tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| format!("HTTP: {error}"));
    let result = match response {
        Ok(response) if response.status() == hyper::StatusCode::OK => {
            Limited::new(response.into_body(), MAX_DOCUMENT)
                .collect()
                .await
                .map(http_body_util::Collected::to_bytes)
                .map_err(|error| format!("the answer could not be read in full ({error})"))
        }
        Ok(response) => Err(format!("answered {}", response.status())),
        Err(error) => Err(error),
    };
    driver.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_loopback() {
        for (url, ok) in [
            ("https://id.example.com/", true),
            ("http://127.0.0.1:8080/", true),
            ("http://127.9.9.9/", true),
            ("http://[::1]:9/", true),
            ("http://localhost/", true),
            ("http://id.example.com/", false),
            ("http://10.0.0.1/", false),
            ("http://[::ffff:10.0.0.1]/", false),
            ("ftp://id.example.com/", false),
            ("file:///etc/passwd", false),
        ] {
            assert_eq!(allowed(&Url::parse(url).unwrap()), ok, "{url}");
        }
    }

    /// A server that answers with too much, too late or not 200 is no document.
    #[tokio::test]
    async fn a_bad_answer_is_an_error_that_names_the_url() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for answer in [
                "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_owned(),
                "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:1/\r\ncontent-length: 0\r\n\r\n".to_owned(),
                format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", MAX_DOCUMENT + 1),
                "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nnope!".to_owned(),
                "HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{\"a\": 1}\n".to_owned(),
            ] {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut request = [0_u8; 4096];
                let _ = stream.read(&mut request).await.unwrap();
                let _ = stream.write_all(answer.as_bytes()).await;
                if answer.contains(&MAX_DOCUMENT.to_string()) {
                    let _ = stream.write_all(&vec![b' '; MAX_DOCUMENT + 1]).await;
                }
                let _ = stream.shutdown().await;
            }
        });
        let client = Client::default();
        let url = Url::parse(&format!("http://{address}/jwks")).unwrap();
        let error = |result: Result<serde_json::Value, FetchError>| result.unwrap_err().to_string();
        assert_eq!(
            error(client.json(&url).await),
            format!("http://{address}/jwks: answered 404 Not Found")
        );
        assert_eq!(
            error(client.json(&url).await),
            format!("http://{address}/jwks: answered 302 Found")
        );
        assert!(
            error(client.json(&url).await).contains("could not be read in full"),
            "over the size limit"
        );
        assert!(error(client.json(&url).await).contains("not JSON"));
        assert_eq!(client.json(&url).await.unwrap(), serde_json::json!({ "a": 1 }));
        let remote = Url::parse("http://id.example.com/jwks").unwrap();
        assert_eq!(
            error(client.json(&remote).await),
            "http://id.example.com/jwks is not https (plain http is taken only on loopback)"
        );
    }
}
