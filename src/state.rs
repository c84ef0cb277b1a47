//! Writes to the user's state files (see README.md): `$HCP_HOME` created 0700 on first
//! write; every file replaced atomically (a temporary file in the same folder, synced,
//! then renamed) while holding an exclusive lock, so a crash leaves the old or the new
//! file and a second `hcpx` process never interleaves with this one; lines appended
//! whole. Which files and locks there are is [`crate::layout`]'s: taking its state
//! lock removes the temporary files of writes that a kill cut short.

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

/// An exclusive advisory lock on a file of `$HCP_HOME`, released on drop. Which
/// files are locks, and what taking the state lock also does, is
/// [`crate::layout`]'s.
pub(crate) struct Lock {
    _file: File,
}

/// Whether taking a [`Lock`] waits for whoever holds it.
#[derive(Clone, Copy)]
pub(crate) enum Wait {
    Yes,
    No,
}

impl Lock {
    /// Locks the file at `path` (created, as the folder it is in, if need be).
    /// `None` when `wait` is [`Wait::No`] and someone holds it.
    pub(crate) fn take(path: &Path, wait: Wait) -> Result<Option<Self>, StateError> {
        ensure_home(path.parent().unwrap_or(Path::new(".")))?;
        let lock_error = |source| StateError::Lock {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(lock_error)?;
        #[cfg(unix)]
        {
            use rustix::fs::FlockOperation;
            let operation = match wait {
                Wait::Yes => FlockOperation::LockExclusive,
                Wait::No => FlockOperation::NonBlockingLockExclusive,
            };
            match rustix::fs::flock(&file, operation) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) if matches!(wait, Wait::No) => return Ok(None),
                Err(errno) => return Err(lock_error(std::io::Error::from(errno))),
            }
        }
        #[cfg(not(unix))]
        let _ = wait;
        Ok(Some(Self { _file: file }))
    }
}

/// Removes the temporary files (`.NAME.XXXXXX.tmp`) that atomic writes left in `dir`
/// when hcpx was killed in the middle of one. The caller holds the lock every writer
/// of `dir` writes under, so none of them is a write in flight.
pub(crate) fn remove_temporaries_in(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let temporary = entry.file_name().to_str().is_some_and(is_temporary);
        if temporary
            && entry.file_type().is_ok_and(|kind| kind.is_file())
            && let Err(error) = std::fs::remove_file(entry.path())
        {
            tracing::debug!("cannot remove {}: {error}", entry.path().display());
        }
    }
}

/// Whether `name` is one [`write_atomic`] gives its temporary files: `.`, the
/// file's name, `.`, tempfile's six random letters and digits, `.tmp`.
pub(crate) fn is_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|name| name.strip_suffix(".tmp"))
        .and_then(|stem| stem.rsplit_once('.'))
        .is_some_and(|(file, random)| {
            !file.is_empty() && random.len() == 6 && random.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// Replaces `path` with `contents` atomically, with the given Unix mode, through a
/// temporary file `.NAME.XXXXXX.tmp` beside it. The caller holds the [`Lock`]: when
/// it read the old contents to compute the new ones, and always in `$HCP_HOME`,
/// where taking the lock removes such files.
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
    // Closed before it takes the name: a program replaced here may be run at once by
    // another thread or process, and a file still open for writing cannot run
    // ("Text file busy").
    temp.into_temp_path()
        .persist(path)
        .map_err(|error| write_error(error.error))?;
    // Make the rename itself durable.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Tests: the size of the pieces [`append_line`] writes a line in, as a short
    /// write or a file system whose appends are not atomic (NFS) would leave it.
    static APPEND_PIECES: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Appends one line to `path` (mode 0600), one buffer written to an `O_APPEND` file,
/// holding the lock at `lock` for as long as the line takes. One `write` of a regular
/// file is not interleaved with another on a local file system, but a line may take
/// more than one (`write_all` goes on after a short write) and an `O_APPEND` write
/// is not atomic on every file system (NFS): the lock keeps the line whole there.
pub(crate) fn append_line(lock: &Path, path: &Path, line: &str) -> Result<(), StateError> {
    let _lock = Lock::take(lock, Wait::Yes)?;
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
    #[cfg(test)]
    if let Some(piece) = APPEND_PIECES.with(std::cell::Cell::get) {
        for piece in buffer.as_bytes().chunks(piece) {
            file.write_all(piece).map_err(write_error)?;
            std::thread::yield_now();
        }
        return Ok(());
    }
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

    /// Replaced, not rewritten: a reader that opened the old file (or a hard link to
    /// it) keeps reading the old contents whole, and the name points to a new file.
    #[test]
    fn atomic_write_replaces_with_mode_and_leaves_no_temp() {
        use std::io::Read as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bindings.json");
        std::fs::write(&path, "old").unwrap();
        let mut reader = File::open(&path).unwrap();
        #[cfg(unix)]
        let before = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(&path).unwrap().ino()
        };
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mut old = String::new();
        reader.read_to_string(&mut old).unwrap();
        assert_eq!(old, "old", "the file was written in place");
        #[cfg(unix)]
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let meta = std::fs::metadata(&path).unwrap();
            assert_ne!(meta.ino(), before, "the same file, written in place");
            assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        }
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("bindings.json")]);
    }

    #[test]
    fn temporaries_are_the_names_write_atomic_gives() {
        for name in [
            ".packs.lock.json.Ab3dE9.tmp",
            ".bindings.json.000000.tmp",
            ".x.zzzzzz.tmp",
        ] {
            assert!(is_temporary(name), "{name}");
        }
        for name in [
            "packs.lock.json.Ab3dE9.tmp",
            ".packs.lock.json.tmp",
            ".policy.json.short.tmp",
            "..Ab3dE9.tmp",
            ".x.Ab3d-9.tmp",
            ".x.Ab3dE9.tmp.old",
            ".lock",
        ] {
            assert!(!is_temporary(name), "{name}");
        }
    }

    /// What the append lock is for: a line that takes more than one `write` (here
    /// written in pieces, as after a short write or on a file system whose appends
    /// are not atomic) is never cut by another writer's.
    #[test]
    fn concurrent_appends_never_interleave() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(".append.lock");
        let log = dir.path().join("audit.log");
        let line = |t: usize, i: usize| format!("{{\"t\":{t},\"i\":{i},\"pad\":\"{}\"}}", "x".repeat(3000));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (lock, log) = (lock.clone(), log.clone());
                std::thread::spawn(move || {
                    APPEND_PIECES.with(|pieces| pieces.set(Some(256)));
                    for i in 0..50 {
                        append_line(&lock, &log, &line(t, i)).unwrap();
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
        let mut written: Vec<&str> = text.lines().collect();
        written.sort_unstable();
        let mut expected: Vec<String> = (0..8).flat_map(|t| (0..50).map(move |i| line(t, i))).collect();
        expected.sort_unstable();
        assert_eq!(written, expected, "every line whole, once");
    }
}
