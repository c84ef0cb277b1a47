//! Whether a file can run as a program on this machine: a program found on a `PATH`
//! value, a pack's `./FILE` checked to be an executable regular file, and the
//! interpreter a script's `#!` line names.

use std::path::{Path, PathBuf};

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

    #[test]
    fn resolves_programs_on_path_only_from_absolute_dirs() {
        assert!(resolve_program("sh", Some("/usr/bin:/bin")).is_some());
        assert!(resolve_program("sh", Some("relative/bin")).is_none());
        assert!(resolve_program("sh", None).is_none());
        assert!(resolve_program("no-such-program-hcpx", Some("/usr/bin:/bin")).is_none());
    }
}
