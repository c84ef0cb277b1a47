//! The Landlock layer that hides `$HCP_HOME` (Linux): everything but every path of
//! it the mount table shows ([`HomeView`]), and, when hcpx runs as root, the system's
//! files that hold secrets only root reads ([`ROOT_SECRETS`]).
//!
//! Landlock cannot grant a folder minus a subfolder, so the layer grants, in each
//! folder on the way to a hidden path, every entry but the one leading there. Each
//! entry is opened without following links: a link is granted as nothing (its target
//! is reached, or not, by its own path), and an entry that is the same folder as a
//! hidden path or one on the way to it (a bind mount the table does not show) is left
//! out. The folders on the way stay listable. The call's own layer then narrows this
//! to the allowlist; the two intersect.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::AccessFs;

use super::home::HomeView;
use super::rules::{Opened, Rules, open_root};
use super::{DEVICES, SandboxError};

/// Files and folders of the system that only root reads, and that hold secrets:
/// password hashes, sudo rules, TLS, Kerberos, VPN and Wi-Fi keys. Hidden when hcpx
/// runs as root (a pack then runs as root, without capabilities but the owner of
/// these files); for anyone else the files' own modes keep them unread.
pub const ROOT_SECRETS: [&str; 16] = [
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
    "/etc/ssl/private",
    "/etc/krb5.keytab",
    "/etc/ipsec.secrets",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/wireguard",
    "/etc/NetworkManager/system-connections",
    "/etc/letsencrypt",
    "/etc/libvirt/secrets",
];
/// The folder of the SSH server's host keys: its `ssh_host_*_key` files are private.
const HOST_KEYS: &str = "/etc/ssh";
/// The folders of `$HCP_HOME` a pack may read (see [`PACK_FOLDERS`]).
use super::home::PACK_FOLDERS as HOME_READS;
/// What a call's base layer hides: the paths of `$HCP_HOME`, the system's secrets
/// (as root), or both; only what a folder the call is granted holds (see
/// [`hidden_paths`]), so the layer is as small as the call allows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Hide {
    pub(super) home: bool,
    pub(super) secrets: bool,
}

impl Hide {
    pub(super) fn any(self) -> bool {
        self.home || self.secrets
    }
}

/// What is hidden: every path of `$HCP_HOME`, then the secrets that exist.
fn holes(view: &HomeView, hide: Hide) -> Vec<PathBuf> {
    let mut holes = if hide.home {
        view.aliases.clone()
    } else {
        Vec::new()
    };
    if hide.secrets {
        holes.extend(
            ROOT_SECRETS
                .iter()
                .map(PathBuf::from)
                .filter(|path| path.symlink_metadata().is_ok()),
        );
        if let Ok(entries) = std::fs::read_dir(HOST_KEYS) {
            let mut keys: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .filter(|entry| {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    name.starts_with("ssh_host_") && name.ends_with("_key")
                })
                .map(|entry| entry.path())
                .collect();
            keys.sort();
            holes.extend(keys);
        }
    }
    holes
}

/// A folder on the way to a hidden path as it was when the layer was built: a new
/// entry changes its modification time, and the layer is built again. A hidden path
/// and `$HCP_HOME`'s pack folders count by identity only: their own files come and go
/// without changing the layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Landmark {
    path: PathBuf,
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
}

fn stamp(path: &Path, with_mtime: bool) -> Option<Landmark> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some(Landmark {
        path: path.to_path_buf(),
        dev: meta.dev(),
        ino: meta.ino(),
        mtime: if with_mtime {
            (meta.mtime(), meta.mtime_nsec())
        } else {
            (0, 0)
        },
    })
}

/// The system's secrets as a mount namespace covers them (as root): each of
/// [`ROOT_SECRETS`] and the SSH host keys that exists, with whether it is a folder;
/// and the folders that say when that changes (a secret that appears, goes or is
/// replaced changes the nearest folder above it that exists, which is stamped).
pub(super) fn secret_covers() -> (Vec<(PathBuf, bool)>, Vec<Landmark>) {
    let secrets = holes(
        &HomeView::default(),
        Hide {
            home: false,
            secrets: true,
        },
    );
    let covers = secrets
        .iter()
        .filter_map(|path| Some((path.clone(), std::fs::metadata(path).ok()?.is_dir())))
        .collect();
    let mut ways = BTreeSet::new();
    ways.insert(PathBuf::from(HOST_KEYS));
    // Most secrets share a folder (`/etc`): each folder is looked at once.
    let mut is_dir: std::collections::HashMap<&Path, bool> = std::collections::HashMap::new();
    for secret in ROOT_SECRETS {
        if let Some(folder) = Path::new(secret)
            .ancestors()
            .skip(1)
            .find(|folder| *is_dir.entry(folder).or_insert_with(|| folder.is_dir()))
        {
            ways.insert(folder.to_path_buf());
        }
    }
    let stamps = ways.iter().filter_map(|way| stamp(way, true)).collect();
    (covers, stamps)
}

/// Whether the folders stamped by [`secret_covers`] are as they were.
pub(super) fn stamps_hold(stamps: &[Landmark]) -> bool {
    stamps
        .iter()
        .all(|landmark| stamp(&landmark.path, true).as_ref() == Some(landmark))
}

/// The folders on the way, with their times (a hidden path that appears, goes or is
/// replaced changes its folder's), and `$HCP_HOME`'s pack folders by identity.
fn stamps(view: &HomeView, hide: Hide, ways: &[PathBuf]) -> Vec<Landmark> {
    let mut stamps: Vec<Landmark> = ways.iter().filter_map(|way| stamp(way, true)).collect();
    if !hide.home {
        return stamps;
    }
    stamps.extend(
        HOME_READS
            .iter()
            .filter_map(|name| stamp(&view.real().join(name), false)),
    );
    stamps
}

/// What a layer was built from, to tell whether it still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shape {
    view: HomeView,
    hide: Hide,
    holes: Vec<PathBuf>,
    /// The folders on the way, `/` first.
    ways: Vec<PathBuf>,
    stamps: Vec<Landmark>,
}

impl Shape {
    pub(super) fn of(view: &HomeView, hide: Hide) -> Self {
        let holes = holes(view, hide);
        let mut ways = BTreeSet::new();
        ways.insert(PathBuf::from("/"));
        for hole in &holes {
            ways.extend(hole.ancestors().skip(1).map(Path::to_path_buf));
        }
        let ways: Vec<PathBuf> = ways.into_iter().collect();
        let stamps = stamps(view, hide, &ways);
        Self {
            view: view.clone(),
            hide,
            holes,
            ways,
            stamps,
        }
    }

    /// Whether a layer built for this shape still holds for `view`: the same paths
    /// of `$HCP_HOME`, and no folder on the way changed. A hidden file that appears
    /// or goes (a new host key) changes its folder, which is on the way: so the
    /// hidden paths need not be listed again.
    pub(super) fn holds(&self, view: &HomeView, hide: Hide) -> bool {
        self.view == *view && self.hide == hide && stamps(view, hide, &self.ways) == self.stamps
    }

    /// The paths hidden.
    #[cfg(test)]
    pub(super) fn holes(&self) -> &[PathBuf] {
        &self.holes
    }
}

/// Builds the layer for `shape`: each folder on the way listable, its other entries
/// (links and aliases left out) fully granted, `$HCP_HOME`'s pack folders granted
/// beneath it without following links, and of `/dev` only [`DEVICES`].
pub(super) fn ruleset(
    shape: &Shape,
    home: &Path,
    abi: i32,
    proc: Option<&OwnedFd>,
) -> Result<OwnedFd, SandboxError> {
    let rules = Rules::new(abi, Ok)?;
    for (opened, way) in expand(&shape.ways, &shape.holes, proc) {
        rules.allow(&opened, if way { AccessFs::ReadDir.into() } else { rules.all })?;
    }
    // Hidden, `$HCP_HOME` keeps its pack folders open (the call's layer narrows them
    // to the pack's own); not hidden, it is granted with everything else.
    if shape.hide.home {
        for opened in pack_folders(home) {
            rules.allow(&opened, rules.all)?;
        }
    }
    for device in DEVICES
        .iter()
        .filter_map(|device| Opened::path(Path::new(device)))
    {
        rules.allow(&device, rules.all)?;
    }
    Ok(rules.fd)
}

/// The folders `ways` (each on the way to a hidden path) and their other entries,
/// each opened once: `(entry, false)` to be granted, `(way, true)` to be listable
/// only. An entry that is a hidden path or a way is left out; so is a link (opened as
/// itself, it would grant nothing) and an entry that is the same folder as a hidden
/// path or a way (a bind mount the mount table does not show). `/dev` is never
/// listed: its devices are granted one by one.
pub(super) fn expand(ways: &[PathBuf], holes: &[PathBuf], proc: Option<&OwnedFd>) -> Vec<(Opened, bool)> {
    use rustix::fs::{FileType, Mode, OFlags};
    let identity = |path: &Path| rustix::fs::stat(path).ok().map(|stat| (stat.st_dev, stat.st_ino));
    let avoid: BTreeSet<(u64, u64)> = holes
        .iter()
        .chain(ways)
        .filter_map(|path| identity(path))
        .collect();
    let skip: BTreeSet<&Path> = holes
        .iter()
        .chain(ways)
        .map(PathBuf::as_path)
        .chain([Path::new("/dev")])
        .collect();
    let mut out = Vec::new();
    for way in ways.iter().filter(|way| way.as_path() != Path::new("/dev")) {
        let Ok(dir) = rustix::fs::open(
            way,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(way) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = way.join(entry.file_name());
            if skip.contains(path.as_path()) {
                continue;
            }
            // `/proc` as the pack will see it, when it gets one of its own.
            if path == Path::new("/proc")
                && let Some(opened) = open_root(&path, proc)
            {
                out.push((opened, false));
                continue;
            }
            let Ok(fd) = rustix::fs::openat(
                &dir,
                entry.file_name().as_os_str(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                continue;
            };
            let Ok(stat) = rustix::fs::fstat(&fd) else {
                continue;
            };
            if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink
                || avoid.contains(&(stat.st_dev, stat.st_ino))
            {
                continue;
            }
            out.push((Opened::fd(fd), false));
        }
        out.push((Opened::fd(dir), true));
    }
    out
}

/// Every path hidden from a pack, for telling whether a folder it is granted holds
/// one: the paths of `$HCP_HOME` and, as root, the secrets (the host keys' folder
/// stands for its keys, so that it need not be listed for each call).
pub(super) fn hidden_paths(view: &HomeView, root: bool) -> Vec<PathBuf> {
    let mut paths = view.aliases.clone();
    if root {
        paths.extend(ROOT_SECRETS.iter().map(PathBuf::from));
        paths.push(PathBuf::from(HOST_KEYS));
    }
    paths
}

/// `$HCP_HOME`'s pack folders ([`HOME_READS`]), each opened beneath it without
/// following a link: a link there leads nowhere.
fn pack_folders(home: &Path) -> Vec<Opened> {
    let Some(dir) = open_home(home) else {
        return Vec::new();
    };
    HOME_READS
        .iter()
        .filter_map(|name| open_beneath(&dir, Path::new(name)))
        .collect()
}

/// `$HCP_HOME` itself, opened to open its files beneath it.
pub(super) fn open_home(home: &Path) -> Option<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        home,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

/// A path beneath an opened folder, no link followed on the way.
pub(super) fn open_beneath(dir: &OwnedFd, relative: &Path) -> Option<Opened> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    rustix::fs::openat2(
        dir,
        relative,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .ok()
    .map(Opened::fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ways_run_from_root_to_every_hidden_path() {
        let view = HomeView {
            aliases: vec!["/home/u/.hcp".into(), "/mnt/h/u/.hcp".into()],
            given: "/home/u/.hcp".into(),
        };
        let shape = Shape::of(
            &view,
            Hide {
                home: true,
                secrets: false,
            },
        );
        assert_eq!(
            shape.holes(),
            [PathBuf::from("/home/u/.hcp"), "/mnt/h/u/.hcp".into()]
        );
        assert_eq!(
            shape.ways,
            [
                PathBuf::from("/"),
                "/home".into(),
                "/home/u".into(),
                "/mnt".into(),
                "/mnt/h".into(),
                "/mnt/h/u".into(),
            ]
        );
    }

    #[test]
    fn as_root_the_system_secrets_that_exist_are_hidden_too() {
        let view = HomeView {
            aliases: vec!["/nowhere/.hcp".into()],
            given: "/nowhere/.hcp".into(),
        };
        let shape = Shape::of(
            &view,
            Hide {
                home: true,
                secrets: true,
            },
        );
        let expected: Vec<PathBuf> = std::iter::once(PathBuf::from("/nowhere/.hcp"))
            .chain(
                ROOT_SECRETS
                    .iter()
                    .map(PathBuf::from)
                    .filter(|path| path.symlink_metadata().is_ok()),
            )
            .collect();
        assert_eq!(shape.holes[..expected.len()], expected[..]);
        if Path::new("/etc/shadow").exists() {
            assert!(shape.ways.contains(&PathBuf::from("/etc")));
        }
    }
}
