//! Kept captures as files in `$HCP_HOME/mcp/outputs/` (a `--stateless` server, see
//! docs/mcp.md): replicas that share `$HCP_HOME` page each other's outputs. The
//! same bounds as in memory, counted over the folder, whichever replica wrote what:
//! [`BUDGET`] in all, the oldest dropped first, each for [`FORGET`]. One file per
//! capture, named by its id (`out-` and 32 random hex digits: unguessable, and no
//! path), holding a header line with both streams' lengths, then the streams. A
//! capture is written beside its place and renamed there, under a lock of the
//! folder's, so that no replica reads one half written; a file whose lengths do not
//! match (cut short by a crash) is never served.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{BUDGET, FORGET, Stored};
use crate::state::{Lock, Wait};

/// The header's first word, and the format's version.
const MAGIC: &str = "hcpx-output 1";
/// The lock every writer of the folder holds.
const LOCK: &str = ".lock";
/// The prefix of the ids of captures on disk.
const PREFIX: &str = "out-";
/// Hex digits after the prefix: 128 random bits.
const DIGITS: usize = 32;

#[derive(Debug)]
pub(crate) struct DiskStore {
    folder: PathBuf,
}

impl DiskStore {
    pub(crate) fn new(folder: PathBuf) -> Self {
        Self { folder }
    }

    /// A fresh id, or `None` when the system gives no randomness.
    pub(crate) fn new_id() -> Option<String> {
        let mut bytes = [0_u8; DIGITS / 2];
        File::open("/dev/urandom")
            .and_then(|mut random| random.read_exact(&mut bytes))
            .ok()?;
        let digits: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        Some(format!("{PREFIX}{digits}"))
    }

    /// Keeps a capture under `id`, dropping what the bounds want dropped first. A
    /// failure is logged: the result already holds its view, and only paging is lost.
    pub(crate) fn insert(&self, id: &str, stdout: &str, stderr: &str) {
        if let Err(error) = self.write(id, stdout, stderr) {
            tracing::warn!("an output cannot be kept in {}: {error}", self.folder.display());
        }
    }

    fn write(&self, id: &str, stdout: &str, stderr: &str) -> std::io::Result<()> {
        if !is_id(id) {
            return Err(std::io::Error::other("not an output id"));
        }
        let size = (stdout.len() + stderr.len()) as u64;
        let _lock = Lock::take(&self.folder.join(LOCK), Wait::Yes).map_err(std::io::Error::other)?;
        self.make_room(size, SystemTime::now());
        let mut temp = tempfile::Builder::new()
            .prefix(&format!(".{id}."))
            .suffix(".tmp")
            .tempfile_in(&self.folder)?;
        writeln!(temp, "{MAGIC} {} {}", stdout.len(), stderr.len())?;
        temp.write_all(stdout.as_bytes())?;
        temp.write_all(stderr.as_bytes())?;
        temp.persist(self.folder.join(id))
            .map(drop)
            .map_err(|error| error.error)
    }

    /// Removes expired captures, the temporary files of writes a crash cut short
    /// (the lock is held: none is in flight), and the oldest captures until `adding`
    /// more bytes fit in [`BUDGET`].
    fn make_room(&self, adding: u64, now: SystemTime) {
        let mut kept: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(&self.folder).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(metadata) = entry.metadata() else { continue };
            if crate::state::is_temporary(&name) {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            if !is_id(&name) || !metadata.is_file() {
                continue;
            }
            let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if expired(modified, now) {
                let _ = std::fs::remove_file(entry.path());
            } else {
                kept.push((modified, metadata.len(), entry.path()));
            }
        }
        kept.sort();
        let mut held: u64 = kept.iter().map(|(_, size, _)| size).sum::<u64>() + adding;
        for (_, size, path) in kept {
            if held <= BUDGET as u64 {
                break;
            }
            let _ = std::fs::remove_file(path);
            held -= size;
        }
    }

    /// The capture kept under `id`, unless it is gone, expired or not whole.
    pub(crate) fn get(&self, id: &str) -> Option<Stored> {
        if !is_id(id) {
            return None;
        }
        read(&self.folder.join(id), id, SystemTime::now())
    }
}

fn expired(modified: SystemTime, now: SystemTime) -> bool {
    now.duration_since(modified).unwrap_or(Duration::ZERO) > FORGET
}

/// Whether `name` is an id of a capture on disk: `out-` and 32 lowercase hex digits.
fn is_id(name: &str) -> bool {
    name.strip_prefix(PREFIX).is_some_and(|digits| {
        digits.len() == DIGITS
            && digits
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn read(path: &Path, id: &str, now: SystemTime) -> Option<Stored> {
    let mut file = File::open(path).ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || expired(metadata.modified().ok()?, now) || metadata.len() > BUDGET as u64 + 64 {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).ok()?);
    file.read_to_end(&mut bytes).ok()?;
    let newline = bytes.iter().position(|byte| *byte == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let lengths = header.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    let (stdout, stderr) = lengths.split_once(' ')?;
    let (stdout, stderr): (usize, usize) = (stdout.parse().ok()?, stderr.parse().ok()?);
    let body = &bytes[newline + 1..];
    if body.len() != stdout.checked_add(stderr)? {
        return None;
    }
    let (out, err) = body.split_at(stdout);
    Some(Stored {
        id: id.to_owned(),
        stdout: String::from_utf8(out.to_vec()).ok()?,
        stderr: String::from_utf8(err.to_vec()).ok()?,
        created: std::time::Instant::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, DiskStore) {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("outputs");
        std::fs::create_dir(&folder).unwrap();
        (dir, DiskStore::new(folder))
    }

    #[test]
    fn a_capture_is_read_back_by_another_store_on_the_same_folder() {
        let (_dir, store) = store();
        let id = DiskStore::new_id().unwrap();
        assert!(is_id(&id), "{id}");
        store.insert(&id, "out é\n", "err\n");
        // Another replica: another store on the same folder.
        let other = DiskStore::new(store.folder.clone());
        let stored = other.get(&id).unwrap();
        assert_eq!(
            (stored.stdout.as_str(), stored.stderr.as_str()),
            ("out é\n", "err\n")
        );
        assert!(other.get(&DiskStore::new_id().unwrap()).is_none());
    }

    /// An id is a file name: one that is not ours is never a path, so no id reads
    /// `$HCP_HOME`'s other files (bindings) or anything else.
    #[test]
    fn an_id_that_is_not_ours_reads_nothing() {
        let (dir, store) = store();
        let secret = format!("{MAGIC} 6 0\nsecret");
        std::fs::write(dir.path().join("bindings.json"), &secret).unwrap();
        std::fs::write(store.folder.join("out-1"), &secret).unwrap();
        for id in [
            "../bindings.json",
            "out-../../bindings.json",
            "out-1",
            "/etc/passwd",
            "out-0123456789ABCDEF0123456789ABCDEF",
            "",
        ] {
            assert!(store.get(id).is_none(), "{id}");
        }
        store.insert("../escaped", "x", "");
        assert!(!dir.path().join("escaped").exists());
    }

    #[test]
    fn a_capture_cut_short_is_never_served() {
        let (_dir, store) = store();
        let id = DiskStore::new_id().unwrap();
        store.insert(&id, "0123456789", "");
        let path = store.folder.join(&id);
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert!(store.get(&id).is_none());
        std::fs::write(&path, b"garbage").unwrap();
        assert!(store.get(&id).is_none());
    }

    #[test]
    fn the_oldest_go_past_the_budget_and_every_one_after_its_time() {
        let (_dir, store) = store();
        let big = "x".repeat(BUDGET / 2 - 1024);
        let first = DiskStore::new_id().unwrap();
        store.insert(&first, &big, "");
        // Older on disk than the next one, whatever the clock's grain.
        let earlier = SystemTime::now() - Duration::from_secs(5);
        File::options()
            .write(true)
            .open(store.folder.join(&first))
            .unwrap()
            .set_modified(earlier)
            .unwrap();
        let second = DiskStore::new_id().unwrap();
        store.insert(&second, &big, "");
        assert!(store.get(&first).is_some(), "both fit");
        let third = DiskStore::new_id().unwrap();
        store.insert(&third, &big, "");
        assert!(store.get(&first).is_none(), "over budget: the oldest goes");
        assert!(store.get(&second).is_some() && store.get(&third).is_some());
        // A leftover of a write a crash cut short goes with the next write.
        let leftover = store.folder.join(format!(".{first}.abc123.tmp"));
        std::fs::write(&leftover, "half").unwrap();
        // After its time a capture is not read, and the next write removes it.
        let path = store.folder.join(&second);
        let old = SystemTime::now() - FORGET - Duration::from_secs(1);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(store.get(&second).is_none());
        store.insert(&DiskStore::new_id().unwrap(), "new", "");
        assert!(!path.exists() && !leftover.exists());
    }
}
