//! `hcpx mcp`: the MCP server (SPEC §8). One tool, `hcp`, whose input is the same
//! argv a terminal takes, dispatched in this process through [`crate::execute`] as
//! an agent with `--json` implied; resources for the catalog, help, skills and kept
//! outputs. This module only translates between MCP and the command tree: it holds
//! no command logic and never writes to stdout itself.

pub mod args;
pub mod fit;
mod help;
mod hints;
pub mod http;
pub mod lines;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, Implementation, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, JsonObject, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
    ToolAnnotations,
};
use rmcp::service::{ElicitationMode, NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::context::{Answer, Context, Human, env_vars};
use crate::error::Failure;
use crate::output::{Envelope, StreamTruncation, Truncation};
use crate::outputs::{OutputStore, view};

/// Default stdout shown in a result (`HCP_MCP_VIEW_BYTES` changes it).
pub const VIEW_STDOUT: usize = 32 * 1024;
/// Stderr shown in a result.
pub const VIEW_STDERR: usize = 8 * 1024;
/// No serialized result is larger (SPEC §8): some hosts and SDKs drop bigger ones.
pub use fit::MAX_MESSAGE as MAX_RESULT;
/// How long a person has to answer a confirmation through the host.
const ELICIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a sealed confirmation state (2026-07-28) stays valid.
const STATE_TTL: Duration = Duration::from_secs(600);

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

/// Who hears that the list of resources changed (an install or uninstall through
/// the tool): every open `subscriptions/listen` stream (protocol 2026-07-28, which
/// allows the notification nowhere else), and every session that began with
/// `initialize` (earlier protocols, which get the plain notification). Shared by
/// all the sessions of one server, so an install in one is heard in the others.
pub struct Changes {
    listeners: tokio::sync::broadcast::Sender<()>,
    sessions: std::sync::Mutex<Vec<Peer<RoleServer>>>,
}

impl Default for Changes {
    fn default() -> Self {
        Self {
            listeners: tokio::sync::broadcast::channel(16).0,
            sessions: std::sync::Mutex::default(),
        }
    }
}

impl Changes {
    /// A session that began with `initialize` hears of changes from now on.
    fn join(&self, peer: Peer<RoleServer>) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|peer| !peer.is_transport_closed());
            sessions.push(peer);
        }
    }

    /// Tells every listener and every session; a session that is gone is forgotten.
    async fn announce(&self) {
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
}

/// The `hcp` server: shared by every request of a session, and (cloned) by every
/// session of an HTTP server. Clones share the output store, the sealing key, the
/// list of listeners and the calls in flight.
#[derive(Clone)]
pub struct Server {
    /// The context every call starts from: an agent's. Its cancellation token is the
    /// server's: when it fires (shutdown), every running call is cancelled.
    base: Context,
    options: Options,
    outputs: Arc<OutputStore>,
    changes: Arc<Changes>,
    /// The tool calls in flight, so that a shutdown can wait for their children.
    calls: tokio_util::task::TaskTracker,
    /// Seals confirmation state with a key only this process holds.
    seal: Option<Arc<rmcp::model::RequestStateCodec>>,
    /// Nonces of sealed states already used, with when they expire.
    used: Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
    nonces: Arc<std::sync::atomic::AtomicU64>,
}

/// A fresh 32-byte key, or `None` when the system gives no randomness (then the
/// server falls back to `needs_confirmation` and `confirm: true`).
fn fresh_key() -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut key = vec![0_u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut key))
        .ok()?;
    Some(key)
}

/// What a sealed confirmation state carries.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    nonce: String,
}

/// Defers the question into an `InputRequiredResult` (2026-07-28).
#[derive(Default)]
struct Deferred {
    asked: std::sync::Mutex<Option<String>>,
}

impl Human for Deferred {
    fn confirm<'a>(&'a self, question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        if let Ok(mut asked) = self.asked.lock() {
            *asked = Some(question.to_owned());
        }
        Box::pin(async { Answer::Later })
    }
}

/// The host's user's answer, already given and verified.
struct Answered(Answer);

impl Human for Answered {
    fn confirm<'a>(&'a self, _question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        let answer = self.0;
        Box::pin(async move { answer })
    }
}

impl Server {
    /// A server whose calls run as an agent in `ctx`'s folder and home.
    pub fn new(ctx: Context, options: Options) -> Self {
        let mut base = ctx.as_agent();
        base.read_only = options.read_only;
        let outputs = Arc::new(OutputStore::default());
        base.outputs = Some(outputs.clone());
        base.catalog_cache = Some(Arc::new(crate::catalog::CatalogCache::default()));
        let seal = fresh_key()
            .and_then(|key| rmcp::model::RequestStateCodec::try_new(key).ok())
            .map(Arc::new);
        Self {
            base,
            options,
            outputs,
            changes: Arc::default(),
            calls: tokio_util::task::TaskTracker::new(),
            seal,
            used: Arc::default(),
            nonces: Arc::default(),
        }
    }

    /// The one tool's definition.
    pub fn tool(&self) -> Tool {
        tool(self.options.read_only)
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

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The `hcp` tool: input, output schema, description and annotations.
pub fn tool(read_only: bool) -> Tool {
    let input = object(json!({
        "type": "object",
        "properties": {
            "argv": {
                "type": "array",
                "items": { "type": "string" },
                "maxItems": args::MAX_WORDS,
                "description": "The words after `hcpx`, one per item; values with spaces stay one item. Preferred."
            },
            "args": {
                "type": "string",
                "description": "The same as one string, split like a POSIX shell would. Shell metacharacters \
                                (| & ; < > ( ) $ ` newline, # starting a word) are refused: nothing runs a shell."
            },
            "confirm": {
                "type": "boolean",
                "description": "Confirm a command whose policy is `confirm`, after reading its plan. \
                                Never enough for `confirm-human`, which only a person can give."
            }
        }
    }));
    let output = object(json!({
        "type": "object",
        "properties": {
            "ok": { "type": "boolean" },
            "argv": { "type": "array", "items": { "type": "string" } },
            "child": { "type": ["array", "null"], "items": { "type": "string" } },
            "spawned": { "type": "boolean" },
            "exitCode": { "type": "integer" },
            "stdout": { "type": "string" },
            "stderr": { "type": "string" },
            "data": {},
            "outputTruncated": { "type": "boolean" },
            "truncation": { "type": "object" },
            "outputId": { "type": "string" },
            "durationMs": { "type": "integer" },
            "error": {
                "type": ["object", "null"],
                "properties": {
                    "code": { "type": "integer" },
                    "reason": { "type": "string" },
                    "message": { "type": "string" }
                }
            },
            "next": { "type": ["string", "null"] },
            "warnings": { "type": "array", "items": { "type": "string" } }
        },
        "required": ["ok", "argv", "spawned", "exitCode", "durationMs"]
    }));
    let mode = if read_only {
        " This server is read-only: only commands that read are allowed."
    } else {
        ""
    };
    let description = format!(
        "Run command-line tools safely through hcpx. Tools come as packs; every call goes through the user's \
         policy, their stored credentials (never visible to you) and a sandbox. Pass the words of an hcpx \
         command line as `argv`.{mode}\n\
         Most useful calls:\n\
         1. {{\"argv\": [\"search\", \"WORDS\"]}}: find a pack for a task.\n\
         2. {{\"argv\": [\"skill\", \"PACK\"]}}: how to use it: commands, parameters, examples.\n\
         3. {{\"argv\": [\"exec\", \"PACK\", \"COMMAND\", \"--\", \"KEY=VALUE\", ...]}}: run one of its commands.\n\
         A refusal says why in `error.reason` and what to do in `next`. When the result says needs_confirmation, \
         show the plan to the user and call again with `confirm: true` only if they agree. Read hcp://help for \
         every command."
    );
    Tool::new("hcp", description, input)
        .with_title("hcpx")
        .with_raw_output_schema(output)
        .with_annotations(
            ToolAnnotations::new()
                .read_only(read_only)
                .destructive(!read_only)
                .idempotent(false)
                .open_world(false),
        )
}

/// Asks the host's user through `elicitation/create` (protocols up to 2025-11-25).
struct Elicitation {
    peer: Peer<RoleServer>,
}

impl Human for Elicitation {
    fn confirm<'a>(&'a self, question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            let Ok(schema) = ElicitationSchema::builder().required_bool("confirm").build() else {
                return Answer::No;
            };
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: format!("{question}\nhcpx asks you, the person using this host, to confirm."),
                requested_schema: schema,
            };
            match self
                .peer
                .create_elicitation_with_timeout(params, Some(ELICIT_TIMEOUT))
                .await
            {
                Ok(result) => match result.action {
                    ElicitationAction::Accept
                        if result
                            .content
                            .as_ref()
                            .and_then(|content| content["confirm"].as_bool())
                            == Some(true) =>
                    {
                        Answer::Yes
                    }
                    ElicitationAction::Cancel => Answer::Cancelled,
                    _ => Answer::No,
                },
                Err(_) => Answer::No,
            }
        })
    }
}

/// A yes: accepted, with `confirm` true.
fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .and_then(|content| content["confirm"].as_bool())
            == Some(true)
}

/// Applies the result view limits (SPEC §8): a head and a tail of each stream, the
/// whole capture kept in the store and its id in the envelope.
fn apply_view(envelope: &mut Envelope, options: &Options, store: &OutputStore) {
    if envelope.stdout.len() <= options.view_bytes && envelope.stderr.len() <= VIEW_STDERR {
        return;
    }
    let id = store.new_id();
    let earlier = envelope.truncation.take().unwrap_or(Truncation {
        stdout: None,
        stderr: None,
    });
    // A stream cut here reports what the result shows against all the child wrote.
    let cut = |text: &mut String, limit: usize, before: Option<StreamTruncation>| match view(text, limit, &id)
    {
        Some((shown, bytes)) => {
            let total = before.map_or(text.len() as u64, |t| t.total);
            (
                std::mem::replace(text, shown),
                Some(StreamTruncation {
                    shown: bytes as u64,
                    total,
                }),
            )
        }
        None => (text.clone(), before),
    };
    let (stdout, stdout_cut) = cut(&mut envelope.stdout, options.view_bytes, earlier.stdout);
    let (stderr, stderr_cut) = cut(&mut envelope.stderr, VIEW_STDERR, earlier.stderr);
    store.insert(&id, stdout, stderr);
    envelope.output_truncated = true;
    envelope.truncation = Some(Truncation {
        stdout: stdout_cut,
        stderr: stderr_cut,
    });
    envelope.output_id = Some(id);
}

/// What a model needs from one call, as text: the answer, or the refusal and its
/// next step.
fn text_for(envelope: &Envelope, human: &str) -> String {
    let mut text = String::new();
    if let Some(error) = &envelope.error {
        text.push_str(&format!("error ({}): {}\n", error.reason, error.message));
        if let Some(next) = &envelope.next {
            text.push_str(&format!("next: {next}\n"));
        }
        if error.reason == "needs_confirmation"
            && let Some(plan) = &envelope.data
        {
            if let Some(summary) = plan["summary"].as_str() {
                text.push_str(summary);
                text.push('\n');
            }
            text.push_str(&format!("plan: {plan}\n"));
        }
    }
    if envelope.spawned {
        text.push_str(&envelope.stdout);
        if !envelope.stderr.is_empty() {
            text.push_str(&format!("\n[stderr]\n{}", envelope.stderr));
        }
        if envelope.error.is_none() && envelope.exit_code == 0 && envelope.stdout.is_empty() {
            text.push_str("(no output)\n");
        }
    } else if envelope.error.is_none() {
        text.push_str(human);
    }
    for warning in &envelope.warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    if let Some(id) = &envelope.output_id {
        text.push_str(&format!(
            "\n[output truncated: page it with {{\"argv\": [\"output\", \"{id}\", \"--offset\", \"N\"]}}]\n"
        ));
    }
    text
}

impl Server {
    /// What a sealed state is bound to: the argv, the working directory and the
    /// policy in force (the contents of both policy files).
    fn binding(&self, argv: &[String]) -> Vec<u8> {
        let read = |path: Option<std::path::PathBuf>| {
            path.and_then(|path| std::fs::read(path).ok()).unwrap_or_default()
        };
        let mut bound = argv.join("\0").into_bytes();
        bound.push(0);
        bound.extend(self.base.cwd.display().to_string().into_bytes());
        bound.push(0);
        bound.extend(read(Some(self.base.user_policy_path())));
        bound.push(0);
        bound.extend(read(self.base.project_policy_path()));
        bound
    }

    fn seal_state(&self, argv: &[String]) -> Option<String> {
        let codec = self.seal.as_ref()?;
        let nonce = self
            .nonces
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_string();
        let bound = self.binding(argv);
        let options = rmcp::model::SealOptions::new()
            .associated_data(&bound)
            .ttl(STATE_TTL);
        codec.seal_json_with(&Sealed { nonce }, &options).ok()
    }

    /// Opens a sealed state for this very argv, once. Any failure is one answer.
    fn open_state(&self, state: &str, argv: &[String]) -> bool {
        let Some(codec) = self.seal.as_ref() else {
            return false;
        };
        let Ok(sealed) = codec.open_json_with::<Sealed>(state, &self.binding(argv)) else {
            return false;
        };
        let Ok(mut used) = self.used.lock() else {
            return false;
        };
        used.retain(|_, expires| *expires > std::time::Instant::now());
        used.insert(sealed.nonce, std::time::Instant::now() + STATE_TTL)
            .is_none()
    }

    /// Runs one tool call in process. `resume` is the client's answer to an earlier
    /// `InputRequiredResult`: its input responses and the sealed state.
    pub async fn call(
        &self,
        arguments: &JsonObject,
        resume: Option<(&InputResponses, &str)>,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> CallToolResponse {
        let input = match args::parse(arguments) {
            Ok(input) => input,
            Err(failure) => return self.refusal(failure).into(),
        };
        let mut call = self.base.clone();
        call.confirmed = input.confirm;
        let mut deferred = None;
        let mut forwarder = None;
        // The call stops when its request is cancelled or the server shuts down.
        let cancel = ctx.map_or_else(
            || self.base.cancel.child_token(),
            |request| request.ct.child_token(),
        );
        let shutdown = self.base.cancel.clone();
        let linked = cancel.clone();
        let _link = AbortOnDrop(tokio::spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => linked.cancel(),
                () = linked.cancelled() => {}
            }
        }));
        call.cancel = cancel;
        if let Some(request) = ctx {
            if modern(request) {
                let elicits = request
                    .client_capabilities()
                    .is_some_and(|caps| caps.elicitation.is_some());
                if elicits && self.seal.is_some() {
                    match resume {
                        Some((responses, state)) => {
                            if !self.open_state(state, &input.argv) {
                                return self
                                    .refusal(Failure::new(
                                        crate::error::Reason::NeedsConfirmation,
                                        "that confirmation is expired, altered, for another command or already used; \
                                         nothing ran",
                                    ).next("call again without inputResponses to be asked anew"))
                                    .into();
                            }
                            let answer = responses
                                .get("confirm")
                                .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok());
                            let answer = match answer {
                                Some(result) if accepted(&result) => Answer::Yes,
                                Some(result) if result.action == ElicitationAction::Cancel => {
                                    Answer::Cancelled
                                }
                                _ => Answer::No,
                            };
                            call.human = Some(Arc::new(Answered(answer)));
                        }
                        None => {
                            let asker = Arc::new(Deferred::default());
                            call.human = Some(asker.clone());
                            deferred = Some(asker);
                        }
                    }
                }
            } else if request
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form)
            {
                call.human = Some(Arc::new(Elicitation {
                    peer: request.peer.clone(),
                }));
            }
            if let Some(token) = request.meta.get_progress_token() {
                let peer = request.peer.clone();
                let (sender, mut receiver) =
                    tokio::sync::mpsc::unbounded_channel::<crate::runtime::Progress>();
                forwarder = Some(tokio::spawn(async move {
                    while let Some(progress) = receiver.recv().await {
                        let seconds = progress.elapsed.as_secs_f64();
                        let param = ProgressNotificationParam::new(token.clone(), seconds).with_message(
                            format!("running, {} bytes of output so far", progress.output_bytes),
                        );
                        let _ = peer.notify_progress(param).await;
                    }
                }));
                call.progress = Some(Arc::new(move |progress| {
                    let _ = sender.send(progress);
                }));
            }
        }
        let mut argv = input.argv.clone();
        if !argv
            .iter()
            .take_while(|word| *word != "--")
            .any(|word| word == "--json")
        {
            argv.insert(0, "--json".to_owned());
        }
        let executed = crate::execute(argv, &call).await;
        // Every progress notification goes out before the result: close the channel
        // (the callback owns its sender) and let the forwarder drain it.
        drop(call);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        let question = deferred.and_then(|asker| asker.asked.lock().ok().and_then(|mut asked| asked.take()));
        if let Some(question) = question
            && let (Some(state), Ok(schema)) = (
                self.seal_state(&input.argv),
                ElicitationSchema::builder().required_bool("confirm").build(),
            )
        {
            let plan = executed
                .envelope
                .data
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: format!(
                    "{question}\nPlan: {plan}\nhcpx asks you, the person using this host, to confirm."
                ),
                requested_schema: schema,
            };
            let mut requests = InputRequests::new();
            requests.insert(
                "confirm".to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
            return InputRequiredResult::new(Some(requests), Some(state)).into();
        }
        let mut envelope = executed.envelope;
        // Suggestions are written for a terminal; this caller acts through the tool.
        envelope.next = envelope.next.take().map(|next| hints::as_tool_call(&next));
        // An install or uninstall changed the skills there are: tell the client.
        let changes_packs = input
            .argv
            .iter()
            .find(|word| !word.starts_with('-'))
            .is_some_and(|word| word == "install" || word == "uninstall");
        let changed = envelope
            .data
            .as_ref()
            .is_some_and(|data| data["changed"] == json!(true) || data["removed"] == json!(true));
        if changes_packs && envelope.ok && changed {
            self.changes.announce().await;
        }
        apply_view(&mut envelope, &self.options, &self.outputs);
        let mut text = text_for(&envelope, &executed.text);
        if fit::too_large(&envelope, &text) && envelope.output_id.is_none() && envelope.spawned {
            // What is about to be cut stays pageable.
            let id = self.outputs.put(envelope.stdout.clone(), envelope.stderr.clone());
            envelope.output_id = Some(id);
            text = text_for(&envelope, &executed.text);
        }
        fit::tool_result(&mut envelope, &mut text);
        result(envelope, text).into()
    }

    fn refusal(&self, failure: Failure) -> CallToolResult {
        let mut envelope = Envelope::failed(Vec::new(), failure);
        let mut text = text_for(&envelope, "");
        fit::tool_result(&mut envelope, &mut text);
        result(envelope, text)
    }

    /// A resource's text, or why there is none.
    pub async fn resource(&self, uri: &str) -> Option<(String, &'static str)> {
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
                let stored = self.outputs.get(id)?;
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

    /// The resources: catalog, help and one skill per pack.
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
            for pack in results {
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

/// Aborts a helper task when the call that spawned it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn result(envelope: Envelope, text: String) -> CallToolResult {
    let ok = envelope.ok;
    let mut result = if ok {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(serde_json::to_value(&envelope).unwrap_or(Value::Null));
    result.is_error = Some(!ok);
    result
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_resources().enable_resources_list_changed().build(),
        )
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
        let mut changes = self.changes.listeners.subscribe();
        let shutdown = self.base.cancel.clone();
        let wanted = context.accepted().resources_list_changed == Some(true);
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                // The server is going away: the stream ends with its final result.
                () = shutdown.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if wanted && context.sink().notify_resource_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut result = ListToolsResult::with_all_items(vec![self.tool()]);
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
        let resume = request
            .input_responses
            .as_ref()
            .zip(request.request_state.as_deref());
        // A call that starts after shutdown began is cancelled at once.
        let mut response = self
            .calls
            .track_future(self.call(&arguments, resume, Some(&ctx)))
            .await;
        match &mut response {
            CallToolResponse::Complete(result) => stamp(&mut result.meta, &ctx),
            CallToolResponse::InputRequired(result) => stamp(&mut result.meta, &ctx),
            _ => {}
        }
        Ok(response)
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
        let mut result = ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("hcp://skill/{pack_id}", "skill").with_mime_type("text/markdown"),
            ResourceTemplate::new("hcp://output/{id}", "output").with_mime_type("text/plain"),
        ]);
        stamp(&mut result.meta, &ctx);
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.as_str();
        match self.resource(uri).await {
            Some((text, mime)) => {
                let mut result =
                    ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(mime)]);
                stamp(&mut result.meta, &ctx);
                Ok(result.into())
            }
            None => Err(McpError::resource_not_found(
                "no such resource",
                Some(json!({ "uri": uri })),
            )),
        }
    }
}

/// Serves `hcp` on a byte stream (stdin and stdout for `hcpx mcp`), one JSON-RPC
/// message a line (see [`lines`]), until the client goes away.
pub async fn serve<R, W>(server: Server, read: R, write: W) -> Result<(), String>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt as _;
    let running = match server.serve(lines::Lines::new(read, write)).await {
        Ok(running) => running,
        // The client went away before saying anything: end of input is a clean exit.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(format!("the MCP session did not start: {error}")),
    };
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|error| format!("the MCP session ended with an error: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Reason;

    #[test]
    fn tool_definition() {
        let definition = serde_json::to_value(tool(false)).unwrap();
        insta::assert_json_snapshot!("hcp_tool", definition);
        let read_only = serde_json::to_value(tool(true)).unwrap();
        assert_eq!(read_only["annotations"]["readOnlyHint"], json!(true));
        assert_eq!(read_only["annotations"]["destructiveHint"], json!(false));
    }

    #[test]
    fn text_shows_refusal_and_next() {
        let failure = Failure::new(Reason::UnknownPack, "no pack by that name").next("hcpx search");
        let envelope = Envelope::failed(vec![], failure);
        assert_eq!(
            text_for(&envelope, ""),
            "error (unknown_pack): no pack by that name\nnext: hcpx search\n"
        );
    }

    #[test]
    fn view_limits_keep_the_whole_capture_pageable() {
        let store = OutputStore::default();
        let options = Options {
            read_only: false,
            view_bytes: 1024,
        };
        let mut envelope = Envelope::ok(vec![], None);
        envelope.stdout = "x".repeat(5000);
        envelope.stderr = "e".repeat(100);
        apply_view(&mut envelope, &options, &store);
        let id = envelope.output_id.clone().unwrap();
        assert!(envelope.output_truncated);
        assert_eq!(
            envelope.truncation,
            Some(Truncation {
                stdout: Some(StreamTruncation {
                    shown: 1024,
                    total: 5000
                }),
                stderr: None
            })
        );
        assert!(envelope.stdout.contains(&format!("hcp://output/{id}")));
        assert_eq!(store.get(&id).unwrap().stdout.len(), 5000);
        assert_eq!(envelope.stderr.len(), 100);
    }
}
