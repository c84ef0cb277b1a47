//! What a long-lived server keeps between calls: the catalog, read again only when
//! the installed packs change; installed packs loaded one at a time (what exec and
//! skill need); and the packs index held in memory for searches ([`Memo`]). Its own
//! module so that the catalog does not depend on the index and search, which rank
//! its packs.

use std::path::Path;
use std::time::SystemTime;

use crate::catalog::{Catalog, MANIFEST_FILE, Origin, Pack, SKILL_FILE, builtins};
use crate::index::{Found, Key, Query, Snapshot, Stale};

/// (path, modified, length) of each file that makes up the installed packs.
type Fingerprint = Vec<(String, Option<std::time::SystemTime>, u64)>;

/// What identifies the installed packs' state: every pack folder's name and the
/// modification time and size of its two text files, plus the folder's own.
fn fingerprint(packs_dir: &Path) -> Fingerprint {
    let stamp =
        |path: &Path| std::fs::metadata(path).map_or((None, 0), |meta| (meta.modified().ok(), meta.len()));
    let mut seen = Vec::new();
    let (modified, len) = stamp(packs_dir);
    seen.push((String::new(), modified, len));
    if let Ok(entries) = std::fs::read_dir(packs_dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            for file in [MANIFEST_FILE, SKILL_FILE] {
                let (modified, len) = stamp(&entry.path().join(file));
                seen.push((format!("{name}/{file}"), modified, len));
            }
        }
    }
    seen.sort();
    seen
}

/// What an installed pack's folder looked like when it was loaded: its two text
/// files and the folder itself (a file added, removed or renamed changes it).
type PackStamp = [(Option<std::time::SystemTime>, u64); 3];

fn pack_stamp(dir: &Path) -> PackStamp {
    let stamp =
        |path: &Path| std::fs::metadata(path).map_or((None, 0), |meta| (meta.modified().ok(), meta.len()));
    [
        stamp(dir),
        stamp(&dir.join(MANIFEST_FILE)),
        stamp(&dir.join(SKILL_FILE)),
    ]
}

#[derive(Debug, Default)]
pub struct CatalogCache {
    /// Every pack, for what needs them all (resources, doctor, policy), read again
    /// only when the installed packs' files change.
    current: std::sync::Mutex<Option<(Fingerprint, std::sync::Arc<Catalog>)>>,
    /// Installed packs loaded one at a time (what exec needs), by id.
    single: std::sync::Mutex<std::collections::HashMap<String, (PackStamp, Pack)>>,
    /// The packs index, held for searches.
    search: Memo,
}

impl CatalogCache {
    /// [`Catalog::load_one`], kept while the pack's files are unchanged: an exec
    /// through a long-lived server parses its pack's manifest once.
    pub fn one(&self, packs_dir: &Path, id: &str) -> Catalog {
        let dir = packs_dir.join(id);
        let installed = crate::template::is_pack_id(id) && dir.is_dir();
        let stamp = installed.then(|| pack_stamp(&dir));
        if let Some(stamp) = &stamp
            && let Ok(single) = self.single.lock()
            && let Some((seen, pack)) = single.get(id)
            && seen == stamp
        {
            return Catalog::from_packs(vec![pack.clone()]);
        }
        // A long-lived server parses the built-ins once, not per call.
        let _ = builtins();
        let Some(catalog) = Catalog::find_one(packs_dir, id) else {
            // An unknown id: the ids there are, the catalog's not installed among
            // them (as a process that loads them all names them), for the closest.
            let all = self.get(packs_dir);
            return Catalog::known(
                all.packs
                    .iter()
                    .chain(&all.available)
                    .map(|pack| pack.id().to_owned())
                    .collect(),
                all.broken.clone(),
            );
        };
        if let (Some(stamp), [pack]) = (stamp, catalog.packs.as_slice())
            && matches!(pack.origin, Origin::Installed { .. })
            && pack.id() == id
            && let Ok(mut single) = self.single.lock()
        {
            single.insert(id.to_owned(), (stamp, pack.clone()));
        }
        catalog
    }

    /// The packs matching `query`, best first, and the broken installed packs, as
    /// [`crate::index::search`] finds them, from the index held here while fresh.
    pub fn search(&self, home: &Path, program: Option<&Path>, query: Query<'_>) -> Found {
        self.search.search(home, program, query)
    }

    /// Every pack: the one held while the installed packs' files are unchanged, or
    /// read now.
    pub fn get(&self, packs_dir: &Path) -> std::sync::Arc<Catalog> {
        let print = fingerprint(packs_dir);
        if let Ok(guard) = self.current.lock()
            && let Some((seen, catalog)) = guard.as_ref()
            && *seen == print
        {
            return catalog.clone();
        }
        let catalog = std::sync::Arc::new(Catalog::load(packs_dir));
        if let Ok(mut guard) = self.current.lock() {
            *guard = Some((print, catalog.clone()));
        }
        catalog
    }
}

/// The packs index held in memory by a long-lived server, with the freshness rules
/// of the file ([`crate::index`]): used while the [`Key`] read now is
/// the one it was built for and its broken packs are unchanged; each result's files
/// are checked against their stamps before it is returned, and a result edited in
/// place rebuilds it. A call costs a few `stat`s and the ranking, instead of the
/// `stat` of every installed pack's files. Rebuilding also writes the index file.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    current: std::sync::Mutex<Option<(Key, std::sync::Arc<Snapshot>)>>,
    /// How many times the packs were read (tests).
    #[cfg(test)]
    builds: std::sync::atomic::AtomicUsize,
}

impl Memo {
    /// [`crate::index::search`], from the snapshot held while it is fresh.
    pub(crate) fn search(&self, home: &Path, program: Option<&Path>, query: Query<'_>) -> Found {
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
        let snapshot = Snapshot::build(home, key.clone(), now);
        let found = snapshot
            .found(home, query, limit, all)
            .unwrap_or_else(|Stale| Found {
                hits: Vec::new(),
                below_floor: 0,
                broken: snapshot.broken.clone(),
            });
        // Kept only when no change can hide in the clock tick the key was read in.
        if let Ok(mut guard) = self.current.lock() {
            *guard = (!key.racy(now)).then(|| (key, std::sync::Arc::new(snapshot.held())));
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tests::{home_with_packs, ids, later, write_pack};
    use crate::layout::bump_generation;

    #[test]
    fn one_pack_is_cached_until_its_files_change() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CatalogCache::default();
        let pack = dir.path().join("weather");
        std::fs::create_dir_all(&pack).unwrap();
        let manifest = |description: &str| {
            format!(
                r#"{{"hcp":1,"id":"weather","version":"1.0.0","description":"{description}","bin":["w"],"commands":{{"now":{{"summary":"s","effect":"read","argv":[]}}}}}}"#
            )
        };
        std::fs::write(pack.join(MANIFEST_FILE), manifest("first")).unwrap();
        std::fs::write(pack.join(SKILL_FILE), "---\nname: weather\ndescription: d\n---\n").unwrap();
        let description = |catalog: &Catalog| catalog.get("weather").unwrap().manifest.description.clone();
        assert_eq!(description(&cache.one(dir.path(), "weather")), "first");
        // Edited in place (a pack author at work): seen at once.
        std::fs::write(pack.join(MANIFEST_FILE), manifest("second, longer")).unwrap();
        assert_eq!(description(&cache.one(dir.path(), "weather")), "second, longer");
        assert_eq!(description(&cache.one(dir.path(), "weather")), "second, longer");
        // A built-in comes from the binary, not the cache.
        assert!(matches!(
            cache.one(dir.path(), "transit").get("transit").unwrap().origin,
            Origin::Builtin { .. }
        ));
    }

    #[test]
    fn the_cache_sees_installs_and_edits() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CatalogCache::default();
        let first = cache.get(dir.path());
        assert!(
            std::sync::Arc::ptr_eq(&first, &cache.get(dir.path())),
            "unchanged: the same index"
        );
        let pack = dir.path().join("weather");
        std::fs::create_dir_all(&pack).unwrap();
        std::fs::write(
            pack.join(MANIFEST_FILE),
            r#"{"hcp":1,"id":"weather","version":"1.0.0","description":"d","bin":["w"],"commands":{"now":{"summary":"s","effect":"read","argv":[]}}}"#,
        )
        .unwrap();
        std::fs::write(pack.join(SKILL_FILE), "---\nname: weather\ndescription: d\n---\n").unwrap();
        let second = cache.get(dir.path());
        assert!(second.get("weather").is_ok());
        std::fs::write(
            pack.join(SKILL_FILE),
            "---\nname: weather\ndescription: longer text\n---\n",
        )
        .unwrap();
        assert_eq!(
            cache.get(dir.path()).get("weather").unwrap().skill.description,
            "longer text"
        );
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
}
