//! `/healthz` and `/readyz`, for load balancers and orchestrators (see
//! docs/deploy.md): answered before the token or the OAuth access token is checked
//! and before rmcp's `Host` and `Origin` checks (a probe names the replica by its
//! address), and they answer nothing but their status: no version, path, pack or
//! error detail, which goes to the log instead. `/healthz` is 200 while the process
//! answers; `/readyz` is 200 once the server can serve (the sandbox probed, its
//! state keys readable as they are now) and 503 otherwise.

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use crate::mcp::Server;

pub(super) const HEALTH: &str = "/healthz";
pub(super) const READY: &str = "/readyz";

/// Answers the two probe paths; passes anything else on.
pub(super) async fn answer(State(server): State<Server>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path != HEALTH && path != READY {
        return next.run(request).await;
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut refusal = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
        refusal
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return refusal;
    }
    if path == HEALTH {
        return plain(StatusCode::OK, "ok\n");
    }
    match server.readiness() {
        Ok(()) => plain(StatusCode::OK, "ready\n"),
        Err(reason) => {
            tracing::debug!("not ready: {reason}");
            plain(StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
        }
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}
