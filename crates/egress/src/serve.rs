//! Serving a call's listeners: the proxy and the port forwards, each connection
//! under the call's cap, all of them until `Running` is dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::call::{Call, Ctx, Denied, over_cap};
use crate::proxy;

/// Where a port forward leads: a host as the allowlist writes it (a name, which is
/// resolved and checked as the proxy checks one, or an IP, `[v6]` in brackets) and
/// a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub host: String,
    pub port: u16,
}

impl From<SocketAddr> for Destination {
    fn from(addr: SocketAddr) -> Self {
        let host = match addr {
            SocketAddr::V4(v4) => v4.ip().to_string(),
            SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
        };
        Self {
            host,
            port: addr.port(),
        }
    }
}

/// Why a listener could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("could not serve a listener: {0}")]
    Listener(#[source] std::io::Error),
}

/// The call's tasks: dropping it ends every connection of the call.
#[derive(Debug)]
pub struct Running {
    _cancel: DropGuard,
}

impl Call {
    /// Serves the proxy listener and each (listener, destination) forward until the
    /// returned handle is dropped; dropping it ends every connection of the call.
    /// A forward's destination is decided as the proxy decides one (allowed, and a
    /// name resolving only to addresses it may reach), on each connection.
    /// Must be called inside a tokio runtime.
    pub fn serve(
        self: &Arc<Self>,
        proxy: std::net::TcpListener,
        forwards: Vec<(std::net::TcpListener, Destination)>,
    ) -> Result<Running, ServeError> {
        let adopt = |listener: std::net::TcpListener| {
            listener.set_nonblocking(true).map_err(ServeError::Listener)?;
            TcpListener::from_std(listener).map_err(ServeError::Listener)
        };
        let proxy = adopt(proxy)?;
        let forwards = forwards
            .into_iter()
            .map(|(listener, to)| Ok((adopt(listener)?, to)))
            .collect::<Result<Vec<_>, ServeError>>()?;
        let cancel = CancellationToken::new();
        let ctx = Ctx {
            call: Arc::clone(self),
            cancel: cancel.clone(),
        };
        ctx.spawn(accept(ctx.clone(), proxy, None));
        for (listener, to) in forwards {
            ctx.spawn(accept(ctx.clone(), listener, Some(to)));
        }
        Ok(Running {
            _cancel: cancel.drop_guard(),
        })
    }
}

/// Accepts connections on one listener: the proxy (`to` none) or a port forward.
async fn accept(ctx: Ctx, listener: TcpListener, to: Option<Destination>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: wait rather than spin.
                tracing::warn!(error = %e, "egress accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let slot = Arc::clone(&ctx.call.slots).try_acquire_owned().ok().map(Arc::new);
        match to {
            None => match (slot, Arc::clone(&ctx.call.overflow).try_acquire_owned()) {
                (Some(slot), _) => ctx.spawn(proxy::serve(ctx.clone(), stream, Some(slot))),
                (None, Ok(overflow)) => {
                    let ctx2 = ctx.clone();
                    ctx.spawn(async move {
                        proxy::serve(ctx2, stream, None).await;
                        drop(overflow);
                    });
                }
                (None, Err(_)) => ctx.call.refuse("", 0, &over_cap(&ctx.call)),
            },
            Some(ref to) => match slot {
                Some(slot) => ctx.spawn(forward(ctx.clone(), stream, to.clone(), slot)),
                None => ctx.call.refuse(&to.host, to.port, &over_cap(&ctx.call)),
            },
        }
    }
}

/// Copies one forwarded connection to its destination and back, once the call's
/// policy lets it through (a refusal is recorded like the proxy's).
async fn forward(ctx: Ctx, mut stream: TcpStream, to: Destination, _slot: Arc<OwnedSemaphorePermit>) {
    let target = match ctx.call.decide(&to.host, to.port).await {
        Ok(target) => target,
        Err(Denied::Refused(why)) => return ctx.call.refuse(&to.host, to.port, &why),
        Err(Denied::Failed(why)) => {
            return tracing::warn!(to = %to.host, port = to.port, why, "egress forward");
        }
    };
    match ctx.call.connect(&target).await {
        Ok(mut out) => {
            let _ = tokio::io::copy_bidirectional(&mut stream, &mut out).await;
        }
        Err(why) => tracing::warn!(why, "egress forward could not connect"),
    }
}
