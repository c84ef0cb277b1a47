//! What a spawned child did, as the result envelope reports it: its argv, exit code,
//! captured output and how much of that was cut. Its own module so that both the
//! envelope (`envelope`) and a failure that happened after a spawn (`error`) can carry
//! it without depending on each other.

use serde::Serialize;

/// Per stream: bytes shown and bytes in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamTruncation {
    pub shown: u64,
    pub total: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truncation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<StreamTruncation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<StreamTruncation>,
}

/// What a spawned child did, for the envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    pub child: Vec<String>,
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub truncation: Option<Truncation>,
}
