//! The tasks extension (`io.modelcontextprotocol/tasks`, see docs/mcp.md): a pack
//! command may run for ten minutes, longer than some clients wait for a result. A
//! `tools/call` on protocol 2026-07-28 that declares the extension runs as usual; when its
//! child is still running after a second (every refusal, confirmation and
//! `InputRequiredResult` is settled by then, before the task exists, as the
//! extension advises), the call goes on as a task: the client gets a
//! `CreateTaskResult` at once, reads the state with `tasks/get` and, once it is
//! `completed`, the very result the call would have returned. `tasks/cancel` kills
//! the call's processes as `notifications/cancelled` does to a plain call.
//!
//! The task store is this module's, not rmcp's `TaskManager`: that one keeps a
//! finished task for a whole TTL after it ends, can drop none earlier, and knows
//! nothing of who created a task. Here a task belongs to the client that created it
//! ([`Owner`]): a stdio connection, an HTTP session, or (for stateless HTTP, which
//! has no session) the server's one credential. Tasks are bounded: [`MAX_TASKS`]
//! at once, [`MAX_RUNNING_PER_CLIENT`] running per client, and a finished one is
//! kept [`KEEP_FINISHED`] (the oldest finished go first when the store is full);
//! a call that finds no room runs to its end as a plain call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::current_timestamp;
use rmcp::{ErrorData as McpError, RoleServer};
use tokio_util::sync::CancellationToken;

use super::{Server, modern, stamp};
use crate::runtime::Progress;

/// How long a finished task stays readable.
pub(crate) const KEEP_FINISHED: Duration = Duration::from_secs(10 * 60);
/// How long a task lives from its creation, as `ttlMs` says: the longest a command
/// may run, then [`KEEP_FINISHED`]. A task still running then is cancelled.
pub(crate) const TASK_TTL: Duration =
    Duration::from_millis(crate::manifest::MAX_TIMEOUT_MS).saturating_add(KEEP_FINISHED);
/// How often a client is asked to poll.
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The most tasks a server holds, running or finished, for all its clients.
pub(crate) const MAX_TASKS: usize = 64;
/// The most tasks one client may have running at once.
pub(crate) const MAX_RUNNING_PER_CLIENT: usize = 16;
/// Not found, not this client's and expired are one answer, so that a client
/// learns nothing of another's tasks.
const NO_SUCH_TASK: &str = "no such task";

/// Who a task belongs to: the only client that can read or cancel it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A stdio connection (the server's one client).
    Connection(u64),
    /// An HTTP session, by its `Mcp-Session-Id`.
    Session(String),
    /// An OAuth caller (`hcpx mcp --oauth-issuer`): its token's subject, and its
    /// HTTP session when it has one. No other subject sees its tasks.
    Subject {
        subject: String,
        session: Option<String>,
    },
    /// Stateless HTTP (and protocol 2026-07-28, which has no sessions): every
    /// request carries the server's one credential (its token, or its user on a
    /// socket), so a task belongs to that credential; its id, 128 random bits, is
    /// known only to the client that created it.
    Credential,
}

/// A fresh id for a stdio connection.
pub(crate) fn connection_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Server {
    /// Who is asking, for the tasks they may see.
    pub(crate) fn owner(&self, ctx: &RequestContext<RoleServer>) -> Owner {
        let Some(parts) = ctx.extensions.get::<axum::http::request::Parts>() else {
            return Owner::Connection(self.connection);
        };
        let session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        match (super::authorized(ctx), session) {
            (Some(authorized), session) => Owner::Subject {
                subject: authorized.caller.subject.clone(),
                session,
            },
            (None, Some(session)) => Owner::Session(session),
            (None, None) => Owner::Credential,
        }
    }
}

/// Whether this request may be answered with a task: it is on protocol 2026-07-28,
/// against which the extension is written, and declares the extension in its own
/// capabilities. A client on an earlier protocol gets results as before, even if
/// its `initialize` named the extension: clients do (MCP Inspector's CLI among
/// them) and take no task on that wire.
pub(crate) fn declared(ctx: &RequestContext<RoleServer>) -> bool {
    modern(ctx)
        && ctx
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks())
}

struct Entry {
    owner: Owner,
    task: Task,
    created: Instant,
    /// `None` while running.
    finished: Option<(Instant, TaskPayload)>,
    cancel: CancellationToken,
    cancel_requested: bool,
}

/// The tasks of one server, shared by all its sessions.
#[derive(Default)]
pub(crate) struct Tasks {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Tasks {
    /// A new running task of `owner`'s, stopped by `cancel`; `None` when there is
    /// no room (or no randomness for an id): the call then stays a plain call.
    fn start(&self, owner: &Owner, cancel: CancellationToken) -> Option<Task> {
        let id = task_id()?;
        let mut entries = self.entries.lock().ok()?;
        sweep(&mut entries);
        let running = |entry: &Entry| entry.finished.is_none() && entry.owner == *owner;
        if entries.values().filter(|entry| running(entry)).count() >= MAX_RUNNING_PER_CLIENT {
            return None;
        }
        if entries.len() >= MAX_TASKS {
            let oldest = entries
                .iter()
                .filter_map(|(id, entry)| entry.finished.as_ref().map(|(at, _)| (*at, id.clone())))
                .min()?;
            entries.remove(&oldest.1);
        }
        let now = current_timestamp();
        let task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(millis(TASK_TTL))
            .with_poll_interval_ms(millis(POLL_INTERVAL))
            .with_status_message("running");
        entries.insert(
            id,
            Entry {
                owner: owner.clone(),
                task: task.clone(),
                created: Instant::now(),
                finished: None,
                cancel,
                cancel_requested: false,
            },
        );
        Some(task)
    }

    /// The call of task `id` ended with `outcome`.
    fn finish(&self, id: &str, outcome: Result<CallToolResponse, tokio::task::JoinError>) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let Some(entry) = entries.get_mut(id) else {
            return;
        };
        let (payload, message) = match outcome {
            // The child was killed on the client's word: what it left is no result.
            _ if entry.cancel_requested => (TaskPayload::Cancelled, "cancelled"),
            Ok(CallToolResponse::Complete(result)) => {
                let result = match serde_json::to_value(&result) {
                    Ok(serde_json::Value::Object(result)) => result,
                    _ => JsonObject::new(),
                };
                (TaskPayload::Completed { result }, "completed")
            }
            // A call asks its questions before it becomes a task, so neither of
            // these can come; if one did, the task failed.
            Ok(_) | Err(_) => {
                let error = McpError::internal_error("the call ended without a result", None);
                let error = match serde_json::to_value(&error) {
                    Ok(serde_json::Value::Object(error)) => error,
                    _ => JsonObject::new(),
                };
                (TaskPayload::Failed { error }, "the call ended without a result")
            }
        };
        entry.task.status = payload.status();
        entry.task.status_message = Some(message.to_owned());
        entry.task.last_updated_at = current_timestamp();
        entry.finished = Some((Instant::now(), payload));
    }

    /// Says how a running task is getting on.
    fn progress(&self, id: &str, message: String) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(entry) = entries.get_mut(id)
            && entry.finished.is_none()
        {
            entry.task.status_message = Some(message);
            entry.task.last_updated_at = current_timestamp();
        }
    }

    /// `tasks/get`: the task as it is now, with its result once finished.
    pub(crate) fn get(&self, owner: &Owner, id: &str) -> Result<DetailedTask, McpError> {
        self.with(owner, id, |entry| {
            let payload = entry
                .finished
                .as_ref()
                .map_or(TaskPayload::Working, |(_, payload)| payload.clone());
            DetailedTask::new(entry.task.clone(), payload)
        })
    }

    /// `tasks/cancel`: the call is stopped and its processes killed; the task
    /// ends `cancelled` once they are gone (at once, if it had already ended).
    pub(crate) fn cancel(&self, owner: &Owner, id: &str) -> Result<(), McpError> {
        self.with(owner, id, |entry| {
            if entry.finished.is_none() {
                entry.cancel_requested = true;
                entry.task.status_message = Some("cancelling".to_owned());
                entry.task.last_updated_at = current_timestamp();
                entry.cancel.cancel();
            }
        })
    }

    /// `tasks/update`: these tasks never wait for input, so there is nothing to
    /// answer; the responses are ignored, as the extension says of keys that are
    /// not outstanding.
    pub(crate) fn update(
        &self,
        owner: &Owner,
        id: &str,
        _responses: &InputResponses,
    ) -> Result<(), McpError> {
        self.with(owner, id, |_| ())
    }

    fn with<T>(&self, owner: &Owner, id: &str, then: impl FnOnce(&mut Entry) -> T) -> Result<T, McpError> {
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| McpError::internal_error("the task store is unusable", None))?;
        sweep(&mut entries);
        entries
            .get_mut(id)
            .filter(|entry| entry.owner == *owner)
            .map(then)
            .ok_or_else(|| McpError::invalid_params(NO_SUCH_TASK, None))
    }

    /// How many tasks are held (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries
            .lock()
            .map(|entries| entries.len())
            .unwrap_or_default()
    }
}

/// Drops what has expired: a finished task after [`KEEP_FINISHED`], any task
/// after [`TASK_TTL`] (a call still running then is stopped).
fn sweep(entries: &mut HashMap<String, Entry>) {
    entries.retain(|_, entry| {
        let keep = match &entry.finished {
            Some((at, _)) => at.elapsed() < KEEP_FINISHED,
            None => entry.created.elapsed() < TASK_TTL,
        };
        if !keep {
            entry.cancel.cancel();
        }
        keep
    });
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// 128 random bits in hex: a task id nobody can guess.
fn task_id() -> Option<String> {
    use std::fmt::Write as _;
    let bytes = super::confirm::random_bytes(16)?;
    Some(bytes.iter().fold(String::with_capacity(32), |mut id, byte| {
        let _ = write!(id, "{byte:02x}");
        id
    }))
}

/// Where a call that may become a task stands, for its progress reports.
enum Stage {
    /// Not yet decided: the first report (the child has run a second) asks.
    Waiting(Option<tokio::sync::oneshot::Sender<()>>),
    /// Became a task: reports update its status message.
    Task(Arc<Tasks>, String),
    /// Stayed a plain call (no room for a task): reports go to the request.
    Kept,
}

/// What a call that may become a task runs with: its own stop (the request's
/// cancellation reaches it only until it becomes a task), and who hears its
/// progress.
pub(crate) struct Detach {
    pub(crate) cancel: CancellationToken,
    stage: Mutex<Stage>,
}

impl Detach {
    /// Hears a progress report of the call's child; true when the request's own
    /// progress token should get it too.
    pub(crate) fn heard(&self, progress: &Progress) -> bool {
        let Ok(mut stage) = self.stage.lock() else {
            return false;
        };
        match &mut *stage {
            Stage::Waiting(ask) => {
                if let Some(ask) = ask.take() {
                    let _ = ask.send(());
                }
                false
            }
            Stage::Task(tasks, id) => {
                tasks.progress(id, super::text::progress_message(progress));
                false
            }
            Stage::Kept => true,
        }
    }

    fn settle(&self, stage: Stage) {
        if let Ok(mut current) = self.stage.lock() {
            *current = stage;
        }
    }
}

impl Server {
    /// Runs a call from a client that declared the tasks extension: its result,
    /// or a task once its child has run a second (see the module's header).
    pub(crate) async fn call_or_task(
        &self,
        arguments: JsonObject,
        resume: Option<(InputResponses, String)>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let (ask, asked) = tokio::sync::oneshot::channel();
        let detach = Arc::new(Detach {
            cancel: CancellationToken::new(),
            stage: Mutex::new(Stage::Waiting(Some(ask))),
        });
        // Until the call is a task, cancelling the request stops it. rmcp cancels
        // a request's token once its response is sent: a task's call must not hear
        // that, so the link ends when this function returns.
        let unlinked = CancellationToken::new();
        let _unlink = unlinked.clone().drop_guard();
        {
            let (request, call) = (ctx.ct.clone(), detach.cancel.clone());
            tokio::spawn(async move {
                // Unlinked first: the request's token fires right after the
                // response, by which time the link has ended.
                tokio::select! {
                    biased;
                    () = unlinked.cancelled() => {}
                    () = request.cancelled() => call.cancel(),
                }
            });
        }
        let mut call = {
            let (server, ctx, detach) = (self.clone(), ctx.clone(), detach.clone());
            tokio::spawn(self.calls.track_future(async move {
                let resume = resume
                    .as_ref()
                    .map(|(responses, state)| (responses, state.as_str()));
                server.call(&arguments, resume, Some(&ctx), Some(detach)).await
            }))
        };
        tokio::select! {
            ended = &mut call => return ended.unwrap_or_else(|_| crashed()),
            Ok(()) = asked => {}
        }
        let owner = self.owner(&ctx);
        let Some(task) = self.tasks.start(&owner, detach.cancel.clone()) else {
            detach.settle(Stage::Kept);
            return call.await.unwrap_or_else(|_| crashed());
        };
        detach.settle(Stage::Task(self.tasks.clone(), task.task_id.clone()));
        let mut created = CreateTaskResult::new(task.clone());
        stamp(&mut created.meta, &ctx);
        let (tasks, id) = (self.tasks.clone(), task.task_id);
        tokio::spawn(async move {
            let mut outcome = call.await;
            // The result as the call would have returned it, in this protocol's shape.
            if let Ok(CallToolResponse::Complete(result)) = &mut outcome {
                stamp(&mut result.meta, &ctx);
                if !modern(&ctx) {
                    result.result_type = None;
                }
            }
            tasks.finish(&id, outcome);
        });
        created.into()
    }
}

/// The answer when a call's task panicked.
fn crashed() -> CallToolResponse {
    super::view::refusal(crate::error::Failure::new(
        crate::error::Reason::Io,
        "the call stopped unexpectedly",
    ))
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(owner: &Owner, count: usize) -> (Tasks, Vec<String>) {
        let tasks = Tasks::default();
        let ids = (0..count)
            .map(|_| tasks.start(owner, CancellationToken::new()).unwrap().task_id)
            .collect();
        (tasks, ids)
    }

    /// An OAuth caller's task is its subject's: not another subject's in the same
    /// session, nor a stateless request's of the server's credential.
    #[test]
    fn an_oauth_callers_task_is_its_subjects_alone() {
        let owner = |subject: &str, session: Option<&str>| Owner::Subject {
            subject: subject.to_owned(),
            session: session.map(str::to_owned),
        };
        let tasks = Tasks::default();
        let id = tasks
            .start(&owner("alice", None), CancellationToken::new())
            .unwrap()
            .task_id;
        assert!(tasks.get(&owner("alice", None), &id).is_ok());
        for other in [
            owner("bob", None),
            owner("alice", Some("s")),
            Owner::Credential,
            Owner::Session("s".into()),
        ] {
            assert_eq!(tasks.get(&other, &id).unwrap_err().message, NO_SUCH_TASK);
            assert_eq!(tasks.cancel(&other, &id).unwrap_err().message, NO_SUCH_TASK);
        }
    }

    #[test]
    fn a_task_is_seen_and_cancelled_only_by_its_owner() {
        let (mine, theirs) = (Owner::Session("a".into()), Owner::Session("b".into()));
        let tasks = Tasks::default();
        let cancel = CancellationToken::new();
        let id = tasks.start(&mine, cancel.clone()).unwrap().task_id;
        assert_eq!(id.len(), 32);
        assert_eq!(tasks.get(&mine, &id).unwrap().status(), TaskStatus::Working);
        for other in [theirs, Owner::Credential, Owner::Connection(1)] {
            assert_eq!(tasks.get(&other, &id).unwrap_err().message, NO_SUCH_TASK);
            assert_eq!(tasks.cancel(&other, &id).unwrap_err().message, NO_SUCH_TASK);
        }
        assert!(!cancel.is_cancelled());
        tasks.cancel(&mine, &id).unwrap();
        assert!(cancel.is_cancelled());
        tasks.finish(
            &id,
            Ok(CallToolResponse::Complete(rmcp::model::CallToolResult::success(
                vec![],
            ))),
        );
        assert_eq!(tasks.get(&mine, &id).unwrap().status(), TaskStatus::Cancelled);
    }

    #[test]
    fn running_tasks_are_bounded_per_client_and_finished_ones_make_room() {
        let me = Owner::Connection(7);
        let (tasks, ids) = store_with(&me, MAX_RUNNING_PER_CLIENT);
        assert!(
            tasks.start(&me, CancellationToken::new()).is_none(),
            "one client's bound"
        );
        // Another client still gets tasks, up to the server's bound.
        for n in 0..MAX_TASKS - MAX_RUNNING_PER_CLIENT {
            let client = Owner::Session(format!("s{}", n / MAX_RUNNING_PER_CLIENT));
            assert!(tasks.start(&client, CancellationToken::new()).is_some(), "{n}");
        }
        assert_eq!(tasks.len(), MAX_TASKS);
        assert!(
            tasks
                .start(&Owner::Session("new".into()), CancellationToken::new())
                .is_none()
        );
        // A finished task is dropped, oldest first, to make room.
        let result = rmcp::model::CallToolResult::success(vec![]);
        tasks.finish(&ids[0], Ok(CallToolResponse::Complete(result)));
        assert!(
            tasks
                .start(&Owner::Session("new".into()), CancellationToken::new())
                .is_some()
        );
        assert_eq!(tasks.len(), MAX_TASKS);
        assert!(tasks.get(&me, &ids[0]).is_err());
    }
}
