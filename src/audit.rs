//! The audit log (see README.md): one JSON line per exec decision, install, uninstall and
//! access change in `$HCP_HOME/audit.log`. Names only, never a secret value; argv
//! passes through the redactor first. A line that cannot be written is reported to
//! the caller as a warning and never loses the call's result.

use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;

use crate::context::Principal;
use crate::state::{self, StateError};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Entry<'a> {
    pub ts: String,
    pub principal: Principal,
    /// The OAuth caller's subject (`hcpx mcp --oauth-issuer`); absent for others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<&'a str>,
    pub argv: &'a [String],
    pub pack: &'a str,
    pub command: &'a str,
    pub decision: Disposition,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub output_bytes: u64,
    /// For a connection hcpx's proxy refused: where the pack tried to go, and why.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection<'a>>,
}

/// A refused connection, on its audit line.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Connection<'a> {
    pub host: &'a str,
    pub port: u16,
    pub why: &'a str,
}

/// What happened to a request, as its audit line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Disposition {
    /// The pack's CLI ran (whatever its exit code).
    Ran,
    /// A `deny` rule refused it.
    Denied,
    /// A `confirm` or `confirm-human` rule wanted a yes that was not given.
    #[serde(rename = "needs_confirmation")]
    NeedsConfirmation,
    /// The person said no.
    Declined,
    /// Allowed, but refused after the policy (binding, sandbox, spawn).
    Refused,
    Installed,
    /// `install` found the same pack already there.
    Unchanged,
    Uninstalled,
    Bind,
    Unbind,
    PolicySet,
    PolicyUnset,
    Adopted,
    AdoptRemoved,
    /// hcpx's proxy refused a connection of the call (`network.allow`).
    #[serde(rename = "connection_refused")]
    ConnectionRefused,
}

impl Disposition {
    /// How a confirmation that did not go through is recorded.
    pub(crate) fn of_unconfirmed(reason: crate::error::Reason) -> Self {
        match reason {
            crate::error::Reason::DeniedByPolicy => Self::Denied,
            crate::error::Reason::Declined => Self::Declined,
            _ => Self::NeedsConfirmation,
        }
    }
}

/// Now, as RFC 3339 UTC with milliseconds.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

pub(crate) fn append(home: &Path, entry: &Entry<'_>) -> Result<(), StateError> {
    let line = serde_json::to_string(entry).unwrap_or_default();
    state::append_line(
        &crate::layout::append_lock(home),
        &crate::layout::audit_log(home),
        &line,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_line_with_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let argv = vec!["exec".to_owned(), "git".to_owned(), "status".to_owned()];
        let entry = Entry {
            ts: now(),
            principal: Principal::Agent,
            subject: None,
            argv: &argv,
            pack: "git",
            command: "status",
            decision: Disposition::Ran,
            exit_code: Some(0),
            duration_ms: 12,
            output_bytes: 34,
            connection: None,
        };
        append(dir.path(), &entry).unwrap();
        append(dir.path(), &entry).unwrap();
        let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        let keys: Vec<&str> = lines[0].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "ts",
                "principal",
                "argv",
                "pack",
                "command",
                "decision",
                "exitCode",
                "durationMs",
                "outputBytes"
            ]
        );
        assert!(lines[0]["ts"].as_str().unwrap().ends_with('Z'));
        assert_eq!(lines[0]["decision"], "ran");
    }

    /// An OAuth caller's line names its subject, beside the principal.
    #[test]
    fn an_oauth_callers_line_names_its_subject() {
        let dir = tempfile::tempdir().unwrap();
        let argv = vec!["exec".to_owned()];
        let entry = Entry {
            ts: now(),
            principal: Principal::Agent,
            subject: Some("alice@example.com"),
            argv: &argv,
            pack: "git",
            command: "status",
            decision: Disposition::Denied,
            exit_code: None,
            duration_ms: 0,
            output_bytes: 0,
            connection: None,
        };
        append(dir.path(), &entry).unwrap();
        let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(&keys[..3], ["ts", "principal", "subject"]);
        assert_eq!(line["subject"], "alice@example.com");
    }

    #[test]
    fn decisions_keep_their_wire_names() {
        let names: Vec<serde_json::Value> = [
            Disposition::Ran,
            Disposition::Denied,
            Disposition::NeedsConfirmation,
            Disposition::Declined,
            Disposition::Refused,
            Disposition::Installed,
            Disposition::Unchanged,
            Disposition::Uninstalled,
            Disposition::Bind,
            Disposition::Unbind,
            Disposition::PolicySet,
            Disposition::PolicyUnset,
            Disposition::Adopted,
            Disposition::AdoptRemoved,
        ]
        .iter()
        .map(|decision| serde_json::to_value(decision).unwrap())
        .collect();
        assert_eq!(
            names,
            [
                "ran",
                "denied",
                "needs_confirmation",
                "declined",
                "refused",
                "installed",
                "unchanged",
                "uninstalled",
                "bind",
                "unbind",
                "policy-set",
                "policy-unset",
                "adopted",
                "adopt-removed"
            ]
        );
    }
}
