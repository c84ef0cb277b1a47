//! The catalog's tests: the embedded packs, lookups, and the digest.

use super::*;

#[test]
fn every_builtin_pack_is_valid() {
    let (packs, broken) = builtins();
    assert!(broken.is_empty(), "{broken:#?}");
    let ids: Vec<&str> = packs.iter().map(Pack::id).collect();
    assert_eq!(ids, ["git", "jq", "sqlite", "transit"]);
}

/// Every folder of `packs/catalog/` is a valid pack named after its folder, of the
/// two text files alone (a catalog pack wraps a program of the machine), and no
/// catalog id is a built-in's: install by id would not know which to take.
#[test]
fn every_catalog_pack_is_valid() {
    let (packs, broken) = catalog_packs();
    assert!(broken.is_empty(), "{broken:#?}");
    let folders = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/packs/catalog"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.path().is_dir())
                .count()
        })
        .unwrap_or(0);
    assert!(folders > 0, "the catalog is empty");
    assert_eq!(packs.len(), folders, "a folder without a pack in it");
    let (builtin, _) = builtins();
    for pack in packs {
        let id = pack.id();
        assert!(
            builtin.iter().all(|other| other.id() != id),
            "the catalog's {id} is also a built-in pack"
        );
        assert_ne!(id, CATALOG_DIR);
        assert_eq!(pack.origin, Origin::Catalog);
        assert_eq!(pack.manifest.bin_file(), None, "{id} carries a CLI file");
        let mut files: Vec<String> = catalog_files(id)
            .unwrap()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        files.sort();
        assert_eq!(files, [SKILL_FILE, MANIFEST_FILE], "{id}");
    }
}

#[test]
fn the_catalog_is_not_a_builtin_and_its_packs_are_not_installed() {
    assert!(builtin(CATALOG_DIR).is_none());
    assert!(builtin_files(CATALOG_DIR).is_none());
    assert!(builtin("rg").is_none() && builtin_files("rg").is_none());
    let rg = in_catalog("rg").unwrap();
    assert!(!rg.is_installed());
    assert_eq!((rg.source_label(), rg.program_name()), ("catalog", Some("rg")));
    assert!(catalog_files("transit").is_none() && in_catalog("transit").is_none());
    let none = Path::new("/nonexistent");
    let one = Catalog::find_one(none, "rg").unwrap();
    assert!(one.packs.is_empty());
    assert!(matches!(one.get("rg"), Err(CatalogError::NotInstalled { id }) if id == "rg"));
    assert_eq!(one.get_any("rg").unwrap().id(), "rg");
    let all = Catalog::load(none);
    assert!(all.get("rg").is_err() && all.available("rg").is_some());
    assert_eq!(all.packs.len(), builtins().0.len());
    assert_eq!(all.available.len(), catalog_packs().0.len());
    // A misspelt catalog id is named as the closest.
    let CatalogError::Unknown { suggestions, .. } = all.get("rgg").unwrap_err() else {
        panic!("not unknown")
    };
    assert_eq!(suggestions[0], "rg");
}

/// An installed pack of a catalog id runs as installed, and hides the catalog's.
#[test]
fn an_installed_catalog_pack_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let installed = dir.path().join("rg");
    std::fs::create_dir_all(&installed).unwrap();
    for (name, bytes) in catalog_files("rg").unwrap() {
        std::fs::write(installed.join(&name), bytes).unwrap();
    }
    let one = Catalog::find_one(dir.path(), "rg").unwrap();
    assert!(matches!(one.get("rg").unwrap().origin, Origin::Installed { .. }));
    let all = Catalog::load(dir.path());
    assert!(all.get("rg").unwrap().is_installed());
    assert!(all.available("rg").is_none());
}

#[test]
fn transit_carries_its_cli() {
    let catalog = Catalog::load(Path::new("/nonexistent"));
    let transit = catalog.get("transit").unwrap();
    let Origin::Builtin { bin: Some(bin) } = &transit.origin else {
        panic!("no embedded CLI")
    };
    assert!(bin.starts_with(b"#!/bin/sh"));
}

#[test]
fn load_one_prefers_the_installed_pack_and_falls_back_to_all() {
    let dir = tempfile::tempdir().unwrap();
    let one = Catalog::load_one(dir.path(), "transit");
    assert_eq!(one.packs.len(), 1);
    assert!(matches!(
        one.get("transit").unwrap().origin,
        Origin::Builtin { .. }
    ));
    let installed = dir.path().join("transit");
    std::fs::create_dir_all(&installed).unwrap();
    for (name, bytes) in builtin_files("transit").unwrap() {
        std::fs::write(installed.join(&name), bytes).unwrap();
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(installed.join("transit"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let one = Catalog::load_one(dir.path(), "transit");
    assert!(matches!(
        one.get("transit").unwrap().origin,
        Origin::Installed { .. }
    ));
    let all = Catalog::load_one(dir.path(), "transt");
    assert!(
        all.packs.len() >= 4,
        "an unknown id loads everything, for suggestions"
    );
}

#[test]
fn digest_is_fnv1a_64() {
    // The published FNV-1a 64-bit test vectors: a weaker or truncated hash, which
    // would let two CLIs share a folder, fails them.
    assert_eq!(digest(b""), "cbf29ce484222325");
    assert_eq!(digest(b"a"), "af63dc4c8601ec8c");
    assert_eq!(digest(b"foobar"), "85944171f73967e8");
}

#[test]
fn unknown_ids_get_suggestions() {
    let catalog = Catalog::load(Path::new("/nonexistent"));
    let Err(CatalogError::Unknown { suggestions, .. }) = catalog.get("transt") else {
        panic!()
    };
    assert_eq!(suggestions[0], "transit");
    let Err(CatalogError::Unknown { suggestions, .. }) = catalog.get("sql") else {
        panic!()
    };
    assert_eq!(suggestions, ["psql", "sqlite"]);
    let Err(CatalogError::Unknown { suggestions, .. }) = catalog.get("zzzzzz") else {
        panic!()
    };
    assert!(suggestions.is_empty());
}
