//! Serving a call's listeners: the proxy and the port forwards, each connection
//! under the call's cap, all of them until `Running` is dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::call::{Call, Ctx, over_cap};
use crate::proxy;

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
    /// Must be called inside a tokio runtime.
    pub fn serve(
        self: &Arc<Self>,
        proxy: std::net::TcpListener,
        forwards: Vec<(std::net::TcpListener, SocketAddr)>,
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
async fn accept(ctx: Ctx, listener: TcpListener, to: Option<SocketAddr>) {
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
            Some(to) => match slot {
                Some(slot) => {
                    ctx.spawn(forward(stream, to, ctx.call.limits.connect_timeout, slot));
                }
                None => ctx
                    .call
                    .refuse(&to.ip().to_string(), to.port(), &over_cap(&ctx.call)),
            },
        }
    }
}

/// Copies one forwarded connection to its destination and back.
async fn forward(mut stream: TcpStream, to: SocketAddr, within: Duration, _slot: Arc<OwnedSemaphorePermit>) {
    match tokio::time::timeout(within, TcpStream::connect(to)).await {
        Ok(Ok(mut out)) => {
            let _ = out.set_nodelay(true);
            let _ = tokio::io::copy_bidirectional(&mut stream, &mut out).await;
        }
        Ok(Err(e)) => tracing::warn!(to = %to, error = %e, "egress forward could not connect"),
        Err(_) => tracing::warn!(to = %to, "egress forward: no answer in time"),
    }
}
