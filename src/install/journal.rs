//! The journal of the one change in flight and the recovery it allows: a change
//! writes what it is (`packs/.work/journal.json`) before the packs folder changes,
//! keeps the staged version (`new/`) and the one it replaces or removes (`old/`)
//! beside it, and whoever takes the state lock next and finds the work folder
//! finishes the change or rolls it back. The folder exists only while a change is in
//! flight or after one was interrupted, so finding it costs one `stat`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{InstallError, io};
use super::files::integrity;
use super::folder::read_folder;
use super::lock::{LockFile, Locked};
use crate::{layout, state};

/// The one change in flight, written (atomically) before the packs folder changes.
/// Whoever takes the lock next and finds it finishes the change or rolls it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "op", deny_unknown_fields)]
pub(super) enum Journal {
    /// `new/` is swapped with `packs/<id>` (or renamed to it; where the kernel
    /// cannot swap, the installed version is first renamed to `old/`), then the lock
    /// entry is written.
    Install { entry: Locked },
    /// `packs/<id>` is renamed to `old/`, then the lock entry goes.
    Remove { id: String },
}

pub(super) fn sync_dir(dir: &Path) {
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
}

pub(super) fn remove_tree(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok() {
        let _ = std::fs::remove_dir_all(path);
    }
}

/// The integrity of what is installed at `dir`, if it reads as a pack.
pub(super) fn installed_integrity(dir: &Path) -> Option<String> {
    read_folder(dir).ok().map(|files| integrity(&files))
}

/// Finishes or rolls back a change a crash interrupted, and removes what it left.
/// The caller holds the state lock.
pub(super) fn recover(home: &Path) -> Result<(), InstallError> {
    let packs = layout::packs(home);
    let work = layout::work(home);
    let journal_path = layout::journal(home);
    let lock_path = layout::lock_file(home);
    let journal =
        match std::fs::read(&journal_path) {
            Ok(bytes) => Some(serde_json::from_slice::<Journal>(&bytes).map_err(|_| {
                InstallError::JournalUnparsable {
                    journal: journal_path.clone(),
                    work: work.clone(),
                }
            })?),
            Err(error) if matches!(error.kind(), std::io::ErrorKind::NotFound) => None,
            Err(source) => {
                return Err(InstallError::Io {
                    what: format!("cannot read {}", journal_path.display()),
                    source,
                });
            }
        };
    let journaled = journal.is_some();
    let set_aside = layout::set_aside(home);
    match journal {
        // No journal: the change never touched the installed pack.
        None => {}
        Some(Journal::Install { entry }) => {
            let target = packs.join(&entry.id);
            if installed_integrity(&target).as_deref() == Some(entry.integrity.as_str()) {
                // The new version is in place: the lock follows it.
                let mut lock = LockFile::load(&lock_path)?;
                if lock.packs.get(&entry.id) != Some(&entry) {
                    lock.version = 1;
                    lock.packs.insert(entry.id.clone(), entry);
                    lock.save(&lock_path)?;
                }
            } else if std::fs::symlink_metadata(&target).is_err() && set_aside.is_dir() {
                // The previous version was moved aside and nothing took its place.
                std::fs::rename(&set_aside, &target).map_err(io("cannot put the previous version back"))?;
            }
        }
        // The pack was moved out: its lock entry goes too.
        Some(Journal::Remove { id }) if std::fs::symlink_metadata(packs.join(&id)).is_err() => {
            let mut lock = LockFile::load(&lock_path)?;
            if lock.packs.remove(&id).is_some() {
                lock.save(&lock_path)?;
            }
        }
        // Not moved yet: nothing changed.
        Some(Journal::Remove { .. }) => {}
    }
    if journaled {
        // Whatever was finished or rolled back, the packs index is redone.
        layout::bump_generation(home)?;
    }
    finish(home)?;
    // Staging and set-aside folders of older versions of hcpx.
    if let Ok(entries) = std::fs::read_dir(&packs) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if layout::LEGACY_WORK_PREFIXES
                .iter()
                .any(|prefix| name.starts_with(prefix))
            {
                remove_tree(&entry.path());
            }
        }
    }
    Ok(())
}

/// Recovers from an interrupted install or uninstall if one left its work folder;
/// a single `stat` when none did. For callers that read the packs folder.
pub fn recover_if_needed(home: &Path) -> Result<(), InstallError> {
    if std::fs::symlink_metadata(layout::work(home)).is_err() {
        return Ok(());
    }
    let _lock = layout::lock(home)?;
    recover(home)
}

/// Starts a change: a fresh work folder holding its journal.
pub(super) fn begin(home: &Path, journal: &Journal) -> Result<(), InstallError> {
    std::fs::create_dir(layout::work(home)).map_err(io("cannot create the install work folder"))?;
    let text = serde_json::to_vec(journal).unwrap_or_default();
    state::write_atomic(&layout::journal(home), &text, 0o600)?;
    Ok(())
}

/// Ends a change whose lock entry is written: the work folder goes, journal last
/// (a crash halfway leaves a folder without a journal, which recovery just removes).
pub(super) fn finish(home: &Path) -> Result<(), InstallError> {
    let work = layout::work(home);
    if std::fs::symlink_metadata(&work).is_err() {
        return Ok(());
    }
    remove_tree(&layout::staged(home));
    remove_tree(&layout::set_aside(home));
    std::fs::remove_dir_all(&work).map_err(io("cannot remove the install work folder"))?;
    sync_dir(&layout::packs(home));
    Ok(())
}
