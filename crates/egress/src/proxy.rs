//! The forward proxy: CONNECT (a byte tunnel, or TLS terminated to add headers)
//! and absolute-form plain HTTP requests. hyper reads every request.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::HOST;
use hyper::http::uri::Authority;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

use crate::call::{Ctx, Denied, Slot, Target, over_cap};
use crate::http::{Body, HEAD_BYTES, failed, host_value, refused, to_origin};
use crate::mitm;

/// Serves one connection to the proxy listener; `slot` none: over the call's cap,
/// every request is refused.
pub(crate) async fn serve(ctx: Ctx, stream: TcpStream, slot: Slot) {
    let head_timeout = ctx.call.limits.head_timeout;
    let service = service_fn(move |req| {
        let (ctx, slot) = (ctx.clone(), slot.clone());
        async move { Ok::<_, Infallible>(handle(ctx, slot, req).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        .max_buf_size(HEAD_BYTES)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "egress proxy connection ended");
    }
}

/// The host (without IPv6 brackets) and port an authority names.
fn split(authority: &Authority, default_port: Option<u16>) -> Option<(String, u16)> {
    let port = authority.port_u16().or(default_port)?;
    Some((authority.host().to_owned(), port))
}

async fn handle(ctx: Ctx, slot: Slot, req: Request<Incoming>) -> Response<Body> {
    let absolute = req.uri().scheme().is_some();
    let destination = match req.uri().authority() {
        Some(authority) if req.method() == Method::CONNECT => split(authority, None),
        Some(authority) if req.uri().scheme_str() == Some("http") => split(authority, Some(80)),
        _ => None,
    };
    let Some((host, port)) = destination else {
        // Say which host was meant, when the client said it.
        let default = if req.uri().scheme_str() == Some("https") {
            443
        } else {
            0
        };
        let (host, port) = req
            .uri()
            .authority()
            .cloned()
            .or_else(|| {
                let host = req.headers().get(HOST)?.to_str().ok()?;
                host.parse::<Authority>().ok()
            })
            .and_then(|a| split(&a, Some(default)))
            .unwrap_or_default();
        let why = match (req.method(), absolute) {
            (&Method::CONNECT, _) => "CONNECT needs host:port".to_owned(),
            (_, true) => format!(
                "{} URLs are not proxied: HTTPS goes through CONNECT",
                req.uri().scheme_str().unwrap_or_default()
            ),
            _ => format!(
                "'{} {}' is not a proxy request: send an absolute URL or CONNECT",
                req.method(),
                req.uri()
            ),
        };
        return refused(&ctx, &host, port, &why);
    };
    if slot.is_none() {
        return refused(&ctx, &host, port, &over_cap(&ctx.call));
    }
    let target = match ctx.call.decide(&host, port).await {
        Ok(target) => target,
        Err(Denied::Refused(why)) => return refused(&ctx, &host, port, &why),
        Err(Denied::Failed(why)) => return failed(&why),
    };
    if req.method() == Method::CONNECT {
        connect(ctx, slot, req, target).await
    } else {
        plain(ctx, req, target).await
    }
}

/// CONNECT to an allowed destination: headers to add mean TLS is terminated here,
/// else the bytes go through as they are.
async fn connect(ctx: Ctx, slot: Slot, mut req: Request<Incoming>, target: Target) -> Response<Body> {
    let upgrade = hyper::upgrade::on(&mut req);
    match ctx.call.headers_for(&target.host) {
        Some(Ok(headers)) => {
            let ctx2 = ctx.clone();
            ctx.spawn(async move {
                match upgrade.await {
                    Ok(upgraded) => mitm::serve(ctx2, slot, upgraded, target, headers).await,
                    Err(e) => tracing::debug!(error = %e, "egress CONNECT upgrade failed"),
                }
            });
        }
        Some(Err(why)) => return failed(&why),
        None => {
            let mut out = match ctx.call.connect(&target).await {
                Ok(out) => out,
                Err(why) => return failed(&why),
            };
            ctx.spawn(async move {
                let _slot = slot;
                match upgrade.await {
                    Ok(upgraded) => {
                        let mut upgraded = TokioIo::new(upgraded);
                        let _ = tokio::io::copy_bidirectional(&mut upgraded, &mut out).await;
                    }
                    Err(e) => tracing::debug!(error = %e, "egress CONNECT upgrade failed"),
                }
            });
        }
    }
    Response::new(Full::new(Bytes::new()).map_err(|n| match n {}).boxed())
}

/// A plain HTTP request: sent as it came (no header is ever added), on a new connection.
async fn plain(ctx: Ctx, mut req: Request<Incoming>, target: Target) -> Response<Body> {
    let Some(host) = host_value(&target, 80) else {
        return failed("the host is not a valid Host header");
    };
    to_origin(&mut req, host, false);
    let out = match ctx.call.connect(&target).await {
        Ok(out) => out,
        Err(why) => return failed(&why),
    };
    let (mut sender, connection) = match hyper::client::conn::http1::handshake(TokioIo::new(out)).await {
        Ok(pair) => pair,
        Err(e) => return failed(&e.to_string()),
    };
    ctx.spawn(async move {
        let _ = connection.await;
    });
    match sender.send_request(req).await {
        Ok(response) => response.map(http_body_util::BodyExt::boxed),
        Err(e) => failed(&format!("{}:{}: {e}", target.host, target.port)),
    }
}
