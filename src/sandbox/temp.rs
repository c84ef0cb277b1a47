//! The calls' private temporary folders (see docs/sandbox.md): one folder per hcpx
//! process in the temporary folder, named after that process
//! (`hcpx-NAMESPACE-PID-START-XXXXXX`), with one `call-XXXXXX` folder per call in it,
//! both mode 0700. Before the first call of a process, the folders of hcpx processes
//! that are gone (killed before they could remove theirs) are swept: only folders so
//! named, of this user, that are folders and not links, whose process has ended.

use std::path::Path;

use tempfile::{Builder, TempDir};

/// The folder of this process, made after sweeping those of processes that are gone.
pub(super) fn process_folder(temp_dir: &Path) -> std::io::Result<TempDir> {
    let owner = Owner::this_process();
    if let Some(owner) = owner {
        sweep(temp_dir, owner);
    }
    // Where processes cannot be told apart (no `/proc`), the folder is not named
    // after one and never swept.
    let prefix = owner.map_or_else(|| PREFIX.to_owned(), |owner| owner.prefix());
    private(Builder::new().prefix(&prefix)).tempdir_in(temp_dir)
}

/// A call's folder in the process's folder.
pub(super) fn call_folder(process_folder: &Path) -> std::io::Result<TempDir> {
    private(Builder::new().prefix("call-")).tempdir_in(process_folder)
}

const PREFIX: &str = "hcpx-";

/// Mode 0700: what a pack writes during its call is its user's alone.
fn private<'a, 'b>(builder: &'b mut Builder<'a, 'a>) -> &'b mut Builder<'a, 'a> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    builder
}

/// A process as the kernel tells processes apart: its pid namespace (a pid names
/// another process in another namespace, as in a container sharing `/tmp`), its pid,
/// and its start time in clock ticks after boot (a pid used again is another
/// process).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Owner {
    namespace: u64,
    pid: u32,
    start: u64,
}

impl Owner {
    fn this_process() -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            let namespace = std::fs::metadata("/proc/self/ns/pid").ok()?.ino();
            let pid = std::process::id();
            let start = start_time(pid)?;
            Some(Self {
                namespace,
                pid,
                start,
            })
        }
        #[cfg(not(unix))]
        None
    }

    fn prefix(self) -> String {
        format!("{PREFIX}{}-{}-{}-", self.namespace, self.pid, self.start)
    }

    /// The owner a folder's name gives: `hcpx-NAMESPACE-PID-START-` and tempfile's
    /// six random characters.
    fn of_folder(name: &str) -> Option<Self> {
        let mut parts = name.strip_prefix(PREFIX)?.split('-');
        let mut number = || {
            parts
                .next()
                .filter(|part| part.bytes().all(|b| b.is_ascii_digit()))
        };
        let (namespace, pid, start) = (number()?, number()?, number()?);
        let random = parts.next()?;
        if parts.next().is_some() || random.len() != 6 || !random.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        Some(Self {
            namespace: namespace.parse().ok()?,
            pid: pid.parse().ok()?,
            start: start.parse().ok()?,
        })
    }

    /// Whether the process is still running; when that cannot be told, it is.
    fn alive(self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => parse_start(&stat).is_none_or(|start| start == self.start),
            Err(error) => error.kind() != std::io::ErrorKind::NotFound,
        }
    }
}

/// Field 22 of `/proc/PID/stat`, the start time, counted after the command name,
/// which is in parentheses and may hold spaces and parentheses itself.
fn parse_start(stat: &str) -> Option<u64> {
    let after_name = stat.get(stat.rfind(')')? + 1..)?;
    after_name.split_whitespace().nth(19)?.parse().ok()
}

fn start_time(pid: u32) -> Option<u64> {
    parse_start(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Removes the folders in `temp_dir` of hcpx processes of this user, in this pid
/// namespace, that are gone. A link is never followed, nor removed.
fn sweep(temp_dir: &Path, us: Owner) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(entries) = std::fs::read_dir(temp_dir) else {
            return;
        };
        let uid = rustix::process::geteuid().as_raw();
        for entry in entries.flatten() {
            let Some(owner) = entry.file_name().to_str().and_then(Owner::of_folder) else {
                continue;
            };
            if owner.namespace != us.namespace || owner == us {
                continue;
            }
            // Of the entry itself, not of what a link points to.
            let Ok(metadata) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if !metadata.is_dir() || metadata.uid() != uid || owner.alive() {
                continue;
            }
            // std removes a tree without following the links in it.
            if let Err(error) = std::fs::remove_dir_all(entry.path()) {
                tracing::debug!("cannot remove {}: {error}", entry.path().display());
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (temp_dir, us);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_past_any_command_name() {
        let fields: Vec<String> = (3..=22).map(|field| field.to_string()).collect();
        let stat = format!("77 (a) b (c) d) {}\n", fields.join(" "));
        assert_eq!(parse_start(&stat), Some(22));
        assert_eq!(parse_start("77 (short) S 1"), None);
    }

    #[test]
    fn folder_names_give_their_owner_or_nothing() {
        let owner = Owner {
            namespace: 4_026_531_836,
            pid: 42,
            start: 99,
        };
        assert_eq!(owner.prefix(), "hcpx-4026531836-42-99-");
        assert_eq!(Owner::of_folder("hcpx-4026531836-42-99-aB3dE9"), Some(owner));
        for name in [
            "hcpx-aB3dE9",
            "hcpx-npm-aB3dE9",
            "hcpx-4026531836-42-99-aB3dE",
            "hcpx-4026531836-42-99-aB3dE9-x",
            "hcpx-4026531836-42-x9-aB3dE9",
            "hcpx-4026531836--99-aB3dE9",
            "hcpx-4026531836-42-99-aB.dE9",
            "other-4026531836-42-99-aB3dE9",
        ] {
            assert_eq!(Owner::of_folder(name), None, "{name}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_alive_and_a_pid_with_another_start_is_not() {
        let us = Owner::this_process().unwrap();
        assert!(us.alive());
        assert!(
            !Owner {
                start: us.start + 1,
                ..us
            }
            .alive()
        );
        // A pid past the kernel's largest.
        assert!(!Owner { pid: u32::MAX, ..us }.alive());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn folders_are_private_and_the_sweep_takes_only_gone_processes() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let us = Owner::this_process().unwrap();
        let gone = Owner {
            start: us.start + 1,
            ..us
        };
        let elsewhere = Owner {
            namespace: us.namespace + 1,
            ..gone
        };
        let made = |name: String| {
            let path = dir.path().join(name);
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("f"), "x").unwrap();
            path
        };
        let dead = made(format!("{}aaaaaa", gone.prefix()));
        let live = made(format!("{}bbbbbb", us.prefix()));
        let other_namespace = made(format!("{}cccccc", elsewhere.prefix()));
        let file = dir.path().join(format!("{}dddddd", gone.prefix()));
        std::fs::write(&file, "not a folder").unwrap();
        let process = process_folder(dir.path()).unwrap();
        let call = call_folder(process.path()).unwrap();
        assert!(!dead.exists());
        assert!(live.exists() && other_namespace.exists() && file.exists());
        for folder in [process.path(), call.path()] {
            let mode = std::fs::metadata(folder).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", folder.display());
        }
        assert!(
            process
                .path()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&us.prefix())
        );
    }
}
