//! The on-disk index of the catalog, `$HCP_HOME/packs.index` (see README.md): every
//! pack's id and origin, the installed packs that are broken, and the search index,
//! so that a CLI run ranks a query or names the closest ids without parsing every
//! installed manifest. It is a cache and never an authority: a pack it names is
//! read from its own files before it is shown, and `exec` and `skill` read it only
//! to name the closest ids to one that is not there.
//!
//! Freshness: the index records a [`Key`] read *before* the packs were scanned (the
//! binary, the built-in packs, the generation token install bumps after every
//! change, and the identity and times of `packs/` and `packs.lock.json`), and is
//! used only while the key read now is equal. An index that is torn, foreign, of
//! another format or fails its checksum is ignored and rebuilt. A key whose times
//! are so recent that a second change could fall in the same clock tick is not
//! written down ([`RACY`]). A pack edited in place (no key part changes) is caught
//! when it is a result: its files' stamps differ from the recorded ones, and the
//! index is rebuilt before anything is shown; a broken pack's stamps are checked
//! on every load, so one fixed in place is found at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::catalog::{BrokenPack, Catalog, MANIFEST_FILE, Origin, Pack, SKILL_FILE};
use crate::manifest::Problem;
use crate::search::{Postings, SearchIndex};
use crate::state;

/// The index, next to `packs.lock.json` (never inside `packs/`, whose times are
/// part of the key).
pub const INDEX_FILE: &str = "packs.index";
/// A token install and uninstall rewrite after every change to `packs/` (see
/// [`bump_generation`]).
pub const GENERATION_FILE: &str = "packs.generation";

const MAGIC: &[u8; 8] = b"HCPXIDX\n";
/// Bumped whenever the layout below changes: an index of another format is rebuilt.
const FORMAT: u32 = 1;
/// A key part changed less than this long ago is "racy": file times come from a
/// coarse clock (a few ms on Linux, up to 2 s on some file systems), so a change
/// made in the same tick would leave the part as it is. Such an index is used for
/// this call only and not written; a later call writes it.
pub const RACY: Duration = Duration::from_secs(2);
/// The longest generation token read (the file is hcpx's own, 32 hex digits).
const MAX_GENERATION: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an index of the packs as they are: {why}")]
    Unusable { path: PathBuf, why: &'static str },
}

/// What identifies one file or folder: which inode it is and when it last changed.
/// `ctime` cannot be set back by a program, so a change that restores the
/// modification time still shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    present: bool,
    dev: u64,
    ino: u64,
    size: u64,
    /// Nanoseconds since the epoch.
    mtime: i128,
    ctime: i128,
}

impl Stamp {
    pub fn of(path: &Path) -> Self {
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

    fn put(&self, out: &mut Writer) {
        out.u8(u8::from(self.present));
        out.u64(self.dev);
        out.u64(self.ino);
        out.u64(self.size);
        out.i128(self.mtime);
        out.i128(self.ctime);
    }

    fn get(input: &mut Reader<'_>) -> Option<Self> {
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
type PackStamp = [Stamp; 3];

fn pack_stamp(dir: &Path) -> PackStamp {
    [
        Stamp::of(dir),
        Stamp::of(&dir.join(MANIFEST_FILE)),
        Stamp::of(&dir.join(SKILL_FILE)),
    ]
}

/// What the index is valid for. Read before the packs are scanned, so a change
/// made during the scan leaves a key that no longer matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The running binary (another build may parse packs differently).
    program: Stamp,
    builtins: u64,
    /// [`GENERATION_FILE`]'s contents, empty when there is none.
    generation: Vec<u8>,
    packs: Stamp,
    lock: Stamp,
}

impl Key {
    /// The key of `home`'s packs now; `program` is the running binary, if known.
    pub fn read(home: &Path, program: Option<&Path>) -> Self {
        let mut generation = std::fs::read(home.join(GENERATION_FILE)).unwrap_or_default();
        generation.truncate(MAX_GENERATION);
        Self {
            program: program.map(Stamp::of).unwrap_or_default(),
            builtins: crate::catalog::builtins_digest(),
            generation,
            packs: Stamp::of(&home.join("packs")),
            lock: Stamp::of(&home.join(crate::install::LOCK_FILE)),
        }
    }

    fn racy(&self, now: SystemTime) -> bool {
        self.packs.racy(now) || self.lock.racy(now)
    }

    fn put(&self, out: &mut Writer) {
        self.program.put(out);
        out.u64(self.builtins);
        out.bytes(&self.generation);
        self.packs.put(out);
        self.lock.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Option<Self> {
        Some(Self {
            program: Stamp::get(input)?,
            builtins: input.u64()?,
            generation: input.bytes()?.to_vec(),
            packs: Stamp::get(input)?,
            lock: Stamp::get(input)?,
        })
    }
}

/// Writes a new generation token: whoever changed `packs/` (install, uninstall,
/// recovery) calls it, holding the state lock, once the change is complete and
/// before its journal goes, so an index made before or during the change is never
/// taken for the packs after it, whatever the clocks say.
pub fn bump_generation(home: &Path) -> Result<(), state::StateError> {
    use std::hash::{BuildHasher as _, Hasher as _};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let mut token = String::with_capacity(32);
    for round in 0..2_u64 {
        // A hasher with a random key per process and per call.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u32(std::process::id());
        hasher.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        hasher.write_u64(round);
        token.push_str(&format!("{:016x}", hasher.finish()));
    }
    state::write_atomic(&home.join(GENERATION_FILE), token.as_bytes(), 0o600)
}

/// Which words of the stored search index a call decodes: a query looks only at
/// the words one of its terms begins, so a CLI run skips the postings of all the
/// others (most of the file) and ranks exactly as with all of them.
#[derive(Debug, Clone, Copy)]
enum Wanted<'q> {
    /// Every word (tests compare the whole index).
    #[cfg(test)]
    All,
    Prefixed(&'q [String]),
}

impl Wanted<'_> {
    fn wants(self, word: &str) -> bool {
        match self {
            #[cfg(test)]
            Self::All => true,
            Self::Prefixed(terms) => terms.iter().any(|term| word.starts_with(term.as_str())),
        }
    }
}

/// One pack of the catalog, in id order, at the position the search index uses.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    id: String,
    /// `false` for a built-in pack.
    installed: bool,
}

/// Where each installed pack's stamps are, by position.
#[derive(Debug)]
enum Stamps {
    /// Taken just now (`None` for a built-in pack).
    Held(Vec<Option<PackStamp>>),
    /// In the index file, [`RECORD`] bytes each from `offset`, read when needed.
    File { file: std::fs::File, offset: u64 },
}

/// The catalog as the index holds it: every id, the broken installed packs and the
/// search index; the packs themselves only when it was just built from them.
#[derive(Debug)]
pub struct Snapshot {
    entries: Vec<Entry>,
    pub broken: Vec<BrokenPack>,
    /// For each broken pack installed in `packs/`, its folder's stamp: a broken pack
    /// is fixed in place more often than any other is edited, so these few are
    /// checked on every load.
    broken_stamps: Vec<Option<PackStamp>>,
    search: SearchIndex,
    stamps: Stamps,
    packs: Option<Vec<Pack>>,
    /// Held packs are checked against their stamps before they are returned: set
    /// when a [`Memo`] keeps the snapshot beyond the call that built it.
    recheck: bool,
}

/// A pack the index names is not as it was when the index was made.
#[derive(Debug)]
struct Stale;

/// What [`search`] found: the packs, best first, each with its score.
#[derive(Debug)]
pub struct Found {
    pub hits: Vec<(Pack, f64)>,
    /// Matches under the relevance floor, not in `hits` (see [`SearchIndex::rank`]).
    pub below_floor: usize,
    pub broken: Vec<BrokenPack>,
}

/// What a search asks: its words, how many results at most, and whether the
/// matches under the relevance floor are kept (see [`SearchIndex::search`]).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub text: &'a str,
    pub limit: usize,
    pub all: bool,
}

impl<'a> Query<'a> {
    pub fn new(text: &'a str, limit: usize, all: bool) -> Self {
        Self { text, limit, all }
    }
}

/// Ranks `query` over the catalog of `home` (see [`SearchIndex::search`]), from the
/// index while it is fresh; every result is read from its own files.
pub fn search(home: &Path, program: Option<&Path>, query: Query<'_>) -> Found {
    search_at(home, program, query, SystemTime::now())
}

/// [`search`] as at `now`, which decides whether a key is racy.
fn search_at(home: &Path, program: Option<&Path>, query: Query<'_>, now: SystemTime) -> Found {
    let Query {
        text: query,
        limit,
        all,
    } = query;
    let terms: Vec<String> = crate::search::words(query).collect();
    let snapshot = Snapshot::load_at(home, program, now, Wanted::Prefixed(&terms));
    match snapshot.found(home, query, limit, all) {
        Ok(found) => found,
        Err(Stale) => {
            // A result changed since the index was made (edited in place, which no
            // key part shows): rebuild from the files, and answer from what was read.
            let rebuilt = Snapshot::build(home, Key::read(home, program), now);
            rebuilt.found(home, query, limit, all).unwrap_or(Found {
                hits: Vec::new(),
                below_floor: 0,
                broken: rebuilt.broken,
            })
        }
    }
}

/// The index held in memory by a long-lived server (the MCP server's catalog
/// cache), with the freshness rules of the file: used while the [`Key`] read now is
/// the one it was built for and its broken packs are unchanged; each result's files
/// are checked against their stamps before it is returned, and a result edited in
/// place rebuilds it. A call costs a few `stat`s and the ranking, instead of the
/// `stat` of every installed pack's files. Rebuilding also writes the index file.
#[derive(Debug, Default)]
pub struct Memo {
    current: std::sync::Mutex<Option<(Key, std::sync::Arc<Snapshot>)>>,
    /// How many times the packs were read (tests).
    #[cfg(test)]
    builds: std::sync::atomic::AtomicUsize,
}

impl Memo {
    /// [`search`], from the snapshot held while it is fresh.
    pub fn search(&self, home: &Path, program: Option<&Path>, query: Query<'_>) -> Found {
        self.search_at(home, program, query, SystemTime::now())
    }

    fn search_at(&self, home: &Path, program: Option<&Path>, query: Query<'_>, now: SystemTime) -> Found {
        let Query {
            text: query,
            limit,
            all,
        } = query;
        // Built-in packs only (no `packs/`) are held too: the ranking is built once.
        let key = Key::read(home, program);
        let held = self.current.lock().ok().and_then(|guard| {
            guard
                .as_ref()
                .filter(|(seen, _)| *seen == key)
                .map(|(_, snapshot)| snapshot.clone())
        });
        if let Some(snapshot) = held
            && snapshot.broken_unchanged(home)
            && let Ok(found) = snapshot.found(home, query, limit, all)
        {
            return found;
        }
        #[cfg(test)]
        self.builds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut snapshot = Snapshot::build(home, key.clone(), now);
        let found = snapshot
            .found(home, query, limit, all)
            .unwrap_or_else(|Stale| Found {
                hits: Vec::new(),
                below_floor: 0,
                broken: snapshot.broken.clone(),
            });
        // Kept only when no change can hide in the clock tick the key was read in.
        if let Ok(mut guard) = self.current.lock() {
            *guard = (!key.racy(now)).then(|| {
                snapshot.recheck = true;
                (key, std::sync::Arc::new(snapshot))
            });
        }
        found
    }
}

/// Every pack id there is and the broken installed packs, for naming the closest
/// ids to an unknown one.
pub fn known(home: &Path, program: Option<&Path>) -> Catalog {
    let snapshot = Snapshot::load_at(home, program, SystemTime::now(), Wanted::Prefixed(&[]));
    Catalog::known(
        snapshot.entries.into_iter().map(|entry| entry.id).collect(),
        snapshot.broken,
    )
}

impl Snapshot {
    /// The index of `home` if it is there and fresh (only the `wanted` words of its
    /// search index), else the catalog read now (and written down for the next
    /// call). `now` decides whether the key is racy.
    fn load_at(home: &Path, program: Option<&Path>, now: SystemTime, wanted: Wanted<'_>) -> Self {
        let key = Key::read(home, program);
        if !key.packs.present {
            // Built-in packs only: nothing to index.
            let packs_dir = home.join("packs");
            return Self::from_catalog(Catalog::load(&packs_dir), &packs_dir, &HashMap::new());
        }
        match read(home, &key, wanted) {
            Ok(snapshot) if snapshot.broken_unchanged(home) => snapshot,
            Ok(_) => {
                tracing::debug!("rebuilding the packs index: a broken pack changed");
                Self::build(home, key, now)
            }
            Err(error) => {
                tracing::debug!("rebuilding the packs index: {error}");
                Self::build(home, key, now)
            }
        }
    }

    /// Reads every pack now and writes the index for `key`, which was read before,
    /// unless the key is racy at `now` or `packs/` is missing. A write that fails
    /// (a read-only `HCP_HOME`) only costs the next call a rebuild.
    fn build(home: &Path, key: Key, now: SystemTime) -> Self {
        let packs_dir = home.join("packs");
        // Each folder's stamp is taken before it is read: a pack changed in between
        // is newer than its stamp, so it shows as changed later, never the reverse.
        let mut stamps = HashMap::new();
        if let Ok(entries) = std::fs::read_dir(&packs_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !name.starts_with('.') {
                    stamps.insert(name, pack_stamp(&entry.path()));
                }
            }
        }
        let snapshot = Self::from_catalog(Catalog::load(&packs_dir), &packs_dir, &stamps);
        if key.packs.present && !key.racy(now) {
            // Under the state lock, as every write in `HCP_HOME` is, so that whoever
            // takes it may remove the temporary file of a write cut short; never
            // waited for: a change in flight leaves this index stale anyway.
            match state::Lock::try_acquire(home) {
                Ok(Some(_lock)) => {
                    let bytes = snapshot.encode(&key);
                    if let Err(error) = state::write_atomic(&home.join(INDEX_FILE), &bytes, 0o600) {
                        tracing::debug!("the packs index was not written: {error}");
                    }
                }
                Ok(None) => tracing::debug!("the packs index was not written: the state is being changed"),
                Err(error) => tracing::debug!("the packs index was not written: {error}"),
            }
        }
        snapshot
    }

    fn from_catalog(catalog: Catalog, packs_dir: &Path, stamps: &HashMap<String, PackStamp>) -> Self {
        let entries = catalog
            .packs
            .iter()
            .map(|pack| Entry {
                id: pack.id().to_owned(),
                installed: matches!(pack.origin, Origin::Installed { .. }),
            })
            .collect();
        let held = catalog
            .packs
            .iter()
            .map(|pack| match pack.origin {
                Origin::Builtin { .. } => None,
                Origin::Installed { .. } => Some(stamps.get(pack.id()).copied().unwrap_or_default()),
            })
            .collect();
        let broken_stamps = catalog
            .broken
            .iter()
            .map(|broken| {
                // Installed ones only: a built-in's `dir` is a path inside the binary.
                let installed = broken.dir == packs_dir.join(&broken.id);
                installed.then(|| stamps.get(&broken.id).copied().unwrap_or_default())
            })
            .collect();
        Self {
            entries,
            search: SearchIndex::build(&catalog.packs),
            broken: catalog.broken,
            broken_stamps,
            stamps: Stamps::Held(held),
            packs: Some(catalog.packs),
            recheck: false,
        }
    }

    /// Whether every broken installed pack is as it was when the index was made.
    fn broken_unchanged(&self, home: &Path) -> bool {
        self.broken
            .iter()
            .zip(&self.broken_stamps)
            .all(|(broken, stamp)| {
                stamp.is_none_or(|stamp| pack_stamp(&home.join("packs").join(&broken.id)) == stamp)
            })
    }

    /// The results of `query`, each read from its files (or held, when just built).
    fn found(&self, home: &Path, query: &str, limit: usize, all: bool) -> Result<Found, Stale> {
        let ranked = if all {
            crate::search::Ranked {
                hits: self.search.search(query, limit),
                below_floor: 0,
            }
        } else {
            self.search.rank(query, limit)
        };
        let hits = ranked
            .hits
            .into_iter()
            .map(|hit| Ok((self.pack(home, hit.index)?, hit.score)))
            .collect::<Result<Vec<_>, Stale>>()?;
        Ok(Found {
            hits,
            below_floor: ranked.below_floor,
            broken: self.broken.clone(),
        })
    }

    /// The pack at `index`: held, built in, or read from its folder, which must be
    /// as it was when the index was made.
    fn pack(&self, home: &Path, index: usize) -> Result<Pack, Stale> {
        if let Some(packs) = &self.packs {
            let pack = packs.get(index).ok_or(Stale)?;
            if self.recheck
                && let Origin::Installed { dir } = &pack.origin
                && pack_stamp(dir) != self.stamp(index)?
            {
                return Err(Stale);
            }
            return Ok(pack.clone());
        }
        let entry = self.entries.get(index).ok_or(Stale)?;
        if !entry.installed {
            return crate::catalog::builtin(&entry.id).ok_or(Stale);
        }
        let recorded = self.stamp(index)?;
        let dir = home.join("packs").join(&entry.id);
        if pack_stamp(&dir) != recorded {
            return Err(Stale);
        }
        match crate::catalog::load_dir(&dir) {
            Ok((manifest, skill)) if manifest.id == entry.id => Ok(Pack {
                manifest,
                skill,
                origin: Origin::Installed { dir },
            }),
            _ => Err(Stale),
        }
    }

    /// The stamps recorded for the installed pack at `index`, checked.
    fn stamp(&self, index: usize) -> Result<PackStamp, Stale> {
        match &self.stamps {
            Stamps::Held(held) => held.get(index).copied().flatten().ok_or(Stale),
            Stamps::File { file, offset } => {
                let bytes = read_at(file, offset + (index * RECORD) as u64, RECORD).map_err(|_| Stale)?;
                let (stamps, sum) = bytes.split_at(3 * STAMP);
                if checksum(stamps).to_le_bytes() != *sum {
                    return Err(Stale);
                }
                get_pack_stamp(&mut Reader { bytes: stamps, at: 0 }).ok_or(Stale)
            }
        }
    }

    fn encode(&self, key: &Key) -> Vec<u8> {
        let mut head = Writer::default();
        key.put(&mut head);
        head.len(self.entries.len());
        for entry in &self.entries {
            head.str(&entry.id);
            head.u8(u8::from(entry.installed));
        }
        head.len(self.broken.len());
        for (broken, stamp) in self.broken.iter().zip(&self.broken_stamps) {
            head.str(&broken.id);
            head.str(&broken.dir.to_string_lossy());
            match stamp {
                None => head.u8(0),
                Some(stamps) => {
                    head.u8(1);
                    stamps.iter().for_each(|stamp| stamp.put(&mut head));
                }
            }
            head.len(broken.problems.len());
            for problem in &broken.problems {
                head.str(&problem.path);
                head.str(&problem.message);
            }
        }
        let (words, _) = self.search.parts();
        let mut postings = Writer::default();
        head.len(words.len());
        for (word, list) in words {
            let start = postings.0.len();
            for (pack, fields) in list {
                postings.u32(*pack);
                postings.u8(*fields);
            }
            head.str(word);
            head.u64(start as u64);
            head.len(list.len());
            head.u64(checksum(&postings.0[start..]));
        }
        head.u64(postings.0.len() as u64);
        let mut stamps = Writer::default();
        for index in 0..self.entries.len() {
            let start = stamps.0.len();
            let stamp = match &self.stamps {
                Stamps::Held(held) => held.get(index).copied().flatten().unwrap_or_default(),
                Stamps::File { .. } => PackStamp::default(),
            };
            stamp.iter().for_each(|stamp| stamp.put(&mut stamps));
            let sum = checksum(&stamps.0[start..]);
            stamps.u64(sum);
        }
        let head = head.0;
        let mut out = Vec::with_capacity(HEADER + head.len() + stamps.0.len() + postings.0.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&(head.len() as u64).to_le_bytes());
        out.extend_from_slice(&checksum(&head).to_le_bytes());
        out.extend_from_slice(&head);
        out.extend_from_slice(&stamps.0);
        out.extend_from_slice(&postings.0);
        out
    }

    /// The snapshot in `file`, if it is a whole index of this format for `key` and
    /// holds together (ids valid and in order, words in order, postings inside the
    /// id list). Only the head (ids, broken packs, the word list) is read now, and
    /// the postings of the `wanted` words; a result's stamps are read when it is one.
    /// Every part read is checked against its checksum.
    fn decode(file: std::fs::File, key: &Key, wanted: Wanted<'_>) -> Result<Self, &'static str> {
        let size = file.metadata().map_err(|_| "unreadable")?.len();
        let header = read_at(&file, 0, HEADER).map_err(|_| "truncated")?;
        if header[..8] != *MAGIC {
            return Err("not an index");
        }
        if header[8..12] != FORMAT.to_le_bytes() {
            return Err("another format");
        }
        let mut fixed = Reader {
            bytes: &header[12..],
            at: 0,
        };
        let malformed = "malformed";
        let head_len = fixed.u64().ok_or(malformed)?;
        let head_sum = fixed.u64().ok_or(malformed)?;
        if head_len > size.saturating_sub(HEADER as u64) {
            return Err("truncated or torn");
        }
        let head = read_at(
            &file,
            HEADER as u64,
            usize::try_from(head_len).map_err(|_| malformed)?,
        )
        .map_err(|_| "truncated")?;
        if checksum(&head) != head_sum {
            return Err("damaged (checksum)");
        }
        let mut input = Reader { bytes: &head, at: 0 };
        if Key::get(&mut input).ok_or(malformed)? != *key {
            return Err("stale");
        }
        let mut entries: Vec<Entry> = Vec::new();
        for _ in 0..input.len().ok_or(malformed)? {
            let id = input.str().ok_or(malformed)?;
            let installed = match input.u8().ok_or(malformed)? {
                0 => false,
                1 => true,
                _ => return Err(malformed),
            };
            let in_order = entries.last().is_none_or(|last| *last.id < *id);
            if !crate::template::is_pack_id(id) || !in_order {
                return Err(malformed);
            }
            entries.push(Entry {
                id: id.to_owned(),
                installed,
            });
        }
        let mut broken = Vec::new();
        let mut broken_stamps = Vec::new();
        for _ in 0..input.len().ok_or(malformed)? {
            let id = input.str().ok_or(malformed)?.to_owned();
            let dir = PathBuf::from(input.str().ok_or(malformed)?);
            broken_stamps.push(match input.u8().ok_or(malformed)? {
                0 => None,
                1 => Some(get_pack_stamp(&mut input).ok_or(malformed)?),
                _ => return Err(malformed),
            });
            if broken_stamps.last().is_some_and(Option::is_some) && !crate::template::is_pack_id(&id) {
                return Err(malformed);
            }
            let mut problems = Vec::new();
            for _ in 0..input.len().ok_or(malformed)? {
                problems.push(Problem {
                    path: input.str().ok_or(malformed)?.to_owned(),
                    message: input.str().ok_or(malformed)?.to_owned(),
                });
            }
            broken.push(BrokenPack { id, dir, problems });
        }
        // The word list, whole; the wanted words' places in the postings.
        let mut chosen: Vec<(&str, u64, usize, u64)> = Vec::new();
        let mut previous: Option<&str> = None;
        for _ in 0..input.len().ok_or(malformed)? {
            let word = input.str().ok_or(malformed)?;
            let (start, count, sum) = (
                input.u64().ok_or(malformed)?,
                input.len().ok_or(malformed)?,
                input.u64().ok_or(malformed)?,
            );
            if previous.is_some_and(|last| last >= word) {
                return Err(malformed);
            }
            previous = Some(word);
            if wanted.wants(word) {
                chosen.push((word, start, count, sum));
            }
        }
        let postings_len = input.u64().ok_or(malformed)?;
        if input.at != head.len() {
            return Err(malformed);
        }
        let stamps_at = HEADER as u64 + head_len;
        let postings_at = stamps_at + entries.len() as u64 * RECORD as u64;
        if postings_at.checked_add(postings_len) != Some(size) {
            return Err("truncated or torn");
        }
        let mut words: Vec<(Box<str>, Postings)> = Vec::with_capacity(chosen.len());
        // The chosen words of one prefix are neighbours, and so are their postings:
        // read each run of them at once.
        let mut run = 0;
        while run < chosen.len() {
            let mut end = run + 1;
            while end < chosen.len()
                && chosen[end].1 == chosen[end - 1].1 + chosen[end - 1].2 as u64 * POSTING as u64
            {
                end += 1;
            }
            let from = chosen[run].1;
            let to = chosen[end - 1].1 + chosen[end - 1].2 as u64 * POSTING as u64;
            if to > postings_len || from > to {
                return Err(malformed);
            }
            let bytes = read_at(
                &file,
                postings_at + from,
                usize::try_from(to - from).map_err(|_| malformed)?,
            )
            .map_err(|_| "truncated")?;
            for &(word, start, count, sum) in &chosen[run..end] {
                let offset = usize::try_from(start - from).map_err(|_| malformed)?;
                let raw = bytes.get(offset..offset + count * POSTING).ok_or(malformed)?;
                if checksum(raw) != sum {
                    return Err("damaged (checksum)");
                }
                let mut list = Vec::with_capacity(count);
                for posting in raw.chunks_exact(POSTING) {
                    let pack = u32::from_le_bytes([posting[0], posting[1], posting[2], posting[3]]);
                    if pack as usize >= entries.len() {
                        return Err(malformed);
                    }
                    list.push((pack, posting[4]));
                }
                words.push((word.into(), list));
            }
            run = end;
        }
        let ids = entries.iter().map(|entry| entry.id.clone()).collect();
        Ok(Self {
            entries,
            broken,
            broken_stamps,
            search: SearchIndex::from_parts(words, ids),
            stamps: Stamps::File {
                file,
                offset: stamps_at,
            },
            packs: None,
            recheck: false,
        })
    }
}

/// The fixed start of the file: magic, format, the head's length and checksum.
const HEADER: usize = 28;
/// One posting: the pack's position (u32) and its field bits.
const POSTING: usize = 5;
/// One installed pack's stamps (three of [`STAMP`] bytes) and their checksum.
const RECORD: usize = 3 * STAMP + 8;
/// [`Stamp::put`]'s size.
const STAMP: usize = 1 + 3 * 8 + 2 * 16;

fn get_pack_stamp(input: &mut Reader<'_>) -> Option<PackStamp> {
    Some([Stamp::get(input)?, Stamp::get(input)?, Stamp::get(input)?])
}

/// `len` bytes of `file` from `offset`, all of them or an error.
fn read_at(file: &std::fs::File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0; len];
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt as _;
        file.read_exact_at(&mut bytes, offset)?;
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read as _, Seek as _};
        let mut file = file;
        file.seek(std::io::SeekFrom::Start(offset))?;
        file.read_exact(&mut bytes)?;
    }
    Ok(bytes)
}

/// The index of `home`, if it is there, whole and for `key`.
fn read(home: &Path, key: &Key, wanted: Wanted<'_>) -> Result<Snapshot, IndexError> {
    let path = home.join(INDEX_FILE);
    let file = std::fs::File::open(&path).map_err(|source| IndexError::Read {
        path: path.clone(),
        source,
    })?;
    Snapshot::decode(file, key, wanted).map_err(|why| IndexError::Unusable { path, why })
}

/// A fast 64-bit checksum, eight bytes at a time (FxHash's mixing): it tells a torn
/// or damaged file from a whole one; it is no defence against a forger, who could
/// as well edit the packs in the same folder.
fn checksum(bytes: &[u8]) -> u64 {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mix = |hash: u64, word: u64| (hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    let mut chunks = bytes.chunks_exact(8);
    let mut hash = mix(0, bytes.len() as u64);
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        hash = mix(hash, u64::from_le_bytes(word));
    }
    let mut tail = [0; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(hash, u64::from_le_bytes(tail))
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, value: u8) {
        self.0.push(value);
    }
    fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn i128(&mut self, value: i128) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn len(&mut self, value: usize) {
        self.u32(u32::try_from(value).unwrap_or(u32::MAX));
    }
    fn bytes(&mut self, value: &[u8]) {
        self.len(value.len());
        self.0.extend_from_slice(value);
    }
    fn str(&mut self, value: &str) {
        self.bytes(value.as_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Some(array)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }
    fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.array()?))
    }
    fn len(&mut self) -> Option<usize> {
        usize::try_from(u32::from_le_bytes(self.array()?)).ok()
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long after any file the test touched: the key is never racy.
    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(3600)
    }

    fn write_pack(home: &Path, id: &str, description: &str) {
        let dir = home.join("packs").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(MANIFEST_FILE),
            format!(
                r#"{{"hcp":1,"id":"{id}","version":"1.0.0","description":"{description}","bin":["w"],"commands":{{"now":{{"summary":"s","effect":"read","argv":[]}}}}}}"#
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join(SKILL_FILE),
            format!("---\nname: {id}\ndescription: {description}\n---\nBody of {id}.\n"),
        )
        .unwrap();
    }

    fn ids(found: &Found) -> Vec<String> {
        found.hits.iter().map(|(pack, _)| pack.id().to_owned()).collect()
    }

    fn home_with_packs() -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        write_pack(home.path(), "weather", "rain forecast");
        write_pack(home.path(), "tides", "sea forecast");
        write_pack(home.path(), "broken", "x");
        std::fs::write(home.path().join("packs/broken/hcp.json"), "{").unwrap();
        home
    }

    /// The index as it is on disk, if it is there and fresh for the packs now.
    fn on_disk(home: &Path) -> Option<Snapshot> {
        read(home, &Key::read(home, None), Wanted::All).ok()
    }

    #[test]
    fn the_index_ranks_as_the_catalog_does() {
        let home = home_with_packs();
        let built = Snapshot::build(home.path(), Key::read(home.path(), None), later());
        let stored = on_disk(home.path()).expect("written");
        assert!(stored.packs.is_none(), "read from disk, not held");
        assert_eq!(stored.entries, built.entries);
        assert_eq!(stored.broken.len(), 1);
        assert_eq!(stored.broken[0].id, "broken");
        for query in ["forecast", "rain", "sea forecast", "git", "fore", "", "zebra"] {
            let expected = ids(&built.found(home.path(), query, 10, true).unwrap());
            let got = ids(&stored.found(home.path(), query, 10, true).unwrap());
            assert_eq!(got, expected, "{query}");
            let scores = |found: Found| found.hits.into_iter().map(|(_, score)| score).collect::<Vec<_>>();
            let terms: Vec<String> = crate::search::words(query).collect();
            let key = Key::read(home.path(), None);
            let only = read(home.path(), &key, Wanted::Prefixed(&terms)).unwrap();
            assert!(only.search.parts().0.len() <= stored.search.parts().0.len());
            assert_eq!(
                scores(only.found(home.path(), query, 10, true).unwrap()),
                scores(built.found(home.path(), query, 10, true).unwrap()),
                "{query}: the query's words alone rank the same"
            );
            assert_eq!(
                ids(&search_at(
                    home.path(),
                    None,
                    Query::new(query, 10, true),
                    later()
                )),
                expected,
                "{query}"
            );
            // Above the relevance floor only: as the catalog ranks it.
            let floored = built.found(home.path(), query, 10, false).unwrap();
            let from_disk = search_at(home.path(), None, Query::new(query, 10, false), later());
            assert_eq!(ids(&from_disk), ids(&floored), "{query}");
            assert_eq!(from_disk.below_floor, floored.below_floor, "{query}");
        }
        assert_eq!(
            ids(&search_at(
                home.path(),
                None,
                Query::new("forecast", 10, true),
                later()
            )),
            ["tides", "weather"]
        );
    }

    /// The index is written under the state lock (whoever takes it removes the
    /// temporary files of writes cut short), and not at all while it is held.
    #[test]
    fn the_index_is_written_only_under_the_state_lock() {
        let home = home_with_packs();
        let held = state::Lock::acquire(home.path()).unwrap();
        Snapshot::build(home.path(), Key::read(home.path(), None), later());
        assert!(on_disk(home.path()).is_none(), "written while the lock was held");
        drop(held);
        Snapshot::build(home.path(), Key::read(home.path(), None), later());
        assert!(on_disk(home.path()).is_some());
    }

    #[test]
    fn each_part_of_the_key_invalidates_the_index() {
        let home = home_with_packs();
        let build = || {
            Snapshot::build(home.path(), Key::read(home.path(), None), later());
            assert!(on_disk(home.path()).is_some());
        };
        build();
        bump_generation(home.path()).unwrap();
        assert!(on_disk(home.path()).is_none(), "a new generation");
        build();
        std::fs::write(home.path().join(crate::install::LOCK_FILE), "{}").unwrap();
        assert!(on_disk(home.path()).is_none(), "the lock file changed");
        build();
        write_pack(home.path(), "added", "by hand");
        assert!(on_disk(home.path()).is_none(), "a folder added to packs/");
        build();
        std::fs::remove_dir_all(home.path().join("packs/added")).unwrap();
        assert!(on_disk(home.path()).is_none(), "a folder removed from packs/");
        build();
        let program = home.path().join("hcpx");
        std::fs::write(&program, "another build").unwrap();
        assert!(
            read(home.path(), &Key::read(home.path(), Some(&program)), Wanted::All).is_err(),
            "another binary"
        );
    }

    #[test]
    fn an_install_or_uninstall_is_seen_at_once() {
        let home = tempfile::tempdir().unwrap();
        let files: crate::install::Files = [
            (
                MANIFEST_FILE.to_owned(),
                br#"{"hcp":1,"id":"demo","version":"1.0.0","description":"a demo of hail","bin":["w"],"commands":{"go":{"summary":"s","effect":"read","argv":[]}}}"#.to_vec(),
            ),
            (SKILL_FILE.to_owned(), b"---\nname: demo\ndescription: d\n---\n".to_vec()),
        ]
        .into();
        let manifest = crate::install::validate(&files).unwrap();
        write_pack(home.path(), "weather", "rain forecast");
        assert!(
            ids(&search_at(
                home.path(),
                None,
                Query::new("hail", 10, true),
                later()
            ))
            .is_empty()
        );
        assert!(on_disk(home.path()).is_some());
        crate::install::place(home.path(), &files, &manifest, "./demo", "t".into()).unwrap();
        assert_eq!(
            ids(&search_at(
                home.path(),
                None,
                Query::new("hail", 10, true),
                later()
            )),
            ["demo"]
        );
        assert!(crate::install::remove(home.path(), "demo").unwrap());
        assert!(
            ids(&search_at(
                home.path(),
                None,
                Query::new("hail", 10, true),
                later()
            ))
            .is_empty()
        );
    }

    #[test]
    fn install_and_uninstall_bump_the_generation() {
        let home = tempfile::tempdir().unwrap();
        let generation = || std::fs::read(home.path().join(GENERATION_FILE)).ok();
        let files: crate::install::Files = [
            (
                MANIFEST_FILE.to_owned(),
                br#"{"hcp":1,"id":"demo","version":"1.0.0","description":"d","bin":["w"],"commands":{"go":{"summary":"s","effect":"read","argv":[]}}}"#.to_vec(),
            ),
            (SKILL_FILE.to_owned(), b"---\nname: demo\ndescription: d\n---\n".to_vec()),
        ]
        .into();
        let manifest = crate::install::validate(&files).unwrap();
        assert_eq!(generation(), None);
        crate::install::place(home.path(), &files, &manifest, "./demo", "t".into()).unwrap();
        let installed = generation().expect("an install bumps it");
        assert_eq!(installed.len(), 32);
        crate::install::place(home.path(), &files, &manifest, "./demo", "t".into()).unwrap();
        assert_eq!(
            generation().unwrap(),
            installed,
            "nothing changed, nothing bumped"
        );
        crate::install::remove(home.path(), "demo").unwrap();
        assert_ne!(generation().unwrap(), installed, "an uninstall bumps it");
    }

    #[test]
    fn a_racy_key_is_used_but_not_written() {
        let home = home_with_packs();
        let found = search_at(
            home.path(),
            None,
            Query::new("forecast", 10, true),
            SystemTime::now(),
        );
        assert_eq!(ids(&found), ["tides", "weather"]);
        assert!(!home.path().join(INDEX_FILE).exists());
        search_at(home.path(), None, Query::new("forecast", 10, true), later());
        assert!(home.path().join(INDEX_FILE).exists());
    }

    #[test]
    fn a_torn_damaged_or_foreign_index_is_rebuilt() {
        let home = home_with_packs();
        let path = home.path().join(INDEX_FILE);
        search_at(home.path(), None, Query::new("forecast", 10, true), later());
        let whole = std::fs::read(&path).unwrap();
        let stored = on_disk(home.path()).unwrap();
        // A query that reads the last word's postings, and weather's stamps.
        let query = format!("forecast {}", stored.search.parts().0.last().unwrap().0);
        let weather = stored
            .entries
            .iter()
            .position(|entry| entry.id == "weather")
            .unwrap();
        let head_len = usize::try_from(u64::from_le_bytes(whole[12..20].try_into().unwrap())).unwrap();
        let expected = ids(&search_at(
            home.path(),
            None,
            Query::new(&query, 10, true),
            later(),
        ));
        assert!(expected.contains(&"weather".to_owned()), "{expected:?}");
        let flip = |at: usize, bit: u8| {
            let mut bytes = whole.clone();
            bytes[at] ^= bit;
            bytes
        };
        let damaged: [(&str, Vec<u8>); 9] = [
            ("truncated", whole[..whole.len() / 2].to_vec()),
            ("one byte short", whole[..whole.len() - 1].to_vec()),
            ("bytes appended", [whole.as_slice(), b"more"].concat()),
            ("a byte of the head flipped", flip(HEADER + head_len / 2, 0x20)),
            // Both decode, and only their checksums tell.
            ("a posting's field flipped", flip(whole.len() - 1, 0x01)),
            (
                "a result's stamp flipped",
                flip(HEADER + head_len + weather * RECORD + 20, 0x01),
            ),
            ("another format", flip(8, 0x01)),
            ("empty", Vec::new()),
            ("not an index", b"{\"packs\": []}".to_vec()),
        ];
        for (what, bytes) in damaged {
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(
                ids(&search_at(
                    home.path(),
                    None,
                    Query::new(&query, 10, true),
                    later()
                )),
                expected,
                "{what}"
            );
            assert_eq!(std::fs::read(&path).unwrap(), whole, "{what}: rewritten whole");
        }
    }

    /// Decodes `bytes` as an index file.
    fn decode(bytes: &[u8], key: &Key) -> Result<Snapshot, &'static str> {
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, bytes).unwrap();
        Snapshot::decode(file, key, Wanted::All)
    }

    #[test]
    fn a_whole_index_that_does_not_hold_together_is_refused() {
        let home = home_with_packs();
        let key = Key::read(home.path(), None);
        let mut snapshot = Snapshot::build(home.path(), key.clone(), later());
        // A posting past the id list, with a right checksum: refused, no panic.
        let (words, ids) = snapshot.search.parts();
        let mut words = words.to_vec();
        words[0].1.push((99, 1));
        snapshot.search = SearchIndex::from_parts(words, ids.to_vec());
        assert_eq!(decode(&snapshot.encode(&key), &key).err(), Some("malformed"));
        let mut snapshot = Snapshot::build(home.path(), key.clone(), later());
        snapshot.entries[0].id = "../x".to_owned();
        assert_eq!(decode(&snapshot.encode(&key), &key).err(), Some("malformed"));
    }

    #[test]
    fn a_broken_pack_fixed_in_place_is_found() {
        let home = home_with_packs();
        search_at(home.path(), None, Query::new("forecast", 10, true), later());
        assert_eq!(on_disk(home.path()).unwrap().broken.len(), 1);
        write_pack(home.path(), "broken", "mended forecast");
        let found = search_at(home.path(), None, Query::new("mended", 10, true), later());
        assert_eq!(ids(&found), ["broken"]);
        assert!(found.broken.is_empty());
        assert!(on_disk(home.path()).unwrap().broken.is_empty(), "rewritten");
    }

    #[test]
    fn a_result_edited_in_place_rebuilds_the_index_first() {
        let home = home_with_packs();
        search_at(home.path(), None, Query::new("forecast", 10, true), later());
        // Same size, in place: no key part changes.
        write_pack(home.path(), "weather", "snow tomorrow");
        assert!(on_disk(home.path()).is_some(), "the key cannot see it");
        assert_eq!(
            ids(&search_at(
                home.path(),
                None,
                Query::new("forecast", 10, true),
                later()
            )),
            ["tides"],
            "weather no longer says forecast"
        );
        assert_eq!(
            ids(&search_at(
                home.path(),
                None,
                Query::new("snow", 10, true),
                later()
            )),
            ["weather"]
        );
        let found = search_at(home.path(), None, Query::new("weather", 10, true), later());
        assert_eq!(found.hits[0].0.manifest.description, "snow tomorrow");
    }

    /// The server's held index answers as the file does, reads the packs again only
    /// when the key changes, a broken pack is mended or a result was edited in
    /// place, and is not kept while a change could hide in the key's clock tick.
    #[test]
    fn a_held_index_is_used_while_fresh() {
        use std::sync::atomic::Ordering::Relaxed;
        let home = home_with_packs();
        let memo = Memo::default();
        let search = |query: &str| memo.search_at(home.path(), None, Query::new(query, 10, true), later());
        assert_eq!(ids(&search("forecast")), ["tides", "weather"]);
        assert_eq!(ids(&search("rain")), ["weather"]);
        assert_eq!(search("forecast").broken.len(), 1);
        assert_eq!(memo.builds.load(Relaxed), 1, "one read of the packs");
        // Same size, in place: no key part changes; the result is checked.
        write_pack(home.path(), "weather", "snow tomorrow");
        assert_eq!(ids(&search("forecast")), ["tides"]);
        assert_eq!(memo.builds.load(Relaxed), 2);
        let found = search("snow");
        assert_eq!(found.hits[0].0.manifest.description, "snow tomorrow");
        // A pack added by hand changes the folder's stamp, a part of the key.
        write_pack(home.path(), "hail", "ice forecast");
        assert_eq!(ids(&search("ice")), ["hail"]);
        assert_eq!(memo.builds.load(Relaxed), 3);
        write_pack(home.path(), "broken", "mended");
        assert_eq!(ids(&search("mended")), ["broken"]);
        assert!(search("mended").broken.is_empty());
        assert_eq!(memo.builds.load(Relaxed), 4);
        // Built-in packs only: held as well.
        let bare = tempfile::tempdir().unwrap();
        let builtins = Memo::default();
        for _ in 0..2 {
            let found = builtins.search_at(bare.path(), None, Query::new("journey", 10, true), later());
            assert_eq!(ids(&found), ["transit"]);
        }
        assert_eq!(builtins.builds.load(Relaxed), 1);
        // Racy: used for the call, not kept.
        let racy = Memo::default();
        bump_generation(home.path()).unwrap();
        // `packs/` changed just now, whatever the time the lines above took.
        std::fs::create_dir(home.path().join("packs/new")).unwrap();
        std::fs::remove_dir(home.path().join("packs/new")).unwrap();
        let now = SystemTime::now();
        for _ in 0..2 {
            assert_eq!(
                ids(&racy.search_at(home.path(), None, Query::new("ice", 10, true), now)),
                ["hail"]
            );
        }
        assert_eq!(racy.builds.load(Relaxed), 2);
    }

    #[test]
    fn concurrent_installs_and_searches_end_with_every_pack() {
        let home = tempfile::tempdir().unwrap();
        write_pack(home.path(), "base", "start");
        let installers: Vec<_> = (0..6)
            .map(|n| {
                let home = home.path().to_path_buf();
                std::thread::spawn(move || {
                    for round in 0..3 {
                        let id = format!("pack-{n}-{round}");
                        let files: crate::install::Files = [
                            (
                                MANIFEST_FILE.to_owned(),
                                format!(r#"{{"hcp":1,"id":"{id}","version":"1.0.0","description":"concurrent","bin":["w"],"commands":{{"go":{{"summary":"s","effect":"read","argv":[]}}}}}}"#).into_bytes(),
                            ),
                            (SKILL_FILE.to_owned(), format!("---\nname: {id}\ndescription: d\n---\n").into_bytes()),
                        ]
                        .into();
                        let manifest = crate::install::validate(&files).unwrap();
                        crate::install::place(&home, &files, &manifest, "./x", "t".into()).unwrap();
                    }
                })
            })
            .collect();
        // Searches race the installs and write the index as they go, clocks ignored.
        let searchers: Vec<_> = (0..2)
            .map(|_| {
                let home = home.path().to_path_buf();
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let found = search_at(&home, None, Query::new("concurrent", 100, true), later());
                        assert!(found.hits.iter().all(|(pack, _)| pack.id().starts_with("pack-")));
                    }
                })
            })
            .collect();
        installers.into_iter().for_each(|t| t.join().unwrap());
        searchers.into_iter().for_each(|t| t.join().unwrap());
        let mut expected: Vec<String> = (0..6)
            .flat_map(|n| (0..3).map(move |round| format!("pack-{n}-{round}")))
            .collect();
        expected.sort();
        assert_eq!(
            ids(&search_at(
                home.path(),
                None,
                Query::new("concurrent", 100, true),
                later()
            )),
            expected
        );
        assert_eq!(
            known(home.path(), None).others.len(),
            expected.len()
                + 1
                + crate::catalog::Catalog::load(Path::new("/nonexistent"))
                    .packs
                    .len()
        );
    }
}
