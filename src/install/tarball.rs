//! Reading a pack's files from an npm tarball (`package/...`), streamed in two passes
//! and bounded: an entry that escapes, is a link or a device, or is too large
//! refuses all, and only the pack's own files are held in memory.

use std::io::Read;
use std::path::Component;

use super::error::{InstallError, Limit, LinkKind, MAX_ENTRIES, MAX_FILE, MAX_UNPACKED, io};
use super::files::{Files, wanted};
use crate::catalog::MANIFEST_FILE;

/// Counts what the archive reads and fails once it passes the bound, so a
/// decompression bomb costs at most [`MAX_UNPACKED`] of reading and no memory.
struct Counted<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.read.get().saturating_add(n as u64);
        self.read.set(total);
        if total > MAX_UNPACKED {
            return Err(std::io::Error::other("past the unpacked-size bound"));
        }
        Ok(n)
    }
}

/// Reads a pack's files from an npm tarball (`package/...`), streaming: every entry
/// is checked, and one that escapes, is a link or a device, or is larger than
/// 16 MiB refuses all; only the pack's own files are held in memory, everything
/// else is skipped unread into memory. The first pass reads `hcp.json` (to learn
/// the CLI's file name), the second takes the pack's files. Each pass stops past
/// [`MAX_UNPACKED`] bytes or [`MAX_ENTRIES`] entries.
pub fn read_tarball<R: Read + std::io::Seek>(mut source: R) -> Result<Files, InstallError> {
    let only_manifest = [MANIFEST_FILE.to_owned()];
    let manifest = tarball_pass(&mut source, &only_manifest)?
        .remove(MANIFEST_FILE)
        .ok_or(InstallError::PackageNoManifest)?;
    let names = wanted(&manifest);
    source
        .seek(std::io::SeekFrom::Start(0))
        .map_err(io("the package tarball cannot be read again"))?;
    let files = tarball_pass(&mut source, &names)?;
    for name in &names {
        if !files.contains_key(name) {
            return Err(InstallError::PackageMissing { name: name.clone() });
        }
    }
    // The manifest must be the one the names were learned from.
    if files.get(MANIFEST_FILE) != Some(&manifest) {
        return Err(InstallError::PackageChanged);
    }
    Ok(files)
}

/// One pass over the tarball, taking the entries named `names` at its top.
fn tarball_pass<R: Read>(source: R, names: &[String]) -> Result<Files, InstallError> {
    let read = std::rc::Rc::new(std::cell::Cell::new(0));
    let counted = Counted {
        inner: flate2::read::GzDecoder::new(source),
        read: read.clone(),
    };
    let over = |error: std::io::Error, what: &str| {
        if read.get() > MAX_UNPACKED {
            InstallError::Bound {
                bound: Limit::UnpackedBytes,
                limit: MAX_UNPACKED,
            }
        } else {
            InstallError::Io {
                what: what.to_owned(),
                source: error,
            }
        }
    };
    let mut archive = tar::Archive::new(counted);
    let mut files = Files::new();
    let mut count = 0_u64;
    for entry in archive
        .entries()
        .map_err(|error| over(error, "the package is not a gzipped tarball"))?
    {
        let entry = entry.map_err(|error| over(error, "the package tarball is damaged"))?;
        count += 1;
        if count > MAX_ENTRIES {
            return Err(InstallError::Bound {
                bound: Limit::Entries,
                limit: MAX_ENTRIES,
            });
        }
        let path = entry
            .path()
            .map_err(io("an entry has an unreadable name"))?
            .into_owned();
        let escapes = path.components().any(|part| {
            matches!(
                part,
                Component::ParentDir | Component::RootDir | Component::Prefix(_)
            )
        });
        if escapes {
            return Err(InstallError::PackageEscapes { path });
        }
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            let link = if kind.is_symlink() {
                LinkKind::Symbolic
            } else {
                LinkKind::Hard
            };
            return Err(InstallError::PackageLink { path, link });
        }
        if kind.is_dir() || kind.is_pax_global_extensions() {
            continue;
        }
        if !kind.is_file() {
            return Err(InstallError::PackageSpecial { path });
        }
        if entry.size() > MAX_FILE {
            return Err(InstallError::PackageTooLarge {
                path,
                size: entry.size(),
            });
        }
        // npm puts everything under `package/`; pack files are at its top.
        let inner = path.strip_prefix("package").unwrap_or(&path);
        let mut parts = inner.components();
        let (Some(Component::Normal(name)), None) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(name) = name.to_str().filter(|name| names.iter().any(|n| n == name)) else {
            continue;
        };
        if files.contains_key(name) {
            return Err(InstallError::PackageTwice {
                name: name.to_owned(),
            });
        }
        let name = name.to_owned();
        let mut content = Vec::new();
        entry
            .take(MAX_FILE + 1)
            .read_to_end(&mut content)
            .map_err(|error| over(error, "the package tarball is damaged"))?;
        files.insert(name, content);
    }
    Ok(files)
}
