//! `hcpx search`'s text, and one result as it is shown and serialized. Part of
//! [`crate::render`], which re-exports it.

use std::fmt::Write as _;

use serde::Serialize;

use crate::next::Next;

/// One search result as shown.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SearchResult {
    pub id: String,
    pub version: String,
    pub description: String,
    /// `builtin`, `installed`, or for a registry result `npm:NAME@VERSION`.
    pub source: String,
    /// A registry result's install command (`search --registry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    pub commands: Vec<String>,
    pub score: f64,
    pub installed: bool,
    pub runnable: bool,
    pub bound: bool,
    pub permitted: bool,
    pub ready: bool,
}

/// `below_floor`: weaker matches hidden, said on a line of their own.
pub(crate) fn search_text(query: &str, results: &[SearchResult], below_floor: usize) -> String {
    let mut text = String::new();
    let them = if below_floor == 1 { "it" } else { "them" };
    let weak = super::count(below_floor, "weak match");
    let weaker = super::count(below_floor, "weaker match");
    if results.is_empty() && below_floor > 0 {
        let _ = writeln!(
            text,
            "No pack matches \"{query}\" well; {weak} hidden: `--all` shows {them}."
        );
    } else if results.is_empty() {
        let _ = writeln!(
            text,
            "No pack matches \"{query}\". `hcpx search` with no words lists every pack."
        );
    }
    let width = results.iter().map(|result| result.id.len()).max().unwrap_or(0);
    for result in results {
        if let Some(install) = &result.install {
            // A registry result: no commands known until it is installed.
            let _ = writeln!(
                text,
                "{:width$}  {}  {}\n{:width$}  not installed: {}",
                super::inert_line(&result.id),
                result.version,
                super::inert_line(&result.description),
                "",
                install,
            );
            continue;
        }
        let flags = if result.ready {
            "ready".to_owned()
        } else {
            let missing: Vec<&str> = [
                (result.runnable, "not runnable"),
                (result.bound, "not bound"),
                (result.permitted, "not permitted"),
            ]
            .into_iter()
            .filter_map(|(ok, label)| (!ok).then_some(label))
            .collect();
            missing.join(", ")
        };
        let _ = writeln!(
            text,
            "{:width$}  {}  {}\n{:width$}  commands: {}  [{flags}]",
            result.id,
            result.version,
            super::inert_line(&result.description),
            "",
            result.commands.join(", "),
        );
    }
    if !results.is_empty() && below_floor > 0 {
        let _ = writeln!(text, "({weaker} hidden; --all shows {them})");
    }
    if let Some(first) = results.first() {
        match &first.install {
            Some(install) => {
                let _ = writeln!(text, "next: {install}");
            }
            None => {
                let _ = writeln!(text, "next: {}", Next::hcpx(["skill", first.id.as_str()]));
            }
        }
    }
    text
}
