//! `next` as an MCP caller acts on it. A [`Next`](crate::next::Next) that is one
//! hcpx command becomes the tool call that does it (`{"argv":["skill","transit"]}`),
//! from the very words the command was built from, with `--yes` as
//! `"confirm": true` and `--json` dropped (it is implied); its remark follows, as
//! at a terminal. Advice (what to ask the person, a command for the person's own
//! terminal inside a sentence) stays as it is.

use serde_json::json;

use crate::next::{Step, push_note};

/// The tool call of a step, as the text `next` carries.
pub(crate) fn tool_call(step: &Step) -> String {
    let (words, note) = match step {
        Step::Command { argv, note } => (argv, note.as_deref()),
        Step::Advice(text) => return text.clone(),
    };
    // Options end at `--`; a `--yes` after it is a parameter's word.
    let options_end = words.iter().position(|word| word == "--").unwrap_or(words.len());
    let confirm = words[..options_end].iter().any(|word| word == "--yes");
    let argv: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|(index, word)| *index >= options_end || !matches!(word.as_str(), "--yes" | "--json"))
        .map(|(_, word)| word.as_str())
        .collect();
    let call = if confirm {
        json!({ "argv": argv, "confirm": true })
    } else {
        json!({ "argv": argv })
    };
    let mut text = call.to_string();
    push_note(&mut text, note);
    text
}

#[cfg(test)]
mod tests {
    use crate::next::Next;

    #[test]
    fn commands_become_tool_calls_and_advice_stays() {
        for (next, expected) in [
            (
                Next::hcpx(["skill", "transit"]),
                r#"{"argv":["skill","transit"]}"#,
            ),
            (
                Next::hcpx(["exec", "git", "commit", "--yes", "--", "message=Fix it", "--yes"]),
                r#"{"argv":["exec","git","commit","--","message=Fix it","--yes"],"confirm":true}"#,
            ),
            (
                Next::hcpx(["install", "./my-pack", "--yes"]),
                r#"{"argv":["install","./my-pack"],"confirm":true}"#,
            ),
            (
                Next::hcpx(["--json", "exec", "--help"]),
                r#"{"argv":["exec","--help"]}"#,
            ),
            (
                Next::hcpx(["skill", "probe"]).note("narrow the request"),
                r#"{"argv":["skill","probe"]}   (narrow the request)"#,
            ),
            (Next::hcpx(["policy", "show"]), r#"{"argv":["policy","show"]}"#),
            (
                Next::advice(
                    "hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort",
                ),
                "hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort",
            ),
            (
                Next::advice("a person runs: hcpx bind probe KEY"),
                "a person runs: hcpx bind probe KEY",
            ),
            (
                Next::advice("ask the person what to do instead"),
                "ask the person what to do instead",
            ),
        ] {
            let shell = next.to_string();
            assert_eq!(next.for_tool().to_string(), expected, "{shell}");
        }
    }
}
