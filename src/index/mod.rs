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
//! written down ([`key::RACY`]). A pack edited in place (no key part changes) is caught
//! when it is a result: its files' stamps differ from the recorded ones, and the
//! index is rebuilt before anything is shown; a broken pack's stamps are checked
//! on every load, so one fixed in place is found at once.
//!
//! The parts: [`key`] (what the index is valid for), [`snapshot`] (the catalog as
//! the index holds it), [`format`] and [`bytes`] (the file). A long-lived server
//! holds a snapshot in memory ([`crate::cache`]).

mod bytes;
mod format;
mod key;
mod snapshot;

use std::path::Path;
use std::time::SystemTime;

use crate::catalog::Catalog;
pub use crate::layout::INDEX_FILE;
use format::Wanted;
pub(crate) use key::Key;
pub use snapshot::{Found, IndexError};
pub(crate) use snapshot::{Snapshot, Stale};

/// What a search asks: its words, how many results at most, and whether the
/// matches under the relevance floor are kept (see [`crate::search::SearchIndex::search`]).
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

/// Ranks `query` over the catalog of `home` (see [`crate::search::SearchIndex::search`]), from the
/// index while it is fresh; every result is read from its own files.
pub fn search(home: &Path, program: Option<&Path>, query: Query<'_>) -> Found {
    search_at(home, program, query, SystemTime::now())
}

/// [`search`] as at `now`, which decides whether a key is racy.
pub(crate) fn search_at(home: &Path, program: Option<&Path>, query: Query<'_>, now: SystemTime) -> Found {
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

/// Every pack id there is and the broken installed packs, for naming the closest
/// ids to an unknown one.
pub fn known(home: &Path, program: Option<&Path>) -> Catalog {
    let snapshot = Snapshot::load_at(home, program, SystemTime::now(), Wanted::Prefixed(&[]));
    Catalog::known(
        snapshot.entries.into_iter().map(|entry| entry.id).collect(),
        snapshot.broken,
    )
}

/// Also what the tests of the server's held index use.
#[cfg(test)]
pub(crate) mod tests;
