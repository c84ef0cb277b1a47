//! The catalog: built-in packs compiled into the binary plus packs installed under
//! `$HCP_HOME/packs/<id>/`. An installed pack overrides a built-in one with the same
//! id; a broken installed pack is reported and never hides the others.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use include_dir::{Dir, include_dir};
use serde::Serialize;

use crate::manifest::{self, Manifest, Problem};
use crate::skill::{self, SkillDoc};

static BUILTIN_DIR: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/packs");

pub const MANIFEST_FILE: &str = "hcp.json";
pub const SKILL_FILE: &str = "SKILL.md";

/// Where a pack came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into this binary; its CLI file (if any) is held in memory.
    Builtin { bin: Option<&'static [u8]> },
    /// Installed in this folder.
    Installed { dir: PathBuf },
}

#[derive(Debug, Clone)]
pub struct Pack {
    pub manifest: Manifest,
    pub skill: SkillDoc,
    pub origin: Origin,
}

/// Why a pack's CLI cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("the built-in pack's CLI is missing from this build")]
    MissingBuiltin,
    #[error("the pack's CLI `{name}` is not on PATH")]
    NotOnPath { name: String },
    #[error("cannot write the built-in CLI to HCP_HOME: {0}")]
    Materialize(String),
}

/// A short FNV-1a digest, to name the folder a built-in CLI is written to.
fn digest(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

impl Pack {
    pub fn id(&self) -> &str {
        &self.manifest.id
    }

    /// Where the pack's CLI runs from: its file in the pack folder, a built-in's
    /// file under `$HCP_HOME/.builtin/` (see [`Pack::materialize`]), or the program
    /// `bin` names, found on `path_var`.
    pub fn program(&self, home: &Path, path_var: Option<&str>) -> Result<PathBuf, ProgramError> {
        let manifest = &self.manifest;
        match (manifest.bin_file(), &self.origin) {
            (Some(file), Origin::Installed { dir }) => Ok(dir.join(file)),
            (Some(file), Origin::Builtin { bin: Some(bytes) }) => {
                let name = format!("{}-{}-{}", manifest.id, manifest.version, &digest(bytes)[..8]);
                Ok(crate::layout::builtin_copy(home, &name).join(file))
            }
            (Some(_), Origin::Builtin { bin: None }) => Err(ProgramError::MissingBuiltin),
            (None, _) => {
                let name = manifest.bin.first().map(String::as_str).unwrap_or_default();
                crate::program::resolve_program(name, path_var).ok_or_else(|| ProgramError::NotOnPath {
                    name: name.to_owned(),
                })
            }
        }
    }

    /// Writes a built-in pack's CLI to `program` (from [`Pack::program`]) once, so it
    /// can run; nothing for other packs.
    pub fn materialize(&self, home: &Path, program: &Path) -> Result<(), ProgramError> {
        let Origin::Builtin { bin: Some(bytes) } = &self.origin else {
            return Ok(());
        };
        write_program(home, program, bytes)
    }

    pub fn source_label(&self) -> &'static str {
        match self.origin {
            Origin::Builtin { .. } => "builtin",
            Origin::Installed { .. } => "installed",
        }
    }
}

/// Writes a CLI's bytes to `program` under `$HCP_HOME` (mode 0755), unless the file
/// already holds exactly them: the folder is named after the content, so what runs
/// from it is what was checked.
pub fn write_program(home: &Path, program: &Path, bytes: &[u8]) -> Result<(), ProgramError> {
    if std::fs::read(program).is_ok_and(|existing| existing == bytes) {
        return Ok(());
    }
    let failed = |error: &dyn std::fmt::Display| ProgramError::Materialize(error.to_string());
    crate::state::ensure_home(home).map_err(|error| failed(&error))?;
    let dir = program.parent().unwrap_or(home);
    std::fs::create_dir_all(dir).map_err(|error| failed(&error))?;
    let _lock = crate::layout::lock(home).map_err(|error| failed(&error))?;
    crate::state::write_atomic(program, bytes, 0o755).map_err(|error| failed(&error))
}

/// An installed pack that could not be loaded.
#[derive(Debug, Clone, Serialize)]
pub struct BrokenPack {
    pub id: String,
    pub dir: PathBuf,
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Sorted by id, one per id.
    pub packs: Vec<Pack>,
    pub broken: Vec<BrokenPack>,
    /// Ids of packs there are but that were not loaded (see [`Catalog::known`]):
    /// only for naming the closest ones to an unknown id.
    pub others: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("no pack named `{id}`")]
    Unknown { id: String, suggestions: Vec<String> },
}

/// Parses a pack from its two text files. `bin_present` says whether the `./FILE`
/// named by `bin`, if any, exists and is executable (`None` when it does not).
pub fn parse_pack(
    manifest_text: &str,
    skill_text: Option<&str>,
    bin_present: impl FnOnce(&str) -> Option<String>,
) -> Result<(Manifest, SkillDoc), Vec<Problem>> {
    let parsed = manifest::parse(manifest_text);
    // Even when the manifest is refused, check the other two files against what it
    // says, so that every problem of the pack is listed at once.
    let raw: Option<serde_json::Value> = serde_json::from_str(manifest_text).ok();
    let raw_field = |key: &str| -> Option<String> {
        let value = raw.as_ref()?.get(key)?;
        let value = if key == "bin" { value.get(0)? } else { value };
        value.as_str().map(str::to_owned)
    };
    let (id, bin_file) = match &parsed {
        Ok(manifest) => (Some(manifest.id.clone()), manifest.bin_file().map(str::to_owned)),
        Err(_) => (
            raw_field("id"),
            raw_field("bin").and_then(|bin| bin.strip_prefix("./").map(str::to_owned)),
        ),
    };
    let mut problems = parsed.as_ref().err().cloned().unwrap_or_default();
    let skill = match (skill_text, &id) {
        (None, _) => {
            problems.push(Problem {
                path: SKILL_FILE.to_owned(),
                message: "is missing; every pack has a SKILL.md for agents".to_owned(),
            });
            None
        }
        (Some(text), Some(id)) => match skill::parse(text, id) {
            Ok(doc) => Some(doc),
            Err(found) => {
                problems.extend(found);
                None
            }
        },
        (Some(_), None) => None,
    };
    if let Some(file) = bin_file.filter(|file| !file.is_empty() && !file.contains('/'))
        && let Some(message) = bin_present(&file)
    {
        problems.push(Problem {
            path: "bin[0]".to_owned(),
            message,
        });
    }
    match (parsed, skill) {
        (Ok(manifest), Some(skill)) if problems.is_empty() => Ok((manifest, skill)),
        _ => Err(problems),
    }
}

/// Loads a pack folder from disk (installed packs and `pack check`).
pub fn load_dir(dir: &Path) -> Result<(Manifest, SkillDoc), Vec<Problem>> {
    let manifest_text = std::fs::read_to_string(dir.join(MANIFEST_FILE)).map_err(|error| {
        vec![Problem {
            path: MANIFEST_FILE.to_owned(),
            message: format!("cannot be read: {error}"),
        }]
    })?;
    let skill_text = std::fs::read_to_string(dir.join(SKILL_FILE)).ok();
    parse_pack(&manifest_text, skill_text.as_deref(), |file| {
        crate::program::check_bin_file(&dir.join(file))
    })
}

static BUILTINS: OnceLock<(Vec<Pack>, Vec<BrokenPack>)> = OnceLock::new();

/// Parses one built-in pack folder.
fn parse_builtin(dir: &'static Dir<'static>) -> Option<Result<Pack, BrokenPack>> {
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
            let bin = manifest
                .bin_file()
                .and_then(|file| dir.get_file(dir.path().join(file)))
                .map(include_dir::File::contents);
            Ok(Pack {
                manifest,
                skill,
                origin: Origin::Builtin { bin },
            })
        }
        Err(problems) => Err(BrokenPack {
            id: dir.path().to_string_lossy().into_owned(),
            dir: dir.path().to_path_buf(),
            problems,
        }),
    })
}

/// The built-in pack with this id, from memory once parsed.
pub(crate) fn builtin(id: &str) -> Option<Pack> {
    match BUILTINS.get() {
        Some((packs, _)) => packs.iter().find(|pack| pack.id() == id).cloned(),
        None => BUILTIN_DIR
            .get_dir(id)
            .and_then(parse_builtin)
            .and_then(Result::ok),
    }
}

/// A digest of every built-in pack's files, computed once per process: an index
/// made by a binary with other built-ins is not this one's.
pub(crate) fn builtins_digest() -> u64 {
    static DIGEST: OnceLock<u64> = OnceLock::new();
    *DIGEST.get_or_init(|| {
        let mut files: Vec<&include_dir::File<'_>> = Vec::new();
        let mut dirs = vec![&BUILTIN_DIR];
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

/// Every built-in pack, parsed once per process.
pub(crate) fn builtins() -> &'static (Vec<Pack>, Vec<BrokenPack>) {
    BUILTINS.get_or_init(|| {
        let mut packs = Vec::new();
        let mut broken = Vec::new();
        for parsed in BUILTIN_DIR.dirs().filter_map(parse_builtin) {
            match parsed {
                Ok(pack) => packs.push(pack),
                Err(problem) => broken.push(problem),
            }
        }
        packs.sort_by(|a, b| a.manifest.id.cmp(&b.manifest.id));
        (packs, broken)
    })
}

/// The files of a built-in pack, for `install <builtin id>` and `pack new`.
pub fn builtin_files(id: &str) -> Option<Vec<(String, &'static [u8])>> {
    let dir = BUILTIN_DIR.get_dir(id)?;
    Some(
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
            .collect(),
    )
}

impl Catalog {
    /// Built-in packs overlaid with those installed under `packs_dir`.
    pub fn load(packs_dir: &Path) -> Self {
        let (builtin, builtin_broken) = builtins();
        let mut catalog = Self {
            packs: builtin.clone(),
            broken: builtin_broken.clone(),
            others: Vec::new(),
        };
        let Ok(entries) = std::fs::read_dir(packs_dir) else {
            return catalog;
        };
        let mut dirs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|entry| entry.path()).collect();
        dirs.sort();
        for dir in dirs {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Temporary and hidden folders belong to install in progress.
            if name.starts_with('.') || !dir.is_dir() {
                continue;
            }
            match load_dir(&dir) {
                Ok((manifest, skill)) if manifest.id == name => {
                    catalog.insert(Pack {
                        manifest,
                        skill,
                        origin: Origin::Installed { dir },
                    });
                }
                Ok((manifest, _)) => catalog.broken.push(BrokenPack {
                    id: name,
                    dir,
                    problems: vec![Problem {
                        path: "id".to_owned(),
                        message: format!("is \"{}\", but the folder is named after another id", manifest.id),
                    }],
                }),
                Err(problems) => catalog.broken.push(BrokenPack {
                    id: name,
                    dir,
                    problems,
                }),
            }
        }
        catalog
    }

    /// Only the pack with this id, the installed one first: what exec needs, without
    /// parsing every other manifest. An id found nowhere loads the whole catalog, so
    /// the refusal can name the closest ids (see [`Catalog::find_one`] for a lookup
    /// that leaves that to the caller).
    pub fn load_one(packs_dir: &Path, id: &str) -> Self {
        Self::find_one(packs_dir, id).unwrap_or_else(|| Self::load(packs_dir))
    }

    /// The pack with this id read from its files now (an installed one first, then a
    /// built-in), as [`Catalog::load`] would find it: an installed folder that does
    /// not load is listed as broken, beside the built-in of that id if there is one.
    /// `None` when no pack has this id.
    pub fn find_one(packs_dir: &Path, id: &str) -> Option<Self> {
        if !crate::template::is_pack_id(id) {
            return None;
        }
        let dir = packs_dir.join(id);
        if dir.is_dir() {
            let problems = match load_dir(&dir) {
                Ok((manifest, skill)) if manifest.id == id => {
                    return Some(Self::from_packs(vec![Pack {
                        manifest,
                        skill,
                        origin: Origin::Installed { dir },
                    }]));
                }
                Ok((manifest, _)) => vec![Problem {
                    path: "id".to_owned(),
                    message: format!("is \"{}\", but the folder is named after another id", manifest.id),
                }],
                Err(problems) => problems,
            };
            let mut catalog = Self::from_packs(builtin(id).into_iter().collect());
            catalog.broken.push(BrokenPack {
                id: id.to_owned(),
                dir,
                problems,
            });
            return Some(catalog);
        }
        builtin(id).map(|pack| Self::from_packs(vec![pack]))
    }

    /// No pack loaded, only the ids there are (for the closest ones to an unknown
    /// id) and the broken installed packs.
    pub fn known(others: Vec<String>, broken: Vec<BrokenPack>) -> Self {
        Self {
            packs: Vec::new(),
            broken,
            others,
        }
    }

    /// A catalog of exactly these packs (tests and benchmarks).
    pub fn from_packs(mut packs: Vec<Pack>) -> Self {
        packs.sort_by(|a, b| a.manifest.id.cmp(&b.manifest.id));
        packs.dedup_by(|a, b| a.manifest.id == b.manifest.id);
        Self {
            packs,
            broken: Vec::new(),
            others: Vec::new(),
        }
    }

    fn insert(&mut self, pack: Pack) {
        match self
            .packs
            .binary_search_by(|probe| probe.manifest.id.as_str().cmp(pack.id()))
        {
            Ok(index) => self.packs[index] = pack,
            Err(index) => self.packs.insert(index, pack),
        }
    }

    pub fn get(&self, id: &str) -> Result<&Pack, CatalogError> {
        match self
            .packs
            .binary_search_by(|probe| probe.manifest.id.as_str().cmp(id))
        {
            Ok(index) => Ok(&self.packs[index]),
            Err(_) => Err(CatalogError::Unknown {
                id: id.to_owned(),
                suggestions: self.closest(id),
            }),
        }
    }

    /// Up to three ids closest to `id`, best first.
    pub fn closest(&self, id: &str) -> Vec<String> {
        let mut scored: Vec<(f64, &str)> = self
            .packs
            .iter()
            .map(Pack::id)
            .chain(self.others.iter().map(String::as_str))
            .map(|other| {
                let mut score = strsim::jaro_winkler(id, other);
                if other.contains(id) || id.contains(other) {
                    score = score.max(0.85);
                }
                (score, other)
            })
            .filter(|(score, _)| *score >= 0.7)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored.into_iter().take(3).map(|(_, id)| id.to_owned()).collect()
    }

    pub fn broken(&self, id: &str) -> Option<&BrokenPack> {
        self.broken.iter().find(|broken| broken.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_pack_is_valid() {
        let (packs, broken) = builtins();
        assert!(broken.is_empty(), "{broken:#?}");
        let ids: Vec<&str> = packs.iter().map(Pack::id).collect();
        assert_eq!(ids, ["git", "jq", "sqlite", "transit"]);
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
            std::fs::set_permissions(installed.join("transit"), std::fs::Permissions::from_mode(0o755))
                .unwrap();
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
        let CatalogError::Unknown { suggestions, .. } = catalog.get("transt").unwrap_err();
        assert_eq!(suggestions[0], "transit");
        let CatalogError::Unknown { suggestions, .. } = catalog.get("sql").unwrap_err();
        assert_eq!(suggestions, ["sqlite"]);
        let CatalogError::Unknown { suggestions, .. } = catalog.get("zzzzzz").unwrap_err();
        assert!(suggestions.is_empty());
    }
}
