//! Each pack's persistent cache folder (`{cache}` in its `sandbox.env`, see
//! docs/sandbox.md): where it is (in the user's cache folder, never in `$HCP_HOME`),
//! what it is named (the pack's id and the place it came from, so that a pack of
//! another source that takes the id starts with an empty one), what `doctor` lists
//! and what `uninstall` removes. The sandbox makes it, following no link into it, and
//! grants it to that pack's calls alone. Not [`crate::cache`], which is what a
//! long-lived server keeps in memory.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::catalog::Pack;
use crate::context::{Context, env_vars};
use crate::sandbox::CacheFolder;

/// hcpx's folder in the user's cache folder, and in it the folder of the packs'.
const APP: &str = "hcpx";
const PACKS: &str = "packs";
/// Hex digits of the source's digest in a folder's name: enough that two places
/// never meet, short enough to read.
const KEY_DIGITS: usize = 16;

/// Why a pack's cache folder cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CacheError {
    #[error(
        "the pack keeps a cache folder ({{cache}} in its sandbox.env), and neither XDG_CACHE_HOME nor HOME says where the user's cache folder is"
    )]
    NoUserCache,
}

/// The user's cache folder: `$XDG_CACHE_HOME` when it is an absolute path (a relative
/// one is ignored, as the XDG base directory specification says), else
/// `~/Library/Caches` on macOS and `~/.cache` elsewhere.
pub(crate) fn user_cache(ctx: &Context) -> Option<PathBuf> {
    if let Some(dir) = ctx
        .var(env_vars::XDG_CACHE_HOME)
        .map(Path::new)
        .filter(|dir| dir.is_absolute())
    {
        return Some(dir.to_path_buf());
    }
    let home = ctx
        .var(env_vars::HOME)
        .map(Path::new)
        .filter(|home| home.is_absolute())?;
    Some(if cfg!(target_os = "macos") {
        home.join("Library/Caches")
    } else {
        home.join(".cache")
    })
}

/// The folder that holds every pack's cache folder (`…/hcpx/packs`).
pub(crate) fn root(ctx: &Context) -> Option<PathBuf> {
    user_cache(ctx).map(|dir| dir.join(APP).join(PACKS))
}

/// The name of the cache folder of pack `id` from `source`: the id, then a digest of
/// the place the source names (any version of the same npm package, the same folder,
/// the built-in id), so an update keeps the cache and another source starts afresh.
pub(crate) fn name(id: &str, source: &str) -> String {
    let digest = Sha256::digest(crate::install::source_place(source).as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{id}-{}", &hex[..KEY_DIGITS])
}

/// The pack's cache folder, or `None` when its `sandbox.env` names none.
pub(crate) fn folder(ctx: &Context, pack: &Pack) -> Result<Option<CacheFolder>, CacheError> {
    if !pack.manifest.uses_cache() {
        return Ok(None);
    }
    let base = user_cache(ctx).ok_or(CacheError::NoUserCache)?;
    let source = crate::install::source(&ctx.home, pack);
    Ok(Some(CacheFolder {
        base,
        beneath: Path::new(APP).join(PACKS).join(name(pack.id(), &source)),
        sub: Vec::new(),
    }))
}

/// The cache folder of the pack installed as `id` (whether its manifest names one
/// or not, and whether it can be read: what `uninstall` removes).
pub(crate) fn installed_folder(ctx: &Context, id: &str) -> Option<PathBuf> {
    let source = crate::install::installed_source(&ctx.home, id, &ctx.packs_dir().join(id));
    root(ctx).map(|root| root.join(name(id, &source)))
}

/// One folder of the packs' cache folders, as `doctor` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Listed {
    pub path: PathBuf,
    /// The pack whose folder it is; `None`: no pack here has it (a pack since
    /// uninstalled by other means, or replaced by one from another source).
    pub pack: Option<String>,
    /// What its files hold, links not followed.
    pub bytes: u64,
}

/// Every folder in [`root`], sorted, each with its pack among `packs` and its size.
pub(crate) fn list(ctx: &Context, packs: &[Pack]) -> Vec<Listed> {
    let Some(root) = root(ctx) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let owners: Vec<(String, &str)> = packs
        .iter()
        .filter(|pack| pack.manifest.uses_cache())
        .map(|pack| {
            (
                name(pack.id(), &crate::install::source(&ctx.home, pack)),
                pack.id(),
            )
        })
        .collect();
    let mut listed: Vec<Listed> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            Listed {
                path: entry.path(),
                pack: owners
                    .iter()
                    .find(|(folder, _)| *folder == file_name)
                    .map(|(_, id)| (*id).to_owned()),
                bytes: size(&entry.path()),
            }
        })
        .collect();
    listed.sort_by(|a, b| a.path.cmp(&b.path));
    listed
}

/// The bytes the files under `path` hold, no link followed.
fn size(path: &Path) -> u64 {
    let mut total = 0_u64;
    let mut pending = vec![path.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&next) {
                pending.extend(entries.filter_map(Result::ok).map(|entry| entry.path()));
            }
        } else {
            total = total.saturating_add(meta.len());
        }
    }
    total
}

/// Removes a pack's cache folder; whether there was one. A link there is removed
/// itself, never followed.
pub(crate) fn remove(path: &Path) -> std::io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).map(|()| true),
        Ok(_) => std::fs::remove_file(path).map(|()| true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(pairs: &[(&str, &str)]) -> Context {
        let env = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        Context::new(env, "/w".into(), false).unwrap()
    }

    #[test]
    fn the_user_cache_folder_is_xdg_cache_home_or_in_home() {
        let ctx_of = |pairs: &[(&str, &str)]| user_cache(&ctx(pairs));
        assert_eq!(
            ctx_of(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]),
            Some(PathBuf::from("/x"))
        );
        let in_home = if cfg!(target_os = "macos") {
            "/h/Library/Caches"
        } else {
            "/h/.cache"
        };
        // A relative XDG_CACHE_HOME is ignored.
        assert_eq!(
            ctx_of(&[("HOME", "/h"), ("XDG_CACHE_HOME", "rel")]),
            Some(PathBuf::from(in_home))
        );
        assert_eq!(ctx_of(&[("HOME", "/h")]), Some(PathBuf::from(in_home)));
        assert_eq!(ctx_of(&[("HCP_HOME", "/s"), ("HOME", "")]), None);
        assert_eq!(
            root(&ctx(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")])),
            Some(PathBuf::from("/x/hcpx/packs"))
        );
    }

    #[test]
    fn a_folder_is_named_by_the_pack_and_the_place_it_came_from() {
        let npm = name("rg", "npm:hcp-rg@1.0.0");
        assert_eq!(npm.len(), "rg-".len() + KEY_DIGITS);
        // Another version of the same package: the same folder.
        assert_eq!(npm, name("rg", "npm:hcp-rg@2.0.0"));
        // Another source for the id: another folder.
        for other in ["npm:evil-rg@1.0.0", "builtin:rg", "/home/u/rg"] {
            assert_ne!(npm, name("rg", other), "{other}");
        }
        assert_eq!(name("rg", "builtin:rg"), name("rg", "builtin:rg"));
        assert_ne!(name("rg", "builtin:rg"), name("fd", "builtin:rg"));
    }

    #[test]
    fn removing_a_folder_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept");
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join("file"), "x").unwrap();
        let folder = dir.path().join("cache");
        std::fs::create_dir_all(folder.join("sub")).unwrap();
        std::os::unix::fs::symlink(&kept, folder.join("sub/link")).unwrap();
        std::fs::write(folder.join("sub/data"), "12345").unwrap();
        assert_eq!(
            size(&folder),
            5 + std::fs::symlink_metadata(folder.join("sub/link")).unwrap().len()
        );
        assert!(remove(&folder).unwrap());
        assert!(!folder.exists());
        assert!(kept.join("file").exists());
        assert!(!remove(&folder).unwrap());
        std::os::unix::fs::symlink(&kept, &folder).unwrap();
        assert!(remove(&folder).unwrap());
        assert!(kept.join("file").exists());
    }
}
