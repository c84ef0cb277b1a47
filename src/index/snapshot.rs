//! A snapshot of the catalog as the packs index holds it: every id, the broken
//! installed packs and the search index, read from the file while its key is fresh
//! or built from the packs (and written down); each result is read from its own
//! files and checked against the stamps recorded for it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::format::{self, Entry, Kind, Wanted};
use super::key::{Key, PackStamp, pack_stamp};
use crate::catalog::{BrokenPack, Catalog, Origin, Pack};
use crate::layout;
use crate::search::SearchIndex;
use crate::state;

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

/// Where each installed pack's stamps are, by position.
#[derive(Debug)]
enum Stamps {
    /// Taken just now (`None` for a built-in pack).
    Held(Vec<Option<PackStamp>>),
    /// In the index file, a record each from `offset`, read when needed.
    File { file: std::fs::File, offset: u64 },
}

/// The catalog as the index holds it: every id, the broken installed packs and the
/// search index; the packs themselves only when it was just built from them.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(super) entries: Vec<Entry>,
    pub(crate) broken: Vec<BrokenPack>,
    /// For each broken pack installed in `packs/`, its folder's stamp: a broken pack
    /// is fixed in place more often than any other is edited, so these few are
    /// checked on every load.
    broken_stamps: Vec<Option<PackStamp>>,
    pub(super) search: SearchIndex,
    stamps: Stamps,
    pub(super) packs: Option<Vec<Pack>>,
    /// Held packs are checked against their stamps before they are returned: set
    /// when the snapshot is kept beyond the call that built it ([`Snapshot::held`]).
    recheck: bool,
}

/// A pack the index names is not as it was when the index was made.
#[derive(Debug)]
pub(crate) struct Stale;

/// What a search found: the packs, best first, each with its score.
#[derive(Debug)]
pub struct Found {
    pub hits: Vec<(Pack, f64)>,
    /// Matches under the relevance floor, not in `hits` (see [`SearchIndex::rank`]).
    pub below_floor: usize,
    pub broken: Vec<BrokenPack>,
}

impl Snapshot {
    /// The index of `home` if it is there and fresh (only the `wanted` words of its
    /// search index), else the catalog read now (and written down for the next
    /// call). `now` decides whether the key is racy.
    pub(super) fn load_at(home: &Path, program: Option<&Path>, now: SystemTime, wanted: Wanted<'_>) -> Self {
        let key = Key::read(home, program);
        if !key.has_packs() {
            // Only the packs compiled in (built in and catalog): nothing to index.
            let packs_dir = layout::packs(home);
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
    pub(crate) fn build(home: &Path, key: Key, now: SystemTime) -> Self {
        let packs_dir = layout::packs(home);
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
        if key.has_packs() && !key.racy(now) {
            // Under the state lock, as every write in `HCP_HOME` is, so that whoever
            // takes it may remove the temporary file of a write cut short; never
            // waited for: a change in flight leaves this index stale anyway.
            match layout::try_lock(home) {
                Ok(Some(_lock)) => {
                    let bytes = snapshot.encode(&key);
                    if let Err(error) = state::write_atomic(&layout::index_file(home), &bytes, 0o600) {
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
        // The packs that run and the catalog's that are not installed, in one id
        // order: the search index ranks them together.
        let Catalog {
            packs,
            available,
            broken,
            ..
        } = catalog;
        let mut listed = packs;
        listed.extend(available);
        listed.sort_by(|a, b| a.manifest.id.cmp(&b.manifest.id));
        let entries = listed
            .iter()
            .map(|pack| Entry {
                id: pack.id().to_owned(),
                kind: match pack.origin {
                    Origin::Builtin { .. } => Kind::Builtin,
                    Origin::Installed { .. } => Kind::Installed,
                    Origin::Catalog => Kind::Catalog,
                },
            })
            .collect();
        let held = listed
            .iter()
            .map(|pack| match pack.origin {
                Origin::Builtin { .. } | Origin::Catalog => None,
                Origin::Installed { .. } => Some(stamps.get(pack.id()).copied().unwrap_or_default()),
            })
            .collect();
        let broken_stamps = broken
            .iter()
            .map(|broken| {
                // Installed ones only: a built-in's `dir` is a path inside the binary.
                let installed = broken.dir == packs_dir.join(&broken.id);
                installed.then(|| stamps.get(&broken.id).copied().unwrap_or_default())
            })
            .collect();
        Self {
            entries,
            search: SearchIndex::build(&listed),
            broken,
            broken_stamps,
            stamps: Stamps::Held(held),
            packs: Some(listed),
            recheck: false,
        }
    }

    /// Whether every broken installed pack is as it was when the index was made.
    pub(crate) fn broken_unchanged(&self, home: &Path) -> bool {
        self.broken
            .iter()
            .zip(&self.broken_stamps)
            .all(|(broken, stamp)| {
                stamp.is_none_or(|stamp| pack_stamp(&layout::packs(home).join(&broken.id)) == stamp)
            })
    }

    /// The results of `query`, each read from its files (or held, when just built).
    pub(crate) fn found(&self, home: &Path, query: &str, limit: usize, all: bool) -> Result<Found, Stale> {
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
        match entry.kind {
            Kind::Builtin => return crate::catalog::builtin(&entry.id).ok_or(Stale),
            Kind::Catalog => return crate::catalog::in_catalog(&entry.id).ok_or(Stale),
            Kind::Installed => {}
        }
        let recorded = self.stamp(index)?;
        let dir = layout::packs(home).join(&entry.id);
        if pack_stamp(&dir) != recorded {
            return Err(Stale);
        }
        match crate::catalog::load_dir(&dir) {
            Ok((manifest, skill)) if manifest.id == entry.id => Ok(Pack {
                manifest: manifest.into(),
                skill: skill.into(),
                origin: Origin::Installed { dir },
            }),
            _ => Err(Stale),
        }
    }

    /// The stamps recorded for the installed pack at `index`, checked.
    fn stamp(&self, index: usize) -> Result<PackStamp, Stale> {
        match &self.stamps {
            Stamps::Held(held) => held.get(index).copied().flatten().ok_or(Stale),
            Stamps::File { file, offset } => format::read_record(file, *offset, index).ok_or(Stale),
        }
    }

    /// The snapshot as kept beyond the call that built it: each held pack is checked
    /// against its stamps before it is returned.
    pub(crate) fn held(mut self) -> Self {
        self.recheck = true;
        self
    }

    pub(super) fn encode(&self, key: &Key) -> Vec<u8> {
        let held = match &self.stamps {
            Stamps::Held(held) => held.as_slice(),
            Stamps::File { .. } => &[],
        };
        format::encode(
            &format::Contents {
                entries: &self.entries,
                broken: &self.broken,
                broken_stamps: &self.broken_stamps,
                search: &self.search,
                held,
            },
            key,
        )
    }

    /// The snapshot in `file`, if it is a whole index of this format for `key` (see
    /// [`format::decode`]).
    pub(super) fn decode(file: std::fs::File, key: &Key, wanted: Wanted<'_>) -> Result<Self, &'static str> {
        let decoded = format::decode(file, key, wanted)?;
        Ok(Self {
            entries: decoded.entries,
            broken: decoded.broken,
            broken_stamps: decoded.broken_stamps,
            search: decoded.search,
            stamps: Stamps::File {
                file: decoded.file,
                offset: decoded.stamps_at,
            },
            packs: None,
            recheck: false,
        })
    }
}

/// The index of `home`, if it is there, whole and for `key`.
pub(super) fn read(home: &Path, key: &Key, wanted: Wanted<'_>) -> Result<Snapshot, IndexError> {
    let path = layout::index_file(home);
    let file = std::fs::File::open(&path).map_err(|source| IndexError::Read {
        path: path.clone(),
        source,
    })?;
    Snapshot::decode(file, key, wanted).map_err(|why| IndexError::Unusable { path, why })
}
