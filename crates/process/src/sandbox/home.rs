//! Every path by which `$HCP_HOME` can be reached, and whether a folder a pack would
//! be granted lies inside it or holds it.
//!
//! A link only leads somewhere; what matters is where `$HCP_HOME` really is (its
//! canonical path) and every other place the mount table shows the same folder: a
//! bind mount of it or of a folder above it, wherever it is mounted, and an overlay
//! built on it. A state file with a second hard link is reachable under that other
//! name, which no mount table shows: [`exposed`] finds it. [`MountTable`] reads the
//! table again only when the kernel says it changed.

use std::path::{Component, Path, PathBuf};

/// The folder of `$HCP_HOME` that holds the installed packs, one folder each.
pub const PACKS: &str = "packs";
/// The folder of `$HCP_HOME` with the built-in packs' CLIs written to run.
pub const BUILTIN_COPIES: &str = ".builtin";
/// The folder of `$HCP_HOME` with the copies of installed packs' CLIs that bound
/// calls run from.
pub const INSTALLED_COPIES: &str = ".installed";
/// The folders of `$HCP_HOME` that hold only pack files: the only ones a pack may
/// read of it (each call's layer narrows them to the pack's own). The rest of the
/// layout is hcpx's (`src/layout.rs`), which takes these names from here.
pub const PACK_FOLDERS: [&str; 3] = [PACKS, BUILTIN_COPIES, INSTALLED_COPIES];

/// One line of `/proc/self/mountinfo` (see proc(5)): which filesystem, which of its
/// folders is mounted, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    /// `major:minor` of the filesystem.
    device: String,
    /// The folder of that filesystem seen at `point`.
    root: PathBuf,
    point: PathBuf,
    fstype: String,
    /// The filesystem's own options (an overlay's `lowerdir=`, `upperdir=`).
    options: String,
}

/// A field of mountinfo with its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes
            .get(index + 1..index + 4)
            .filter(|digits| bytes[index] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .map(|digits| digits.iter().fold(0_u32, |n, d| n * 8 + u32::from(d - b'0')));
        match octal.and_then(|n| u8::try_from(n).ok()) {
            Some(byte) => {
                out.push(byte);
                index += 4;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let head: Vec<&str> = head.split(' ').collect();
            let mut tail = tail.split(' ');
            let fstype = tail.next()?;
            let _source = tail.next()?;
            Some(Mount {
                device: (*head.get(2)?).to_owned(),
                root: PathBuf::from(unescape(head.get(3)?)),
                point: PathBuf::from(unescape(head.get(4)?)),
                fstype: fstype.to_owned(),
                options: tail.next().map(unescape).unwrap_or_default(),
            })
        })
        .collect()
}

/// `path` with `..` and `.` taken out, lexically (the mount table's paths are
/// already canonical; this only keeps a joined path tidy).
fn tidy(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The canonical form of `path`: its deepest existing ancestor resolved, the rest
/// (which does not exist yet) joined as written.
pub(crate) fn canonical(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = real_path(&existing) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return tidy(&out);
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => return tidy(path),
        }
    }
}

/// Where `path` really is, every link followed, as `realpath(3)` says: on Linux from
/// what opening it tells (see [`open_real`]), where `realpath` reads every component
/// of the path as a link in turn.
pub fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    if path.is_absolute()
        && let (_, Some(real)) = open_real(path)?
    {
        return Ok(real);
    }
    path.canonicalize()
}

/// `path` opened (`O_PATH`), with where it really is, every link followed (`None`
/// when the kernel cannot tell: gone since). An absolute path without `.` or `..` is
/// first opened refusing every link on the way (`openat2(RESOLVE_NO_SYMLINKS)`):
/// what that opens is where the path says, so no more is asked. When the path is
/// itself a link (`/bin` to `usr/bin`), its target, beside it, is tried the same way.
/// Otherwise (a link further up, `..`, or no `openat2` here) the path is opened as
/// usual and the kernel names what was opened (`/proc/self/fd`), which costs more.
/// Each tells where the file was when it was opened.
#[cfg(target_os = "linux")]
pub(crate) fn open_real(path: &Path) -> std::io::Result<(std::os::fd::OwnedFd, Option<PathBuf>)> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use std::path::Component;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let plain = |path: &Path| {
        path.is_absolute()
            && path
                .components()
                .all(|part| matches!(part, Component::RootDir | Component::Normal(_)))
    };
    let mut next = path.to_path_buf();
    // As many links as the kernel follows in one path (MAXSYMLINKS).
    for _ in 0..40 {
        if !plain(&next) {
            break;
        }
        match rustix::fs::openat2(
            rustix::fs::CWD,
            &next,
            flags,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS,
        ) {
            Ok(fd) => return Ok((fd, Some(next.components().collect()))),
            // Missing, forbidden or not a folder with no link before it: so for a
            // plain open too.
            Err(
                error @ (rustix::io::Errno::NOENT | rustix::io::Errno::ACCESS | rustix::io::Errno::NOTDIR),
            ) => {
                return Err(error.into());
            }
            Err(rustix::io::Errno::LOOP) => {}
            Err(_) => break,
        }
        // A link on the way: when it is the last part, its target is where to look.
        match (std::fs::read_link(&next), next.parent()) {
            (Ok(target), Some(parent)) => next = parent.join(target),
            _ => break,
        }
    }
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)))
        .ok()
        .filter(|real| real.is_absolute() && !real.to_string_lossy().ends_with(" (deleted)"));
    Ok((fd, real))
}

/// `/proc/self/mountinfo`, kept open: the kernel marks it when a mount is made or
/// removed (proc(5): a priority event for poll), and only then is it read again.
#[derive(Debug, Default)]
pub struct MountTable {
    #[cfg(target_os = "linux")]
    file: Option<std::fs::File>,
    text: Option<String>,
    /// `text`, parsed.
    mounts: Vec<Mount>,
}

impl MountTable {
    /// `home` as this table shows it (see [`HomeView::new`]), the table parsed only
    /// when it changed.
    pub fn view(&mut self, home: &Path) -> HomeView {
        self.current();
        HomeView::with_mounts(home, &self.mounts)
    }

    /// The table as it is now (`None` where there is none).
    pub fn current(&mut self) -> Option<&str> {
        #[cfg(target_os = "linux")]
        {
            use rustix::event::{PollFd, PollFlags, poll};
            let changed = match &self.file {
                None => true,
                Some(file) => {
                    let mut fds = [PollFd::new(file, PollFlags::PRI)];
                    let zero = rustix::event::Timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    };
                    poll(&mut fds, Some(&zero)).map_or(true, |ready| {
                        ready > 0 && fds[0].revents().intersects(PollFlags::PRI | PollFlags::ERR)
                    })
                }
            };
            if changed || self.text.is_none() {
                self.text = None;
                self.mounts = Vec::new();
                self.file = std::fs::File::open("/proc/self/mountinfo").ok();
                if let Some(text) = self
                    .file
                    .as_ref()
                    .and_then(|file| crate::runtime::procfs::read_file(file).ok())
                {
                    self.mounts = parse_mountinfo(&text);
                    self.text = Some(text);
                }
            }
        }
        self.text.as_deref()
    }
}

/// Where `$HCP_HOME` is: its canonical path first, then every other path the mount
/// table gives the same folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HomeView {
    pub aliases: Vec<PathBuf>,
    /// `$HCP_HOME` as it was given (`HCP_HOME`, or `~/.hcp`), before links were
    /// resolved: paths hcpx builds from it are recognised without resolving them.
    pub given: PathBuf,
}

/// How a path stands to `$HCP_HOME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// It is `$HCP_HOME` or lies inside it.
    Inside,
    /// It holds `$HCP_HOME`.
    Holds,
}

impl HomeView {
    /// `home`'s canonical path and its aliases in `mountinfo` (the text of
    /// `/proc/self/mountinfo`; `None` where there is none).
    pub fn new(home: &Path, mountinfo: Option<&str>) -> Self {
        Self::with_mounts(home, &mountinfo.map(parse_mountinfo).unwrap_or_default())
    }

    fn with_mounts(home: &Path, mounts: &[Mount]) -> Self {
        let real = canonical(home);
        let mut aliases = vec![real.clone()];
        // The mount `real` is on: the deepest mount point above it, the last one
        // listed when several share it (that one is on top).
        let on = mounts
            .iter()
            .enumerate()
            .filter(|(_, mount)| real.starts_with(&mount.point))
            .max_by_key(|(index, mount)| (mount.point.components().count(), *index))
            .map(|(_, mount)| mount);
        if let Some(on) = on
            && let Ok(below) = real.strip_prefix(&on.point)
        {
            // Where `real` is inside its filesystem, then wherever that filesystem
            // shows a folder holding it.
            let inside = on.root.join(below);
            for mount in mounts.iter().filter(|mount| mount.device == on.device) {
                if let Ok(rest) = inside.strip_prefix(&mount.root) {
                    aliases.push(tidy(&mount.point.join(rest)));
                }
            }
        }
        for mount in mounts.iter().filter(|mount| mount.fstype == "overlay") {
            for option in mount.options.split(',') {
                let Some((key, dirs)) = option.split_once('=') else {
                    continue;
                };
                if !matches!(key, "lowerdir" | "upperdir" | "lowerdir+" | "datadir+") {
                    continue;
                }
                for dir in dirs.split(':').filter(|dir| !dir.is_empty()) {
                    if let Ok(rest) = real.strip_prefix(dir) {
                        aliases.push(tidy(&mount.point.join(rest)));
                    }
                }
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        aliases.retain(|alias| seen.insert(alias.clone()));
        Self {
            aliases,
            given: tidy(home),
        }
    }

    /// `path` relative to `$HCP_HOME` when it lies inside it as written, through its
    /// given or its real path (no link is resolved: for paths hcpx built itself).
    pub fn relative<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        [&self.given, self.aliases.first().unwrap_or(&self.given)]
            .into_iter()
            .find_map(|home| path.strip_prefix(home).ok())
            .filter(|relative| !relative.as_os_str().is_empty())
    }

    /// Whether `path`, as written, is inside or holds a path of `$HCP_HOME`: the check
    /// for folders hcpx adds to a pack's reads on its own (no system call: whatever
    /// a link there leads to, the layer that hides `$HCP_HOME` still hides it).
    pub fn touches(&self, path: &Path) -> bool {
        let path = tidy(path);
        std::iter::once(&self.given)
            .chain(&self.aliases)
            .any(|alias| path.starts_with(alias) || alias.starts_with(&path))
    }

    /// `$HCP_HOME`'s canonical path.
    pub fn real(&self) -> &Path {
        self.aliases.first().map_or(Path::new("/"), PathBuf::as_path)
    }

    /// Whether `path` (resolved) is inside `$HCP_HOME` or holds it, through any of
    /// its paths; a folder on the way that is the same folder as `$HCP_HOME` (a
    /// bind mount the table does not show) counts too.
    pub fn conflict(&self, path: &Path) -> Option<Conflict> {
        let path = canonical(path);
        if self.aliases.iter().any(|alias| path.starts_with(alias)) {
            return Some(Conflict::Inside);
        }
        if self.aliases.iter().any(|alias| alias.starts_with(&path)) {
            return Some(Conflict::Holds);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            let home = std::fs::metadata(self.real()).ok()?;
            let same = |dir: &Path| {
                std::fs::metadata(dir).is_ok_and(|meta| meta.dev() == home.dev() && meta.ino() == home.ino())
            };
            if path.ancestors().any(same) {
                return Some(Conflict::Inside);
            }
        }
        None
    }
}

/// The state files of `$HCP_HOME` that can also be read under another name (a
/// second hard link, which no mount table shows), as `(file name, links)`.
pub fn exposed(home: &Path) -> Vec<(String, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(entries) = std::fs::read_dir(home) else {
            return Vec::new();
        };
        let mut found: Vec<(String, u64)> = entries
            .filter_map(Result::ok)
            // Folders have no second hard link: only files are looked at.
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
            .filter_map(|entry| {
                let meta = entry.metadata().ok()?;
                (meta.is_file() && meta.nlink() > 1)
                    .then(|| (entry.file_name().to_string_lossy().into_owned(), meta.nlink()))
            })
            .collect();
        found.sort();
        found
    }
    #[cfg(not(unix))]
    {
        let _ = home;
        Vec::new()
    }
}

/// Why the filesystem layer does not hold for this `$HCP_HOME` (see [`exposed`]),
/// in words that say how to fix it; `None` when it holds.
pub fn exposure(home: &Path) -> Option<String> {
    let found = exposed(home);
    let real = home;
    let (name, links) = found.first()?;
    let path = real.join(name);
    Some(format!(
        "HCP_HOME's {name} has {links} hard links, so a pack could read it under another name; \
         find the others with `find / -xdev -samefile {}` and remove them",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
60 27 254:0 /home/u /srv/u\\040copy rw,relatime - ext4 /dev/vda rw
61 27 254:0 /home /mnt/h rw,relatime - ext4 /dev/vda rw
62 27 254:0 /var rw,relatime - ext4 /dev/vda rw
63 27 0:40 / /data rw - ext4 /dev/vdb rw
64 27 0:41 / /merged rw - overlay overlay rw,lowerdir=/home/u:/base,upperdir=/up,workdir=/work
";

    #[test]
    fn mountinfo_fields_are_unescaped() {
        let mounts = parse_mountinfo(TABLE);
        assert_eq!(mounts.len(), 7);
        assert_eq!(
            mounts[2],
            Mount {
                device: "254:0".into(),
                root: "/home/u".into(),
                point: "/srv/u copy".into(),
                fstype: "ext4".into(),
                options: "rw".into(),
            }
        );
        assert_eq!(unescape("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape("\\9x\\"), "\\9x\\");
    }

    #[test]
    fn every_mount_of_a_folder_above_home_is_an_alias() {
        let view = HomeView::new(Path::new("/home/u/.hcp"), Some(TABLE));
        assert_eq!(
            view.aliases,
            [
                PathBuf::from("/home/u/.hcp"),
                "/srv/u copy/.hcp".into(),
                "/mnt/h/u/.hcp".into(),
                "/merged/.hcp".into(),
            ]
        );
        // On another filesystem only its own mounts count.
        let view = HomeView::new(Path::new("/data/hcp"), Some(TABLE));
        assert_eq!(view.aliases, [PathBuf::from("/data/hcp")]);
        // Without a mount table, the path alone.
        let view = HomeView::new(Path::new("/home/u/.hcp"), None);
        assert_eq!(view.aliases, [PathBuf::from("/home/u/.hcp")]);
    }

    #[test]
    fn conflicts_are_inside_or_holding_through_any_alias() {
        let view = HomeView::new(Path::new("/home/u/.hcp"), Some(TABLE));
        assert_eq!(
            view.conflict(Path::new("/home/u/.hcp/packs")),
            Some(Conflict::Inside)
        );
        assert_eq!(view.conflict(Path::new("/mnt/h/u/.hcp")), Some(Conflict::Inside));
        assert_eq!(view.conflict(Path::new("/mnt/h")), Some(Conflict::Holds));
        assert_eq!(view.conflict(Path::new("/")), Some(Conflict::Holds));
        assert_eq!(view.conflict(Path::new("/home/u/.config")), None);
        assert_eq!(view.conflict(Path::new("/home/u/.hcpx")), None);
    }

    /// What opening tells of where a path really is, the one `openat2` for a path
    /// without links and the kernel's name for the rest, is what `realpath(3)` says.
    #[cfg(target_os = "linux")]
    #[test]
    fn open_real_says_where_a_path_really_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
        std::os::unix::fs::symlink("b", root.join("a/relative")).unwrap();
        std::os::unix::fs::symlink(root.join("gone"), root.join("dangling")).unwrap();
        std::os::unix::fs::symlink("relative", root.join("a/chain")).unwrap();
        std::os::unix::fs::symlink("../link/b", root.join("a/up")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let real = |path: &Path| {
            open_real(path)
                .map(|(_, real)| real)
                .map_err(|error| error.kind())
        };
        for (path, expected) in [
            (root.join("a/b"), root.join("a/b")),
            (root.join("a//b/"), root.join("a/b")),
            (root.join("link/b"), root.join("a/b")),
            (root.join("a/relative"), root.join("a/b")),
            (root.join("a/b/../b"), root.join("a/b")),
            (root.join("link/b/.."), root.join("a")),
            (root.join("a/chain"), root.join("a/b")),
            (root.join("a/up"), root.join("a/b")),
            (root.join("link/chain"), root.join("a/b")),
        ] {
            assert_eq!(real(&path), Ok(Some(expected.clone())), "{}", path.display());
            assert_eq!(real_path(&path).unwrap(), path.canonicalize().unwrap());
        }
        for missing in [
            root.join("nothing"),
            root.join("a/nothing/b"),
            root.join("dangling"),
            root.join("link/nothing"),
        ] {
            assert_eq!(
                real(&missing),
                Err(std::io::ErrorKind::NotFound),
                "{}",
                missing.display()
            );
        }
        assert!(real(&root.join("loop")).is_err());
        std::fs::write(root.join("file"), "").unwrap();
        assert_eq!(real(&root.join("file/x")), Err(std::io::ErrorKind::NotADirectory));
    }

    #[test]
    fn canonical_resolves_the_existing_part_only() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("a")).unwrap();
        std::os::unix::fs::symlink("a", real.join("l")).unwrap();
        assert_eq!(canonical(&real.join("l/x/y")), real.join("a/x/y"));
        assert_eq!(canonical(&real.join("l")), real.join("a"));
    }

    #[test]
    fn hard_linked_state_files_are_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bindings.json"), "{}").unwrap();
        std::fs::write(dir.path().join("policy.json"), "{}").unwrap();
        assert_eq!(exposed(dir.path()), Vec::<(String, u64)>::new());
        std::fs::hard_link(dir.path().join("bindings.json"), dir.path().join("copy")).unwrap();
        assert_eq!(
            exposed(dir.path()),
            [("bindings.json".to_owned(), 2), ("copy".to_owned(), 2)]
        );
    }
}
