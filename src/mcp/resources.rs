//! The MCP resources (see docs/mcp.md): `hcp://catalog`, `hcp://help`, one
//! `hcp://skill/{pack_id}` a pack and `hcp://output/{id}` for kept outputs, read
//! through the same command tree as the tool; and [`Changes`], which tells clients
//! that the list of resources changed when the tool installed or uninstalled a pack.

use rmcp::model::ResourceTemplate;
use rmcp::service::SubscriptionContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

use super::{Server, fit, help};

impl Server {
    /// A resource's text and MIME type, or `None` when there is no such resource.
    /// `owner` is the OAuth caller's subject: a kept output is only its own.
    pub async fn resource(&self, uri: &str, owner: Option<&str>) -> Option<(String, &'static str)> {
        let run = |argv: &[&str]| {
            let argv: Vec<String> = argv.iter().map(|word| (*word).to_owned()).collect();
            let ctx = self.base.clone();
            async move { crate::execute(argv, &ctx).await }
        };
        match uri {
            "hcp://catalog" => {
                let executed = run(&["--json", "search", "--limit", "10000"]).await;
                let data = executed.envelope.data.unwrap_or(Value::Null);
                let packs = data.get("results").cloned().unwrap_or_else(|| json!([]));
                let broken = data.get("broken").cloned().unwrap_or_else(|| json!([]));
                let mut text = serde_json::to_string_pretty(&json!({ "packs": packs, "broken": broken }))
                    .unwrap_or_default();
                fit::resource_text(&mut text, "search with the tool for the rest");
                Some((text, "application/json"))
            }
            "hcp://help" => Some((help::markdown(self.options.read_only), "text/markdown")),
            _ => {
                if let Some(id) = uri.strip_prefix("hcp://skill/") {
                    let mut executed = run(&["skill", id]).await;
                    fit::resource_text(
                        &mut executed.text,
                        "the pack's skill is longer than a message may be",
                    );
                    return executed.envelope.ok.then_some((executed.text, "text/markdown"));
                }
                let id = uri.strip_prefix("hcp://output/")?;
                let stored = self.base.session.captures.get(id, owner)?;
                let mut text = stored.stdout;
                if !stored.stderr.is_empty() {
                    text.push_str("\n[stderr]\n");
                    text.push_str(&stored.stderr);
                }
                fit::resource_text(
                    &mut text,
                    &format!("read on with {{\"argv\": [\"output\", \"{id}\", \"--offset\", \"N\"]}}"),
                );
                Some((text, "text/plain"))
            }
        }
    }

    /// The resources as (URI, name, MIME type): catalog, help and one skill per pack
    /// that runs (built in or installed).
    pub async fn resources(&self) -> Vec<(String, String, &'static str)> {
        let mut list = vec![
            (
                "hcp://catalog".to_owned(),
                "catalog".to_owned(),
                "application/json",
            ),
            ("hcp://help".to_owned(), "help".to_owned(), "text/markdown"),
        ];
        let executed = crate::execute(
            vec!["--json".into(), "search".into(), "--limit".into(), "10000".into()],
            &self.base,
        )
        .await;
        if let Some(results) = executed
            .envelope
            .data
            .as_ref()
            .and_then(|data| data["results"].as_array())
        {
            // A catalog pack that is not installed is in `hcp://catalog`, with
            // `"installed": false`; its skill is read once it is installed.
            for pack in results.iter().filter(|pack| pack["installed"] != json!(false)) {
                if let Some(id) = pack["id"].as_str() {
                    list.push((
                        format!("hcp://skill/{id}"),
                        format!("skill: {id}"),
                        "text/markdown",
                    ));
                }
            }
        }
        list
    }
}

/// The resource templates: a pack's skill and a kept output.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("hcp://skill/{pack_id}", "skill").with_mime_type("text/markdown"),
        ResourceTemplate::new("hcp://output/{id}", "output").with_mime_type("text/plain"),
    ]
}

/// Who hears that the list of resources changed (an install or uninstall through
/// the tool): every open `subscriptions/listen` stream (protocol 2026-07-28, which
/// allows the notification nowhere else), and every session that began with
/// `initialize` (earlier protocols, which get the plain notification). Shared by
/// all the sessions of one server, so an install in one is heard in the others.
pub struct Changes {
    listeners: broadcast::Sender<()>,
    sessions: std::sync::Mutex<Vec<Peer<RoleServer>>>,
}

impl Default for Changes {
    fn default() -> Self {
        Self {
            listeners: broadcast::channel(16).0,
            sessions: std::sync::Mutex::default(),
        }
    }
}

impl Changes {
    /// A session that began with `initialize` hears of changes from now on.
    pub(crate) fn join(&self, peer: Peer<RoleServer>) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|peer| !peer.is_transport_closed());
            sessions.push(peer);
        }
    }

    /// Tells every listener and every session; a session that is gone is forgotten.
    pub(crate) async fn announce(&self) {
        // No listener is not an error: nobody asked.
        let _ = self.listeners.send(());
        let sessions = self
            .sessions
            .lock()
            .map(|mut sessions| std::mem::take(&mut *sessions))
            .unwrap_or_default();
        let mut alive = Vec::with_capacity(sessions.len());
        for peer in sessions {
            if !peer.is_transport_closed() && peer.notify_resource_list_changed().await.is_ok() {
                alive.push(peer);
            }
        }
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.extend(alive);
        }
    }

    /// Serves one `subscriptions/listen` stream until the client ends it, it goes
    /// away, or `shutdown` fires (the stream then ends with its final result).
    pub(crate) async fn listen(
        &self,
        context: SubscriptionContext,
        shutdown: &CancellationToken,
    ) -> Result<(), McpError> {
        let mut changes = self.listeners.subscribe();
        let wanted = context.accepted().resources_list_changed == Some(true);
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                // The server is going away: the stream ends with its final result.
                () = shutdown.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(RecvError::Lagged(_)) => {
                        if wanted && context.sink().notify_resource_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}
