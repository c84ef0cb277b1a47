//! The on-disk half of the `path` rule (see docs/packs.md): the deepest existing
//! ancestor of a `path` value, with every link resolved, must still be inside the
//! working directory. The working directory is resolved once per call, then every
//! `path` value of the call is checked against it.

use std::path::{Component, Path, PathBuf};

use hcpx_pack::invocation::PathCheck;

/// A call's working directory, resolved once.
#[derive(Debug)]
pub(crate) struct OnDisk {
    cwd: PathBuf,
    /// `cwd` with its links resolved; `None` when it cannot be read.
    root: Option<PathBuf>,
}

impl OnDisk {
    pub(crate) fn new(cwd: &Path) -> Self {
        Self {
            cwd: cwd.to_path_buf(),
            root: crate::sandbox::home::real_path(cwd).ok(),
        }
    }
}

impl PathCheck for OnDisk {
    fn check(&self, value: &str) -> Result<(), String> {
        let Some(root) = &self.root else {
            return Err("cannot be checked: the working directory is unreadable".to_owned());
        };
        let mut path = self.cwd.clone();
        for component in Path::new(value).components() {
            match component {
                Component::Normal(part) => path.push(part),
                Component::ParentDir => {
                    if !path.pop() || !(path.starts_with(&self.cwd) || path.starts_with(root)) {
                        return Err("leaves the working directory".into());
                    }
                }
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => {
                    return Err("is not a relative path inside the working directory".into());
                }
            }
            // Resolve what exists so far: a link here could point anywhere.
            if let Ok(real) = path.canonicalize() {
                if !real.starts_with(root) {
                    return Err("leaves the working directory through a link".into());
                }
                path = real;
            } else if std::fs::symlink_metadata(&path).is_ok() {
                return Err("is a link that cannot be resolved".into());
            }
        }
        if !path.starts_with(root) {
            return Err("leaves the working directory".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_of_the_working_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join("inside")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", cwd.join("out")).unwrap();
            std::os::unix::fs::symlink(cwd.join("inside"), cwd.join("ok")).unwrap();
        }
        let disk = OnDisk::new(&cwd);
        assert_eq!(disk.check("inside/new-file"), Ok(()));
        assert_eq!(disk.check("ok/x"), Ok(()));
        assert_eq!(
            disk.check("out/passwd"),
            Err("leaves the working directory through a link".into())
        );
        assert_eq!(
            disk.check("out"),
            Err("leaves the working directory through a link".into())
        );
        assert_eq!(
            disk.check("inside/../../x"),
            Err("leaves the working directory".into())
        );
    }

    #[test]
    fn an_unreadable_working_directory_refuses_every_path() {
        let disk = OnDisk::new(Path::new("/nonexistent/hcpx-work"));
        assert_eq!(
            disk.check("x"),
            Err("cannot be checked: the working directory is unreadable".into())
        );
    }
}
