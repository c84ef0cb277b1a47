//! What an installed pack is, for its bindings: its recorded source and the digest of
//! its files as they are on disk, and when two sources are the same place.

use std::path::Path;

use super::files::{Files, integrity};
use super::folder::read_folder;
use super::lock::{LockFile, Locked};
use crate::binding::Identity;
use crate::catalog::{Origin, Pack};
use crate::layout;

/// What the pack with this id is now, for bindings: a built-in by its source; an
/// installed pack by the source its lock entry records and the integrity of its
/// files as they are on disk (what will run), so a pack changed by any means no
/// longer matches what a credential was bound for.
pub fn identity(home: &Path, pack: &Pack) -> Identity {
    identity_and_files(home, pack).0
}

/// [`identity`], with the files of an installed pack it was computed from (`None`
/// for a built-in, or when they cannot be read as a pack).
pub fn identity_and_files(home: &Path, pack: &Pack) -> (Identity, Option<Files>) {
    match &pack.origin {
        Origin::Builtin { .. } => (
            Identity {
                source: format!("builtin:{}", pack.id()),
                integrity: None,
            },
            None,
        ),
        // Not installed: nothing of it is on disk, and nothing it could be bound to.
        Origin::Catalog => (
            Identity {
                source: format!("catalog:{}", pack.id()),
                integrity: None,
            },
            None,
        ),
        Origin::Installed { dir } => {
            let source = source(home, pack);
            let files = read_folder(dir).ok();
            let integrity = files.as_ref().map_or_else(|| "unreadable".to_owned(), integrity);
            (
                Identity {
                    source,
                    integrity: Some(integrity),
                },
                files,
            )
        }
    }
}

/// Where the pack with this id came from: a built-in's `builtin:ID`, an installed
/// pack's source as its lock entry records it (`unrecorded:DIR` without one).
pub fn source(home: &Path, pack: &Pack) -> String {
    match &pack.origin {
        Origin::Builtin { .. } => format!("builtin:{}", pack.id()),
        Origin::Catalog => format!("catalog:{}", pack.id()),
        Origin::Installed { dir } => installed_source(home, pack.id(), dir),
    }
}

/// The source of the pack installed as `id` in `dir`: its lock entry's, or
/// `unrecorded:DIR` without one.
pub fn installed_source(home: &Path, id: &str, dir: &Path) -> String {
    LockFile::load(&layout::lock_file(home))
        .ok()
        .and_then(|lock| lock.packs.get(id).map(|entry| entry.source.clone()))
        .unwrap_or_else(|| format!("unrecorded:{}", dir.display()))
}

/// The identity a lock entry records.
pub fn locked_identity(entry: &Locked) -> Identity {
    Identity {
        source: entry.source.clone(),
        integrity: Some(entry.integrity.clone()),
    }
}

/// Whether two sources are the same place, so that a person's update from one to
/// the other may keep the pack's bindings: the same npm package name, the same
/// folder, or the same built-in id.
pub fn same_place(a: &str, b: &str) -> bool {
    source_place(a) == source_place(b)
}

/// The place a source names, whatever version of it: `npm:NAME` of
/// `npm:NAME@VERSION`, a folder or a built-in id as it is.
pub fn source_place(source: &str) -> &str {
    match source.strip_prefix("npm:") {
        // `npm:NAME@VERSION`; a scoped NAME starts with `@`.
        Some(spec) => match spec.get(1..).and_then(|rest| rest.rfind('@')) {
            Some(at) => &source[..4 + 1 + at],
            None => source,
        },
        None => source,
    }
}
