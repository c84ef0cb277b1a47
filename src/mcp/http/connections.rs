//! The HTTP server's accept loop: each connection takes a place under the cap (or
//! is told 503), passes the [`Gate`] (or is told 403) before a byte of it is read,
//! and is then served HTTP/1.1 by hyper with a bounded request head that must
//! arrive in time. On stop, listening ends and every connection finishes the
//! answer it is sending, then closes.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::limits;
use super::listener::{Accepted, Listener};
use super::peer::Gate;

/// How long the loop waits after accept(2) fails (out of descriptors, most
/// likely) before it tries again, instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How many connections past the cap are being told 503 at once (each for at most
/// a second); the next ones wait in the kernel's listen queue until one is done, so
/// that refusing cannot take the descriptors the cap keeps.
const MAX_REFUSING: usize = 64;

/// The connections being served.
pub(super) struct Connections {
    places: Arc<Semaphore>,
    refusing: Arc<Semaphore>,
    cap: usize,
    /// Fires when the server stops: each connection finishes its answer and closes.
    finish: CancellationToken,
    tracker: TaskTracker,
}

impl Connections {
    /// At most `cap` connections at once.
    pub(super) fn new(cap: usize) -> Self {
        Self {
            places: Arc::new(Semaphore::new(cap)),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
            cap,
            finish: CancellationToken::new(),
            tracker: TaskTracker::new(),
        }
    }

    /// Accepts and serves connections with `app` until `stop` fires; then asks
    /// every connection to finish.
    pub(super) async fn serve(
        &self,
        listener: &Listener,
        app: axum::Router,
        gate: Gate,
        stop: &CancellationToken,
    ) {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = stop.cancelled() => break,
            };
            let accepted = match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!("cannot accept a connection: {error}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            let Ok(place) = self.places.clone().try_acquire_owned() else {
                let refusing = tokio::select! {
                    refusing = self.refusing.clone().acquire_owned() => refusing,
                    () = stop.cancelled() => break,
                };
                if let Ok(refusing) = refusing {
                    let cap = self.cap;
                    self.tracker.spawn(async move {
                        busy(accepted, cap).await;
                        drop(refusing);
                    });
                }
                continue;
            };
            let (app, finish, gate) = (app.clone(), self.finish.clone(), gate.clone());
            self.tracker.spawn(async move {
                match accepted {
                    Accepted::Tcp { stream, local, peer } => match gate.admit_tcp(local, peer).await {
                        Ok(()) => serve_http(stream, app, finish).await,
                        Err(refusal) => {
                            tracing::info!("refused a connection from {peer}: {refusal}");
                            limits::refuse(stream, "403 Forbidden", "", &refusal.message()).await;
                        }
                    },
                    #[cfg(unix)]
                    Accepted::Unix(stream) => match gate.admit_unix(&stream) {
                        Ok(()) => serve_http(stream, app, finish).await,
                        Err(refusal) => {
                            tracing::info!("refused a unix socket connection: {refusal}");
                            limits::refuse(stream, "403 Forbidden", "", &refusal.message()).await;
                        }
                    },
                }
                drop(place);
            });
        }
        self.finish.cancel();
        self.tracker.close();
    }

    /// Resolves once every connection has closed.
    pub(super) async fn closed(&self) {
        self.tracker.wait().await;
    }
}

/// Tells a connection past the cap to come back later (in a few seconds: the
/// header timeout frees places that fast).
async fn busy(accepted: Accepted, cap: usize) {
    let message = limits::busy_message(cap);
    match accepted {
        Accepted::Tcp { stream, .. } => {
            limits::refuse(stream, "503 Service Unavailable", "Retry-After: 5\r\n", &message).await;
        }
        #[cfg(unix)]
        Accepted::Unix(stream) => {
            limits::refuse(stream, "503 Service Unavailable", "Retry-After: 5\r\n", &message).await;
        }
    }
}

/// Serves HTTP/1.1 on one connection until it closes, or, once `finish` fires,
/// until the answer in progress is sent.
async fn serve_http<IO>(io: IO, app: axum::Router, finish: CancellationToken)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits::HEADER_READ_TIMEOUT)
        .max_header_size(limits::MAX_HEAD)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
    tokio::pin!(connection);
    let served = tokio::select! {
        served = connection.as_mut() => served,
        () = finish.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = served {
        // A head that did not arrive in time, a client that went away: theirs.
        tracing::debug!("an HTTP connection ended: {error}");
    }
}
