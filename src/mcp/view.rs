//! How one call's [`Envelope`] reaches a model as a `CallToolResult` (see docs/mcp.md):
//! the view limits (a head and a tail of each stream, the whole capture kept
//! pageable in the [`CaptureStore`]), the text a model reads (rendered by
//! [`super::text::model_text`]), and the message size cap of [`super::fit`]. What
//! the envelope says is the command tree's.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use super::text::model_text;
use super::{Options, fit};
use crate::captures::{CaptureStore, view};
use crate::child::{StreamTruncation, Truncation};
use crate::envelope::Envelope;
use crate::error::Failure;

/// Default stdout shown in a result (`HCP_MCP_VIEW_BYTES` changes it).
pub const VIEW_STDOUT: usize = 32 * 1024;
/// Stderr shown in a result.
pub const VIEW_STDERR: usize = 8 * 1024;

/// The result of a call that ran: cut to the view limits and to the message size,
/// with whatever is cut kept pageable. `human` is the command's text for a person.
pub(crate) fn render(
    mut envelope: Envelope,
    human: &str,
    options: &Options,
    outputs: &CaptureStore,
    owner: Option<&str>,
) -> CallToolResult {
    apply_view(&mut envelope, options, outputs, owner);
    let mut text = model_text(&envelope, human);
    if fit::too_large(&envelope, &text) && envelope.output_id.is_none() && envelope.spawned {
        // What is about to be cut stays pageable.
        let id = outputs.put(owner, envelope.stdout.clone(), envelope.stderr.clone());
        envelope.output_id = Some(id);
        text = model_text(&envelope, human);
    }
    fit::tool_result(&mut envelope, &mut text);
    result(envelope, text)
}

/// The result of a call refused before anything ran.
pub(crate) fn refusal(failure: Failure) -> CallToolResult {
    let mut envelope = Envelope::failed(Vec::new(), failure);
    let mut text = model_text(&envelope, "");
    fit::tool_result(&mut envelope, &mut text);
    result(envelope, text)
}

/// Applies the result view limits (see docs/mcp.md): a head and a tail of each stream, the
/// whole capture kept in the store and its id in the envelope.
fn apply_view(envelope: &mut Envelope, options: &Options, store: &CaptureStore, owner: Option<&str>) {
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
    store.insert(&id, owner, stdout, stderr);
    envelope.output_truncated = true;
    envelope.truncation = Some(Truncation {
        stdout: stdout_cut,
        stderr: stderr_cut,
    });
    envelope.output_id = Some(id);
}

/// The text as content, the envelope as structured content, `isError` when it
/// did not succeed.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_limits_keep_the_whole_capture_pageable() {
        let store = CaptureStore::default();
        let options = Options {
            read_only: false,
            view_bytes: 1024,
        };
        let mut envelope = Envelope::ok(vec![], None);
        envelope.stdout = "x".repeat(5000);
        envelope.stderr = "e".repeat(100);
        apply_view(&mut envelope, &options, &store, Some("alice"));
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
        assert_eq!(store.get(&id, Some("alice")).unwrap().stdout.len(), 5000);
        assert!(store.get(&id, Some("bob")).is_none(), "another subject's");
        assert_eq!(envelope.stderr.len(), 100);
    }
}
