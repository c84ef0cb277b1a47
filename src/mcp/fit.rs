//! Every message the server sends stays under [`MAX_MESSAGE`] bytes as serialized
//! (see docs/mcp.md), measured after JSON escaping: text of control characters grows six
//! times when escaped, so raw lengths say little. A tool result over the bound is
//! trimmed in this order until it fits: the content text, then `data`, then the end
//! of stdout, then stderr past its head, then the echoed `argv`; it then says it was
//! trimmed and how to page the rest. Pages (`output`, `hcp://output/ID`) are cut
//! by their escaped size, so paging is how big output is read. No cut splits a
//! UTF-8 code point.

use serde::Serialize;

use crate::child::{StreamTruncation, Truncation};
use crate::envelope::Envelope;

/// The largest serialized message (see docs/mcp.md): stdio clients drop bigger ones.
pub const MAX_MESSAGE: usize = 9 * 1024 * 1024 + 512 * 1024;
/// Room kept for what wraps a result: the JSON-RPC frame and the content block.
const FRAME: usize = 4 * 1024;
/// The content text kept when a result must shrink: stdout stays in full in
/// `structuredContent`, and the text is only its rendering.
const TEXT_HEAD: usize = 64 * 1024;
/// The largest page of output, as JSON, in one result or resource read.
pub const MAX_PAGE: usize = 2 * 1024 * 1024;

/// The bytes `text` takes as a JSON string, quotes included, as serde_json writes it.
pub fn json_len(text: &str) -> usize {
    2 + text.chars().map(char_json_len).sum::<usize>()
}

fn char_json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The serialized size of a value, counted without building it.
pub fn serialized_len<T: Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The end of the longest prefix of `text[start..]` that takes at most `budget`
/// bytes as JSON (quotes aside), never past `start + limit`, on a char boundary.
pub fn page_end(text: &str, start: usize, limit: usize, budget: usize) -> usize {
    let mut used = 0;
    let mut end = start;
    let last = start.saturating_add(limit).min(text.len());
    for (at, c) in text[start..].char_indices() {
        let next = start + at + c.len_utf8();
        used += char_json_len(c);
        if next > last || used > budget {
            break;
        }
        end = next;
    }
    end
}

/// Cuts `text` so that it takes at most `budget` bytes as JSON, `note` included,
/// keeping its head. Returns whether it cut.
fn keep_head(text: &mut String, budget: usize, note: &str) -> bool {
    if json_len(text) <= budget {
        return false;
    }
    let room = budget.saturating_sub(json_len(note));
    let end = page_end(text, 0, text.len(), room);
    text.truncate(end);
    text.push_str(note);
    true
}

/// The size of the tool result the envelope and text become.
fn result_len(envelope: &Envelope, text: &str) -> usize {
    serialized_len(envelope) + json_len(text) + FRAME
}

/// Whether a tool result must be trimmed to fit.
pub fn too_large(envelope: &Envelope, text: &str) -> bool {
    result_len(envelope, text) > MAX_MESSAGE
}

/// Trims a tool result until it fits in [`MAX_MESSAGE`], in the order of the module
/// documentation; a result that fits is left alone.
pub fn tool_result(envelope: &mut Envelope, text: &mut String) {
    if !too_large(envelope, text) {
        return;
    }
    let lengths = [envelope.stdout.len() as u64, envelope.stderr.len() as u64];
    let paging = envelope.output_id.as_ref().map_or_else(
        || "; nothing more of it is kept".to_owned(),
        |id| format!("; page it with {{\"argv\": [\"output\", \"{id}\", \"--offset\", \"N\"]}}"),
    );
    let note = format!("\n[hcpx: the rest was cut to keep this result under 9.5 MiB{paging}]\n");
    keep_head(text, TEXT_HEAD, &note);
    if result_len(envelope, text) > MAX_MESSAGE {
        envelope.data = None;
    }
    let mut trimmed = [false; 2];
    for (index, cut) in trimmed.iter_mut().enumerate() {
        let over = result_len(envelope, text).saturating_sub(MAX_MESSAGE);
        if over == 0 {
            break;
        }
        let stream = if index == 0 {
            &mut envelope.stdout
        } else {
            &mut envelope.stderr
        };
        let budget = json_len(stream).saturating_sub(over);
        // stderr keeps at least its head: what usually says why.
        let budget = if index == 1 {
            budget.max(TEXT_HEAD.min(json_len(stream)))
        } else {
            budget
        };
        *cut = keep_head(stream, budget, &note);
    }
    let over = result_len(envelope, text).saturating_sub(MAX_MESSAGE);
    if over > 0 {
        // The echoed argv: its first words, as many as fit, and how many are left.
        let budget = serialized_len(&envelope.argv).saturating_sub(over + 64);
        let mut used = 2;
        let mut keep = 0;
        for word in &envelope.argv {
            used += json_len(word) + 1;
            if used > budget {
                break;
            }
            keep += 1;
        }
        let dropped = envelope.argv.len() - keep;
        envelope.argv.truncate(keep);
        envelope
            .argv
            .push(format!("[hcpx: {dropped} more words not shown]"));
    }
    envelope.output_truncated = true;
    let shown = |stream: &str, length: u64, was: Option<&StreamTruncation>| StreamTruncation {
        shown: stream.len() as u64,
        total: was.map_or(length, |was| was.total),
    };
    let was = envelope.truncation.take();
    envelope.truncation = Some(Truncation {
        stdout: (trimmed[0] || was.as_ref().is_some_and(|was| was.stdout.is_some())).then(|| {
            shown(
                &envelope.stdout,
                lengths[0],
                was.as_ref().and_then(|was| was.stdout.as_ref()),
            )
        }),
        stderr: (trimmed[1] || was.as_ref().is_some_and(|was| was.stderr.is_some())).then(|| {
            shown(
                &envelope.stderr,
                lengths[1],
                was.as_ref().and_then(|was| was.stderr.as_ref()),
            )
        }),
    });
}

/// A resource's text, cut to [`MAX_PAGE`] as JSON with a note on how to read on.
pub fn resource_text(text: &mut String, more: &str) {
    let note = format!("\n[hcpx: cut at 2 MiB (as JSON); {more}]\n");
    keep_head(text, MAX_PAGE, &note);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_as_serde_json_writes_them() {
        for text in ["plain", "quote \" and \\ slash", "\u{1}\u{1f}\n\t", "é€😀", ""] {
            assert_eq!(
                json_len(text),
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
        assert_eq!(serialized_len(&serde_json::json!({ "a": [1, "\u{0}"] })), 18);
    }

    #[test]
    fn pages_end_on_char_boundaries_within_their_budget() {
        let text = "ab\u{1}€d";
        // `\u0001` takes 6 bytes: a budget of 7 holds "ab" and not the control.
        assert_eq!(page_end(text, 0, 100, 7), 2);
        assert_eq!(page_end(text, 0, 100, 8), 3);
        // € is 3 bytes raw and as JSON.
        assert_eq!(page_end(text, 3, 100, 3), 6);
        assert_eq!(page_end(text, 3, 2, 100), 3);
    }
}
