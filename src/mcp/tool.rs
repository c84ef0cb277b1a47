//! The one tool, `hcp`: its definition (input and output schema, description,
//! annotations) and what a call does between its input and its result. The input's
//! argv is dispatched in this process through [`crate::execute_for_program`], as an
//! agent, so the tool and the terminal share one command tree; this
//! module adds only what MCP brings: cancellation by the request or the server,
//! progress notifications, confirmation through the client ([`super::confirm`]),
//! list-change announcements, and the result view ([`super::view`]).

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, InputResponses, JsonObject, ProgressNotificationParam, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::tasks::Detach;
use super::{Server, args, view};
use crate::context::Context;
use crate::runtime::Progress;

/// A schema as rmcp takes it (a literal that is not an object becomes an empty one).
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

impl Server {
    /// Runs one tool call in process. `resume` is the client's answer to an earlier
    /// `InputRequiredResult`: its input responses and the sealed state.
    /// `detach`, for a call that may become a task ([`super::tasks`]), stops the call
    /// instead of the request's cancellation and hears its progress first.
    pub(crate) async fn call(
        &self,
        arguments: &JsonObject,
        resume: Option<(&InputResponses, &str)>,
        ctx: Option<&RequestContext<RoleServer>>,
        detach: Option<Arc<Detach>>,
    ) -> CallToolResponse {
        crate::mark("mcp call");
        let input = match args::parse(arguments) {
            Ok(input) => input,
            Err(failure) => return view::refusal(failure).into(),
        };
        let mut call = self.base.clone();
        call.confirmed = input.confirm;
        // An OAuth caller is its token's subject; a token with only the read scope
        // makes the call read-only, as `--read-only` does the whole server.
        if let Some(authorized) = ctx.and_then(super::authorized) {
            call.caller = Some(authorized.caller.clone());
            call.read_only |= !authorized.full;
        }
        let owner = call.caller.clone();
        let subject = owner.as_deref().map(|caller| caller.subject.as_str());
        // The policy files, read once: a confirmation is sealed with (or opened
        // against) the very policy the command decides by.
        let policies = crate::commands::load_policies(&call);
        call.policies = Some(policies.clone());
        let mut confirmation = None;
        let mut forwarder = None;
        // The call stops when its request is cancelled (or, for one that may become
        // a task, when its own token fires) or the server shuts down.
        let cancel = match (&detach, ctx) {
            (Some(detach), _) => detach.cancel.child_token(),
            (None, Some(request)) => request.ct.child_token(),
            (None, None) => self.base.cancel.child_token(),
        };
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
            let asked = match self.confirmation(request, resume, &input.argv, &policies, subject) {
                Ok(asked) => asked,
                Err(failure) => return view::refusal(failure).into(),
            };
            if let Some(human) = &asked.human {
                call.human = Some(human.clone());
            }
            confirmation = Some(asked);
            forwarder = forward_progress(request, &mut call, detach);
        }
        crate::mark("mcp call set up");
        let executed = crate::execute_for_program(input.argv.clone(), &call).await;
        crate::mark("mcp executed");
        // Every progress notification goes out before the result: close the channel
        // (the callback owns its sender) and let the forwarder drain it.
        drop(call);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        if let Some(deferred) = confirmation.and_then(|confirmation| {
            self.input_required(
                confirmation,
                &input.argv,
                &policies,
                subject,
                executed.envelope.data.as_ref(),
            )
        }) {
            return deferred.into();
        }
        let mut envelope = executed.envelope;
        // This caller acts on a suggestion through the tool.
        envelope.next = envelope.next.take().map(crate::next::Next::for_tool);
        // An install or uninstall changed the skills there are: tell the client
        // (unless the watch of the packs folder told it already).
        if executed.effects.packs_changed {
            self.changes.announce_if_changed().await;
        }
        let rendered = view::render(
            envelope,
            &executed.text,
            &self.options,
            &self.base.session.captures,
            subject,
        )
        .into();
        crate::mark("mcp rendered");
        rendered
    }
}

/// When the request asks for progress, sends the call's progress to the client
/// as notifications (a call that may become a task tells `detach` first, which
/// says whether the request still hears it); the returned task ends once `call`
/// (which holds the sender) is dropped and every notification is out.
fn forward_progress(
    request: &RequestContext<RoleServer>,
    call: &mut Context,
    detach: Option<Arc<Detach>>,
) -> Option<tokio::task::JoinHandle<()>> {
    let token = request.meta.get_progress_token();
    if token.is_none() {
        // Nothing to forward, but a call that may become a task still listens.
        let detach = detach?;
        call.progress = Some(Arc::new(move |progress| {
            detach.heard(&progress);
        }));
        return None;
    }
    let token = token?;
    let peer = request.peer.clone();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let forwarder = tokio::spawn(async move {
        while let Some(progress) = receiver.recv().await {
            let seconds = progress.elapsed.as_secs_f64();
            let param = ProgressNotificationParam::new(token.clone(), seconds)
                .with_message(super::text::progress_message(&progress));
            let _ = peer.notify_progress(param).await;
        }
    });
    call.progress = Some(Arc::new(move |progress| {
        if detach.as_ref().is_none_or(|detach| detach.heard(&progress)) {
            let _ = sender.send(progress);
        }
    }));
    Some(forwarder)
}

/// Aborts a helper task when the call that spawned it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_definition() {
        let definition = serde_json::to_value(tool(false)).unwrap();
        insta::assert_json_snapshot!("hcp_tool", definition);
        let read_only = serde_json::to_value(tool(true)).unwrap();
        assert_eq!(read_only["annotations"]["readOnlyHint"], json!(true));
        assert_eq!(read_only["annotations"]["destructiveHint"], json!(false));
    }
}
