//! Whether a file can run as a program on this machine: a program found on a `PATH`
//! value (a pack's under `bin[0]` or one of its `program.aliases`), a pack's `./FILE`
//! checked to be an executable regular file, and the interpreter a script's `#!` line
//! names. Also how to get a missing program on this system ([`hints`]) and the one
//! bounded run of a found program that tells its variant ([`probe`]).

pub(crate) mod hints;
pub(crate) mod probe;

use std::path::{Path, PathBuf};

use crate::manifest::Manifest;

pub(crate) use hints::Os;

/// The names a pack's program goes by, in the order they are looked for on `PATH`:
/// `bin[0]`, then each of `program.aliases` (Debian's `fd` is `fdfind`). Empty for a
/// pack that carries its own CLI file.
pub(crate) fn names(manifest: &Manifest) -> Vec<&str> {
    if manifest.bin_file().is_some() {
        return Vec::new();
    }
    manifest
        .bin
        .first()
        .map(String::as_str)
        .into_iter()
        .chain(
            manifest
                .program
                .iter()
                .flat_map(|program| program.aliases.iter().map(String::as_str)),
        )
        .collect()
}

/// The program a pack that wraps one of the machine runs: the first of its
/// [`names`] found on `path_var`, as an absolute path.
pub(crate) fn resolve_pack_program(manifest: &Manifest, path_var: Option<&str>) -> Option<PathBuf> {
    names(manifest)
        .into_iter()
        .find_map(|name| resolve_program(name, path_var))
}

/// Finds an executable `name` on a `PATH` value.
pub(crate) fn resolve_program(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is (or links to) a regular file someone may execute.
pub(crate) fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// Why a pack's `./FILE` cannot run, or `None` when it is an executable regular file.
pub(crate) fn check_bin_file(path: &Path) -> Option<String> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    match std::fs::symlink_metadata(path) {
        Err(_) => Some(format!("./{name} is not in the pack")),
        Ok(meta) if !meta.file_type().is_file() => Some(format!("./{name} is not a regular file")),
        Ok(meta) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                if meta.permissions().mode() & 0o111 == 0 {
                    return Some(format!("./{name} is not executable (chmod +x {name})"));
                }
            }
            let _ = meta;
            None
        }
    }
}

/// The interpreter a script's `#!` line names, when it is an absolute path.
pub(crate) fn shebang_interpreter(head: &[u8]) -> Option<PathBuf> {
    let line = head.strip_prefix(b"#!")?;
    let end = line.iter().position(|b| *b == b'\n').unwrap_or(line.len());
    let line = std::str::from_utf8(&line[..end]).ok()?;
    let program = line.split_whitespace().next()?;
    program.starts_with('/').then(|| PathBuf::from(program))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_interpreters() {
        assert_eq!(
            shebang_interpreter(b"#!/bin/sh\necho"),
            Some(PathBuf::from("/bin/sh"))
        );
        assert_eq!(
            shebang_interpreter(b"#! /usr/bin/env python3\n"),
            Some(PathBuf::from("/usr/bin/env"))
        );
        assert_eq!(shebang_interpreter(b"#!python\n"), None);
        assert_eq!(shebang_interpreter(b"echo"), None);
    }

    fn manifest(bin: &str, aliases: &[&str]) -> Manifest {
        let mut text = serde_json::json!({
            "hcp": 1, "id": "demo", "version": "1.0.0", "description": "d", "bin": [bin],
            "commands": { "run": { "summary": "s", "effect": "read", "argv": [] } }
        });
        if !aliases.is_empty() {
            text["program"] = serde_json::json!({ "aliases": aliases });
        }
        crate::manifest::parse(&text.to_string()).unwrap()
    }

    /// `bin[0]` first, then each alias; the first found on PATH is the program.
    #[test]
    fn a_pack_program_is_found_under_its_aliases() {
        let dir = tempfile::tempdir().unwrap();
        let later = tempfile::tempdir().unwrap();
        let make = |dir: &Path, name: &str| {
            let path = dir.join(name);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            path
        };
        let path = format!("{}:{}", dir.path().display(), later.path().display());
        let fd = manifest("fd-hcpx-test", &["fdfind-hcpx-test", "fd-other-hcpx-test"]);
        assert_eq!(
            names(&fd),
            ["fd-hcpx-test", "fdfind-hcpx-test", "fd-other-hcpx-test"]
        );
        assert_eq!(resolve_pack_program(&fd, Some(&path)), None);
        let other = make(dir.path(), "fd-other-hcpx-test");
        assert_eq!(resolve_pack_program(&fd, Some(&path)), Some(other));
        // An earlier name wins over an earlier folder.
        let alias = make(later.path(), "fdfind-hcpx-test");
        assert_eq!(resolve_pack_program(&fd, Some(&path)), Some(alias));
        let first = make(later.path(), "fd-hcpx-test");
        assert_eq!(resolve_pack_program(&fd, Some(&path)), Some(first));
        // A pack with its own CLI has no program of the machine.
        assert!(names(&manifest("./demo", &[])).is_empty());
    }

    #[test]
    fn resolves_programs_on_path_only_from_absolute_dirs() {
        assert!(resolve_program("sh", Some("/usr/bin:/bin")).is_some());
        assert!(resolve_program("sh", Some("relative/bin")).is_none());
        assert!(resolve_program("sh", None).is_none());
        assert!(resolve_program("no-such-program-hcpx", Some("/usr/bin:/bin")).is_none());
    }
}
