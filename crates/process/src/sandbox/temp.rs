//! The calls' private temporary folders (see docs/sandbox.md). In the temporary
//! folder, hcpx keeps a folder per user, `hcpx-UID` (mode 0700, this user's own: a
//! folder of that name that is not is never used). In it, a call outside a server
//! gets one folder named after its process (`NAMESPACE-PID-START-XXXXXX`); a server
//! gets one folder so named for itself, and in it one folder per call, `call-XXXXXX`;
//! all mode 0700. Before the first folder of a process is made, the folders of hcpx
//! processes that are gone (killed before they could remove theirs) are swept from
//! the user's folder: only folders so named, of this user, that are folders and not
//! links, whose process has ended. Where that cannot be done (no `/proc`, or
//! `hcpx-UID` is not this user's), the folder is `hcpx-XXXXXX` in the temporary
//! folder and nothing is swept.
//!
//! A file binding's file is written in the call's folder, `hcpx-binding-NAME`,
//! mode 0600, so it goes with the folder: when the call ends, however it ends, or
//! with the sweep when hcpx itself was killed.

use std::path::{Path, PathBuf};

use tempfile::{Builder, TempDir};

use crate::Secret;

/// A folder named after this process, made after sweeping those of processes that
/// are gone when `sweep`.
pub(super) fn process_folder(temp_dir: &Path, sweep_first: bool) -> std::io::Result<TempDir> {
    if let Some(owner) = Owner::this_process()
        && let Some(folder) = user_folder(temp_dir)
    {
        if sweep_first {
            sweep(&folder, owner);
        }
        return private(Builder::new().prefix(&owner.prefix())).tempdir_in(&folder);
    }
    private(Builder::new().prefix("hcpx-")).tempdir_in(temp_dir)
}

/// A call's folder in the process's folder.
pub(super) fn call_folder(process_folder: &Path) -> std::io::Result<TempDir> {
    private(Builder::new().prefix("call-")).tempdir_in(process_folder)
}

/// The file name of binding `binding`'s file in a call's folder.
pub(super) fn binding_file_name(binding: &str) -> String {
    format!("hcpx-binding-{binding}")
}

/// Writes `content` to a new file named for `binding` in `call_folder`, mode 0600
/// whatever the umask, and returns its path. Never through what is already there:
/// `O_EXCL` fails on any entry of that name (a link planted there included, dangling
/// or not), and `O_NOFOLLOW` refuses a link should the name ever be opened without it.
pub(super) fn binding_file(call_folder: &Path, binding: &str, content: &Secret) -> std::io::Result<PathBuf> {
    use std::io::Write as _;
    let path = call_folder.join(binding_file_name(binding));
    #[cfg(unix)]
    let mut file = {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            &path,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        // A umask may have taken bits away; the pack's CLI reads and may rewrite it.
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
        std::fs::File::from(fd)
    };
    #[cfg(not(unix))]
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    file.write_all(content.expose().as_bytes())?;
    Ok(path)
}

/// `hcpx-UID` in `temp_dir`, made if it is not there, if it is this user's own: a
/// folder, not a link, of this user, that no one else may enter. Anyone may make a
/// folder of that name in a shared `/tmp` first; it is then left alone.
fn user_folder(temp_dir: &Path) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
        let uid = rustix::process::geteuid().as_raw();
        let folder = temp_dir.join(format!("hcpx-{uid}"));
        if let Err(error) = std::fs::DirBuilder::new().mode(0o700).create(&folder)
            && error.kind() != std::io::ErrorKind::AlreadyExists
        {
            tracing::debug!("cannot make {}: {error}", folder.display());
            return None;
        }
        let metadata = std::fs::symlink_metadata(&folder).ok()?;
        let ours = metadata.is_dir() && metadata.uid() == uid && metadata.mode() & 0o077 == 0;
        if !ours {
            tracing::debug!("{} is not this user's own folder; not used", folder.display());
        }
        ours.then_some(folder)
    }
    #[cfg(not(unix))]
    {
        let _ = temp_dir;
        None
    }
}

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
        format!("{}-{}-{}-", self.namespace, self.pid, self.start)
    }

    /// The owner a folder's name gives: `NAMESPACE-PID-START-` and tempfile's six
    /// random characters.
    fn of_folder(name: &str) -> Option<Self> {
        let mut parts = name.split('-');
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
        match crate::runtime::procfs::read(format!("/proc/{}/stat", self.pid)) {
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
    parse_start(&crate::runtime::procfs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// Removes the folders in `folder` (the user's) of hcpx processes of this user, in
/// this pid namespace, that are gone. A link is never followed, nor removed.
fn sweep(folder: &Path, us: Owner) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(entries) = std::fs::read_dir(folder) else {
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
    let _ = (folder, us);
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
        assert_eq!(owner.prefix(), "4026531836-42-99-");
        assert_eq!(Owner::of_folder("4026531836-42-99-aB3dE9"), Some(owner));
        for name in [
            "aB3dE9",
            "hcpx-4026531836-42-99-aB3dE9",
            "4026531836-42-99-aB3dE",
            "4026531836-42-99-aB3dE9-x",
            "4026531836-42-x9-aB3dE9",
            "4026531836--99-aB3dE9",
            "4026531836-42-99-aB.dE9",
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

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn folders_are_private_and_the_sweep_takes_only_gone_processes() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir
            .path()
            .join(format!("hcpx-{}", rustix::process::geteuid().as_raw()));
        std::fs::create_dir(&user).unwrap();
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
            let path = user.join(name);
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("f"), "x").unwrap();
            path
        };
        let dead = made(format!("{}aaaaaa", gone.prefix()));
        let live = made(format!("{}bbbbbb", us.prefix()));
        let other_namespace = made(format!("{}cccccc", elsewhere.prefix()));
        let file = user.join(format!("{}dddddd", gone.prefix()));
        std::fs::write(&file, "not a folder").unwrap();
        // Made 0755 before hcpx: not this user's own folder, so it is left alone.
        std::fs::set_permissions(&user, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let process = process_folder(dir.path(), true).unwrap();
        assert!(dead.exists());
        assert_eq!(process.path().parent(), Some(dir.path()));
        // Once it is private, it is used, and swept.
        std::fs::set_permissions(&user, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let process = process_folder(dir.path(), true).unwrap();
        let call = call_folder(process.path()).unwrap();
        assert!(!dead.exists());
        assert!(live.exists() && other_namespace.exists() && file.exists());
        assert_eq!(process.path().parent(), Some(user.as_path()));
        for folder in [&user, process.path(), call.path()] {
            assert_eq!(mode(folder), 0o700, "{}", folder.display());
        }
        let name = process.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(Owner::of_folder(&name), Some(us));
    }

    /// A binding file is 0600, holds the content as given, and goes with the
    /// call's folder.
    #[cfg(unix)]
    #[test]
    fn a_binding_file_is_private_and_goes_with_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let process = process_folder(dir.path(), true).unwrap();
        let call = call_folder(process.path()).unwrap();
        let path = binding_file(call.path(), "API_TOKEN", &Secret::new("Bearer tok\n".into())).unwrap();
        assert_eq!(path, call.path().join("hcpx-binding-API_TOKEN"));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"Bearer tok\n");
        let folder = call.path().to_path_buf();
        drop(call);
        assert!(!path.exists() && !folder.exists());
    }

    /// The attack: a link planted at the binding file's path, to a file elsewhere
    /// (or to nowhere yet), before hcpx writes the credential. The write fails and
    /// nothing reaches the link's target.
    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_a_binding_files_path_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let call = dir.path().join("call");
        std::fs::create_dir(&call).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let secret = Secret::new("tok-planted".into());
        std::os::unix::fs::symlink(&victim, call.join(binding_file_name("A"))).unwrap();
        let error = binding_file(&call, "A", &secret).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        let nowhere = dir.path().join("nowhere");
        std::os::unix::fs::symlink(&nowhere, call.join(binding_file_name("B"))).unwrap();
        assert!(binding_file(&call, "B", &secret).is_err());
        assert!(!nowhere.exists(), "the write made the link's target");
    }

    /// The user's folder, made by hcpx, is 0700; a link of that name is not used.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_users_folder_is_made_private_and_a_link_is_not_taken_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let process = process_folder(dir.path(), true).unwrap();
        let user = process.path().parent().unwrap().to_path_buf();
        assert_eq!(user.parent(), Some(dir.path()));
        assert_eq!(mode(&user), 0o700);
        drop(process);
        std::fs::remove_dir(&user).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &user).unwrap();
        let process = process_folder(dir.path(), true).unwrap();
        assert_eq!(process.path().parent(), Some(dir.path()));
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
