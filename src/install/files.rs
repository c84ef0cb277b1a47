//! A pack's files as an install reads them from its source (`hcp.json`, `SKILL.md`
//! and the CLI file its `bin` names, nothing else): which names those are, whether
//! they make a valid pack, and the digest they are recorded and bound by.

use std::collections::BTreeMap;

use base64::Engine as _;
use sha2::{Digest as _, Sha512};

use super::error::InstallError;
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
pub(super) fn parse_files(
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
