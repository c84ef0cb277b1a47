//! The freshness key of the packs index: what identifies the packs as they are (the
//! running binary, the packs compiled into it (built in and catalog), the generation token, and the identity and
//! times of `packs/` and the lock file) and the stamps of one pack's files, with
//! the rule for when a key read now is too recent to write down ([`RACY`]).

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::bytes::{Reader, Writer};
use crate::catalog::{MANIFEST_FILE, SKILL_FILE};
use crate::layout;

/// A key part changed less than this long ago is "racy": file times come from a
/// coarse clock (a few ms on Linux, up to 2 s on some file systems), so a change
/// made in the same tick would leave the part as it is. Such an index is used for
/// this call only and not written; a later call writes it.
pub(crate) const RACY: Duration = Duration::from_secs(2);

/// What identifies one file or folder: which inode it is and when it last changed.
/// `ctime` cannot be set back by a program, so a change that restores the
/// modification time still shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamp {
    present: bool,
    dev: u64,
    ino: u64,
    size: u64,
    /// Nanoseconds since the epoch.
    mtime: i128,
    ctime: i128,
}

impl Stamp {
    pub(crate) fn of(path: &Path) -> Self {
        let Ok(meta) = std::fs::metadata(path) else {
            return Self::default();
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
            Self {
                present: true,
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime: ns(meta.mtime(), meta.mtime_nsec()),
                ctime: ns(meta.ctime(), meta.ctime_nsec()),
            }
        }
        #[cfg(not(unix))]
        {
            let ns = |time: std::io::Result<SystemTime>| {
                time.ok()
                    .and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok())
                    .map_or(0, |elapsed| elapsed.as_nanos() as i128)
            };
            Self {
                present: true,
                dev: 0,
                ino: 0,
                size: meta.len(),
                mtime: ns(meta.modified()),
                ctime: ns(meta.created()),
            }
        }
    }

    /// Whether a change made now could leave it as it is: both its times are less
    /// than [`RACY`] before `now` (or after it). A change sets both to the current
    /// tick, so one older time (an mtime set back) is enough to show it.
    fn racy(&self, now: SystemTime) -> bool {
        let now = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos() as i128);
        let window = RACY.as_nanos() as i128;
        self.present && (now - self.mtime.min(self.ctime)) < window
    }

    pub(super) fn put(&self, out: &mut Writer) {
        out.u8(u8::from(self.present));
        out.u64(self.dev);
        out.u64(self.ino);
        out.u64(self.size);
        out.i128(self.mtime);
        out.i128(self.ctime);
    }

    pub(super) fn get(input: &mut Reader<'_>) -> Option<Self> {
        Some(Self {
            present: input.u8()? != 0,
            dev: input.u64()?,
            ino: input.u64()?,
            size: input.u64()?,
            mtime: input.i128()?,
            ctime: input.i128()?,
        })
    }
}

/// An installed pack's folder and its two text files, as they were when the pack
/// was read for the index.
pub(crate) type PackStamp = [Stamp; 3];

pub(crate) fn pack_stamp(dir: &Path) -> PackStamp {
    [
        Stamp::of(dir),
        Stamp::of(&dir.join(MANIFEST_FILE)),
        Stamp::of(&dir.join(SKILL_FILE)),
    ]
}

/// What the index is valid for. Read before the packs are scanned, so a change
/// made during the scan leaves a key that no longer matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    /// The running binary (another build may parse packs differently).
    program: Stamp,
    /// The digest of the packs compiled in: the built-in ones and the catalog.
    builtins: u64,
    /// The generation token ([`layout::bump_generation`]), empty when there is none.
    generation: Vec<u8>,
    /// `packs/`.
    packs: Stamp,
    /// The lock file.
    lock: Stamp,
}

impl Key {
    /// The key of `home`'s packs now; `program` is the running binary, if known.
    pub(crate) fn read(home: &Path, program: Option<&Path>) -> Self {
        Self {
            program: program.map(Stamp::of).unwrap_or_default(),
            builtins: crate::catalog::embedded_digest(),
            generation: layout::generation(home),
            packs: Stamp::of(&layout::packs(home)),
            lock: Stamp::of(&layout::lock_file(home)),
        }
    }

    /// Whether `packs/` is there (else only the built-in packs are).
    pub(super) fn has_packs(&self) -> bool {
        self.packs.present
    }

    /// Whether a change made now could leave the key as it is (see [`RACY`]): an
    /// index for it is used, never kept.
    pub(crate) fn racy(&self, now: SystemTime) -> bool {
        self.packs.racy(now) || self.lock.racy(now)
    }

    pub(super) fn put(&self, out: &mut Writer) {
        self.program.put(out);
        out.u64(self.builtins);
        out.bytes(&self.generation);
        self.packs.put(out);
        self.lock.put(out);
    }

    pub(super) fn get(input: &mut Reader<'_>) -> Option<Self> {
        Some(Self {
            program: Stamp::get(input)?,
            builtins: input.u64()?,
            generation: input.bytes()?.to_vec(),
            packs: Stamp::get(input)?,
            lock: Stamp::get(input)?,
        })
    }
}
