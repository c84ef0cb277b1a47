//! Pack manifests (`hcp.json`, see docs/packs.md): the typed model (`model.rs`), the
//! validator (`validate.rs`) and the rules for where a placeholder may stand in a
//! command's template (`placement.rs`).
//!
//! The validator walks the JSON value itself rather than relying on serde, so that a
//! bad manifest is refused as a whole with *every* problem listed by JSON path. It
//! takes text in and does no I/O: the caller reads the files.

mod bindings;
mod command_sandbox;
mod environment;
mod model;
mod network;
mod placement;
mod problem;
mod program;
mod validate;
mod walk;

pub use environment::CACHE;
pub use model::*;
pub use network::{Endpoint, Host, MAX_ALLOW, Network};
pub use problem::Problem;
pub use validate::parse;

/// The longest unix socket path the kernel takes (`sun_path` holds 108 bytes, the
/// last a NUL).
pub const MAX_SOCKET_PATH: usize = 107;
/// The only manifest format version this build reads.
pub const FORMAT_VERSION: u64 = 1;
/// Default `maxLength` of a parameter value, in bytes (see docs/packs.md).
pub const DEFAULT_MAX_LENGTH: usize = 65_536;
/// Default child timeout (see docs/packs.md).
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest child timeout a manifest or a caller may ask for (see docs/packs.md).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Longest pack description; the same bound the Agent Skills format puts on skills.
pub const MAX_DESCRIPTION: usize = 1_024;
/// Bounds on keywords, to keep search and listings readable.
const MAX_KEYWORDS: usize = 32;
const MAX_KEYWORD_LEN: usize = 64;
/// Environment names passed through from the caller to a pack's CLI (see
/// docs/sandbox.md); the sandbox also sets [`TMPDIR`]. A binding may shadow none.
pub const PASSED_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "LC_ALL", "TZ"];
/// The private temporary folder's variable, which the sandbox sets.
pub const TMPDIR: &str = "TMPDIR";

#[cfg(test)]
mod delivery_tests;
#[cfg(test)]
mod tests;
