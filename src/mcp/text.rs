//! The text a model reads of one tool result, beside the result's envelope
//! ([`super::view`]): the answer or the refusal and its next step, the warnings, and
//! how to page output that was cut. A person's text is [`crate::render`]'s; this is
//! what the `hcp` tool's content block says.

use crate::envelope::Envelope;
use crate::render::warning_line;

/// What a model reads of one call in an MCP tool result: the answer (`human`, the
/// command's text for a person, or the child's output), or the refusal and its
/// next step; the warnings; how to page output that was cut.
pub(crate) fn model_text(envelope: &Envelope, human: &str) -> String {
    let mut text = String::new();
    if let Some(error) = &envelope.error {
        text.push_str(&format!("error ({}): {}\n", error.reason.as_str(), error.message));
        if let Some(next) = &envelope.next {
            text.push_str(&format!("next: {next}\n"));
        }
        if error.reason == crate::error::Reason::NeedsConfirmation
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
        if envelope.error.is_none() && envelope.exit_code != 0 {
            text.push_str(&format!("({})\n", crate::render::exit_note(envelope.exit_code)));
        }
    } else if envelope.error.is_none() {
        text.push_str(human);
    }
    for warning in &envelope.warnings {
        text.push_str(&warning_line(warning));
    }
    if let Some(id) = &envelope.output_id {
        text.push_str(&format!(
            "\n[output truncated: page it with {{\"argv\": [\"output\", \"{id}\", \"--offset\", \"N\"]}}]\n"
        ));
    }
    text
}

/// How a running call is getting on, in words.
pub(super) fn progress_message(progress: &crate::runtime::Progress) -> String {
    format!(
        "running, {} of output so far",
        crate::render::count(
            usize::try_from(progress.output_bytes).unwrap_or(usize::MAX),
            "byte"
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Failure, Reason};
    use crate::next::Next;

    #[test]
    fn text_shows_refusal_and_next() {
        let failure = Failure::new(Reason::UnknownPack, "no pack by that name").next(Next::hcpx(["search"]));
        let envelope = Envelope::failed(vec![], failure);
        assert_eq!(
            model_text(&envelope, ""),
            "error (unknown_pack): no pack by that name\nnext: hcpx search\n"
        );
    }
}
