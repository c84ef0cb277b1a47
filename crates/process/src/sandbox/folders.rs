//! The folders a call's grants make when it spawns (see docs/sandbox.md): the folder a
//! `path` parameter names in a command's `write` (`"{into}"`), made with its missing
//! parents beneath the working directory; and the pack's persistent cache folder, made
//! mode 0700 in the user's cache folder. Neither is made by following a link out of
//! where it belongs; `--dry-run` makes nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::home::{Conflict, HomeView};
use super::reads::conflict_words;

/// A pack's persistent cache folder (`{cache}` in its `sandbox.env`): `base` is the
/// user's cache folder, taken as it is (a link on its way is the user's own
/// setting); `beneath` the folders hcpx keeps in it (`hcpx/packs/ID-KEY`), each made
/// mode 0700 and opened without following a link, so a link planted there leads the
/// pack nowhere; `sub` the folders `sandbox.env` names in it (`cargo`), made the same
/// way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheFolder {
    pub base: PathBuf,
    pub beneath: PathBuf,
    pub sub: Vec<String>,
}

impl CacheFolder {
    /// Where the folder is.
    pub fn path(&self) -> PathBuf {
        self.base.join(&self.beneath)
    }

    /// Whether the folder is inside `$HCP_HOME` or holds it, through any of its paths
    /// and whatever links lead there.
    pub fn in_home(&self, home: &HomeView) -> Option<CacheInHome> {
        let path = self.path();
        home.conflict(&path).map(|conflict| CacheInHome {
            path,
            conflict,
            home: home.real().to_path_buf(),
        })
    }
}

/// A cache folder that `$HCP_HOME` would hold or that would hold it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the pack's cache folder {path} {} HCP_HOME ({home}), which no pack may write; set XDG_CACHE_HOME to a folder outside it",
    conflict_words(*.conflict)
)]
pub struct CacheInHome {
    pub path: PathBuf,
    pub conflict: Conflict,
    pub home: PathBuf,
}

/// Why a folder of the call's grants could not be made; nothing of the pack ran.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("the write folder `{path}` leads out of the working directory through a link")]
    Outside { path: String },
    #[error("the write folder `{path}` cannot be made: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is a link or not a folder; hcpx keeps the pack's cache there and follows no link, so remove it"
    )]
    CacheLink { path: PathBuf },
    #[error("{path} belongs to another user; hcpx keeps the pack's cache there, so remove it")]
    CacheOwner { path: PathBuf },
    #[error("the pack's cache folder {path} cannot be made: {source}")]
    Cache {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    InHome(#[from] CacheInHome),
}

/// Mode of the folders a `path` parameter's grant makes, 0755 (the caller's umask
/// applies).
#[cfg(unix)]
const WRITE_MODE: rustix::fs::Mode = rustix::fs::Mode::RWXU
    .union(rustix::fs::Mode::RGRP)
    .union(rustix::fs::Mode::XGRP)
    .union(rustix::fs::Mode::ROTH)
    .union(rustix::fs::Mode::XOTH);
/// Mode of the cache folders, 0700: the pack's alone, its user's alone.
#[cfg(unix)]
const CACHE_MODE: rustix::fs::Mode = rustix::fs::Mode::RWXU;

/// Makes each of `made` (relative to `cwd`, already checked to stay inside it) when it
/// is missing, with its missing parents, never through a link that leads out of `cwd`.
pub fn make_writes(cwd: &Path, made: &[String]) -> Result<(), FolderError> {
    if made.is_empty() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use rustix::fs::{Mode, OFlags};
        let root = rustix::fs::open(
            cwd,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|error| FolderError::Write {
            path: ".".to_owned(),
            source: error.into(),
        })?;
        for relative in made {
            make_beneath(&root, relative)?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        for relative in made {
            std::fs::create_dir_all(cwd.join(relative)).map_err(|source| FolderError::Write {
                path: relative.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

/// One folder beneath `root`: each prefix of `relative` resolved beneath it
/// (`openat2(RESOLVE_BENEATH)`: a link inside the working directory is followed, one
/// that leads out is refused), and the missing ones made in the folder resolved
/// before them.
#[cfg(target_os = "linux")]
fn make_beneath(root: &std::os::fd::OwnedFd, relative: &str) -> Result<(), FolderError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    let outside = || FolderError::Outside {
        path: relative.to_owned(),
    };
    let failed = |error: Errno| FolderError::Write {
        path: relative.to_owned(),
        source: error.into(),
    };
    let open = |prefix: &Path| {
        rustix::fs::openat2(
            root,
            prefix,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
    };
    let components: Vec<std::path::Component<'_>> = Path::new(relative).components().collect();
    let mut prefix = PathBuf::new();
    for (index, component) in components.iter().enumerate() {
        let parent = prefix.clone();
        prefix.push(component);
        let std::path::Component::Normal(name) = component else {
            continue;
        };
        match open(&prefix) {
            Ok(_) => continue,
            Err(Errno::NOENT) => {}
            Err(Errno::XDEV | Errno::LOOP) => return Err(outside()),
            // A file that is the grant itself: the pack may write that file.
            Err(Errno::NOTDIR) if index + 1 == components.len() => return Ok(()),
            Err(error) => return Err(failed(error)),
        }
        let dir = match parent.as_os_str().is_empty() {
            true => rustix::io::dup(root).map_err(failed)?,
            false => open(&parent).map_err(|error| match error {
                Errno::XDEV | Errno::LOOP => outside(),
                error => failed(error),
            })?,
        };
        match rustix::fs::mkdirat(&dir, *name, WRITE_MODE) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(error) => return Err(failed(error)),
        }
        // What was made, or what stood there, must still be beneath the folder.
        open(&prefix).map_err(|error| match error {
            Errno::XDEV | Errno::LOOP => outside(),
            error => failed(error),
        })?;
    }
    Ok(())
}

/// One folder beneath `root`, where there is no `openat2`: each folder on the way
/// opened without following any link (a link inside the working directory is refused
/// too), the missing ones made.
#[cfg(all(unix, not(target_os = "linux")))]
fn make_beneath(root: &std::os::fd::OwnedFd, relative: &str) -> Result<(), FolderError> {
    let mut names = Vec::new();
    for component in Path::new(relative).components() {
        match component {
            std::path::Component::Normal(name) => names.push(name),
            std::path::Component::CurDir => {}
            _ => {
                return Err(FolderError::Outside {
                    path: relative.to_owned(),
                });
            }
        }
    }
    make_chain(root, &names, WRITE_MODE)
        .map(drop)
        .map_err(|(_, error)| match error {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => FolderError::Outside {
                path: relative.to_owned(),
            },
            error => FolderError::Write {
                path: relative.to_owned(),
                source: error.into(),
            },
        })
}

/// Makes (when missing) and opens each of `names` in the one before, from `dir`,
/// following no link; the last one opened. The error says how many names were
/// opened before it.
#[cfg(unix)]
fn make_chain(
    dir: &std::os::fd::OwnedFd,
    names: &[&std::ffi::OsStr],
    mode: rustix::fs::Mode,
) -> Result<std::os::fd::OwnedFd, (usize, rustix::io::Errno)> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    let mut current = rustix::io::dup(dir).map_err(|error| (0, error))?;
    for (index, name) in names.iter().enumerate() {
        match rustix::fs::mkdirat(&current, *name, mode) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(error) => return Err((index, error)),
        }
        current = rustix::fs::openat(
            &current,
            *name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|error| (index, error))?;
    }
    Ok(current)
}

/// Makes the pack's cache folder and its `sub` folders (mode 0700) when missing and
/// opens it: the user's cache folder as it is (made when missing), then each folder
/// of `beneath` and `sub` without following a link. The folder must be this user's
/// and not inside `$HCP_HOME` (checked again where it really is, as opened).
#[cfg(unix)]
pub fn open_cache(folder: &CacheFolder, home: &HomeView) -> Result<std::os::fd::OwnedFd, FolderError> {
    use std::os::unix::fs::DirBuilderExt as _;

    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    let path = folder.path();
    if let Some(conflict) = folder.in_home(home) {
        return Err(conflict.into());
    }
    let cache_error = |source: std::io::Error| FolderError::Cache {
        path: path.clone(),
        source,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&folder.base)
        .map_err(cache_error)?;
    let base = rustix::fs::open(
        &folder.base,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|error| cache_error(error.into()))?;
    let names: Vec<&std::ffi::OsStr> = folder
        .beneath
        .components()
        .filter_map(|component| match component {
            std::path::Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let failure = |at: PathBuf, error: Errno| match error {
        Errno::LOOP | Errno::NOTDIR => FolderError::CacheLink { path: at },
        error => FolderError::Cache {
            path: at,
            source: error.into(),
        },
    };
    let step = |names: &[&std::ffi::OsStr], index: usize| {
        names[..=index.min(names.len().saturating_sub(1))]
            .iter()
            .fold(PathBuf::new(), |path, name| path.join(name))
    };
    let opened = make_chain(&base, &names, CACHE_MODE)
        .map_err(|(index, error)| failure(folder.base.join(step(&names, index)), error))?;
    let stat = rustix::fs::fstat(&opened).map_err(|error| cache_error(error.into()))?;
    if stat.st_uid != rustix::process::geteuid().as_raw() {
        return Err(FolderError::CacheOwner { path });
    }
    if stat.st_mode & 0o077 != 0 {
        rustix::fs::fchmod(&opened, CACHE_MODE).map_err(|error| cache_error(error.into()))?;
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", opened.as_raw_fd()))
            && let Some(conflict) = home.conflict(&real)
        {
            return Err(CacheInHome {
                path: real,
                conflict,
                home: home.real().to_path_buf(),
            }
            .into());
        }
    }
    for sub in &folder.sub {
        let names: Vec<&std::ffi::OsStr> = Path::new(sub).iter().collect();
        make_chain(&opened, &names, CACHE_MODE)
            .map_err(|(index, error)| failure(path.join(step(&names, index)), error))?;
    }
    Ok(opened)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn write_folders_are_made_with_their_parents_beneath_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join("inside")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), cwd.join("away")).unwrap();
        std::os::unix::fs::symlink("inside", cwd.join("near")).unwrap();
        std::fs::write(cwd.join("file"), "").unwrap();
        make_writes(
            &cwd,
            &["./out/a/b".to_owned(), "near/x".to_owned(), "file".to_owned()],
        )
        .unwrap();
        assert!(cwd.join("out/a/b").is_dir());
        assert!(cwd.join("inside/x").is_dir());
        assert_eq!(mode(&cwd.join("out/a")) & 0o700, 0o700);
        for escape in ["away/x", "away", "../outside/y", "inside/../../outside/z"] {
            let error = make_writes(&cwd, &[escape.to_owned()]).unwrap_err();
            assert!(matches!(error, FolderError::Outside { .. }), "{escape}: {error}");
        }
        assert_eq!(
            std::fs::read_dir(dir.path().join("outside")).unwrap().count(),
            0,
            "nothing was made outside"
        );
    }

    fn cache(root: &Path) -> CacheFolder {
        CacheFolder {
            base: root.join("user/.cache"),
            beneath: PathBuf::from("hcpx/packs/p-0123"),
            sub: vec!["cargo".to_owned(), "a/b".to_owned()],
        }
    }

    #[test]
    fn the_cache_folder_is_made_private_with_its_sub_folders() {
        let dir = tempfile::tempdir().unwrap();
        let folder = cache(dir.path());
        let home = HomeView::new(&dir.path().join("user/.hcp"), None);
        open_cache(&folder, &home).unwrap();
        for path in [
            folder.path(),
            folder.path().join("cargo"),
            folder.path().join("a/b"),
            dir.path().join("user/.cache/hcpx/packs"),
        ] {
            assert_eq!(mode(&path), 0o700, "{}", path.display());
        }
        // Once more: what is there is used.
        std::fs::write(folder.path().join("cargo/kept"), "x").unwrap();
        open_cache(&folder, &home).unwrap();
        assert!(folder.path().join("cargo/kept").exists());
    }

    #[test]
    fn a_link_where_the_cache_is_kept_is_never_followed() {
        for planted in [
            "hcpx",
            "hcpx/packs",
            "hcpx/packs/p-0123",
            "hcpx/packs/p-0123/cargo",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let folder = cache(dir.path());
            let target = dir.path().join("target");
            std::fs::create_dir_all(&target).unwrap();
            let link = folder.base.join(planted);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let home = HomeView::new(&dir.path().join("user/.hcp"), None);
            let error = open_cache(&folder, &home).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "{} is a link or not a folder; hcpx keeps the pack's cache there and follows no link, so remove it",
                    link.display()
                ),
                "{planted}"
            );
            assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "{planted}");
        }
    }

    #[test]
    fn a_cache_folder_in_hcp_home_is_refused_whatever_links_say() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let folder = CacheFolder {
            base: real.join("user/.cache"),
            beneath: PathBuf::from("hcpx/packs/p-0123"),
            sub: Vec::new(),
        };
        // The user's cache folder is a link into HCP_HOME.
        std::fs::create_dir_all(real.join("user/.hcp/stash")).unwrap();
        std::os::unix::fs::symlink(real.join("user/.hcp/stash"), real.join("user/.cache")).unwrap();
        let home = HomeView::new(&real.join("user/.hcp"), None);
        let error = open_cache(&folder, &home).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "the pack's cache folder {} is inside HCP_HOME ({}), which no pack may write; set XDG_CACHE_HOME to a folder outside it",
                folder.path().display(),
                real.join("user/.hcp").display()
            )
        );
        assert_eq!(
            std::fs::read_dir(real.join("user/.hcp/stash")).unwrap().count(),
            0
        );
        // A cache folder that holds HCP_HOME.
        let holding = CacheFolder {
            base: real.clone(),
            beneath: PathBuf::from("user"),
            sub: Vec::new(),
        };
        assert_eq!(
            holding.in_home(&home).map(|conflict| conflict.conflict),
            Some(Conflict::Holds)
        );
    }
}
