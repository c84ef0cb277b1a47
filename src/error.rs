//! The boundary error: every refusal or failure that leaves the command tree is a
//! [`Failure`] carrying one [`Reason`] from the closed set (see docs/mcp.md), a fixed
//! message that never repeats caller input, an optional `next` command, and the CLI
//! exit code (see README.md). Leaf modules keep their own error enums and convert here.

use serde::Serialize;

use crate::next::Next;

/// Exit code: the command succeeded.
pub const EXIT_OK: u8 = 0;
/// Exit code: the pack's CLI ran and failed (non-zero exit, killed).
pub const EXIT_FAILED: u8 = 1;
/// Exit code: refused before anything ran (bad arguments, unknown pack, policy, limits).
pub const EXIT_REFUSED: u8 = 2;
/// Exit code: the pack's CLI timed out (the `timeout(1)` convention).
pub const EXIT_TIMEOUT: u8 = 124;

/// Declares [`Reason`] once: each variant with its wire name, so that the enum, its
/// serialization and [`Reason::ALL`] cannot disagree.
macro_rules! reasons {
    ($($(#[$doc:meta])* $variant:ident => $wire:literal,)*) => {
        /// The closed set of refusal reasons (the table in docs/mcp.md). Hosts and
        /// agents branch on these.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Reason {
            $($(#[$doc])* $variant,)*
        }

        impl Reason {
            /// Every reason, in declaration order.
            pub const ALL: &[Reason] = &[$(Self::$variant,)*];

            /// The wire name, as serialized.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                }
            }
        }
    };
}

reasons! {
    InvalidArguments => "invalid_arguments",
    Metacharacter => "metacharacter",
    UnknownPack => "unknown_pack",
    /// What an install was pointed at is not a pack hcpx takes.
    InvalidPack => "invalid_pack",
    UnknownCommand => "unknown_command",
    UnknownParam => "unknown_param",
    MissingParam => "missing_param",
    InvalidParam => "invalid_param",
    DeniedByPolicy => "denied_by_policy",
    NeedsConfirmation => "needs_confirmation",
    Declined => "declined",
    AccessRefused => "access_refused",
    Unbound => "unbound",
    NotRunnable => "not_runnable",
    TooLarge => "too_large",
    Timeout => "timeout",
    UnknownOutput => "unknown_output",
    /// A file or folder hcpx needs could not be read or written.
    Io => "io_error",
    /// Not a refusal: the pack's CLI ran and failed (non-zero exit, killed,
    /// interrupted, or output that is not the JSON it promised).
    Failed => "failed",
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Reason {
    /// The CLI exit code a refusal with this reason ends with.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Timeout => EXIT_TIMEOUT,
            Self::Failed => EXIT_FAILED,
            _ => EXIT_REFUSED,
        }
    }
}

/// A refusal or failure, ready for the envelope's `error` field. Boxed, so that
/// `Result<_, Failure>` stays one pointer wide on the happy path.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(Box<FailureBody>);

#[derive(Debug, Clone, PartialEq)]
pub struct FailureBody {
    pub reason: Reason,
    /// Fixed text; never echoes a value the caller sent.
    pub message: String,
    /// A suggested next step, shown as `next` and as a hint.
    pub next: Option<Next>,
    /// Extra lines for people (every manifest problem, say); also in `data`.
    pub details: Vec<String>,
    pub exit_code: u8,
    /// Structured detail for `data` (closest ids, known parameters, a dry-run plan).
    pub data: Option<serde_json::Value>,
    /// What the child did, when one was spawned before the failure.
    pub run: Option<crate::child::RunInfo>,
    /// What went wrong beside the failure (a connection hcpx's proxy refused).
    pub warnings: Vec<crate::reply::Warning>,
}

impl Failure {
    /// A file or folder hcpx needs could not be read or written: `what` names it (and
    /// the action), `error` says why, as the OS or a leaf module put it.
    pub fn io(what: impl std::fmt::Display, error: impl std::fmt::Display) -> Self {
        Self::new(Reason::Io, format!("{what}: {error}"))
    }

    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self(Box::new(FailureBody {
            reason,
            message: message.into(),
            next: None,
            details: Vec::new(),
            exit_code: reason.exit_code(),
            data: None,
            run: None,
            warnings: Vec::new(),
        }))
    }

    /// The same failure with `warnings` added.
    #[must_use]
    pub fn warnings(mut self, warnings: impl IntoIterator<Item = crate::reply::Warning>) -> Self {
        self.0.warnings.extend(warnings);
        self
    }

    #[must_use]
    pub fn next(mut self, next: Next) -> Self {
        self.0.next = Some(next);
        self
    }

    #[must_use]
    pub fn details(mut self, details: Vec<String>) -> Self {
        self.0.details = details;
        self
    }

    /// Structured detail: a payload of the handler's, or a `serde_json::Value`.
    #[must_use]
    pub fn data(mut self, data: impl Serialize) -> Self {
        self.0.data = Some(serde_json::to_value(data).unwrap_or(serde_json::Value::Null));
        self
    }

    #[must_use]
    pub fn with_run(mut self, run: crate::child::RunInfo) -> Self {
        self.0.run = Some(run);
        self
    }

    #[must_use]
    pub fn exit_code(mut self, code: u8) -> Self {
        self.0.exit_code = code;
        self
    }
}

impl Failure {
    /// The parts, to move into an envelope.
    pub fn into_body(self) -> FailureBody {
        *self.0
    }
}

impl std::ops::Deref for Failure {
    type Target = FailureBody;

    fn deref(&self) -> &FailureBody {
        &self.0
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason.as_str(), self.message)
    }
}

impl std::error::Error for Failure {}

/// The boundary mappings of the leaf modules' errors whose files keep no `Failure`
/// of their own (the data layer's, the host files'): one reason each, with the
/// error's own words, which name the file and why. A handler that knows more (the
/// command to retry) adds it to the `Failure` it gets.
impl From<crate::state::StateError> for Failure {
    fn from(error: crate::state::StateError) -> Self {
        Self::new(Reason::Io, error.to_string())
    }
}

/// The binding store cannot be read: no binding can be trusted to be there.
impl From<crate::binding::BindingError> for Failure {
    fn from(error: crate::binding::BindingError) -> Self {
        Self::new(
            Reason::Unbound,
            format!("the binding store cannot be read: {error}"),
        )
        .next(Next::hcpx(["doctor"]))
    }
}

/// No pack by that id: the closest ids, and where to look next.
impl From<crate::catalog::CatalogError> for Failure {
    fn from(error: crate::catalog::CatalogError) -> Self {
        #[derive(Serialize)]
        struct Closest<'a> {
            suggestions: &'a [String],
        }
        let (id, suggestions) = match error {
            crate::catalog::CatalogError::Unknown { id, suggestions } => (id, suggestions),
            crate::catalog::CatalogError::NotInstalled { id } => return not_installed(&id),
        };
        let next = match suggestions.first() {
            Some(best) => Next::hcpx(["skill", best.as_str()]),
            None => Next::hcpx(["search"]),
        };
        // The id is the caller's word, not a value: named, made inert and short.
        let named = shown_id(&id);
        let message = match suggestions.as_slice() {
            [] => format!("no pack is named `{named}`"),
            ids => format!("no pack is named `{named}`; closest: {}", ids.join(", ")),
        };
        Self::new(Reason::UnknownPack, message).next(next).data(Closest {
            suggestions: &suggestions,
        })
    }
}

/// The most characters of a caller's pack id a message shows (a valid id has 64).
const MAX_ID_SHOWN: usize = 64;

/// A pack id the caller gave, as a message names it: control characters and
/// reordering marks escaped, at most [`MAX_ID_SHOWN`] characters.
pub(crate) fn shown_id(id: &str) -> String {
    let cut: String = id.chars().take(MAX_ID_SHOWN).collect();
    let mut shown = crate::render::inert::inert_line(&cut).into_owned();
    if id.chars().count() > MAX_ID_SHOWN {
        shown.push('…');
    }
    shown
}

/// A catalog pack that is not installed: it runs once it is (`hcpx install rg`, which
/// the policy may ask to confirm).
fn not_installed(id: &str) -> Failure {
    #[derive(Serialize)]
    struct NotInstalled<'a> {
        id: &'a str,
        installed: bool,
        source: &'a str,
    }
    Failure::new(
        Reason::UnknownPack,
        "that pack is in the catalog of this hcpx but not installed; nothing ran",
    )
    .next(Next::hcpx(["install", id]))
    .data(NotInstalled {
        id,
        installed: false,
        source: "catalog",
    })
}

/// A host's file (or adopt's record of it) that cannot be read, followed or edited
/// is a file hcpx needs (`io_error`); an entry or file that hcpx did not write is
/// replaced only when the caller says so with `--force` (`invalid_arguments`).
/// `commands/adopt.rs` names the file and the command to run again.
impl From<crate::adopt::AdoptError> for Failure {
    fn from(error: crate::adopt::AdoptError) -> Self {
        use crate::adopt::AdoptError as E;
        let reason = match &error {
            E::Foreign { .. } | E::ForeignFile => Reason::InvalidArguments,
            E::Unparsable { .. }
            | E::Duplicate { .. }
            | E::NotAJsonObject
            | E::NotAnObject { .. }
            | E::NotATable { .. }
            | E::NoTomlForm { .. }
            | E::Record { .. }
            | E::LinkLoop(_)
            | E::State(_) => Reason::Io,
        };
        Self::new(reason, error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_documented_with_its_wire_name_and_exit_code() {
        // The table users read is the contract: it lists exactly the reasons this
        // build can give, in order, each as it is serialized.
        let doc = include_str!("../docs/mcp.md");
        let table = doc.split("\n## Reasons\n").nth(1).unwrap();
        let documented: Vec<(String, String)> = table
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .map(|row| {
                let cells: Vec<&str> = row.split(" | ").collect();
                (cells[0].trim_end_matches('`').to_owned(), cells[1].to_owned())
            })
            .collect();
        let built: Vec<(String, String)> = Reason::ALL
            .iter()
            .map(|reason| {
                let wire = serde_json::to_value(reason).unwrap();
                assert_eq!(wire, serde_json::json!(reason.as_str()));
                (reason.as_str().to_owned(), reason.exit_code().to_string())
            })
            .collect();
        assert_eq!(documented, built);
    }

    #[test]
    fn timeout_exits_124_everything_else_2() {
        assert_eq!(Reason::Timeout.exit_code(), 124);
        assert_eq!(Reason::UnknownPack.exit_code(), 2);
        assert_eq!(Reason::DeniedByPolicy.exit_code(), 2);
    }
}
