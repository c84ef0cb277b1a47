//! `adopt`: plugging hcpx into a host's configuration. The hosts are data
//! ([`hosts`]); a host's file is edited in place, JSON and JSONC through a concrete
//! syntax tree ([`json`]) and TOML through `toml_edit` ([`toml`]), so comments,
//! order, trailing commas and every other setting stay as they were; only hcpx's own
//! entry is added, changed or removed. The error type and the edits by format are
//! here; each other concept has a file of its own.
//!
//! hcpx's entry is recognised by [`record`]: adopt notes in `$HCP_HOME/adopted.json`
//! what it wrote under which key of which file, and what was there before. [`plan`]
//! never replaces an entry adopt did not write unless forced, and undoing puts back
//! what was there: the file's old bytes (from `NAME.bak`) when nothing but adopt
//! changed it, else the previous entry under the key.

mod block;
mod diff;
mod file;
mod hosts;
mod json;
mod launch;
mod plan;
pub mod record;
mod toml;

use std::path::PathBuf;

use serde_json::Value;

pub use self::block::{BLOCK_BEGIN, BLOCK_END, edit_block};
pub use self::diff::diff;
pub use self::file::{read_only, resolve};
pub use self::hosts::{
    AgentEnv, Files, Format, Host, Native, closest as closest_hosts, current_os, entry, expand, hosts,
    scope_path, url_entry, url_problem,
};
pub use self::launch::Launch;
pub use self::plan::{KeyEdit, Rewrite, plan, plan_file};

#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// The file is not valid `syntax`; `at` is where the parser stopped, when it says.
    #[error("not valid {syntax}: {source}")]
    Unparsable {
        syntax: Syntax,
        at: Option<Position>,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The last key of `path` appears `count` times in one JSON object.
    #[error("`{}` appears {count} times in the file; keep one", last(path))]
    Duplicate { path: Vec<String>, count: usize },
    /// The top of the JSON file is not an object.
    #[error("the file is not a JSON object")]
    NotAJsonObject,
    /// `path`, in a JSON file, holds something other than an object.
    #[error("`{}` in the file is not an object", last(path))]
    NotAnObject { path: Vec<String> },
    /// `path`, in a TOML file, holds something other than a table.
    #[error("`{}` is not a table", last(path))]
    NotATable { path: Vec<String> },
    /// The value to set under `key` has no TOML form (a null, say).
    #[error("the value has no TOML form")]
    NoTomlForm { key: String },
    /// The key holds an entry that adopt did not write, and replacing it was not forced.
    #[error("`{key}` holds an entry that hcpx did not write")]
    Foreign { key: String, entry: Found },
    /// A file adopt writes whole (the hcpx skill) is there, and adopt did not write it.
    #[error("a file that hcpx did not write is there")]
    ForeignFile,
    #[error("{path} cannot be read: {why}")]
    Record { path: PathBuf, why: String },
    #[error("{0} is a link that never ends in a file")]
    LinkLoop(PathBuf),
    #[error(transparent)]
    State(#[from] crate::state::StateError),
}

/// An entry as a host file holds it: its value, and its text as written there.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub value: Value,
    pub text: String,
}

/// The syntax a host's file is parsed as (JSONC is JSON here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Syntax {
    Json,
    Toml,
}

impl std::fmt::Display for Syntax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Json => "JSON",
            Self::Toml => "TOML",
        })
    }
}

/// A 1-based line and column in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// The last key of a key path, as messages name it.
fn last(path: &[String]) -> &str {
    path.last().map_or("", String::as_str)
}

/// The file's new text with the entry set (`Some`) or removed (`None`).
pub fn edit(
    format: Format,
    text: &str,
    path: &[String],
    key: &str,
    value: Option<&Value>,
) -> Result<String, AdoptError> {
    edit_keeping(format, text, path, key, value, 0)
}

/// [`edit`], where a removal keeps the first `keep` containers of the path even
/// when they are left empty.
fn edit_keeping(
    format: Format,
    text: &str,
    path: &[String],
    key: &str,
    value: Option<&Value>,
    keep: usize,
) -> Result<String, AdoptError> {
    match format {
        Format::Json | Format::Jsonc => json::edit(text, path, key, value, keep),
        Format::Toml => toml::edit(text, path, key, value, keep),
    }
}

/// How many containers of `path`, from the top, the file already has.
fn containers(format: Format, text: &str, path: &[String]) -> Result<usize, AdoptError> {
    match format {
        Format::Json | Format::Jsonc => json::containers(text, path),
        Format::Toml => toml::containers(text, path),
    }
}

/// The entry under `key` in `path`, when the file has one.
pub fn find(format: Format, text: &str, path: &[String], key: &str) -> Result<Option<Found>, AdoptError> {
    match format {
        Format::Json | Format::Jsonc => json::find(text, path, key),
        Format::Toml => toml::find(text, path, key),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use jsonc_parser::cst::CstRootNode;
    use serde_json::json;

    use super::*;

    /// A path of keys, as the tests here and in `json.rs` and `toml.rs` write them.
    pub(super) fn path(segments: &[&str]) -> Vec<String> {
        segments.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn unparsable_files_are_errors() {
        let text = "{ \"a\": ";
        let error = edit(Format::Json, text, &path(&["x"]), "k", Some(&json!(1))).unwrap_err();
        let parser = CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).unwrap_err();
        assert_eq!(error.to_string(), format!("not valid JSON: {parser}"));
        assert!(
            matches!(
                error,
                AdoptError::Unparsable {
                    syntax: Syntax::Json,
                    at: Some(Position { line: 1, .. }),
                    ..
                }
            ),
            "{error:?}"
        );
        let text = "a = 1\n[x";
        let error = edit(Format::Toml, text, &path(&["x"]), "k", Some(&json!({}))).unwrap_err();
        let parser = text.parse::<toml_edit::DocumentMut>().unwrap_err();
        assert_eq!(error.to_string(), format!("not valid TOML: {parser}"));
        assert!(
            matches!(
                error,
                AdoptError::Unparsable {
                    syntax: Syntax::Toml,
                    at: Some(Position { line: 2, .. }),
                    ..
                }
            ),
            "{error:?}"
        );
        let error = edit(Format::Json, "[1]", &path(&["x"]), "k", Some(&json!(1))).unwrap_err();
        assert!(matches!(error, AdoptError::NotAJsonObject), "{error:?}");
        assert_eq!(error.to_string(), "the file is not a JSON object");
    }

    /// A wrong shape names the key path where it is, and reads as it always has.
    #[test]
    fn wrong_shapes_name_their_key_path() {
        let error = edit(
            Format::Json,
            r#"{"a": {"b": 1}}"#,
            &path(&["a", "b"]),
            "k",
            Some(&json!(1)),
        )
        .unwrap_err();
        assert!(
            matches!(&error, AdoptError::NotAnObject { path } if *path == ["a", "b"]),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "`b` in the file is not an object");
        let error = edit(Format::Toml, "a = 1\n", &path(&["a"]), "k", Some(&json!({}))).unwrap_err();
        assert!(
            matches!(&error, AdoptError::NotATable { path } if *path == ["a"]),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "`a` is not a table");
        let error = edit(Format::Toml, "", &path(&["a"]), "k", Some(&Value::Null)).unwrap_err();
        assert!(
            matches!(&error, AdoptError::NoTomlForm { key } if key == "k"),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "the value has no TOML form");
    }
}
