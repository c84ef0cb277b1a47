//! The HTTP server's sessions: rmcp's [`LocalSessionManager`] with a bound on how
//! many live. Every `initialize` makes one (about 60 KiB, held until it has been
//! idle for `--session-idle-secs`), so a client could otherwise grow the server
//! without end. Past [`MAX_SESSIONS`](super::limits::MAX_SESSIONS) the session that
//! has been idle the longest ends, and the log says which; a session whose client
//! holds a stream open (an answer being sent, or its event stream) is in use, not idle.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};

/// rmcp's session manager, bounded.
pub(super) struct BoundedSessions {
    inner: LocalSessionManager,
    live: Mutex<HashMap<SessionId, Use>>,
    limit: usize,
}

/// How a session is used: when it last got a request, and how many of its
/// streams are open right now.
struct Use {
    last: Instant,
    open: Arc<AtomicUsize>,
}

impl BoundedSessions {
    /// At most `limit` sessions, each ending after `idle` without a request.
    pub(super) fn new(limit: usize, idle: Duration, answers_kept: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        inner.session_config.completed_cache_ttl = answers_kept;
        Self {
            inner,
            live: Mutex::default(),
            limit,
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Use>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes a request in session `id`.
    fn touch(&self, id: &SessionId) {
        if let Some(entry) = self.live().get_mut(id) {
            entry.last = Instant::now();
        }
    }

    /// Counts `stream` as open in session `id` for as long as it lives.
    fn tracked<S>(&self, id: &SessionId, stream: S) -> Tracked
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        let open = self.live().get(id).map(|entry| entry.open.clone());
        if let Some(open) = &open {
            open.fetch_add(1, Ordering::Relaxed);
        }
        Tracked {
            inner: Box::pin(stream),
            open,
        }
    }

    /// The session to end to make room: the one idle the longest, or if every one
    /// has a stream open (more sessions than connections: not with the bounds in
    /// [`super::limits`]), the one that had a request the longest ago.
    fn victim(&self) -> Option<(SessionId, Duration)> {
        let live = self.live();
        if live.len() < self.limit {
            return None;
        }
        let oldest = |idle_only: bool| {
            live.iter()
                .filter(|(_, entry)| !idle_only || entry.open.load(Ordering::Relaxed) == 0)
                .min_by_key(|(_, entry)| entry.last)
                .map(|(id, entry)| (id.clone(), entry.last.elapsed()))
        };
        oldest(true).or_else(|| oldest(false))
    }

    /// Ends every session (the server is stopping): their event streams end, so
    /// their connections can close.
    pub(super) async fn close_all(&self) {
        let ids: Vec<SessionId> = self.live().drain().map(|(id, _)| id).collect();
        for id in ids {
            let _ = self.inner.close_session(&id).await;
        }
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        while let Some((id, idle)) = self.victim() {
            tracing::info!(
                "ended HTTP session {id}, idle for {} s, to make room for a new one (at most {} live)",
                idle.as_secs(),
                self.limit
            );
            self.live().remove(&id);
            self.inner.close_session(&id).await?;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.live().insert(
            id.clone(),
            Use {
                last: Instant::now(),
                open: Arc::default(),
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.touch(id);
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.live().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.tracked(id, stream))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.tracked(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.tracked(id, stream))
    }
}

/// A session's stream, counted as open until it is dropped.
struct Tracked {
    inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    open: Option<Arc<AtomicUsize>>,
}

impl Stream for Tracked {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(open) = &self.open {
            open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(limit: usize) -> BoundedSessions {
        BoundedSessions::new(limit, Duration::from_secs(60), Duration::from_secs(1))
    }

    #[tokio::test]
    async fn past_the_bound_the_oldest_idle_session_ends() {
        let sessions = sessions(3);
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(sessions.create_session().await.unwrap().0);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // The first is in use (a stream open), the second was used last.
        let stream = sessions.tracked(&ids[0], futures_empty());
        sessions.touch(&ids[1]);
        let (fourth, _transport) = sessions.create_session().await.unwrap();
        assert!(
            sessions.has_session(&ids[0]).await.unwrap(),
            "the session in use ended"
        );
        assert!(sessions.has_session(&ids[1]).await.unwrap());
        assert!(
            !sessions.has_session(&ids[2]).await.unwrap(),
            "the idle one lives on"
        );
        assert!(sessions.has_session(&fourth).await.unwrap());
        // Once its stream is gone, the first is idle (and the oldest).
        drop(stream);
        let _fifth = sessions.create_session().await.unwrap();
        assert!(!sessions.has_session(&ids[0]).await.unwrap());
        assert_eq!(sessions.live().len(), 3);
        sessions.close_all().await;
        assert!(sessions.live().is_empty());
    }

    /// A stream that ends at once.
    fn futures_empty() -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        struct Empty;
        impl Stream for Empty {
            type Item = ServerSseMessage;
            fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
                Poll::Ready(None)
            }
        }
        Empty
    }
}
