//! What the proxy's two HTTP servers share: short answers, and a request made
//! ready for the real server.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{HOST, HeaderValue};
use hyper::http::uri::{PathAndQuery, Uri};
use hyper::{Request, Response, StatusCode};

use crate::call::{Ctx, Target};

/// Every response body: a short text, or a server's body streamed through.
pub(crate) type Body = BoxBody<Bytes, hyper::Error>;

/// Request heads are read into buffers of at most this many bytes.
pub(crate) const HEAD_BYTES: usize = 64 * 1024;

pub(crate) fn text(status: StatusCode, line: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(line)).map_err(|n| match n {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Records the refusal and answers 403 with one line that says it.
pub(crate) fn refused(ctx: &Ctx, host: &str, port: u16, why: &str) -> Response<Body> {
    ctx.call.refuse(host, port, why);
    text(
        StatusCode::FORBIDDEN,
        format!("hcpx refused {host}:{port}: {why}\n"),
    )
}

pub(crate) fn failed(why: &str) -> Response<Body> {
    tracing::warn!(why, "egress failed");
    text(
        StatusCode::BAD_GATEWAY,
        format!("hcpx could not reach it: {why}\n"),
    )
}

/// The request as the server should see it: origin-form, with a Host header, no
/// proxy headers.
pub(crate) fn to_origin(req: &mut Request<Incoming>, host: HeaderValue, replace_host: bool) {
    let path = req
        .uri()
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    *req.uri_mut() = Uri::from(path);
    let headers = req.headers_mut();
    headers.remove("proxy-authorization");
    headers.remove("proxy-connection");
    if replace_host || !headers.contains_key(HOST) {
        headers.insert(HOST, host);
    }
}

/// The Host header value for a destination (the port only when it is not `default`).
pub(crate) fn host_value(target: &Target, default: u16) -> Option<HeaderValue> {
    let text = if target.port == default {
        target.host.to_string()
    } else {
        format!("{}:{}", target.host, target.port)
    };
    HeaderValue::from_str(&text).ok()
}
