//! CONNECT to a host that a header binding names: TLS ends here with a leaf of
//! this server's authority, every request gets the headers, and goes on to the
//! real server over TLS verified against the upstream roots.

use std::convert::Infallible;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper::upgrade::Upgraded;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use tokio::sync::Mutex;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::call::{Ctx, Slot, Target, Tls};
use crate::http::{Body, HEAD_BYTES, failed, host_value, to_origin};
use crate::rule::Host;

/// What the requests of one terminated connection share.
struct Session {
    ctx: Ctx,
    tls: Tls,
    target: Target,
    headers: Vec<(HeaderName, HeaderValue)>,
    host: Option<HeaderValue>,
    /// The connection to the real server, made at the first request and kept.
    sender: Mutex<Option<SendRequest<Incoming>>>,
}

pub(crate) async fn serve(
    ctx: Ctx,
    slot: Slot,
    upgraded: Upgraded,
    target: Target,
    headers: Vec<(HeaderName, HeaderValue)>,
) {
    let _slot = slot;
    let name = match &target.host {
        Host::Ip(ip) => ip.to_string(),
        Host::Name(name) => name.clone(),
    };
    // `headers_for` gives no headers to a call without it.
    let Some(trust) = ctx.call.tls.clone() else {
        tracing::warn!(host = %name, "egress has no certificate authority to end TLS with");
        return;
    };
    let config = match trust.authority.server_config(&name) {
        Ok(config) => config,
        Err(e) => {
            tracing::warn!(host = %name, error = %e, "egress could not make a leaf certificate");
            return;
        }
    };
    let limits = ctx.call.limits.clone();
    let accept = TlsAcceptor::from(config).accept(TokioIo::new(upgraded));
    let tls = match tokio::time::timeout(limits.head_timeout, accept).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::warn!(host = %name, error = %e, "egress TLS handshake with the client failed");
            return;
        }
        Err(_) => return,
    };
    let session = Arc::new(Session {
        host: host_value(&target, 443),
        ctx,
        tls: trust,
        target,
        headers,
        sender: Mutex::new(None),
    });
    let service = service_fn(move |req| {
        let session = Arc::clone(&session);
        async move { Ok::<_, Infallible>(session.forward(req).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_buf_size(HEAD_BYTES)
        .serve_connection(TokioIo::new(tls), service)
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "egress terminated connection ended");
    }
}

impl Session {
    async fn forward(&self, mut req: Request<Incoming>) -> Response<Body> {
        let Some(host) = self.host.clone() else {
            return failed("the host is not a valid Host header");
        };
        // The Host header names the server TLS verified, whatever the client wrote.
        to_origin(&mut req, host, true);
        for (name, value) in &self.headers {
            req.headers_mut().insert(name.clone(), value.clone());
        }
        let mut sender = self.sender.lock().await;
        let usable = match sender.as_mut() {
            Some(open) => open.ready().await.is_ok(),
            None => false,
        };
        if !usable {
            match self.open().await {
                Ok(open) => *sender = Some(open),
                Err(why) => return failed(&why),
            }
        }
        let Some(open) = sender.as_mut() else {
            return failed("no connection");
        };
        match open.send_request(req).await {
            Ok(response) => response.map(http_body_util::BodyExt::boxed),
            Err(e) => failed(&format!("{}:{}: {e}", self.target.host, self.target.port)),
        }
    }

    /// A TLS connection to the real server, verified for the CONNECT host.
    async fn open(&self) -> Result<SendRequest<Incoming>, String> {
        let call = &self.ctx.call;
        let out = call.connect(&self.target).await?;
        let name = match &self.target.host {
            Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
            Host::Name(name) => ServerName::try_from(name.clone()).map_err(|e| e.to_string())?,
        };
        let connect = TlsConnector::from(self.tls.upstream.config()).connect(name, out);
        let tls = match tokio::time::timeout(call.limits.connect_timeout, connect).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => return Err(format!("TLS with {}: {e}", self.target.host)),
            Err(_) => return Err(format!("TLS with {}: no answer in time", self.target.host)),
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        self.ctx.spawn(async move {
            let _ = connection.await;
        });
        sender.ready().await.map_err(|e| e.to_string())?;
        Ok(sender)
    }
}
