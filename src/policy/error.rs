//! Why a policy file cannot be used: which field (its JSON path, `rules[2].decision`),
//! what it holds and what the format takes there, so that the person who fixes the
//! file needs nothing else; and the recovery every refusal it causes names.

use serde_json::Value;

/// What a refusal caused by an unusable policy file says to do, after the file's
/// path and the bad field.
pub(crate) const RECOVERY: &str = "every exec and install is denied until the file is fixed: \
     correct that field (docs/policy.md describes the format) or move the file away, \
     then `hcpx policy show` shows the policy in force";

/// The most characters of a value or key from the file a message shows.
const MAX_SHOWN: usize = 40;

/// A policy file that cannot be parsed, and so denies every exec and install.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PolicyError {
    /// The bytes are not JSON: serde_json's words, which give the line and column.
    #[error("not valid JSON: {0}")]
    Syntax(String),
    /// One field holds what the format does not take there.
    #[error("{} is {found}, where the format takes {expected}", if at.is_empty() { "the top level" } else { at })]
    Field {
        /// Its JSON path (`rules[2].decision`); empty for the whole file.
        at: String,
        /// What is there, shown short (`"nope"`, `an object`, `missing`).
        found: String,
        /// What the format takes there.
        expected: &'static str,
    },
}

impl PolicyError {
    pub(super) fn field(at: impl Into<String>, found: impl Into<String>, expected: &'static str) -> Self {
        Self::Field {
            at: at.into(),
            found: found.into(),
            expected,
        }
    }

    /// `at` holds `value`, which is not what the format takes there.
    pub(super) fn wrong(at: impl Into<String>, value: &Value, expected: &'static str) -> Self {
        Self::field(at, found(value), expected)
    }

    /// A key the format does not know, at `at`.
    pub(super) fn unknown(at: impl Into<String>, expected: &'static str) -> Self {
        Self::field(at, "a field hcpx does not know", expected)
    }
}

/// A value as a message shows it: a string, number or boolean as JSON (control
/// characters escaped, cut at [`MAX_SHOWN`] characters), a container by its kind.
pub(super) fn found(value: &Value) -> String {
    match value {
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::String(text) => quoted(text),
        other => short(&other.to_string()),
    }
}

/// `text` as a JSON string, cut short.
fn quoted(text: &str) -> String {
    let cut: String = text.chars().take(MAX_SHOWN).collect();
    let mut shown = Value::String(cut).to_string();
    if text.chars().count() > MAX_SHOWN {
        shown.push('…');
    }
    shown
}

fn short(text: &str) -> String {
    let mut shown: String = text.chars().take(MAX_SHOWN).collect();
    if text.chars().count() > MAX_SHOWN {
        shown.push('…');
    }
    shown
}

/// The JSON path of `key` inside `parent`: `parent.key`, or `parent["k e y"]` for a
/// key that is not a plain name (quoted, so nothing in it reaches a terminal raw).
pub(super) fn key_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= MAX_SHOWN
        && key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, parent.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{parent}.{key}"),
        (false, _) => format!("{parent}[{}]", quoted(key)),
    }
}
