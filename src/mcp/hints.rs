//! `next` as an MCP caller acts on it. Commands write `next` for a person at a
//! terminal (`hcpx skill transit`); over MCP the same suggestion becomes the tool
//! call that does it (`{"argv":["skill","transit"]}`), with `--yes` as
//! `"confirm": true` and `--json` dropped (it is implied). Anything that is not one
//! whole hcpx command (advice for the person, a command for the person's own
//! terminal inside a sentence) stays as it is.

use serde_json::json;

/// The MCP form of a terminal `next`.
pub(crate) fn as_tool_call(next: &str) -> String {
    // A trailing note in parentheses, three spaces after the command, stays a note.
    let (command, note) = match next.split_once("   (") {
        Some((command, note)) => (command, Some(note)),
        None => (next, None),
    };
    let Some(words) = command
        .strip_prefix("hcpx ")
        .and_then(|rest| shell_words::split(rest).ok())
    else {
        return next.to_owned();
    };
    let valid = match crate::parse(&words) {
        Ok(_) => true,
        Err(error) => error.kind() == clap::error::ErrorKind::DisplayHelp,
    };
    if !valid {
        return next.to_owned();
    }
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
    match note {
        Some(note) => format!("{call}   ({note}"),
        None => call.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::as_tool_call;

    #[test]
    fn terminal_commands_become_tool_calls_and_prose_stays() {
        for (next, expected) in [
            ("hcpx skill transit", r#"{"argv":["skill","transit"]}"#),
            (
                "hcpx exec git commit --yes -- 'message=Fix it' --yes",
                r#"{"argv":["exec","git","commit","--","message=Fix it","--yes"],"confirm":true}"#,
            ),
            (
                "hcpx install ./my-pack --yes",
                r#"{"argv":["install","./my-pack"],"confirm":true}"#,
            ),
            ("hcpx exec --help", r#"{"argv":["exec","--help"]}"#),
            (
                "hcpx skill probe   (narrow the request)",
                r#"{"argv":["skill","probe"]}   (narrow the request)"#,
            ),
            ("hcpx policy show", r#"{"argv":["policy","show"]}"#),
            // Not one whole hcpx command: left for the reader.
            (
                "hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort",
                "hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort",
            ),
            (
                "a person runs: hcpx bind probe KEY",
                "a person runs: hcpx bind probe KEY",
            ),
            ("hcpx frobnicate", "hcpx frobnicate"),
            (
                "ask the person what to do instead",
                "ask the person what to do instead",
            ),
        ] {
            assert_eq!(as_tool_call(next), expected, "{next}");
        }
    }
}
