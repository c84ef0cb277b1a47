//! The calls' private temporary folders of a long-lived server, made ahead and
//! removed behind: making one costs a `mkdir` on the temporary folder's filesystem
//! (0.1 ms on ext4 here) and removing it an `rmdir` or more, both on the call's path
//! when done inline. A server's cache keeps one folder made ahead for the next call
//! and hands the folders of finished calls to a thread of its own, which removes
//! them off the call's path.
//!
//! Nothing about a folder changes: it is made the same way (mode 0700, in the
//! process's own 0700 folder, see `temp.rs`), empty until its call gets it, and taken
//! by one call only. A finished call's folder is removed after its result is made,
//! when no process of the call is left (the keeper has killed them all) to read it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use tempfile::TempDir;

/// A call's private temporary folder: removed when dropped, at once or (a server's)
/// by the folder thread.
#[derive(Debug)]
pub struct CallFolder {
    dir: Option<TempDir>,
    behind: Option<mpsc::Sender<Job>>,
}

impl CallFolder {
    /// A folder removed at once when dropped.
    pub(super) fn inline(dir: TempDir) -> Self {
        Self {
            dir: Some(dir),
            behind: None,
        }
    }

    /// Removed at once when dropped, even in a server: the folder holds a
    /// credential's file, which goes with its call, not after it.
    pub fn remove_inline(&mut self) {
        self.behind = None;
    }

    pub fn path(&self) -> &Path {
        // Taken only by `drop`.
        self.dir.as_ref().map_or_else(|| Path::new(""), TempDir::path)
    }
}

impl Drop for CallFolder {
    fn drop(&mut self) {
        if let (Some(dir), Some(behind)) = (self.dir.take(), self.behind.take())
            && let Err(mpsc::SendError(Job::Remove(dir))) = behind.send(Job::Remove(dir))
        {
            // The thread is gone: removed here.
            drop(dir);
        }
    }
}

enum Job {
    /// Make the next call's folder in this process folder, unless one is made.
    Make(PathBuf),
    Remove(TempDir),
}

/// The folder made ahead: in which process folder, and the folder.
type Spare = Option<(PathBuf, TempDir)>;

/// The folder thread and the folder it made ahead.
#[derive(Debug)]
pub(super) struct Ahead {
    jobs: Mutex<mpsc::Sender<Job>>,
    spare: Arc<Mutex<Spare>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Make(parent) => write!(f, "Make({})", parent.display()),
            Self::Remove(dir) => write!(f, "Remove({})", dir.path().display()),
        }
    }
}

impl Ahead {
    /// Starts the folder thread; `None` when no thread can be started (folders are
    /// then made and removed inline).
    pub(super) fn start() -> Option<Self> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let spare: Arc<Mutex<Spare>> = Arc::default();
        let made = Arc::clone(&spare);
        std::thread::Builder::new()
            .name("hcpx-folders".to_owned())
            .spawn(move || {
                // Ends when the cache, and every call folder it handed out, is gone.
                for job in inbox {
                    match job {
                        Job::Make(parent) => {
                            let wanted = made.lock().is_ok_and(|spare| spare.is_none());
                            if wanted && let Ok(dir) = super::temp::call_folder(&parent) {
                                match made.lock() {
                                    Ok(mut spare) if spare.is_none() => *spare = Some((parent, dir)),
                                    // Another was made meanwhile, or the lock is
                                    // poisoned: this one goes.
                                    _ => drop(dir),
                                }
                            }
                        }
                        Job::Remove(dir) => drop(dir),
                    }
                }
            })
            .ok()?;
        Some(Self {
            jobs: Mutex::new(jobs),
            spare,
        })
    }

    /// A folder in process folder `parent` for a call: the one made ahead when it is
    /// there, else one made now; either way the next one is then made ahead.
    pub(super) fn take(&self, parent: &Path) -> std::io::Result<CallFolder> {
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
        let behind = self.jobs.lock().ok().map(|jobs| jobs.clone());
        if let Some(jobs) = &behind {
            let _ = jobs.send(Job::Make(parent.to_path_buf()));
        }
        Ok(CallFolder {
            dir: Some(dir),
            behind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_for(what: impl Fn() -> bool) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !what() {
            assert!(std::time::Instant::now() < until, "timed out");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn spare_path(ahead: &Ahead) -> Option<PathBuf> {
        ahead
            .spare
            .lock()
            .unwrap()
            .as_ref()
            .map(|(_, dir)| dir.path().to_path_buf())
    }

    /// The folder made ahead goes to the next call, to that one only; a finished
    /// call's folder is removed by the thread; each folder is private and empty.
    #[test]
    fn folders_are_made_ahead_taken_once_and_removed_behind() {
        let parent = tempfile::tempdir().unwrap();
        let ahead = Ahead::start().unwrap();
        let first = ahead.take(parent.path()).unwrap();
        wait_for(|| spare_path(&ahead).is_some());
        let made = spare_path(&ahead).unwrap();
        let second = ahead.take(parent.path()).unwrap();
        assert_eq!(second.path(), made, "the folder made ahead is the next call's");
        assert_ne!(first.path(), second.path());
        wait_for(|| spare_path(&ahead).is_some());
        let third = spare_path(&ahead).unwrap();
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
        wait_for(|| !gone.exists());
    }

    /// A folder made ahead that was removed meanwhile, or made in another process
    /// folder, is not handed out.
    #[test]
    fn a_folder_made_ahead_that_is_gone_is_not_used() {
        let parent = tempfile::tempdir().unwrap();
        let ahead = Ahead::start().unwrap();
        drop(ahead.take(parent.path()).unwrap());
        wait_for(|| spare_path(&ahead).is_some());
        let made = spare_path(&ahead).unwrap();
        std::fs::remove_dir(&made).unwrap();
        let next = ahead.take(parent.path()).unwrap();
        assert!(next.path().is_dir());
        assert_ne!(next.path(), made);
        let other = tempfile::tempdir().unwrap();
        wait_for(|| spare_path(&ahead).is_some());
        let elsewhere = ahead.take(other.path()).unwrap();
        assert!(elsewhere.path().starts_with(other.path()));
    }

    /// A folder that holds a credential's file is gone when its call's folder is
    /// dropped, even while the thread is held up; any other goes when the thread
    /// gets to it.
    #[test]
    fn a_folder_removed_inline_is_gone_at_once() {
        let parent = tempfile::tempdir().unwrap();
        let ahead = Ahead::start().unwrap();
        let mut secret = ahead.take(parent.path()).unwrap();
        let other = ahead.take(parent.path()).unwrap();
        wait_for(|| spare_path(&ahead).is_some());
        // The thread waits for this lock at its next job.
        let held = ahead.spare.lock().unwrap();
        ahead
            .jobs
            .lock()
            .unwrap()
            .send(Job::Make(parent.path().to_path_buf()))
            .unwrap();
        std::fs::write(secret.path().join("hcpx-binding-TOKEN"), "value").unwrap();
        secret.remove_inline();
        let (secret_path, other_path) = (secret.path().to_path_buf(), other.path().to_path_buf());
        drop((secret, other));
        assert!(!secret_path.exists(), "removed with its call");
        assert!(other_path.exists(), "the thread is held up");
        drop(held);
        wait_for(|| !other_path.exists());
    }
}
