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
pub struct Entry<'a> {
    pub ts: String,
    pub principal: Principal,
    pub argv: &'a [String],
    pub pack: &'a str,
    pub command: &'a str,
    /// `ran`, `denied`, `needs_confirmation`, `declined`, `refused`, `bind`, ...
    pub decision: &'a str,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub output_bytes: u64,
}

/// Now, as RFC 3339 UTC with milliseconds.
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

pub fn append(home: &Path, entry: &Entry<'_>) -> Result<(), StateError> {
    let line = serde_json::to_string(entry).unwrap_or_default();
    state::append_line(home, &home.join("audit.log"), &line)
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
            argv: &argv,
            pack: "git",
            command: "status",
            decision: "ran",
            exit_code: Some(0),
            duration_ms: 12,
            output_bytes: 34,
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
    }
}
