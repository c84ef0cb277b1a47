//! The result envelope (see docs/mcp.md): what one call produced, the same for the
//! terminal's `--json` and for the MCP server's structured content. Its text for
//! people is [`crate::render`]'s.

use serde::Serialize;
use serde_json::Value;

use crate::child::{RunInfo, Truncation};
use crate::error::Failure;
use crate::next::Next;
use crate::reply::Warning;

/// `{code, reason, message}` of a refusal or failure. `code` is the CLI exit code
/// (0, 1, 2 or 124; `exitCode` holds the child's own code when one ran).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorBody {
    pub code: u8,
    pub reason: crate::error::Reason,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub ok: bool,
    pub argv: Vec<String>,
    pub child: Option<Vec<String>>,
    pub spawned: bool,
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub data: Option<Value>,
    pub output_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Truncation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_id: Option<String>,
    pub duration_ms: u64,
    pub error: Option<ErrorBody>,
    /// Shell text, or for an MCP client the tool call ([`Next::for_tool`]).
    pub next: Option<Next>,
    /// What went wrong without failing the command (output that is not JSON, an
    /// audit line not written), each as its text; absent when nothing did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

impl Envelope {
    /// Fills the fields about the child that ran.
    #[must_use]
    pub fn with_run(mut self, run: RunInfo) -> Self {
        self.child = Some(run.child);
        self.spawned = true;
        self.exit_code = run.exit_code;
        self.stdout = run.stdout;
        self.stderr = run.stderr;
        self.output_truncated = run.truncation.is_some();
        self.truncation = run.truncation;
        self
    }

    pub fn ok(argv: Vec<String>, data: Option<Value>) -> Self {
        Self {
            ok: true,
            argv,
            child: None,
            spawned: false,
            exit_code: 0,
            stdout: String::new(),
            stderr: String::new(),
            data,
            output_truncated: false,
            truncation: None,
            output_id: None,
            duration_ms: 0,
            error: None,
            next: None,
            warnings: Vec::new(),
        }
    }

    pub fn failed(argv: Vec<String>, failure: Failure) -> Self {
        let body = failure.into_body();
        let envelope = Self {
            ok: false,
            exit_code: i32::from(body.exit_code),
            data: body.data,
            error: Some(ErrorBody {
                code: body.exit_code,
                reason: body.reason,
                message: body.message,
            }),
            next: body.next,
            warnings: body.warnings,
            ..Self::ok(argv, None)
        };
        match body.run {
            Some(run) => envelope.with_run(run),
            None => envelope,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Reason;

    #[test]
    fn failed_envelope_carries_reason_code_and_next() {
        let failure = Failure::new(Reason::UnknownPack, "no pack by that name").next(Next::hcpx(["search"]));
        let envelope = Envelope::failed(vec!["skill".into(), "x".into()], failure);
        let json = serde_json::to_value(&envelope).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "ok": false, "argv": ["skill", "x"], "child": null, "spawned": false, "exitCode": 2,
                "stdout": "", "stderr": "", "data": null, "outputTruncated": false, "durationMs": 0,
                "error": { "code": 2, "reason": "unknown_pack", "message": "no pack by that name" },
                "next": "hcpx search"
            })
        );
    }
}
