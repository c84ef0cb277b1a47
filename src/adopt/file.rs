//! A host file on disk: where its bytes are (links followed) and whether it may be
//! written.

use std::path::{Path, PathBuf};

use super::AdoptError;

/// Where the bytes of a host file are: links followed to their end, which may not
/// exist yet. The folder is made canonical when it exists, so that one file has one
/// name in the record.
pub fn resolve(path: &Path) -> Result<PathBuf, AdoptError> {
    /// As many links as Linux follows before ELOOP.
    const MAX_LINKS: usize = 40;
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let Ok(target) = std::fs::read_link(&current) else {
            let canonical = current
                .parent()
                .and_then(|dir| dir.canonicalize().ok())
                .zip(current.file_name())
                .map(|(dir, name)| dir.join(name));
            return Ok(canonical.unwrap_or(current));
        };
        current = match current.parent() {
            Some(dir) => dir.join(target),
            None => target,
        };
    }
    Err(AdoptError::LinkLoop(path.to_path_buf()))
}

/// Whether a file is there and must not be written: its owner has no write
/// permission (which root would ignore), or this process may not write it.
pub fn read_only(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o200 == 0
            || rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_err()
    }
    #[cfg(not(unix))]
    {
        meta.permissions().readonly()
    }
}
