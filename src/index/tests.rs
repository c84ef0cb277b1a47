//! The packs index against the packs it indexes: ranking as the catalog does,
//! freshness, damage, and installs racing searches.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::format::{HEADER, RECORD};
use super::snapshot::read;
use super::*;
use crate::catalog::{MANIFEST_FILE, SKILL_FILE};
use crate::layout::{self, bump_generation};
use crate::search::SearchIndex;

/// Long after any file the test touched: the key is never racy.
pub(crate) fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(3600)
}

pub(crate) fn write_pack(home: &Path, id: &str, description: &str) {
    let dir = layout::packs(home).join(id);
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

pub(crate) fn ids(found: &Found) -> Vec<String> {
    found.hits.iter().map(|(pack, _)| pack.id().to_owned()).collect()
}

pub(crate) fn home_with_packs() -> tempfile::TempDir {
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
    let held = layout::lock(home.path()).unwrap();
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
    std::fs::write(layout::lock_file(home.path()), "{}").unwrap();
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
    let generation = || std::fs::read(layout::generation_file(home.path())).ok();
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
    assert!(!layout::index_file(home.path()).exists());
    search_at(home.path(), None, Query::new("forecast", 10, true), later());
    assert!(layout::index_file(home.path()).exists());
}

#[test]
fn a_torn_damaged_or_foreign_index_is_rebuilt() {
    let home = home_with_packs();
    let path = layout::index_file(home.path());
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
    let off = vec![false; ids.len()];
    snapshot.search = SearchIndex::from_parts(words, ids.to_vec(), off);
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
    let embedded = crate::catalog::Catalog::load(Path::new("/nonexistent"));
    assert_eq!(
        known(home.path(), None).others.len(),
        expected.len() + 1 + embedded.packs.len() + embedded.available.len()
    );
}
