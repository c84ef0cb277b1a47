//! A suggested next step ([`Next`]): one whole hcpx command, kept as its words, or
//! advice in words. A person reads it as shell text (`hcpx skill transit`, each word
//! quoted as a shell needs it); an MCP client reads the same step as the `hcp` tool's
//! call (`{"argv":["skill","transit"]}`, see `tool_call`). Nothing splits
//! or parses it again: the words are those the command was built from.

use std::fmt;

use serde_json::json;

/// What to do next, and how it is shown (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Next {
    step: Step,
    form: Form,
}

/// The step itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// One whole hcpx command: the words after `hcpx`, and a remark for the reader
    /// shown after it in parentheses (`narrow the request`).
    Command { argv: Vec<String>, note: Option<String> },
    /// Words for the reader: what to ask the person, or a command for the person's
    /// own terminal inside a sentence. Shown as it is, to everyone.
    Advice(String),
}

/// Who reads the step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A person, or a program reading `--json`: shell text.
    Shell,
    /// An MCP client: the tool call.
    ToolCall,
}

impl Next {
    /// The hcpx command of these words (the words after `hcpx`).
    pub fn hcpx<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            step: Step::Command {
                argv: argv.into_iter().map(Into::into).collect(),
                note: None,
            },
            form: Form::Shell,
        }
    }

    /// Advice in words, shown as it is.
    pub fn advice(text: impl Into<String>) -> Self {
        Self {
            step: Step::Advice(text.into()),
            form: Form::Shell,
        }
    }

    /// The same command with a remark for the reader after it; advice stays as it is.
    #[must_use]
    pub fn note(mut self, remark: impl Into<String>) -> Self {
        if let Step::Command { note, .. } = &mut self.step {
            *note = Some(remark.into());
        }
        self
    }

    /// The same step, for an MCP client: shown (and serialized) as the tool call.
    #[must_use]
    pub fn for_tool(mut self) -> Self {
        self.form = Form::ToolCall;
        self
    }

    /// The step as shell text, whoever reads it.
    fn shell_text(&self) -> String {
        match &self.step {
            Step::Command { argv, note } => {
                let mut text = format!("hcpx {}", shell_words::join(argv));
                push_note(&mut text, note.as_deref());
                text
            }
            Step::Advice(text) => text.clone(),
        }
    }
}

/// A command's remark: three spaces, then in parentheses.
pub(crate) fn push_note(text: &mut String, note: Option<&str>) {
    if let Some(note) = note {
        text.push_str("   (");
        text.push_str(note);
        text.push(')');
    }
}

impl fmt::Display for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.form {
            Form::Shell => f.write_str(&self.shell_text()),
            Form::ToolCall => f.write_str(&tool_call(&self.step)),
        }
    }
}

/// `next` in the envelope is the text its reader acts on (see docs/mcp.md).
impl serde::Serialize for Next {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `next` as an MCP caller acts on it: a step that is one hcpx command becomes the
/// tool call that does it (`{"argv":["skill","transit"]}`), from the very words the
/// command was built from, with `--yes` as `"confirm": true` and `--json` dropped (it
/// is implied); its remark follows, as at a terminal. Advice (what to ask the person,
/// a command for the person's own terminal inside a sentence) stays as it is.
fn tool_call(step: &Step) -> String {
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
    use super::*;

    #[test]
    fn commands_are_quoted_for_a_shell_and_advice_stays() {
        assert_eq!(Next::hcpx(["skill", "transit"]).to_string(), "hcpx skill transit");
        assert_eq!(
            Next::hcpx(["install", "./my pack", "--yes"]).to_string(),
            "hcpx install './my pack' --yes"
        );
        assert_eq!(
            Next::hcpx(["skill", "probe"])
                .note("narrow the request")
                .to_string(),
            "hcpx skill probe   (narrow the request)"
        );
        assert_eq!(
            Next::advice("ask the person").note("ignored").to_string(),
            "ask the person"
        );
        assert_eq!(
            serde_json::to_value(Next::hcpx(["policy", "show"])).unwrap(),
            serde_json::json!("hcpx policy show")
        );
    }

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
