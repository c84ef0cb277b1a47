//! The packs there are: the built-in packs compiled into the binary, the packs
//! installed under `$HCP_HOME/packs/<id>/`, and the catalog, also compiled in, whose
//! packs are found (by `search`) but off until installed (`hcpx install rg`). An
//! installed pack overrides a built-in one with the same id; a broken installed pack
//! is reported and never hides the others. The embedded packs are [`embedded`]'s.

mod embedded;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::manifest::{self, Manifest, Problem};
use crate::skill::{self, SkillDoc};

pub use embedded::{CATALOG_DIR, builtin_files, catalog_files};
pub(crate) use embedded::{builtin, builtins, catalog_packs, embedded_digest, in_catalog};

pub const MANIFEST_FILE: &str = "hcp.json";
pub const SKILL_FILE: &str = "SKILL.md";

/// Where a pack came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into this binary; its CLI file (if any) is held in memory.
    Builtin { bin: Option<&'static [u8]> },
    /// Installed in this folder.
    Installed { dir: PathBuf },
    /// In the catalog compiled into this binary, and not installed: found by search,
    /// never run (see [`Catalog::available`]).
    Catalog,
}

#[derive(Debug, Clone)]
pub struct Pack {
    /// Shared: a server hands the same parsed pack to every call.
    pub manifest: std::sync::Arc<Manifest>,
    pub skill: std::sync::Arc<SkillDoc>,
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
    #[error("the pack is in the catalog but not installed")]
    NotInstalled,
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
    /// `bin` names, found on `path_var` under that name or one of `program.aliases`.
    pub fn program(&self, home: &Path, path_var: Option<&str>) -> Result<PathBuf, ProgramError> {
        let manifest = &self.manifest;
        match (manifest.bin_file(), &self.origin) {
            (Some(file), Origin::Installed { dir }) => Ok(dir.join(file)),
            (Some(file), Origin::Builtin { bin: Some(bytes) }) => {
                let name = format!("{}-{}-{}", manifest.id, manifest.version, &digest(bytes)[..8]);
                Ok(crate::layout::builtin_copy(home, &name).join(file))
            }
            (Some(_), Origin::Builtin { bin: None }) => Err(ProgramError::MissingBuiltin),
            (Some(_), Origin::Catalog) => Err(ProgramError::NotInstalled),
            (None, _) => crate::program::resolve_pack_program(manifest, path_var).ok_or_else(|| {
                ProgramError::NotOnPath {
                    name: manifest.bin.first().cloned().unwrap_or_default(),
                }
            }),
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
            Origin::Catalog => "catalog",
        }
    }

    /// The catalog's newer version of this pack, when it was installed from the
    /// catalog (`source` is its lock entry's, `catalog:rg`) and this hcpx ships a
    /// later version than the one installed: `hcpx install rg` updates it.
    pub fn catalog_update(&self, source: Option<&str>) -> Option<semver::Version> {
        let id = self.id();
        if !matches!(self.origin, Origin::Installed { .. })
            || source != Some(format!("catalog:{id}").as_str())
        {
            return None;
        }
        let shipped = in_catalog(id)?.manifest.version.clone();
        (shipped > self.manifest.version).then_some(shipped)
    }

    /// Whether the pack can run: built in or installed, not a catalog pack waiting
    /// to be installed.
    pub fn is_installed(&self) -> bool {
        !matches!(self.origin, Origin::Catalog)
    }

    /// The program of the machine the pack wraps (`bin[0]`: `rg`, `git`), or `None`
    /// when it carries its own CLI file.
    pub fn program_name(&self) -> Option<&str> {
        match self.manifest.bin_file() {
            Some(_) => None,
            None => self.manifest.bin.first().map(String::as_str),
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
    // Another process sharing `$HCP_HOME` (a replica) may have written it meanwhile:
    // a file already running elsewhere is not replaced.
    if std::fs::read(program).is_ok_and(|existing| existing == bytes) {
        return Ok(());
    }
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
    /// The packs that run: built in or installed. Sorted by id, one per id.
    pub packs: Vec<Pack>,
    /// The catalog's packs that are not installed ([`Origin::Catalog`]), sorted by
    /// id: listed by search, refused by exec with the command that installs them.
    pub available: Vec<Pack>,
    pub broken: Vec<BrokenPack>,
    /// Ids of packs there are but that were not loaded (see [`Catalog::known`]):
    /// only for naming the closest ones to an unknown id.
    pub others: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("no pack named `{id}`")]
    Unknown { id: String, suggestions: Vec<String> },
    /// The id is a catalog pack's, and it is not installed.
    #[error("`{id}` is in the catalog but not installed")]
    NotInstalled { id: String },
}

/// Parses a pack from its two text files. `bin_present` says whether the `./FILE`
/// named by `bin`, if any, exists and is executable (`None` when it does not).
pub fn parse_pack(
    manifest_text: &str,
    skill_text: Option<&str>,
    bin_present: impl FnOnce(&str) -> Option<String>,
) -> Result<(Manifest, SkillDoc), Vec<Problem>> {
    let parsed = manifest::parse(manifest_text);
    let (id, bin_file) = match &parsed {
        Ok(manifest) => (Some(manifest.id.clone()), manifest.bin_file().map(str::to_owned)),
        // Even when the manifest is refused, check the other two files against what
        // it says, so that every problem of the pack is listed at once (the text is
        // read as JSON again only then).
        Err(_) => {
            let raw: Option<serde_json::Value> = serde_json::from_str(manifest_text).ok();
            let raw_field = |key: &str| -> Option<String> {
                let value = raw.as_ref()?.get(key)?;
                let value = if key == "bin" { value.get(0)? } else { value };
                value.as_str().map(str::to_owned)
            };
            (
                raw_field("id"),
                raw_field("bin").and_then(|bin| bin.strip_prefix("./").map(str::to_owned)),
            )
        }
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

impl Catalog {
    /// Built-in packs overlaid with those installed under `packs_dir`, and the
    /// catalog's packs that are not installed.
    pub fn load(packs_dir: &Path) -> Self {
        let mut catalog = Self::load_installed(packs_dir);
        let (listed, listed_broken) = catalog_packs();
        catalog.available = listed
            .iter()
            .filter(|pack| {
                catalog
                    .packs
                    .binary_search_by(|probe| probe.id().cmp(pack.id()))
                    .is_err()
            })
            .cloned()
            .collect();
        catalog.broken.extend(listed_broken.iter().cloned());
        catalog
    }

    /// Built-in packs overlaid with those installed under `packs_dir`.
    fn load_installed(packs_dir: &Path) -> Self {
        let (builtin, builtin_broken) = builtins();
        let mut catalog = Self {
            packs: builtin.clone(),
            available: Vec::new(),
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
                        manifest: manifest.into(),
                        skill: skill.into(),
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
    /// built-in, then the catalog's, which is not installed), as [`Catalog::load`]
    /// would find it: an installed folder that does not load is listed as broken,
    /// beside the built-in or catalog pack of that id if there is one. `None` when no
    /// pack has this id. The catalog is looked at only when the id is neither
    /// installed nor built in: exec of those parses nothing else.
    pub fn find_one(packs_dir: &Path, id: &str) -> Option<Self> {
        if !crate::template::is_pack_id(id) {
            return None;
        }
        let dir = packs_dir.join(id);
        if dir.is_dir() {
            let problems = match load_dir(&dir) {
                Ok((manifest, skill)) if manifest.id == id => {
                    return Some(Self::from_packs(vec![Pack {
                        manifest: manifest.into(),
                        skill: skill.into(),
                        origin: Origin::Installed { dir },
                    }]));
                }
                Ok((manifest, _)) => vec![Problem {
                    path: "id".to_owned(),
                    message: format!("is \"{}\", but the folder is named after another id", manifest.id),
                }],
                Err(problems) => problems,
            };
            let mut catalog = match builtin(id) {
                Some(pack) => Self::from_packs(vec![pack]),
                None => Self::not_installed(in_catalog(id)),
            };
            catalog.broken.push(BrokenPack {
                id: id.to_owned(),
                dir,
                problems,
            });
            return Some(catalog);
        }
        match builtin(id) {
            Some(pack) => Some(Self::from_packs(vec![pack])),
            None => in_catalog(id).map(|pack| Self::not_installed(Some(pack))),
        }
    }

    /// No pack that runs; this catalog pack, if any, as available.
    fn not_installed(pack: Option<Pack>) -> Self {
        Self {
            available: pack.into_iter().collect(),
            ..Self::default()
        }
    }

    /// No pack loaded, only the ids there are (for the closest ones to an unknown
    /// id) and the broken installed packs.
    pub fn known(others: Vec<String>, broken: Vec<BrokenPack>) -> Self {
        Self {
            packs: Vec::new(),
            available: Vec::new(),
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
            available: Vec::new(),
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
            Err(_) if self.available(id).is_some() => Err(CatalogError::NotInstalled { id: id.to_owned() }),
            Err(_) => Err(CatalogError::Unknown {
                id: id.to_owned(),
                suggestions: self.closest(id),
            }),
        }
    }

    /// The catalog's pack with this id when it is not installed.
    pub fn available(&self, id: &str) -> Option<&Pack> {
        self.available
            .binary_search_by(|probe| probe.manifest.id.as_str().cmp(id))
            .ok()
            .map(|index| &self.available[index])
    }

    /// The pack with this id, installed or not (what a policy rule may name before
    /// the pack is installed).
    pub fn get_any(&self, id: &str) -> Result<&Pack, CatalogError> {
        match self.get(id) {
            Err(CatalogError::NotInstalled { .. }) => {
                self.available(id).ok_or_else(|| CatalogError::Unknown {
                    id: id.to_owned(),
                    suggestions: Vec::new(),
                })
            }
            found => found,
        }
    }

    /// Up to three ids closest to `id`, best first.
    pub fn closest(&self, id: &str) -> Vec<String> {
        let mut scored: Vec<(f64, &str)> = self
            .packs
            .iter()
            .chain(&self.available)
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
mod tests;
