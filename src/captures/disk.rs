//! Kept captures as files in `$HCP_HOME/mcp/outputs/` (a `--stateless` server, see
//! docs/mcp.md): replicas that share `$HCP_HOME` page each other's outputs. The
//! same bounds as in memory, counted over the folder, whichever replica wrote what:
//! [`BUDGET`] in all, the oldest dropped first, each for [`FORGET`]. One file per
//! capture, named by its id (`out-` and 32 random hex digits: unguessable, and no
//! path), holding a header line with both streams' lengths and its owner (the OAuth
//! subject whose call made it, or none), then the streams. A capture is served
//! only to a call of its owner: to any other it is not there, as in memory. A
//! capture is written beside its place and renamed there, under a lock of the
//! folder's, so that no replica reads one half written; a file whose lengths do not
//! match (cut short by a crash), or of another version of the format (version 1
//! recorded no owner), is never served.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{BUDGET, FORGET, Stored};
use crate::state::{Lock, Wait};

/// The header's first word, and the format's version: 2 records the owner.
const MAGIC: &str = "hcpx-output 2";
/// The owner field of a capture made for no OAuth subject.
const NO_OWNER: &str = "-";
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

    /// Keeps `owner`'s capture under `id`, dropping what the bounds want dropped
    /// first. A failure is logged: the result already holds its view, and only
    /// paging is lost.
    pub(crate) fn insert(&self, id: &str, owner: Option<&str>, stdout: &str, stderr: &str) {
        if let Err(error) = self.write(id, owner, stdout, stderr) {
            tracing::warn!("an output cannot be kept in {}: {error}", self.folder.display());
        }
    }

    fn write(&self, id: &str, owner: Option<&str>, stdout: &str, stderr: &str) -> std::io::Result<()> {
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
        writeln!(
            temp,
            "{MAGIC} {} {} {}",
            stdout.len(),
            stderr.len(),
            owner_field(owner)
        )?;
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

    /// The capture kept under `id` for `owner`, unless it is gone, expired, not
    /// whole, or another caller's.
    pub(crate) fn get(&self, id: &str, owner: Option<&str>) -> Option<Stored> {
        if !is_id(id) {
            return None;
        }
        read(&self.folder.join(id), id, owner, SystemTime::now())
    }
}

/// The header's owner field: `-` for none, else `s` and the subject's bytes in
/// lowercase hex (a subject is any string: no space or newline of its own reaches
/// the header, and no two subjects share a field).
fn owner_field(owner: Option<&str>) -> String {
    match owner {
        None => NO_OWNER.to_owned(),
        Some(subject) => {
            let mut field = String::with_capacity(1 + 2 * subject.len());
            field.push('s');
            for byte in subject.bytes() {
                field.push_str(&format!("{byte:02x}"));
            }
            field
        }
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

fn read(path: &Path, id: &str, owner: Option<&str>, now: SystemTime) -> Option<Stored> {
    let mut file = File::open(path).ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || expired(metadata.modified().ok()?, now) || metadata.len() > BUDGET as u64 + 64 {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).ok()?);
    file.read_to_end(&mut bytes).ok()?;
    let newline = bytes.iter().position(|byte| *byte == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let mut fields = header.strip_prefix(MAGIC)?.strip_prefix(' ')?.split(' ');
    let (Some(stdout), Some(stderr), Some(recorded), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return None;
    };
    // Another subject's (or a capture of no subject's, for a subject) is not there.
    if recorded != owner_field(owner) {
        return None;
    }
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
        owner: owner.map(str::to_owned),
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
        store.insert(&id, None, "out é\n", "err\n");
        // Another replica: another store on the same folder.
        let other = DiskStore::new(store.folder.clone());
        let stored = other.get(&id, None).unwrap();
        assert_eq!(
            (stored.stdout.as_str(), stored.stderr.as_str()),
            ("out é\n", "err\n")
        );
        assert!(other.get(&DiskStore::new_id().unwrap(), None).is_none());
    }

    /// An id is a file name: one that is not ours is never a path, so no id reads
    /// `$HCP_HOME`'s other files (bindings) or anything else.
    #[test]
    fn an_id_that_is_not_ours_reads_nothing() {
        let (dir, store) = store();
        let secret = format!("{MAGIC} 6 0 {NO_OWNER}\nsecret");
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
            assert!(store.get(id, None).is_none(), "{id}");
        }
        store.insert("../escaped", None, "x", "");
        assert!(!dir.path().join("escaped").exists());
    }

    /// Replicas keep an OAuth caller's capture as its subject's alone, as one server
    /// does in memory: another replica reading it for another subject, or for a
    /// caller without one, finds nothing; nor does a subject find a capture of no
    /// subject's. A subject that could pass for another in the header does not.
    #[test]
    fn a_capture_on_disk_is_its_subjects_alone() {
        let (_dir, store) = store();
        let other = DiskStore::new(store.folder.clone());
        let alices = DiskStore::new_id().unwrap();
        store.insert(&alices, Some("alice"), "alice's", "");
        assert_eq!(other.get(&alices, Some("alice")).unwrap().stdout, "alice's");
        for intruder in [Some("bob"), Some("Alice"), Some(""), Some("alice "), None] {
            assert!(other.get(&alices, intruder).is_none(), "{intruder:?}");
        }
        let anyones = DiskStore::new_id().unwrap();
        store.insert(&anyones, None, "anyone's", "");
        assert!(other.get(&anyones, Some("alice")).is_none());
        assert!(other.get(&anyones, Some("-")).is_none());
        assert_eq!(other.get(&anyones, None).unwrap().stdout, "anyone's");
        // A subject with a space or a newline cannot forge the header's fields.
        let odd = DiskStore::new_id().unwrap();
        store.insert(&odd, Some("eve 1\n-"), "eve's", "");
        assert!(other.get(&odd, None).is_none());
        assert!(other.get(&odd, Some("eve")).is_none());
        assert_eq!(other.get(&odd, Some("eve 1\n-")).unwrap().stdout, "eve's");
        // The owner is in the file's header, readable by whoever audits the folder.
        let header = std::fs::read_to_string(store.folder.join(&alices)).unwrap();
        assert_eq!(header.lines().next(), Some("hcpx-output 2 7 0 s616c696365"));
    }

    /// A file of the first format recorded no owner: it is never served, to anyone.
    #[test]
    fn a_capture_of_the_first_format_is_never_served() {
        let (_dir, store) = store();
        let id = DiskStore::new_id().unwrap();
        std::fs::write(store.folder.join(&id), "hcpx-output 1 6 0\nsecret").unwrap();
        assert!(store.get(&id, None).is_none());
        assert!(store.get(&id, Some("alice")).is_none());
    }

    #[test]
    fn a_capture_cut_short_is_never_served() {
        let (_dir, store) = store();
        let id = DiskStore::new_id().unwrap();
        store.insert(&id, None, "0123456789", "");
        let path = store.folder.join(&id);
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert!(store.get(&id, None).is_none());
        std::fs::write(&path, b"garbage").unwrap();
        assert!(store.get(&id, None).is_none());
    }

    #[test]
    fn the_oldest_go_past_the_budget_and_every_one_after_its_time() {
        let (_dir, store) = store();
        let big = "x".repeat(BUDGET / 2 - 1024);
        let first = DiskStore::new_id().unwrap();
        store.insert(&first, None, &big, "");
        // Older on disk than the next one, whatever the clock's grain.
        let earlier = SystemTime::now() - Duration::from_secs(5);
        File::options()
            .write(true)
            .open(store.folder.join(&first))
            .unwrap()
            .set_modified(earlier)
            .unwrap();
        let second = DiskStore::new_id().unwrap();
        store.insert(&second, None, &big, "");
        assert!(store.get(&first, None).is_some(), "both fit");
        let third = DiskStore::new_id().unwrap();
        store.insert(&third, None, &big, "");
        assert!(store.get(&first, None).is_none(), "over budget: the oldest goes");
        assert!(store.get(&second, None).is_some() && store.get(&third, None).is_some());
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
        assert!(store.get(&second, None).is_none());
        store.insert(&DiskStore::new_id().unwrap(), None, "new", "");
        assert!(!path.exists() && !leftover.exists());
    }
}
