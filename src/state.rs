//! Writes to the user's state files (see README.md): `$HCP_HOME` created 0700 on first
//! write; every file replaced atomically (a temporary file in the same folder, synced,
//! then renamed) while holding an exclusive lock, so a crash leaves the old or the new
//! file and a second `hcpx` process never interleaves with this one.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot create {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Creates `$HCP_HOME` (mode 0700) if it does not exist yet.
pub(crate) fn ensure_home(home: &Path) -> Result<(), StateError> {
    if home.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(home).map_err(|source| StateError::CreateDir {
        path: home.to_path_buf(),
        source,
    })
}

/// An exclusive advisory lock on `$HCP_HOME/.lock`, released on drop.
pub(crate) struct Lock {
    _file: File,
}

impl Lock {
    /// The lock for the state files (policy, bindings, packs).
    pub(crate) fn acquire(home: &Path) -> Result<Self, StateError> {
        Self::named(home, ".lock")
    }

    /// A lock of its own, so appending to the audit log while holding the state lock
    /// can never wait on itself.
    fn named(home: &Path, name: &str) -> Result<Self, StateError> {
        ensure_home(home)?;
        let path = home.join(name);
        let lock_error = |source| StateError::Lock {
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(lock_error)?;
        #[cfg(unix)]
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|errno| lock_error(std::io::Error::from(errno)))?;
        Ok(Self { _file: file })
    }
}

/// Replaces `path` with `contents` atomically, with the given Unix mode. The caller
/// holds the [`Lock`] when it read the old contents to compute the new ones.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), StateError> {
    let write_error = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(write_error)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(write_error)?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    temp.write_all(contents).map_err(write_error)?;
    temp.as_file().sync_all().map_err(write_error)?;
    temp.persist(path).map_err(|error| write_error(error.error))?;
    // Make the rename itself durable.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Appends one line with a single `write` on an `O_APPEND` file (mode 0600) under
/// the lock, so concurrent writers never interleave inside a line.
pub(crate) fn append_line(home: &Path, path: &Path, line: &str) -> Result<(), StateError> {
    let _lock = Lock::named(home, ".append.lock")?;
    let write_error = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(write_error)?;
    let mut buffer = String::with_capacity(line.len() + 1);
    buffer.push_str(line);
    buffer.push('\n');
    file.write_all(buffer.as_bytes()).map_err(write_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("a/b");
        ensure_home(&home).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&home).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
    }

    #[test]
    fn atomic_write_replaces_with_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bindings.json");
        std::fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("bindings.json")]);
    }

    #[test]
    fn appending_while_holding_the_state_lock_does_not_wait() {
        let dir = tempfile::tempdir().unwrap();
        let _held = Lock::acquire(dir.path()).unwrap();
        append_line(dir.path(), &dir.path().join("audit.log"), "{}").unwrap();
    }

    #[test]
    fn concurrent_appends_never_interleave() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        let log = home.join("audit.log");
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (home, log) = (home.clone(), log.clone());
                std::thread::spawn(move || {
                    for i in 0..50 {
                        append_line(
                            &home,
                            &log,
                            &format!("{{\"t\":{t},\"i\":{i},\"pad\":\"{}\"}}", "x".repeat(3000)),
                        )
                        .unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.lines().count(), 400);
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }
}
