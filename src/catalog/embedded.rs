//! The packs compiled into the binary, from the repository's `packs/` folder: the
//! built-in packs (`packs/<id>/`, on from the start) and the catalog
//! (`packs/catalog/<id>/`, off until installed). Each list is parsed once per
//! process, and only when something needs it whole: one pack by id is parsed alone,
//! so that `exec` of a built-in never reads the catalog.

use std::path::Path;
use std::sync::OnceLock;

use include_dir::{Dir, include_dir};

use super::{BrokenPack, MANIFEST_FILE, Origin, Pack, SKILL_FILE, parse_pack};

static PACKS_DIR: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/packs");

/// The folder of `packs/` that holds the catalog: no built-in pack has this id.
pub const CATALOG_DIR: &str = "catalog";

/// Which of the two embedded lists a pack folder belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shelf {
    Builtin,
    Catalog,
}

/// The folders of one shelf, looked up without walking the others.
fn shelf(which: Shelf) -> impl Iterator<Item = &'static Dir<'static>> {
    let dirs: &'static [include_dir::DirEntry<'static>] = match which {
        Shelf::Builtin => PACKS_DIR.entries(),
        Shelf::Catalog => catalog_root().map_or(&[], Dir::entries),
    };
    dirs.iter()
        .filter_map(include_dir::DirEntry::as_dir)
        .filter(move |dir| which == Shelf::Catalog || dir.path() != Path::new(CATALOG_DIR))
}

fn catalog_root() -> Option<&'static Dir<'static>> {
    PACKS_DIR
        .entries()
        .iter()
        .filter_map(include_dir::DirEntry::as_dir)
        .find(|dir| dir.path() == Path::new(CATALOG_DIR))
}

/// The folder of the pack `id` on one shelf.
fn folder(which: Shelf, id: &str) -> Option<&'static Dir<'static>> {
    if !crate::template::is_pack_id(id) {
        return None;
    }
    shelf(which).find(|dir| dir.path().file_name().is_some_and(|name| name == id))
}

/// Parses one embedded pack folder.
fn parse_embedded(dir: &'static Dir<'static>, which: Shelf) -> Option<Result<Pack, BrokenPack>> {
    let text = |name: &str| {
        dir.get_file(dir.path().join(name))
            .and_then(|file| file.contents_utf8())
    };
    let manifest_text = text(MANIFEST_FILE)?;
    let parsed = parse_pack(manifest_text, text(SKILL_FILE), |file| {
        dir.get_file(dir.path().join(file))
            .is_none()
            .then(|| format!("./{file} is not in the pack"))
    });
    Some(match parsed {
        Ok((manifest, skill)) => {
            let origin = match which {
                Shelf::Builtin => Origin::Builtin {
                    bin: manifest
                        .bin_file()
                        .and_then(|file| dir.get_file(dir.path().join(file)))
                        .map(include_dir::File::contents),
                },
                Shelf::Catalog => Origin::Catalog,
            };
            Ok(Pack {
                manifest: manifest.into(),
                skill: skill.into(),
                origin,
            })
        }
        Err(problems) => Err(BrokenPack {
            id: dir
                .path()
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            dir: dir.path().to_path_buf(),
            problems,
        }),
    })
}

/// Every pack of a shelf, parsed, sorted by id.
fn parse_shelf(which: Shelf) -> (Vec<Pack>, Vec<BrokenPack>) {
    let mut packs = Vec::new();
    let mut broken = Vec::new();
    for parsed in shelf(which).filter_map(|dir| parse_embedded(dir, which)) {
        match parsed {
            Ok(pack) => packs.push(pack),
            Err(problem) => broken.push(problem),
        }
    }
    packs.sort_by(|a, b| a.manifest.id.cmp(&b.manifest.id));
    (packs, broken)
}

static BUILTINS: OnceLock<(Vec<Pack>, Vec<BrokenPack>)> = OnceLock::new();
static CATALOG: OnceLock<(Vec<Pack>, Vec<BrokenPack>)> = OnceLock::new();

/// One pack of a shelf: from memory once the shelf is parsed, else parsed alone.
fn one(which: Shelf, id: &str) -> Option<Pack> {
    let parsed = match which {
        Shelf::Builtin => &BUILTINS,
        Shelf::Catalog => &CATALOG,
    };
    match parsed.get() {
        Some((packs, _)) => packs.iter().find(|pack| pack.id() == id).cloned(),
        None => folder(which, id)
            .and_then(|dir| parse_embedded(dir, which))
            .and_then(Result::ok),
    }
}

/// The built-in pack with this id.
pub(crate) fn builtin(id: &str) -> Option<Pack> {
    one(Shelf::Builtin, id)
}

/// The catalog's pack with this id, as the binary holds it (not installed:
/// [`Origin::Catalog`]).
pub(crate) fn in_catalog(id: &str) -> Option<Pack> {
    one(Shelf::Catalog, id)
}

/// Every built-in pack, parsed once per process.
pub(crate) fn builtins() -> &'static (Vec<Pack>, Vec<BrokenPack>) {
    BUILTINS.get_or_init(|| parse_shelf(Shelf::Builtin))
}

/// Every pack of the catalog, parsed once per process.
pub(crate) fn catalog_packs() -> &'static (Vec<Pack>, Vec<BrokenPack>) {
    CATALOG.get_or_init(|| parse_shelf(Shelf::Catalog))
}

/// A digest of every embedded file, the built-in packs' and the catalog's, computed
/// once per process: an index made by a binary with other packs in it is not this
/// one's.
pub(crate) fn embedded_digest() -> u64 {
    static DIGEST: OnceLock<u64> = OnceLock::new();
    *DIGEST.get_or_init(|| {
        let mut files: Vec<&include_dir::File<'_>> = Vec::new();
        let mut dirs = vec![&PACKS_DIR];
        while let Some(dir) = dirs.pop() {
            files.extend(dir.files());
            dirs.extend(dir.dirs());
        }
        files.sort_by_key(|file| file.path());
        let mut hash = 0xcbf2_9ce4_8422_2325_u64;
        for file in files {
            let name = file.path().to_string_lossy();
            for bytes in [
                name.as_bytes(),
                &[0],
                &(file.contents().len() as u64).to_le_bytes(),
                file.contents(),
            ] {
                hash = bytes.iter().fold(hash, |hash, b| {
                    (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
                });
            }
        }
        hash
    })
}

fn files_of(dir: &'static Dir<'static>) -> Vec<(String, &'static [u8])> {
    dir.files()
        .map(|file| {
            (
                file.path()
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                file.contents(),
            )
        })
        .collect()
}

/// The files of a built-in pack, for `install <builtin id>`.
pub fn builtin_files(id: &str) -> Option<Vec<(String, &'static [u8])>> {
    folder(Shelf::Builtin, id).map(files_of)
}

/// The files of a catalog pack, for `install <catalog id>`.
pub fn catalog_files(id: &str) -> Option<Vec<(String, &'static [u8])>> {
    folder(Shelf::Catalog, id).map(files_of)
}
