//! How much the HTTP server gives any one client: how many connections it holds,
//! how long a request's head and body may take to arrive, how big they may be, and
//! how many sessions live. A client past a bound is told so (503, 408, 413, 431)
//! instead of being left to hang, and nothing it sent before being checked is kept.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use http_body_util::BodyExt as _;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// The largest request body read; a bigger one gets 413 without being held.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// The largest `initialize` request: a session keeps what its client said about
/// itself (capabilities, client info) for as long as it lives, so that must be small.
/// Real clients send well under 4 KiB.
pub(super) const MAX_SESSION_START: usize = 64 * 1024;

/// How long a request head (its line and headers) may take to arrive once a
/// connection is open or done with its last answer. It is also how long an idle
/// kept-alive connection is held: a client that sends nothing gives its place up.
pub(super) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a whole request body (at most [`MAX_BODY`]) may take to arrive: 4 MiB in
/// 20 s is 1.6 Mbit/s, slower than any link hcpx should be served over. Answers are
/// not bounded: an event stream lives as long as its client keeps it.
pub(super) const BODY_READ_TIMEOUT: Duration = Duration::from_secs(20);

/// The largest request head (request line and headers). A bearer token or a JWT
/// fits many times over; a client cannot make the server buffer more before its
/// token is checked.
pub(super) const MAX_HEAD: usize = 16 * 1024;

/// The most connections served at once, whatever the descriptor limit allows: each
/// costs a descriptor and buffers, and the hosts of one user open a handful (an
/// event stream and a request or two each), so 256 is room to spare.
const MAX_CONNECTIONS: usize = 256;

/// The most sessions alive at once; past it the one idle the longest ends. A
/// session costs about 60 KiB, so the bound keeps a flood of `initialize` to tens
/// of MiB; real servers have a handful.
pub(super) const MAX_SESSIONS: usize = 1000;

/// How long a finished answer stays replayable for a client whose event stream
/// broke (rmcp keeps 60 s by default): clients reconnect after 3 s. Every answer a
/// session gives is held that long, so this bounds what one busy session holds.
pub(super) const ANSWERS_KEPT: Duration = Duration::from_secs(10);

/// How long a refused connection is given to take its answer before it is closed.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// How long a refused connection may stay quiet before it is closed: what it sent
/// so far has been read (so closing does not reset the connection under its answer).
const REFUSAL_QUIET: Duration = Duration::from_millis(100);

/// How many connections served at once: at most [`MAX_CONNECTIONS`], and at most a
/// quarter of the descriptors this process may open (`fd_limit`), so that the pack
/// processes of running calls (pipes, the sandbox's own), state files and the
/// listener always find one. With the common limit of 1,024: 256.
pub(super) fn connection_cap(fd_limit: Option<u64>) -> usize {
    let by_descriptors = fd_limit
        .and_then(|limit| usize::try_from(limit / 4).ok())
        .unwrap_or(MAX_CONNECTIONS);
    by_descriptors.clamp(8, MAX_CONNECTIONS)
}

/// This process's limit on open descriptors.
#[cfg(unix)]
pub(super) fn descriptor_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

#[cfg(not(unix))]
pub(super) fn descriptor_limit() -> Option<u64> {
    None
}

/// The answer to a connection past the cap.
pub(super) fn busy_message(cap: usize) -> String {
    format!(
        "Service Unavailable: this hcpx server already holds {}, its most; try again \
         in a few seconds\n",
        crate::render::count(cap, "connection")
    )
}

/// Writes a whole response on a connection that is not spoken HTTP to (refused
/// before its request is read), then closes it in an orderly way: what the client
/// already sent is read and dropped until it closes or goes quiet, so that closing
/// does not reset the connection under the answer (the client would lose it).
pub(super) async fn refuse<S>(mut stream: S, status: &str, extra_headers: &str, message: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n{extra_headers}\r\n{message}",
        message.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0_u8; 4096];
        let mut drained = 0;
        while drained < 64 * 1024 {
            match tokio::time::timeout(REFUSAL_QUIET, stream.read(&mut sink)).await {
                Ok(Ok(0)) | Err(_) => break,
                Ok(Ok(read)) => drained += read,
                Ok(Err(error)) => return Err(error),
            }
        }
        std::io::Result::Ok(())
    })
    .await;
}

/// Reads a request's body before anything else sees it: within
/// [`BODY_READ_TIMEOUT`] (else 408) and [`MAX_BODY`] (else 413, as soon as it passes
/// the bound), and an `initialize` within [`MAX_SESSION_START`]. Runs after the
/// token check, so an unauthenticated client has none of its body read.
pub(super) async fn read_body(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    let bytes = match tokio::time::timeout(BODY_READ_TIMEOUT, limited.collect()).await {
        Err(_elapsed) => {
            tracing::debug!("a request body did not arrive in time");
            return plain(
                StatusCode::REQUEST_TIMEOUT,
                "Request Timeout: the request body did not arrive in time\n",
            );
        }
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large: a request body may be at most 4 MiB\n",
            );
        }
        Ok(Err(error)) => {
            tracing::debug!("a request body could not be read: {error}");
            return plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: the body could not be read\n",
            );
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    if bytes.len() > MAX_SESSION_START
        && !parts.headers.contains_key("mcp-session-id")
        && starts_a_session(&bytes)
    {
        return plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload Too Large: an initialize request may be at most 64 KiB\n",
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Whether a JSON-RPC body is an `initialize` request.
fn starts_a_session(body: &[u8]) -> bool {
    // An owned string: the name may be written with escapes (`\u0069nitialize`).
    #[derive(serde::Deserialize)]
    struct Method {
        method: Option<String>,
    }
    serde_json::from_slice::<Method>(body)
        .is_ok_and(|request| request.method.as_deref() == Some("initialize"))
}

fn plain(status: StatusCode, message: &'static str) -> Response {
    let mut response = (status, message).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_most_descriptors_to_calls() {
        assert_eq!(connection_cap(Some(1024)), 256);
        assert_eq!(connection_cap(Some(256)), 64);
        assert_eq!(connection_cap(Some(1 << 20)), 256);
        assert_eq!(connection_cap(Some(16)), 8);
        assert_eq!(connection_cap(None), 256);
    }

    #[test]
    fn only_initialize_starts_a_session() {
        assert!(starts_a_session(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#
        ));
        assert!(!starts_a_session(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#
        ));
        assert!(!starts_a_session(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!starts_a_session(b"not json"));
        assert!(starts_a_session(br#"{"method":"\u0069nitialize"}"#));
    }
}
