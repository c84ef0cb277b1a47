//! The text of `hcpx install` and `uninstall`, and the question they ask. Part of
//! [`crate::render`], which re-exports it.

use std::fmt::Write as _;

use crate::error::Failure;
use crate::install::{Placed, Shelved};
use crate::next::Next;

/// What `hcpx install` did.
pub(crate) struct Installed<'a> {
    pub id: &'a str,
    pub version: &'a str,
    /// Where it came from, as recorded: `npm:NAME@VERSION`, a folder, `builtin:ID`.
    pub source: &'a str,
    pub outcome: &'a Placed,
    /// Why the pack's bindings could not be followed, when they could not.
    pub bindings_error: Option<&'a Failure>,
    pub kept: &'a [String],
    pub held_back: &'a [String],
}

/// `hcpx install`: what was installed over what, what became of its bindings, and
/// the next step.
pub(crate) fn install_text(installed: &Installed<'_>) -> String {
    let Installed {
        id, version, source, ..
    } = *installed;
    let mut text = match installed.outcome {
        Placed::Unchanged => format!("{id} {version} is already installed; nothing changed\n"),
        Placed::Installed { previous: Some(old) } => format!(
            "installed {id} {version} (replacing {}) from {source}\n",
            old.version
        ),
        Placed::Installed { previous: None } => format!("installed {id} {version} from {source}\n"),
    };
    if let Some(error) = installed.bindings_error {
        let _ = writeln!(text, "warning: {error}");
    }
    if !installed.kept.is_empty() {
        let _ = writeln!(
            text,
            "kept its bindings {} (a person's update from the same place)",
            installed.kept.join(", ")
        );
    }
    if !installed.held_back.is_empty() {
        let _ = writeln!(
            text,
            "held back its bindings {}: they were given to another {id}; a person who trusts this one runs: hcpx bind {id} KEY --keep",
            installed.held_back.join(", ")
        );
    }
    let _ = writeln!(text, "next: {}", Next::hcpx(["skill", id]));
    text
}

/// What `hcpx install SOURCE` or `hcpx uninstall ID` asks a person to confirm.
pub(crate) fn install_question(command: &str, target: &str) -> String {
    format!("{command} {target}?")
}

/// `hcpx uninstall ID`: what is in use once it is gone, and the cache folder removed.
pub(crate) fn uninstall_text(
    id: &str,
    removed: bool,
    shelved: Shelved,
    cache: Option<&std::path::Path>,
) -> String {
    let mut text = match (removed, shelved) {
        (true, Shelved::Builtin) => format!("uninstalled {id}; the built-in {id} is in use again\n"),
        (true, Shelved::Catalog) => {
            format!("uninstalled {id}; it stays in the catalog: hcpx install {id} installs it again\n")
        }
        (true, Shelved::Nothing) => format!("uninstalled {id}\n"),
        (false, _) => format!("{id} was not installed\n"),
    };
    if let Some(cache) = cache {
        text.push_str(&format!("removed its cache folder {}\n", cache.display()));
    }
    text
}
