//! `hcpx pack check`'s judgement of a folder, which is install's: the reading of
//! `folder.rs` and the validation of `files.rs`, every problem listed.

use std::path::Path;

use super::error::InstallError;
use super::files::parse_files;
use super::folder::read_each;
use crate::catalog::{MANIFEST_FILE, SKILL_FILE};
use crate::manifest::{Manifest, Problem};

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
