//! Placing a pack and taking it away: under the state lock, journaled, staged beside
//! its place and swapped in with one rename (two where the kernel cannot exchange),
//! then recorded in the lock file; a crash at any point is finished or rolled back
//! by the next change or catalog read ([`super::journal`]).

use std::path::Path;

use super::copies;
use super::error::{InstallError, io};
use super::files::{Files, integrity};
use super::journal::{Journal, begin, finish, installed_integrity, recover, sync_dir};
use super::lock::{LockFile, Locked};
use crate::manifest::Manifest;
use crate::{layout, state};

/// What an install did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    /// With the lock entry of the version it replaced, if one was recorded.
    Installed {
        previous: Option<Locked>,
    },
    Unchanged,
}

#[cfg(test)]
thread_local! {
    /// Tests: the point where this thread's next change stops dead, as at a crash.
    pub(super) static CRASH_AT: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    /// Tests of the two-rename path that kernels without an exchange take.
    pub(super) static TWO_RENAMES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn may_exchange() -> bool {
    #[cfg(test)]
    if TWO_RENAMES.with(std::cell::Cell::get) {
        return false;
    }
    true
}

/// Whether a test asked this thread's change to stop dead at `point`, as a crash
/// would: nothing after it runs, no clean-up.
fn crash(point: &'static str) -> Result<(), InstallError> {
    #[cfg(test)]
    if CRASH_AT.with(std::cell::Cell::get) == Some(point) {
        return Err(InstallError::Crash(point));
    }
    let _ = point;
    Ok(())
}

/// Exchanges two folders in one step; `Ok(false)` where the kernel cannot.
fn exchange(a: &Path, b: &Path) -> Result<bool, InstallError> {
    #[cfg(target_os = "linux")]
    {
        match rustix::fs::renameat_with(
            rustix::fs::CWD,
            a,
            rustix::fs::CWD,
            b,
            rustix::fs::RenameFlags::EXCHANGE,
        ) {
            Ok(()) => return Ok(true),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(errno) => {
                return Err(InstallError::Io {
                    what: "cannot put the pack in place".to_owned(),
                    source: errno.into(),
                });
            }
        }
    }
    let _ = (a, b);
    Ok(false)
}

/// Places the pack under `$HCP_HOME/packs/<id>/` and records it, under the lock.
/// A journal records the change; the pack is staged beside its place and swapped
/// with the installed one in one step (where the kernel can); then the lock file is
/// written and the work folder removed. A crash at any point leaves a state that
/// the next install, uninstall or catalog read finishes or rolls back.
pub fn place(
    home: &Path,
    files: &Files,
    manifest: &Manifest,
    source: &str,
    now: String,
) -> Result<Placed, InstallError> {
    let _lock = layout::lock(home)?;
    let packs = layout::packs(home);
    std::fs::create_dir_all(&packs).map_err(io("cannot create HCP_HOME/packs"))?;
    recover(home)?;
    let lock_path = layout::lock_file(home);
    let mut lock = LockFile::load(&lock_path)?;
    let sum = integrity(files);
    let target = packs.join(&manifest.id);
    // "Nothing changed" only when the lock and the files on disk both say so.
    if let Some(existing) = lock.packs.get(&manifest.id)
        && existing.version == manifest.version.to_string()
        && existing.integrity == sum
        && existing.source == source
        && installed_integrity(&target).as_deref() == Some(sum.as_str())
    {
        return Ok(Placed::Unchanged);
    }
    let entry = Locked {
        id: manifest.id.clone(),
        version: manifest.version.to_string(),
        source: source.to_owned(),
        integrity: sum,
        installed_at: now,
    };
    begin(home, &Journal::Install { entry: entry.clone() })?;
    crash("journaled")?;
    let (staged, aside) = (layout::staged(home), layout::set_aside(home));
    let stage = || -> Result<(), InstallError> {
        std::fs::create_dir(&staged).map_err(io("cannot stage the pack"))?;
        for (name, bytes) in files {
            let mode = if manifest.bin_file() == Some(name.as_str()) {
                0o755
            } else {
                0o644
            };
            state::write_atomic(&staged.join(name), bytes, mode)?;
        }
        sync_dir(&staged);
        crash("staged")?;
        let exists = std::fs::symlink_metadata(&target).is_ok();
        if exists && may_exchange() && exchange(&staged, &target)? {
            return Ok(());
        }
        if exists {
            std::fs::rename(&target, &aside).map_err(io("cannot move the previous version aside"))?;
            crash("aside")?;
        }
        std::fs::rename(&staged, &target).map_err(io("cannot put the pack in place"))
    };
    if let Err(error) = stage() {
        #[cfg(test)]
        if matches!(error, InstallError::Crash(_)) {
            return Err(error);
        }
        recover(home)?;
        return Err(error);
    }
    sync_dir(&packs);
    crash("swapped")?;
    lock.version = 1;
    let previous = lock.packs.insert(manifest.id.clone(), entry);
    lock.save(&lock_path)?;
    // Before the journal goes: a crash in between leaves recovery to bump it.
    layout::bump_generation(home)?;
    crash("locked")?;
    finish(home)?;
    copies::prune(home, &manifest.id);
    Ok(Placed::Installed { previous })
}

/// Removes an installed pack and its lock entry, under the lock, journaled as
/// [`place`] is.
pub fn remove(home: &Path, id: &str) -> Result<bool, InstallError> {
    if !crate::template::is_pack_id(id) {
        return Err(InstallError::NotAPackId { id: id.to_owned() });
    }
    let _lock = layout::lock(home)?;
    let packs = layout::packs(home);
    recover(home)?;
    let lock_path = layout::lock_file(home);
    let mut lock = LockFile::load(&lock_path)?;
    let target = packs.join(id);
    let existed = target.is_dir();
    if existed {
        begin(home, &Journal::Remove { id: id.to_owned() })?;
        crash("journaled")?;
        std::fs::rename(&target, layout::set_aside(home)).map_err(io("cannot remove the pack"))?;
        sync_dir(&packs);
        crash("moved")?;
    }
    let locked = lock.packs.remove(id).is_some();
    if locked {
        lock.save(&lock_path)?;
    }
    if existed || locked {
        layout::bump_generation(home)?;
    }
    crash("locked")?;
    finish(home)?;
    copies::prune(home, id);
    Ok(existed || locked)
}
