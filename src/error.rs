//! The boundary error: every refusal or failure that leaves the command tree is a
//! [`Failure`] carrying one [`Reason`] from the closed set (see docs/mcp.md), a fixed
//! message that never repeats caller input, an optional `next` command, and the CLI
//! exit code (see README.md). Leaf modules keep their own error enums and convert here.

use serde::Serialize;

/// Exit code: the command succeeded.
pub const EXIT_OK: u8 = 0;
/// Exit code: the pack's CLI ran and failed (non-zero exit, killed).
pub const EXIT_FAILED: u8 = 1;
/// Exit code: refused before anything ran (bad arguments, unknown pack, policy, limits).
pub const EXIT_REFUSED: u8 = 2;
/// Exit code: the pack's CLI timed out (the `timeout(1)` convention).
pub const EXIT_TIMEOUT: u8 = 124;

/// The closed set of refusal reasons (see docs/mcp.md). Hosts and agents branch on these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    InvalidArguments,
    Metacharacter,
    UnknownPack,
    UnknownCommand,
    UnknownParam,
    MissingParam,
    InvalidParam,
    DeniedByPolicy,
    NeedsConfirmation,
    Declined,
    AccessRefused,
    Unbound,
    NotRunnable,
    TooLarge,
    Timeout,
    UnknownOutput,
    /// Not a refusal: the pack's CLI ran and failed (non-zero exit, killed,
    /// interrupted, or output that is not the JSON it promised).
    Failed,
}

impl Reason {
    /// The wire name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::Metacharacter => "metacharacter",
            Self::UnknownPack => "unknown_pack",
            Self::UnknownCommand => "unknown_command",
            Self::UnknownParam => "unknown_param",
            Self::MissingParam => "missing_param",
            Self::InvalidParam => "invalid_param",
            Self::DeniedByPolicy => "denied_by_policy",
            Self::NeedsConfirmation => "needs_confirmation",
            Self::Declined => "declined",
            Self::AccessRefused => "access_refused",
            Self::Unbound => "unbound",
            Self::NotRunnable => "not_runnable",
            Self::TooLarge => "too_large",
            Self::Timeout => "timeout",
            Self::UnknownOutput => "unknown_output",
            Self::Failed => "failed",
        }
    }

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
    /// A suggested next hcpx command, shown as `next` and as a hint.
    pub next: Option<String>,
    /// Extra lines for people (every manifest problem, say); also in `data`.
    pub details: Vec<String>,
    pub exit_code: u8,
    /// Structured detail for `data` (closest ids, known parameters, a dry-run plan).
    pub data: Option<serde_json::Value>,
    /// What the child did, when one was spawned before the failure.
    pub run: Option<crate::output::RunInfo>,
}

impl Failure {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        Self(Box::new(FailureBody {
            reason,
            message: message.into(),
            next: None,
            details: Vec::new(),
            exit_code: reason.exit_code(),
            data: None,
            run: None,
        }))
    }

    #[must_use]
    pub fn next(mut self, next: impl Into<String>) -> Self {
        self.0.next = Some(next.into());
        self
    }

    #[must_use]
    pub fn details(mut self, details: Vec<String>) -> Self {
        self.0.details = details;
        self
    }

    #[must_use]
    pub fn data(mut self, data: serde_json::Value) -> Self {
        self.0.data = Some(data);
        self
    }

    #[must_use]
    pub fn run(mut self, run: crate::output::RunInfo) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_wire_names_match_serde() {
        for reason in [
            Reason::InvalidArguments,
            Reason::Metacharacter,
            Reason::UnknownPack,
            Reason::UnknownCommand,
            Reason::UnknownParam,
            Reason::MissingParam,
            Reason::InvalidParam,
            Reason::DeniedByPolicy,
            Reason::NeedsConfirmation,
            Reason::Declined,
            Reason::AccessRefused,
            Reason::Unbound,
            Reason::NotRunnable,
            Reason::TooLarge,
            Reason::Timeout,
            Reason::UnknownOutput,
            Reason::Failed,
        ] {
            let json = serde_json::to_value(reason).unwrap();
            assert_eq!(json, serde_json::Value::String(reason.as_str().to_owned()));
        }
    }

    #[test]
    fn timeout_exits_124_everything_else_2() {
        assert_eq!(Reason::Timeout.exit_code(), 124);
        assert_eq!(Reason::UnknownPack.exit_code(), 2);
        assert_eq!(Reason::DeniedByPolicy.exit_code(), 2);
    }
}
