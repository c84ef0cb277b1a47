//! What a handler returns when its command succeeds ([`Reply`]): the data for the
//! envelope, the text for people, the [`Warning`]s of what went wrong without failing
//! it, the [`Effects`] it had beyond its result, and what the pack's CLI did when one
//! ran. Warnings are data until [`crate::render`] turns them into text, once.

use std::path::PathBuf;

use serde::Serialize;

use crate::child::RunInfo;

/// A command's successful result.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reply {
    /// The envelope's `data`.
    pub data: Option<serde_json::Value>,
    /// What a person reads on stdout.
    pub text: String,
    /// On stderr for people (`note: …`), never in the envelope: what a person should
    /// know of a success (an exit code other than 0 that the command counts as one).
    pub note: Option<String>,
    /// On stderr for people (`warning: …`), in the envelope's `warnings` for JSON.
    pub warnings: Vec<Warning>,
    pub effects: Effects,
    /// What the pack's CLI did, when one ran.
    pub run: Option<RunInfo>,
    /// The envelope's `next`, when a command that succeeded has one to suggest.
    pub next: Option<crate::next::Next>,
}

impl Reply {
    /// `data` as the envelope's data (its fields in their declared order) and `text`
    /// for people.
    pub(crate) fn new(data: &impl Serialize, text: impl Into<String>) -> Self {
        Self {
            data: Some(serde_json::to_value(data).unwrap_or(serde_json::Value::Null)),
            text: text.into(),
            ..Self::default()
        }
    }

    /// The same reply with these warnings added (an `Option` is none or one).
    #[must_use]
    pub(crate) fn warn(mut self, warnings: impl IntoIterator<Item = Warning>) -> Self {
        self.warnings.extend(warnings);
        self
    }
}

/// What a command changed beyond its own result, for those who keep state about it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Effects {
    /// An install or uninstall changed or removed a pack: the packs there are, and so
    /// the MCP server's list of skills, changed.
    pub packs_changed: bool,
}

/// Something that went wrong without failing the command. Its text is
/// [`crate::render`]'s (`Display`); the envelope carries that text.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// The audit line was not written: why.
    AuditLine(String),
    /// The pack's output is not the JSON it promised (where it broke), so `data` is null.
    NotJson(String),
    /// An installed pack is broken and was skipped.
    BrokenPack {
        id: String,
        problems: usize,
        dir: PathBuf,
    },
    /// `adopt --remove` leaves what hcpx did not write in `path`: the entry `key`
    /// there, or (`None`) the whole file.
    LeftForeign { path: PathBuf, key: Option<String> },
    /// A host's file also holds the entry an older hcpx wrote under `legacy`; hcpx
    /// now uses `key`.
    LegacyEntry {
        path: PathBuf,
        legacy: String,
        key: String,
    },
    /// A file `adopt --write` would change is read-only.
    ReadOnly { path: PathBuf },
    /// The `hcpx` on PATH is another file than this binary, so adopt's entry names
    /// this binary (`written`) instead.
    OtherHcpx { on_path: PathBuf, written: String },
    /// `adopt plugin --pack-skills` left this pack's skill out: its id or
    /// description is not one an Agent Skills file can hold.
    SkillLeftOut { pack: String },
    /// `search --registry` did not search the registry: the whole sentence why.
    Registry(String),
    /// `uninstall` removed the pack but not its cache folder: where, and why.
    CacheLeft { path: PathBuf, error: String },
    /// hcpx's proxy refused a connection the pack tried (`network.allow`).
    Egress { host: String, port: u16, why: String },
}

impl Serialize for Warning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
