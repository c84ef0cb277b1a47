//! What a pack's command may read: the allowlist (see docs/sandbox.md), derived from
//! the call, with every entry checked against `$HCP_HOME`.
//!
//! Always: the system folders ([`super::SYSTEM_READS`]), the working directory and
//! the call's private temporary folder. Then this module adds the pack's own files
//! (its folder, and the folder its CLI runs from), the program `bin` names (its
//! folder, the folder of what a link to it leads to, and that folder's install
//! prefix), the folders on `PATH`, and the manifest's `sandbox.read`. Nothing else:
//! not the rest of `$HOME`, not `/tmp`.

use std::path::{Path, PathBuf};

use super::home::{Conflict, HomeView, canonical};

/// What a call reads beyond the system folders and its temporary folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    /// Folders and files outside `$HCP_HOME`, the working directory first.
    pub outside: Vec<PathBuf>,
    /// The pack's own files inside `$HCP_HOME` (its folder, its CLI's folder),
    /// relative to it: opened beneath it, no link followed.
    pub pack: Vec<PathBuf>,
}

/// Why a call's reads cannot be granted; nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadsError {
    #[error(
        "the working directory {cwd} is inside HCP_HOME ({home}), which no pack may read; run it from another folder"
    )]
    CwdInHome { cwd: PathBuf, home: PathBuf },
    #[error("the pack's sandbox.read `{read}` {} HCP_HOME ({home}), which no pack may read", conflict_words(*.conflict))]
    Declared {
        read: String,
        conflict: Conflict,
        home: PathBuf,
    },
    #[error(
        "the working directory {cwd} is inside the folder of the packs' cache folders ({caches}), which no pack may read; run it from another folder"
    )]
    CwdInCaches { cwd: PathBuf, caches: PathBuf },
    #[error(
        "the pack's sandbox.read `{read}` {} the folder of the packs' cache folders ({caches}), which only each pack's own commands read, each its own folder",
        conflict_words(*.conflict)
    )]
    DeclaredCaches {
        read: String,
        conflict: Conflict,
        caches: PathBuf,
    },
}

/// How a path stands to `$HCP_HOME`, in a message's words.
pub fn conflict_words(conflict: Conflict) -> &'static str {
    match conflict {
        Conflict::Inside => "is inside",
        Conflict::Holds => "holds",
    }
}

/// One call's inputs to the allowlist.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `$HCP_HOME` and its aliases.
    pub home: &'a HomeView,
    /// The caller's `HOME`, for `~/` in declared reads.
    pub user_home: Option<&'a Path>,
    pub cwd: &'a Path,
    /// The installed pack's folder (none for a built-in).
    pub pack_dir: Option<&'a Path>,
    /// The program that runs (absolute).
    pub program: &'a Path,
    pub path_var: Option<&'a str>,
    /// The manifest's `sandbox.read`.
    pub declared: &'a [String],
    /// The folder that holds every pack's cache folder, when the caller has one.
    pub caches: Option<&'a Path>,
}

/// A declared read as a path: `~/` is the caller's `HOME`; `None` when there is none.
pub fn expand(read: &str, user_home: Option<&Path>) -> Option<PathBuf> {
    match read.strip_prefix("~/") {
        Some(rest) => user_home.map(|home| home.join(rest)),
        None if read == "~" => user_home.map(Path::to_path_buf),
        None => Some(PathBuf::from(read)),
    }
}

/// Checks the manifest's `sandbox.read` against `$HCP_HOME` (`pack check` and exec):
/// the first entry that is inside it or holds it.
pub fn check_declared(
    declared: &[String],
    home: &HomeView,
    user_home: Option<&Path>,
) -> Result<(), ReadsError> {
    match declared_conflicts(declared, home, user_home).first() {
        Some((index, conflict)) => Err(ReadsError::Declared {
            read: declared[*index].clone(),
            conflict: *conflict,
            home: home.real().to_path_buf(),
        }),
        None => Ok(()),
    }
}

/// Every entry of `sandbox.read` that is inside `$HCP_HOME` or holds it, by index.
pub fn declared_conflicts(
    declared: &[String],
    home: &HomeView,
    user_home: Option<&Path>,
) -> Vec<(usize, Conflict)> {
    declared
        .iter()
        .enumerate()
        .filter_map(|(index, read)| {
            let path = expand(read, user_home)?;
            home.conflict(&path).map(|conflict| (index, conflict))
        })
        .collect()
}

/// How `path` stands to `folder`, both resolved (links on their way followed).
fn standing(path: &Path, folder: &Path) -> Option<Conflict> {
    let (path, folder) = (canonical(path), canonical(folder));
    if path.starts_with(&folder) {
        Some(Conflict::Inside)
    } else if folder.starts_with(&path) {
        Some(Conflict::Holds)
    } else {
        None
    }
}

/// The working directory and the declared reads against the folder of the packs'
/// cache folders: a pack reads another pack's cache through neither. (A working
/// directory that holds that folder, `$HOME` say, is the caller's to choose, as for
/// the rest of what it holds; `$HCP_HOME` is hidden there, the caches are not.)
fn check_caches(request: &Request<'_>) -> Result<(), ReadsError> {
    let Some(caches) = request.caches else {
        return Ok(());
    };
    if standing(request.cwd, caches) == Some(Conflict::Inside) {
        return Err(ReadsError::CwdInCaches {
            cwd: request.cwd.to_path_buf(),
            caches: caches.to_path_buf(),
        });
    }
    for read in request.declared {
        if let Some(path) = expand(read, request.user_home)
            && let Some(conflict) = standing(&path, caches)
        {
            return Err(ReadsError::DeclaredCaches {
                read: read.clone(),
                conflict,
                caches: caches.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// Version managers keep their programs in `$HOME` behind shims on `PATH`: a `PATH`
/// folder (relative to `$HOME`) and the folder it needs read with it, which holds the
/// managed programs and no credentials. rustup's proxies in `~/.cargo/bin` need
/// `~/.rustup`, never `~/.cargo` (its `credentials.toml`).
pub const TOOLCHAINS: [(&str, &str); 11] = [
    (".pyenv/shims", ".pyenv"),
    (".pyenv/bin", ".pyenv"),
    (".rbenv/shims", ".rbenv"),
    (".rbenv/bin", ".rbenv"),
    (".nodenv/shims", ".nodenv"),
    (".asdf/shims", ".asdf"),
    (".asdf/bin", ".asdf"),
    (".volta/bin", ".volta"),
    (".cargo/bin", ".rustup"),
    (".local/share/mise/shims", ".local/share/mise"),
    (".sdkman/candidates", ".sdkman"),
];

/// The folders a program comes with: its own, and, when it is a link, the folder of
/// what it leads to and, when that folder is a `bin`, the install prefix above it
/// (`~/.nvm/versions/node/v22/bin/node` reads `…/v22/lib`), unless that prefix is
/// too broad: `/`, `$HOME`, a folder above it, or a folder right in it (`~/.cargo`
/// and `~/.local` hold credentials beside their `bin`).
fn program_folders(program: &Path, user_home: Option<&Path>) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = program.parent().map(Path::to_path_buf).into_iter().collect();
    let real = canonical(program);
    if let Some(real_dir) = real.parent() {
        folders.push(real_dir.to_path_buf());
        if real_dir.file_name().is_some_and(|name| name == "bin")
            && let Some(prefix) = real_dir.parent()
        {
            let user_home = user_home.map(canonical);
            let broad = prefix.parent().is_none()
                || user_home
                    .as_ref()
                    .is_some_and(|home| home.starts_with(prefix) || prefix.parent() == Some(home.as_path()));
            if !broad {
                folders.push(prefix.to_path_buf());
            }
        }
    }
    folders
}

/// The allowlist for one call.
pub fn reads(request: &Request<'_>) -> Result<Reads, ReadsError> {
    let home = request.home;
    if home.conflict(request.cwd) == Some(Conflict::Inside) {
        return Err(ReadsError::CwdInHome {
            cwd: request.cwd.to_path_buf(),
            home: home.real().to_path_buf(),
        });
    }
    check_declared(request.declared, home, request.user_home)?;
    check_caches(request)?;
    let mut reads = Reads {
        outside: vec![request.cwd.to_path_buf()],
        pack: Vec::new(),
    };
    let mut pack_file = |path: &Path| match home.relative(path) {
        Some(relative) => {
            if !reads.pack.iter().any(|known| known == relative) {
                reads.pack.push(relative.to_path_buf());
            }
            true
        }
        None => false,
    };
    // The pack's own files, inside `$HCP_HOME`: granted beneath it.
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = request.pack_dir
        && !pack_file(dir)
    {
        candidates.push(dir.to_path_buf());
    }
    for folder in program_folders(request.program, request.user_home) {
        if !pack_file(&folder) {
            candidates.push(folder);
        }
    }
    if let (Some(path), user_home) = (request.path_var, request.user_home) {
        for dir in std::env::split_paths(path).filter(|dir| dir.is_absolute()) {
            if user_home.is_some_and(|home| dir == home) {
                continue;
            }
            if let Some(home) = user_home
                && let Ok(inside) = dir.strip_prefix(home)
                && let Some((_, root)) = TOOLCHAINS.iter().find(|(folder, _)| inside.starts_with(folder))
            {
                candidates.push(dir);
                candidates.push(home.join(root));
            } else {
                candidates.push(dir);
            }
        }
    }
    // Whatever leads into `$HCP_HOME` or holds it, as written, is left out: the
    // pack's own files were taken above, and nothing else of it is a pack's to read.
    // (A link there is no way in: the layer that hides `$HCP_HOME` still hides it.)
    candidates.retain(|path| !home.touches(path));
    candidates.extend(
        request
            .declared
            .iter()
            .filter_map(|read| expand(read, request.user_home)),
    );
    for path in candidates {
        if !reads.outside.contains(&path) {
            reads.outside.push(path);
        }
    }
    Ok(reads)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    fn tree() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in [
            "u/.hcp/packs/p",
            "u/.hcp/.builtin/t-1",
            "u/work",
            "u/.cargo/bin",
            "u/.nvm/versions/node/v22/bin",
            "u/bin",
            "opt/tool/bin",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("u/.nvm/versions/node/v22/bin/node"), "").unwrap();
        std::os::unix::fs::symlink(
            root.join("u/.nvm/versions/node/v22/bin/node"),
            root.join("u/bin/node"),
        )
        .unwrap();
        Tree { _dir: dir, root }
    }

    fn request<'a>(
        tree: &'a Tree,
        home: &'a HomeView,
        program: &'a Path,
        declared: &'a [String],
    ) -> Request<'a> {
        Request {
            home,
            user_home: Some(Box::leak(tree.root.join("u").into_boxed_path())),
            cwd: Box::leak(tree.root.join("u/work").into_boxed_path()),
            pack_dir: None,
            program,
            path_var: None,
            declared,
            caches: None,
        }
    }

    #[test]
    fn the_allowlist_is_the_cwd_the_program_and_what_is_declared() {
        let tree = tree();
        let root = &tree.root;
        let home = HomeView::new(&root.join("u/.hcp"), None);
        let program = root.join("u/.cargo/bin/rg");
        let declared = vec!["~/.config/rg".to_owned(), "/etc/x".to_owned()];
        let mut req = request(&tree, &home, &program, &declared);
        let path_var = format!(
            "{}:{}:relative:{}:{}",
            root.join("u/bin").display(),
            root.join("u").display(),
            root.join("u/.hcp").display(),
            root.join("u/.pyenv/shims").display()
        );
        req.path_var = Some(&path_var);
        let dir = root.join("u/.hcp/packs/p");
        req.pack_dir = Some(&dir);
        assert_eq!(
            reads(&req).unwrap(),
            Reads {
                outside: vec![
                    root.join("u/work"),
                    // ~/.cargo is right in HOME: only its bin.
                    root.join("u/.cargo/bin"),
                    root.join("u/bin"),
                    // A version manager's shims bring its folder.
                    root.join("u/.pyenv/shims"),
                    root.join("u/.pyenv"),
                    root.join("u/.config/rg"),
                    "/etc/x".into(),
                ],
                pack: vec!["packs/p".into()],
            }
        );
    }

    #[test]
    fn a_linked_program_brings_its_install_prefix() {
        let tree = tree();
        let root = &tree.root;
        let home = HomeView::new(&root.join("u/.hcp"), None);
        let program = root.join("u/bin/node");
        let found = reads(&request(&tree, &home, &program, &[])).unwrap();
        assert_eq!(
            found.outside,
            [
                root.join("u/work"),
                root.join("u/bin"),
                root.join("u/.nvm/versions/node/v22/bin"),
                root.join("u/.nvm/versions/node/v22"),
            ]
        );
        // A built-in's CLI under HCP_HOME is a pack file.
        let program = root.join("u/.hcp/.builtin/t-1/transit");
        let found = reads(&request(&tree, &home, &program, &[])).unwrap();
        assert_eq!(found.pack, [PathBuf::from(".builtin/t-1")]);
        assert_eq!(found.outside, [root.join("u/work")]);
    }

    #[test]
    fn reads_that_reach_hcp_home_are_refused() {
        let tree = tree();
        let root = &tree.root;
        let home = HomeView::new(&root.join("u/.hcp"), None);
        let program = root.join("opt/tool/bin/tool");
        for (read, conflict) in [
            ("~/.hcp", Conflict::Inside),
            ("~/.hcp/packs", Conflict::Inside),
            ("~", Conflict::Holds),
            ("/", Conflict::Holds),
        ] {
            let declared = vec![read.to_owned()];
            assert_eq!(
                reads(&request(&tree, &home, &program, &declared)),
                Err(ReadsError::Declared {
                    read: read.to_owned(),
                    conflict,
                    home: root.join("u/.hcp"),
                }),
                "{read}"
            );
        }
        let mut req = request(&tree, &home, &program, &[]);
        let cwd = root.join("u/.hcp/packs");
        req.cwd = &cwd;
        assert_eq!(
            reads(&req),
            Err(ReadsError::CwdInHome {
                cwd: cwd.clone(),
                home: root.join("u/.hcp")
            })
        );
        // A working directory that holds it is fine: the base layer hides it.
        let cwd = root.join("u");
        req.cwd = &cwd;
        assert!(reads(&req).is_ok());
        assert_eq!(
            ReadsError::Declared {
                read: "~".into(),
                conflict: Conflict::Holds,
                home: "/h".into()
            }
            .to_string(),
            "the pack's sandbox.read `~` holds HCP_HOME (/h), which no pack may read"
        );
    }

    #[test]
    fn no_pack_reads_the_cache_folders_by_its_working_directory_or_a_declared_read() {
        let tree = tree();
        let root = &tree.root;
        let home = HomeView::new(&root.join("u/.hcp"), None);
        let program = root.join("opt/tool/bin/tool");
        let caches = root.join("u/.cache/hcpx/packs");
        std::fs::create_dir_all(caches.join("a-1")).unwrap();
        for (read, conflict) in [
            ("~/.cache", Conflict::Holds),
            ("~/.cache/hcpx/packs/a-1/cargo", Conflict::Inside),
        ] {
            let declared = vec![read.to_owned()];
            let mut req = request(&tree, &home, &program, &declared);
            req.caches = Some(&caches);
            assert_eq!(
                reads(&req),
                Err(ReadsError::DeclaredCaches {
                    read: read.to_owned(),
                    conflict,
                    caches: caches.clone(),
                }),
                "{read}"
            );
        }
        // Beside it is fine.
        let declared = vec!["~/.cache/other".to_owned()];
        let mut req = request(&tree, &home, &program, &declared);
        req.caches = Some(&caches);
        assert!(reads(&req).is_ok());
        let cwd = caches.join("a-1");
        req.cwd = &cwd;
        assert_eq!(
            reads(&req),
            Err(ReadsError::CwdInCaches {
                cwd: cwd.clone(),
                caches: caches.clone()
            })
        );
        // Through a link too.
        std::os::unix::fs::symlink(&cwd, root.join("u/work/linked")).unwrap();
        let linked = root.join("u/work/linked");
        req.cwd = &linked;
        assert!(matches!(reads(&req), Err(ReadsError::CwdInCaches { .. })));
    }
}
