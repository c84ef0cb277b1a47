//! Why an install or uninstall is refused or fails: one variant per refusal, each
//! carrying what was refused, and the bounds an install refuses past. The message is
//! what people read; `commands/install.rs` maps each variant to its reason.

use std::path::PathBuf;

use serde::Serialize;

use crate::catalog::MANIFEST_FILE;
use crate::manifest::Problem;
use crate::state;

/// Largest file a pack may carry.
pub const MAX_FILE: u64 = 16 * 1024 * 1024;
/// Most bytes an install unpacks from a tarball, in each of its two passes.
pub const MAX_UNPACKED: u64 = 64 * 1024 * 1024;
/// Most entries a tarball may hold.
pub const MAX_ENTRIES: u64 = 10_000;

/// A bound a tarball went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Limit {
    UnpackedBytes,
    Entries,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The folder has no `name`, one of the pack's files.
    #[error("the folder has no {name}")]
    FolderMissing { name: String },
    /// The folder's `name` is a symbolic link.
    #[error("{name} is a link; packs carry regular files only")]
    FolderLink { name: String },
    /// The folder's `name` is a device, a FIFO, a socket or a folder.
    #[error("{name} is not a regular file (a device, a FIFO or a folder)")]
    FolderNotRegular { name: String },
    /// The folder's `name` has `links` hard links, so something else can change it.
    #[error("{name} has other hard links; packs carry files of their own")]
    FolderHardLink { name: String, links: u64 },
    /// The folder's `name` is `size` bytes, over [`MAX_FILE`].
    #[error("{name} is larger than {} MiB", MAX_FILE / (1024 * 1024))]
    FolderTooLarge { name: String, size: u64 },
    /// The folder's `name` changed size while it was read.
    #[error("{name} changed while it was read; install again once nothing writes to it")]
    FolderChanged { name: String },
    /// The tarball has no `hcp.json` under `package/`.
    #[error("the package has no {MANIFEST_FILE} at its top")]
    PackageNoManifest,
    /// The tarball lacks `name`, a file its manifest names.
    #[error("the package has no {name}")]
    PackageMissing { name: String },
    /// The manifest read in the second pass is not the one read in the first.
    #[error("the package tarball changed while it was read")]
    PackageChanged,
    /// An entry's path has `..`, a root or a prefix.
    #[error("the package has a path that escapes it")]
    PackageEscapes { path: PathBuf },
    /// An entry is a symbolic or a hard link.
    #[error("the package holds a link; packs carry regular files only")]
    PackageLink { path: PathBuf, link: LinkKind },
    /// An entry is a device, a FIFO or another special file.
    #[error("the package holds a device or special file")]
    PackageSpecial { path: PathBuf },
    /// An entry is `size` bytes, over [`MAX_FILE`].
    #[error("the package holds a file larger than {} MiB", MAX_FILE / (1024 * 1024))]
    PackageTooLarge { path: PathBuf, size: u64 },
    /// The tarball holds the pack file `name` more than once.
    #[error("the package holds {name} twice")]
    PackageTwice { name: String },
    /// `hcp.json` is not UTF-8.
    #[error("{MANIFEST_FILE} is not UTF-8 text")]
    ManifestNotUtf8,
    /// `packs.lock.json` is not a lock file; it is never overwritten.
    #[error(
        "{} cannot be parsed (line {line}); fix or remove it, it is never overwritten",
        path.display()
    )]
    LockUnparsable { path: PathBuf, line: usize },
    /// The journal of an interrupted change cannot be parsed, so it cannot be finished.
    #[error(
        "{} cannot be parsed; remove {}, then check `hcpx search`",
        journal.display(),
        work.display()
    )]
    JournalUnparsable { journal: PathBuf, work: PathBuf },
    /// `id` is not a pack id.
    #[error("{id:?} is not a pack id")]
    NotAPackId { id: String },
    #[error("the pack is invalid: {}", crate::render::count(.0.len(), "problem"))]
    Invalid(Vec<Problem>),
    #[error("{}", bound_message(*.bound, *.limit))]
    Bound { bound: Limit, limit: u64 },
    #[error("{0}")]
    State(#[from] state::StateError),
    /// A crash simulated by the tests at a named point.
    #[cfg(test)]
    #[error("crashed at {0}")]
    Crash(&'static str),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn bound_message(bound: Limit, limit: u64) -> String {
    match bound {
        Limit::UnpackedBytes => format!(
            "the package unpacks to more than {} MiB, the most an install reads",
            limit / (1024 * 1024)
        ),
        Limit::Entries => format!("the package holds more than {limit} entries, the most an install reads"),
    }
}

/// An I/O failure of `what`.
pub(super) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> InstallError {
    let what = what.into();
    move |source| InstallError::Io { what, source }
}

/// Which link a tarball entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    Symbolic,
    Hard,
}
