//! Reading a pack's files from a folder: regular files of their own only, each read
//! through one descriptor opened without following a link, so a file swapped while
//! it is read cannot bring in anything else.

use std::io::Read;
use std::path::Path;
#[cfg(not(unix))]
use std::path::PathBuf;

use super::error::{InstallError, MAX_FILE, io};
use super::files::{Files, wanted};
use crate::catalog::MANIFEST_FILE;

/// Reads a pack's files from a folder: regular files of their own only, read through
/// one descriptor each, so a file swapped while it is read cannot bring in anything
/// else. On Unix the folder is opened once and each file is opened beneath it
/// without following a link (`O_NOFOLLOW`); the opened descriptor must be a regular
/// file with no other hard link, and must not change size while it is read.
pub fn read_folder(dir: &Path) -> Result<Files, InstallError> {
    let (files, unread) = read_each(dir)?;
    match unread.into_iter().next() {
        Some((_, error)) => Err(error),
        None => Ok(files),
    }
}

/// Every file of the pack that reads as [`read_folder`] takes it, and why each other
/// one does not (in the order read). `Err` when the folder or its manifest cannot be
/// read, which leaves nothing to judge. What install refuses and `pack check`
/// reports both come from here.
pub(super) fn read_each(dir: &Path) -> Result<(Files, Vec<(String, InstallError)>), InstallError> {
    let folder = PackFolder::open(dir)?;
    let manifest = folder.read(MANIFEST_FILE)?;
    let mut files = Files::new();
    let mut unread = Vec::new();
    for name in wanted(&manifest) {
        let read = if name == MANIFEST_FILE {
            Ok(manifest.clone())
        } else {
            folder.read(&name)
        };
        match read {
            Ok(bytes) => {
                files.insert(name, bytes);
            }
            Err(error) => unread.push((name, error)),
        }
    }
    Ok((files, unread))
}

struct PackFolder {
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
    #[cfg(not(unix))]
    path: PathBuf,
}

fn missing(name: &str) -> InstallError {
    InstallError::FolderMissing {
        name: name.to_owned(),
    }
}

fn changed(name: &str) -> InstallError {
    InstallError::FolderChanged {
        name: name.to_owned(),
    }
}

impl PackFolder {
    #[cfg(unix)]
    fn open(dir: &Path) -> Result<Self, InstallError> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| InstallError::Io {
            what: format!("cannot open {}", dir.display()),
            source: errno.into(),
        })?;
        Ok(Self { fd })
    }

    #[cfg(not(unix))]
    fn open(dir: &Path) -> Result<Self, InstallError> {
        Ok(Self {
            path: dir.to_path_buf(),
        })
    }

    #[cfg(unix)]
    fn read(&self, name: &str) -> Result<Vec<u8>, InstallError> {
        use rustix::fs::{FileType, Mode, OFlags};
        let opened = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        );
        let fd = match opened {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Err(missing(name)),
            Err(rustix::io::Errno::LOOP) => {
                return Err(InstallError::FolderLink {
                    name: name.to_owned(),
                });
            }
            Err(errno) => {
                return Err(InstallError::Io {
                    what: format!("cannot read {name}"),
                    source: errno.into(),
                });
            }
        };
        let stat = |fd: &std::os::fd::OwnedFd| {
            rustix::fs::fstat(fd).map_err(|errno| InstallError::Io {
                what: format!("cannot read {name}"),
                source: errno.into(),
            })
        };
        let before = stat(&fd)?;
        if FileType::from_raw_mode(before.st_mode) != FileType::RegularFile {
            return Err(InstallError::FolderNotRegular {
                name: name.to_owned(),
            });
        }
        if before.st_nlink != 1 {
            #[allow(
                clippy::useless_conversion,
                reason = "nlink_t is u64 here but u32 on other targets (aarch64 Linux)"
            )]
            let links = u64::from(before.st_nlink);
            return Err(InstallError::FolderHardLink {
                name: name.to_owned(),
                links,
            });
        }
        let size = u64::try_from(before.st_size).unwrap_or(u64::MAX);
        if size > MAX_FILE {
            return Err(InstallError::FolderTooLarge {
                name: name.to_owned(),
                size,
            });
        }
        let mut file = std::fs::File::from(fd);
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        (&mut file)
            .take(size + 1)
            .read_to_end(&mut bytes)
            .map_err(io(format!("cannot read {name}")))?;
        let after = stat(&std::os::fd::OwnedFd::from(file))?;
        if bytes.len() as u64 != size || after.st_size != before.st_size {
            return Err(changed(name));
        }
        Ok(bytes)
    }

    #[cfg(not(unix))]
    fn read(&self, name: &str) -> Result<Vec<u8>, InstallError> {
        let path = self.path.join(name);
        let meta = std::fs::symlink_metadata(&path).map_err(|_| missing(name))?;
        if meta.file_type().is_symlink() {
            return Err(InstallError::FolderLink {
                name: name.to_owned(),
            });
        }
        if !meta.is_file() {
            return Err(InstallError::FolderNotRegular {
                name: name.to_owned(),
            });
        }
        if meta.len() > MAX_FILE {
            return Err(InstallError::FolderTooLarge {
                name: name.to_owned(),
                size: meta.len(),
            });
        }
        let bytes = std::fs::read(&path).map_err(io(format!("cannot read {name}")))?;
        if bytes.len() as u64 != meta.len() {
            return Err(changed(name));
        }
        Ok(bytes)
    }
}
