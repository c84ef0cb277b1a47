//! The calls' private temporary folders of a long-lived server, made ahead and
//! removed behind: making one costs a `mkdir` on the temporary folder's filesystem
//! (0.1 ms on ext4 here) and removing it an `rmdir` or more, both on the call's path
//! when done inline. A server's cache keeps one folder made ahead for the next call;
//! a finished call's folder is removed later. Both are done by a call while its
//! pack's CLI runs, when hcpx only waits ([`CallFolder::meanwhile`]): no thread of
//! its own, which on two CPUs took one from the calls it was meant to spare.
//!
//! Nothing about a folder changes: it is made the same way (mode 0700, in the
//! process's own 0700 folder, see `temp.rs`), empty until its call gets it, and taken
//! by one call only. A finished call's folder is removed when no process of the call
//! is left to read it (the keeper has killed them all); one that holds a
//! credential's file is removed with its call ([`CallFolder::remove_inline`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tempfile::TempDir;

/// A call's private temporary folder: removed when dropped, at once or (a
/// server's) by a later call, while that one's CLI runs.
#[derive(Debug)]
pub struct CallFolder {
    dir: Option<TempDir>,
    /// A server's folders, and the process folder this one is in.
    ahead: Option<(Arc<Folders>, PathBuf)>,
    /// Removed at once when dropped, even in a server.
    inline: bool,
}

impl CallFolder {
    /// A folder removed at once when dropped.
    pub(super) fn inline(dir: TempDir) -> Self {
        Self {
            dir: Some(dir),
            ahead: None,
            inline: true,
        }
    }

    /// Removed at once when dropped, even in a server: the folder holds a
    /// credential's file, which goes with its call, not after it.
    pub fn remove_inline(&mut self) {
        self.inline = true;
    }

    pub fn path(&self) -> &Path {
        // Taken only by `drop`.
        self.dir.as_ref().map_or_else(|| Path::new(""), TempDir::path)
    }

    /// What a server's call does while its CLI runs: it removes the folders of the
    /// calls that ended and makes the next call's folder. `None` outside a server.
    pub fn meanwhile(&self) -> Option<crate::runtime::Meanwhile> {
        let (folders, parent) = self.ahead.clone()?;
        Some(crate::runtime::Meanwhile(Box::new(move || folders.tidy(&parent))))
    }
}

impl Drop for CallFolder {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else {
            return;
        };
        match &self.ahead {
            Some((folders, _)) if !self.inline => folders.behind(dir),
            _ => drop(dir),
        }
    }
}

/// A server's folders: the one made ahead, in which process folder, and those of
/// finished calls.
#[derive(Debug, Default)]
pub(super) struct Folders {
    spare: Mutex<Option<(PathBuf, TempDir)>>,
    finished: Mutex<Vec<TempDir>>,
}

impl Folders {
    /// A folder in process folder `parent` for a call: the one made ahead when it is
    /// there, else one made now.
    pub(super) fn take(self: &Arc<Self>, parent: &Path) -> std::io::Result<CallFolder> {
        let spare = self
            .spare
            .lock()
            .ok()
            .and_then(|mut spare| spare.take())
            // Made in this very process folder, and still there: a cleaner of old
            // files may have taken it, or the process folder was made again.
            .filter(|(made_in, dir)| made_in == parent && dir.path().is_dir())
            .map(|(_, dir)| dir);
        let dir = match spare {
            Some(dir) => dir,
            None => super::temp::call_folder(parent)?,
        };
        Ok(CallFolder {
            dir: Some(dir),
            ahead: Some((Arc::clone(self), parent.to_path_buf())),
            inline: false,
        })
    }

    /// A finished call's folder, removed by a later call.
    fn behind(&self, dir: TempDir) {
        match self.finished.lock() {
            Ok(mut finished) => finished.push(dir),
            Err(_) => drop(dir),
        }
    }

    /// Removes the finished calls' folders, and makes the next call's folder in
    /// `parent` unless one is made.
    fn tidy(&self, parent: &Path) {
        let finished = self
            .finished
            .lock()
            .map(|mut finished| std::mem::take(&mut *finished))
            .unwrap_or_default();
        drop(finished);
        let Ok(mut spare) = self.spare.lock() else {
            return;
        };
        if spare.is_none()
            && let Ok(dir) = super::temp::call_folder(parent)
        {
            *spare = Some((parent.to_path_buf(), dir));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spare_path(folders: &Folders) -> Option<PathBuf> {
        folders
            .spare
            .lock()
            .unwrap()
            .as_ref()
            .map(|(_, dir)| dir.path().to_path_buf())
    }

    /// The folder made ahead goes to the next call, to that one only; a finished
    /// call's folder is removed by a later call's work; each folder is private and
    /// empty.
    #[test]
    fn folders_are_made_ahead_taken_once_and_removed_behind() {
        let parent = tempfile::tempdir().unwrap();
        let folders = Arc::new(Folders::default());
        let first = folders.take(parent.path()).unwrap();
        assert_eq!(spare_path(&folders), None, "made while a call runs, not before");
        (first.meanwhile().unwrap().0)();
        let made = spare_path(&folders).unwrap();
        let second = folders.take(parent.path()).unwrap();
        assert_eq!(second.path(), made, "the folder made ahead is the next call's");
        assert_ne!(first.path(), second.path());
        (second.meanwhile().unwrap().0)();
        let third = spare_path(&folders).unwrap();
        assert_ne!(third, made, "a folder made ahead is taken by one call only");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(second.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        assert_eq!(std::fs::read_dir(second.path()).unwrap().count(), 0);
        std::fs::write(first.path().join("left"), "by the pack").unwrap();
        let gone = first.path().to_path_buf();
        drop(first);
        assert!(gone.exists(), "removed by a later call, not on the call's path");
        (second.meanwhile().unwrap().0)();
        assert!(!gone.exists());
    }

    /// A folder made ahead that was removed meanwhile, or made in another process
    /// folder, is not handed out.
    #[test]
    fn a_folder_made_ahead_that_is_gone_is_not_used() {
        let parent = tempfile::tempdir().unwrap();
        let folders = Arc::new(Folders::default());
        (folders.take(parent.path()).unwrap().meanwhile().unwrap().0)();
        let made = spare_path(&folders).unwrap();
        std::fs::remove_dir(&made).unwrap();
        let next = folders.take(parent.path()).unwrap();
        assert!(next.path().is_dir());
        assert_ne!(next.path(), made);
        (next.meanwhile().unwrap().0)();
        let other = tempfile::tempdir().unwrap();
        let elsewhere = folders.take(other.path()).unwrap();
        assert!(elsewhere.path().starts_with(other.path()));
    }

    /// A folder that holds a credential's file is gone when its call's folder is
    /// dropped; any other stays until a later call removes it.
    #[test]
    fn a_folder_removed_inline_is_gone_at_once() {
        let parent = tempfile::tempdir().unwrap();
        let folders = Arc::new(Folders::default());
        let mut secret = folders.take(parent.path()).unwrap();
        let other = folders.take(parent.path()).unwrap();
        std::fs::write(secret.path().join("hcpx-binding-TOKEN"), "value").unwrap();
        secret.remove_inline();
        let (secret_path, other_path) = (secret.path().to_path_buf(), other.path().to_path_buf());
        drop((secret, other));
        assert!(!secret_path.exists(), "removed with its call");
        assert!(other_path.exists(), "left for a later call");
        // Gone with the server's folders at the latest.
        drop(folders);
        assert!(!other_path.exists());
    }
}
