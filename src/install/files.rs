//! A pack's files as an install reads them from its source (`hcp.json`, `SKILL.md`
//! and the CLI file its `bin` names, nothing else): which names those are, whether
//! they make a valid pack, and the digest they are recorded and bound by.

use std::collections::BTreeMap;

use base64::Engine as _;
use sha2::{Digest as _, Sha512};

use std::path::Path;

use super::error::InstallError;
use super::folder::read_each;
use crate::catalog::{MANIFEST_FILE, SKILL_FILE, parse_pack};
use crate::manifest::{Manifest, Problem};

/// The pack's files, by name, as read from the source.
pub type Files = BTreeMap<String, Vec<u8>>;

/// The names a pack may hold: hcp.json, SKILL.md and the `./FILE` its `bin` names.
pub(super) fn wanted(manifest_text: &[u8]) -> Vec<String> {
    let mut names = vec![MANIFEST_FILE.to_owned(), SKILL_FILE.to_owned()];
    let value: serde_json::Value = serde_json::from_slice(manifest_text).unwrap_or_default();
    if let Some(file) = value["bin"][0].as_str().and_then(|bin| bin.strip_prefix("./"))
        && !file.contains('/')
        && !file.is_empty()
    {
        names.push(file.to_owned());
    }
    names
}

/// Validates the files as a pack.
pub fn validate(files: &Files) -> Result<Manifest, InstallError> {
    let text = |name: &str| files.get(name).and_then(|bytes| std::str::from_utf8(bytes).ok());
    let manifest_text = text(MANIFEST_FILE).ok_or(InstallError::ManifestNotUtf8)?;
    parse_files(files, manifest_text, |_| None).map_err(InstallError::Invalid)
}

/// The pack the files make, or every problem: the one judgement of install and
/// `pack check`. `unread` says why a file the manifest names could not be read.
fn parse_files(
    files: &Files,
    manifest_text: &str,
    unread: impl Fn(&str) -> Option<String>,
) -> Result<Manifest, Vec<Problem>> {
    let text = |name: &str| files.get(name).and_then(|bytes| std::str::from_utf8(bytes).ok());
    parse_pack(manifest_text, text(SKILL_FILE), |file| {
        unread(file).or_else(|| (!files.contains_key(file)).then(|| format!("./{file} is not in the pack")))
    })
    .map(|(manifest, _)| manifest)
}

/// A pack folder as `hcpx pack check` judges it, which is as `hcpx install` does:
/// the same reading (regular files of their own, no links, at most 16 MiB each) and
/// the same validation, with every problem listed instead of the first. What only
/// the folder shows comes as `notes`: a CLI file that is not executable there is
/// fine, since install copies it executable.
pub fn check_folder(dir: &Path) -> Result<Checked, Vec<Problem>> {
    let problem = |name: &str, error: &InstallError| Problem {
        path: name.to_owned(),
        message: match error {
            InstallError::FolderMissing { .. } => "is missing".to_owned(),
            // The error names the file first; the problem's path already does.
            other => {
                let text = other.to_string();
                text.strip_prefix(&format!("{name} "))
                    .map_or(text.clone(), str::to_owned)
            }
        },
    };
    let (files, unread) = read_each(dir).map_err(|error| vec![problem(MANIFEST_FILE, &error)])?;
    let manifest_text = files
        .get(MANIFEST_FILE)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .ok_or_else(|| {
            vec![Problem {
                path: MANIFEST_FILE.to_owned(),
                message: "is not UTF-8 text".to_owned(),
            }]
        })?;
    let why = |name: &str| {
        unread
            .iter()
            .find(|(unread, _)| unread == name)
            .filter(|(_, error)| !matches!(error, InstallError::FolderMissing { .. }))
            .map(|(name, error)| format!("./{name} {}", problem(name, error).message))
    };
    let parsed = parse_files(&files, manifest_text, why);
    // A SKILL.md that is there but cannot be taken is that problem, not a missing one.
    let skill_unread = unread
        .iter()
        .find(|(name, error)| name == SKILL_FILE && !matches!(error, InstallError::FolderMissing { .. }));
    // (A SKILL.md not read leaves the pack without one, which `parse_files` refuses.)
    let manifest = parsed.map_err(|mut problems| {
        if let Some((name, error)) = skill_unread {
            problems.retain(|found| found.path != SKILL_FILE);
            problems.insert(0, problem(name, error));
        }
        problems
    })?;
    let notes = manifest
        .bin_file()
        .filter(|file| !crate::program::is_executable(&dir.join(file)))
        .map(|file| {
            format!("./{file} is not executable in this folder; install copies it executable (chmod +x {file} to run it from here)")
        })
        .into_iter()
        .collect();
    Ok(Checked { manifest, notes })
}

/// A folder [`check_folder`] found to be a valid pack.
#[derive(Debug)]
pub struct Checked {
    pub manifest: Manifest,
    /// What is worth saying but refuses nothing.
    pub notes: Vec<String>,
}

/// `sha512-<base64>` of the files, in name order, each name and length included.
pub fn integrity(files: &Files) -> String {
    let mut hasher = Sha512::new();
    for (name, bytes) in files {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(hasher.finalize())
    )
}
