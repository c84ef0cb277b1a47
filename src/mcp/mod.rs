//! `hcpx mcp`: the MCP server (see docs/mcp.md). [`Server`] holds what every request of a
//! session, and every session of an HTTP server, shares; its [`ServerHandler`]
//! implementation answers the protocol and hands each request to the module that
//! owns it: [`tool`] (the `hcp` tool and its calls), [`confirm`] (confirmation
//! through the client), [`view`] and [`text`] (a call's result as a model sees it;
//! `next` as a tool call is `crate::next`'s) and [`resources`] (resources and list
//! changes). The transports, [`lines`] (stdio)
//! and [`http`] (Streamable HTTP), only carry messages; nothing else here writes
//! to stdout. [`logs`] keeps rmcp's "the client went away" out of the error log.

pub mod args;
mod changes;
mod confirm;
pub mod fit;
mod help;
pub mod http;
mod keys;
pub mod lines;
pub mod logs;
mod resources;
mod skills;
mod tasks;
mod text;
mod tool;
mod view;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetSkillRequestParams, GetSkillResult,
    GetTaskParams, GetTaskResult, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListSkillsResult, ListToolsResult, MetaObject, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use crate::context::{Context, env_vars};

pub use changes::Changes;
/// No serialized result is larger (see docs/mcp.md): some hosts and SDKs drop bigger ones.
pub use fit::MAX_MESSAGE as MAX_RESULT;
pub use keys::{KeyFileError, StateKeys};
pub use tool::tool;
pub use view::{VIEW_STDERR, VIEW_STDOUT};

/// The server's settings.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub read_only: bool,
    pub view_bytes: usize,
}

impl Options {
    pub fn from_context(ctx: &Context, read_only: bool) -> Self {
        let view_bytes = ctx
            .var(env_vars::HCP_MCP_VIEW_BYTES)
            .and_then(|value| value.parse::<usize>().ok())
            .filter(|bytes| *bytes >= 1024)
            .unwrap_or(VIEW_STDOUT);
        Self {
            read_only,
            view_bytes,
        }
    }
}

/// How long a stop (SIGTERM on either front end) waits for cancelled calls to
/// return: their children are killed at once; this only bounds a call that does not
/// notice.
const CALLS_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// What a server shares with the other replicas of it, through `$HCP_HOME` and the
/// state key file (see docs/mcp.md).
#[derive(Debug, Default)]
pub struct Shared {
    /// `--state-key-file`: confirmations are sealed with its keys, and each is
    /// spent once among the replicas that share `$HCP_HOME`.
    pub keys: Option<StateKeys>,
    /// `--stateless`: kept outputs are files in `$HCP_HOME`, found by every
    /// replica that shares it.
    pub stateless: bool,
}

/// The `hcp` server: shared by every request of a session, and (cloned) by every
/// session of an HTTP server. Clones share the [`Session`](crate::context::Session) (catalog cache, kept captures), the sealing key, the
/// list of listeners, the calls in flight and the tasks.
#[derive(Clone)]
pub struct Server {
    /// The context every call starts from: an agent's. Its cancellation token is the
    /// server's: when it fires (shutdown), every running call is cancelled.
    base: Context,
    options: Options,
    changes: Arc<Changes>,
    /// The tool calls in flight, so that a shutdown can wait for their children.
    calls: tokio_util::task::TaskTracker,
    /// Seals confirmation state, and remembers which states were used.
    seals: Arc<confirm::Seals>,
    /// Calls that went on as tasks (the tasks extension).
    tasks: Arc<tasks::Tasks>,
    /// This stdio connection, whose tasks are its own (see [`tasks::Owner`]).
    connection: u64,
    /// The server is one of several replicas (it shares state through
    /// `$HCP_HOME` or a state key file), so any request may reach another: it makes
    /// no tasks, which would live in this process only.
    shares_state: bool,
}

impl Server {
    /// A server whose calls run as an agent in `ctx`'s folder and home.
    pub fn new(ctx: Context, options: Options) -> Self {
        let mut base = ctx.as_agent();
        base.read_only = options.read_only;
        base.session = Arc::new(crate::context::Session::server());
        let changes = Arc::new(Changes::new(base.packs_dir(), base.cancel.clone()));
        Self {
            base,
            options,
            changes,
            calls: tokio_util::task::TaskTracker::new(),
            seals: Arc::new(confirm::Seals::new()),
            tasks: Arc::default(),
            connection: tasks::connection_id(),
            shares_state: false,
        }
    }

    /// This server as one of several replicas: what it keeps between requests is
    /// where the others find it (see [`Shared`]).
    pub fn shared(mut self, shared: Shared) -> Self {
        if let Some(keys) = shared.keys {
            let spent = crate::layout::mcp_spent(&self.base.home);
            self.seals = Arc::new(confirm::Seals::shared(Arc::new(keys), spent));
            self.shares_state = true;
        }
        if shared.stateless {
            let outputs = crate::layout::mcp_outputs(&self.base.home);
            self.base.session = Arc::new(crate::context::Session {
                captures: crate::captures::CaptureStore::on_disk(outputs),
                ..crate::context::Session::server()
            });
            self.shares_state = true;
        }
        self
    }

    /// Probes the sandbox off the server's threads, so that the first call does not
    /// wait for it and [`Self::readiness`] can tell when it is done.
    pub fn probe_sandbox(&self) {
        let session = self.base.session.clone();
        tokio::task::spawn_blocking(move || {
            session.sandbox.machine();
        });
    }

    /// Whether the server can serve (`/readyz`): its state keys read as they are
    /// now, and the sandbox probe is done. Why not, in words, when it cannot.
    pub(crate) fn readiness(&self) -> Result<(), String> {
        self.seals.check()?;
        if !self.base.session.sandbox.probed() {
            return Err("the sandbox probe is not done yet".to_owned());
        }
        Ok(())
    }

    /// The one tool's definition.
    pub fn tool(&self) -> Tool {
        tool(self.options.read_only)
    }

    /// The tool as `ctx`'s caller may use it: read-only on a read-only server, and
    /// for an OAuth caller whose token grants only the read scope.
    fn tool_for(&self, ctx: &RequestContext<RoleServer>) -> Tool {
        tool(self.options.read_only || authorized(ctx).is_some_and(|caller| !caller.full))
    }

    /// Cancels every running call (their children are killed) and ends every
    /// `subscriptions/listen` stream; resolves once the calls have returned.
    pub async fn shut_down(&self) {
        self.base.cancel.cancel();
        self.calls.close();
        self.calls.wait().await;
    }
}

/// The server's name and version, as `initialize` and `server/discover` give it.
fn implementation() -> Implementation {
    Implementation::new("hcpx", env!("CARGO_PKG_VERSION"))
}

/// The OAuth caller of an HTTP request, as the front end authorized it
/// (`hcpx mcp --oauth-issuer`); `None` on stdio and on a server without OAuth.
fn authorized(ctx: &RequestContext<RoleServer>) -> Option<&http::Authorized> {
    ctx.extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<http::Authorized>()
}

/// Whether a request is on protocol 2026-07-28 or later.
fn modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// On 2026-07-28, every result names the server that produced it in
/// `_meta["io.modelcontextprotocol/serverInfo"]` (the protocol says it should).
fn stamp(meta: &mut Option<MetaObject>, ctx: &RequestContext<RoleServer>) {
    if !modern(ctx) {
        return;
    }
    if let Ok(info) = serde_json::to_value(implementation()) {
        meta.get_or_insert_default()
            .0
            .insert("io.modelcontextprotocol/serverInfo".to_owned(), info);
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_skills()
            .enable_tasks()
            .build();
        if self.shares_state
            && let Some(extensions) = capabilities.extensions.as_mut()
        {
            // A replica makes no tasks (see `shares_state`).
            extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
        }
        ServerConfig::new(capabilities)
        .with_server_info(implementation())
        .with_instructions(
            "hcpx runs command-line tools (packs) for you through one tool, `hcp`, under the user's policy, \
             credentials and sandbox. Start with {\"argv\": [\"search\", \"WORDS\"]}, then [\"skill\", \"PACK\"], \
             then [\"exec\", \"PACK\", \"COMMAND\", \"--\", \"KEY=VALUE\"]. hcp://help lists every command.",
        )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Only sessions that began with `initialize` send this: they get the plain
        // list_changed notification.
        self.changes.join(context.peer);
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.resources_list_changed = requested.resources_list_changed.filter(|wanted| *wanted);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.changes.listen(context, &self.base.cancel).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut result = ListToolsResult::with_all_items(vec![self.tool_for(&ctx)]);
        stamp(&mut result.meta, &ctx);
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "hcp").then(|| self.tool())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != "hcp" {
            return Err(McpError::invalid_params("this server has one tool, `hcp`", None));
        }
        let arguments = request.arguments.clone().unwrap_or_default();
        let mut response = if tasks::declared(&ctx) && !self.shares_state {
            // A long call may go on as a task.
            let resume = request.input_responses.zip(request.request_state);
            self.call_or_task(arguments, resume, ctx.clone()).await
        } else {
            let resume = request
                .input_responses
                .as_ref()
                .zip(request.request_state.as_deref());
            // A call that starts after shutdown began is cancelled at once.
            self.calls
                .track_future(self.call(&arguments, resume, Some(&ctx), None))
                .await
        };
        match &mut response {
            CallToolResponse::Complete(result) => stamp(&mut result.meta, &ctx),
            CallToolResponse::InputRequired(result) => stamp(&mut result.meta, &ctx),
            _ => {}
        }
        Ok(response)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let mut result = GetTaskResult::new(self.tasks.get(&self.owner(&ctx), &request.task_id)?);
        stamp(&mut result.meta, &ctx);
        Ok(result)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update(&self.owner(&ctx), &request.task_id, &request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel(&self.owner(&ctx), &request.task_id)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let mut result = self.list_skills_now();
        stamp(&mut result.meta, &ctx);
        Ok(result)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let mut result = self.get_skill_now(&request.uri)?;
        stamp(&mut result.meta, &ctx);
        Ok(result)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resources = self
            .resources()
            .await
            .into_iter()
            .map(|(uri, name, mime)| Resource::new(uri, name).with_mime_type(mime))
            .chain(self.skill_resources())
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        stamp(&mut result.meta, &ctx);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut result = ListResourceTemplatesResult::with_all_items(resources::templates());
        stamp(&mut result.meta, &ctx);
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.as_str();
        if let Some(file) = self.skill_file(uri) {
            let mut result = ReadResourceResult::new(vec![file]);
            stamp(&mut result.meta, &ctx);
            return Ok(result.into());
        }
        let owner = authorized(&ctx).map(|caller| caller.caller.subject.as_str());
        match self.resource(uri, owner).await {
            Some((text, mime)) => {
                let mut result =
                    ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(mime)]);
                stamp(&mut result.meta, &ctx);
                Ok(result.into())
            }
            None if uri.starts_with("hcp://output/") && self.base.session.captures.is_on_disk() => {
                Err(McpError::resource_not_found(
                    "no such output here: replicas find each other's outputs only when they share HCP_HOME",
                    Some(json!({ "uri": uri })),
                ))
            }
            None => Err(McpError::resource_not_found(
                "no such resource",
                Some(json!({ "uri": uri })),
            )),
        }
    }
}

/// Serves `hcp` on a byte stream (stdin and stdout for `hcpx mcp`), one JSON-RPC
/// message a line (see [`lines`]), until the client goes away. Each stream is a
/// client of its own: the tasks it makes are its alone.
pub async fn serve<R, W>(mut server: Server, read: R, write: W) -> Result<(), String>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt as _;
    server.connection = tasks::connection_id();
    let shutdown = server.base.cancel.clone();
    let keep = server.clone();
    let running = tokio::select! {
        started = server.serve(lines::Lines::new(read, write)) => match started {
            Ok(running) => running,
            // The client went away before saying anything: end of input is a clean exit.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(error) => return Err(format!("the MCP session did not start: {error}")),
        },
        () = shutdown.cancelled() => return Ok(()),
    };
    let stop = running.cancellation_token();
    let ended = tokio::select! {
        ended = running.waiting() => ended,
        // Shut down (SIGTERM, SIGINT or SIGHUP at main.rs): the running calls are
        // cancelled, their children killed and the calls awaited; then the session
        // ends and the server exits like a client that closed its input.
        () = shutdown.cancelled() => {
            let _ = tokio::time::timeout(CALLS_GRACE, keep.shut_down()).await;
            stop.cancel();
            return Ok(());
        }
    };
    ended
        .map(|_| ())
        .map_err(|error| format!("the MCP session ended with an error: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `initialize` and `server/discover` say the server is and does: the
    /// tool and resources, and the skills and tasks extensions.
    #[test]
    fn capabilities() {
        let ctx = Context::new([("HOME".to_owned(), "/h".to_owned())], "/w".into(), false).unwrap();
        let options = Options::from_context(&ctx, false);
        let mut info = serde_json::to_value(Server::new(ctx, options).get_info()).unwrap();
        info["serverInfo"]["version"] = json!("[version]");
        insta::assert_json_snapshot!("capabilities", info);
    }

    /// A replica declares no tasks (a task would live in one process) and keeps
    /// its outputs in `$HCP_HOME`; a lone server does both as before.
    #[test]
    fn a_replica_makes_no_tasks_and_keeps_outputs_on_disk() {
        let ctx = Context::new([("HOME".to_owned(), "/h".to_owned())], "/w".into(), false).unwrap();
        let options = Options::from_context(&ctx, false);
        let alone = Server::new(ctx.clone(), options);
        let tasks = |server: &Server| {
            server
                .get_info()
                .capabilities
                .extensions
                .is_some_and(|extensions| extensions.contains_key(rmcp::model::TASKS_EXTENSION_ID))
        };
        assert!(tasks(&alone));
        assert!(!alone.base.session.captures.is_on_disk());
        let replica = Server::new(ctx, options).shared(Shared {
            keys: None,
            stateless: true,
        });
        assert!(!tasks(&replica));
        assert!(replica.base.session.captures.is_on_disk());
        assert!(replica.base.session.catalog.is_some(), "still a server's session");
    }

    /// Every call a server runs, in every HTTP session (a clone), points to one
    /// session that caches the catalog; the context it was made from keeps its own.
    #[test]
    fn calls_share_one_server_session() {
        let ctx = Context::new([("HOME".to_owned(), "/h".to_owned())], "/w".into(), false).unwrap();
        let terminal = ctx.session.clone();
        let server = Server::new(
            ctx,
            Options::from_context(
                &Context::new([("HOME".to_owned(), "/h".to_owned())], "/w".into(), false).unwrap(),
                false,
            ),
        );
        let other = server.clone();
        assert!(
            server.base.session.catalog.is_some(),
            "the server caches the catalog"
        );
        assert!(Arc::ptr_eq(&server.base.session, &other.base.session));
        assert!(!Arc::ptr_eq(&server.base.session, &terminal));
        assert!(
            terminal.catalog.is_none(),
            "a terminal call reads the catalog anew"
        );
    }
}
