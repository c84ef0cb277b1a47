//! Installing packs (see README.md): from a local folder, a built-in id, or an npm tarball
//! fetched by the machine's own `npm pack` (the spawning is the exec command's
//! business; this module reads what it fetched). Only the pack's three files are
//! taken; a path that escapes, a link, a device file or a file over 16 MiB refuses
//! the whole install; the manifest is validated before anything is placed; the pack
//! is staged beside its place and swapped in, so a failure leaves the previous one.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha512};

use crate::binding::Identity;
use crate::catalog::{MANIFEST_FILE, Origin, Pack, SKILL_FILE, parse_pack};
use crate::manifest::{Manifest, Problem};
use crate::state;

/// Where installed packs are recorded, in `$HCP_HOME`.
pub const LOCK_FILE: &str = "packs.lock.json";

/// Largest file a pack may carry.
pub const MAX_FILE: u64 = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The folder has no `name`, one of the pack's files.
    #[error("the folder has no {name}")]
    FolderMissing { name: String },
    /// The folder's `name` is a symbolic link.
    #[error("{name} is a link; packs carry regular files only")]
    FolderLink { name: String },
    /// The folder's `name` is a device, a FIFO, a socket or a folder.
    #[error("{name} is not a regular file (a device, a FIFO or a folder)")]
    FolderNotRegular { name: String },
    /// The folder's `name` has `links` hard links, so something else can change it.
    #[error("{name} has other hard links; packs carry files of their own")]
    FolderHardLink { name: String, links: u64 },
    /// The folder's `name` is `size` bytes, over [`MAX_FILE`].
    #[error("{name} is larger than {} MiB", MAX_FILE / (1024 * 1024))]
    FolderTooLarge { name: String, size: u64 },
    /// The folder's `name` changed size while it was read.
    #[error("{name} changed while it was read; install again once nothing writes to it")]
    FolderChanged { name: String },
    /// The tarball has no `hcp.json` under `package/`.
    #[error("the package has no {MANIFEST_FILE} at its top")]
    PackageNoManifest,
    /// The tarball lacks `name`, a file its manifest names.
    #[error("the package has no {name}")]
    PackageMissing { name: String },
    /// The manifest read in the second pass is not the one read in the first.
    #[error("the package tarball changed while it was read")]
    PackageChanged,
    /// An entry's path has `..`, a root or a prefix.
    #[error("the package has a path that escapes it")]
    PackageEscapes { path: PathBuf },
    /// An entry is a symbolic or a hard link.
    #[error("the package holds a link; packs carry regular files only")]
    PackageLink { path: PathBuf, link: LinkKind },
    /// An entry is a device, a FIFO or another special file.
    #[error("the package holds a device or special file")]
    PackageSpecial { path: PathBuf },
    /// An entry is `size` bytes, over [`MAX_FILE`].
    #[error("the package holds a file larger than {} MiB", MAX_FILE / (1024 * 1024))]
    PackageTooLarge { path: PathBuf, size: u64 },
    /// The tarball holds the pack file `name` more than once.
    #[error("the package holds {name} twice")]
    PackageTwice { name: String },
    /// `hcp.json` is not UTF-8.
    #[error("{MANIFEST_FILE} is not UTF-8 text")]
    ManifestNotUtf8,
    /// `packs.lock.json` is not a lock file; it is never overwritten.
    #[error(
        "{} cannot be parsed (line {line}); fix or remove it, it is never overwritten",
        path.display()
    )]
    LockUnparsable { path: PathBuf, line: usize },
    /// The journal of an interrupted change cannot be parsed, so it cannot be finished.
    #[error(
        "{} cannot be parsed; remove {}, then check `hcpx search`",
        journal.display(),
        work.display()
    )]
    JournalUnparsable { journal: PathBuf, work: PathBuf },
    /// `id` is not a pack id.
    #[error("{id:?} is not a pack id")]
    NotAPackId { id: String },
    #[error("the pack is invalid: {} problems", .0.len())]
    Invalid(Vec<Problem>),
    #[error("{}", bound_message(*.bound, *.limit))]
    Bound { bound: Bound, limit: u64 },
    #[error("{0}")]
    State(#[from] state::StateError),
    /// A crash simulated by the tests at a named point.
    #[cfg(test)]
    #[error("crashed at {0}")]
    Crash(&'static str),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn bound_message(bound: Bound, limit: u64) -> String {
    match bound {
        Bound::UnpackedBytes => format!(
            "the package unpacks to more than {} MiB, the most an install reads",
            limit / (1024 * 1024)
        ),
        Bound::Entries => format!("the package holds more than {limit} entries, the most an install reads"),
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> InstallError {
    let what = what.into();
    move |source| InstallError::Io { what, source }
}

/// The pack's files, by name, as read from the source.
pub type Files = BTreeMap<String, Vec<u8>>;

/// The names a pack may hold: hcp.json, SKILL.md and the `./FILE` its `bin` names.
fn wanted(manifest_text: &[u8]) -> Vec<String> {
    let mut names = vec![MANIFEST_FILE.to_owned(), SKILL_FILE.to_owned()];
    let value: serde_json::Value = serde_json::from_slice(manifest_text).unwrap_or_default();
    if let Some(file) = value["bin"][0].as_str().and_then(|bin| bin.strip_prefix("./"))
        && !file.contains('/')
        && !file.is_empty()
    {
        names.push(file.to_owned());
    }
    names
}

/// Reads a pack's files from a folder: regular files of their own only, read through
/// one descriptor each, so a file swapped while it is read cannot bring in anything
/// else. On Unix the folder is opened once and each file is opened beneath it
/// without following a link (`O_NOFOLLOW`); the opened descriptor must be a regular
/// file with no other hard link, and must not change size while it is read.
pub fn read_folder(dir: &Path) -> Result<Files, InstallError> {
    let folder = PackFolder::open(dir)?;
    let manifest = folder.read(MANIFEST_FILE)?;
    let mut files = Files::new();
    for name in wanted(&manifest) {
        let bytes = if name == MANIFEST_FILE {
            manifest.clone()
        } else {
            folder.read(&name)?
        };
        files.insert(name, bytes);
    }
    Ok(files)
}

struct PackFolder {
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
    #[cfg(not(unix))]
    path: PathBuf,
}

/// Which link a tarball entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    Symbolic,
    Hard,
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

/// Most bytes an install unpacks from a tarball, in each of its two passes.
pub const MAX_UNPACKED: u64 = 64 * 1024 * 1024;
/// Most entries a tarball may hold.
pub const MAX_ENTRIES: u64 = 10_000;

/// A bound a tarball went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Bound {
    UnpackedBytes,
    Entries,
}

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
                bound: Bound::UnpackedBytes,
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
                bound: Bound::Entries,
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

/// Validates the files as a pack.
pub fn validate(files: &Files) -> Result<Manifest, InstallError> {
    let text = |name: &str| files.get(name).and_then(|bytes| std::str::from_utf8(bytes).ok());
    let manifest_text = text(MANIFEST_FILE).ok_or(InstallError::ManifestNotUtf8)?;
    parse_pack(manifest_text, text(SKILL_FILE), |file| {
        (!files.contains_key(file)).then(|| format!("./{file} is not in the pack"))
    })
    .map(|(manifest, _)| manifest)
    .map_err(InstallError::Invalid)
}

/// `sha512-<base64>` of the files, in name order, each name and length included.
pub fn integrity(files: &Files) -> String {
    let mut hasher = Sha512::new();
    for (name, bytes) in files {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(hasher.finalize())
    )
}

/// One entry of `packs.lock.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Locked {
    pub id: String,
    pub version: String,
    pub source: String,
    pub integrity: String,
    pub installed_at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    pub version: u32,
    pub packs: BTreeMap<String, Locked>,
}

impl LockFile {
    pub fn load(path: &Path) -> Result<Self, InstallError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|error| InstallError::LockUnparsable {
                path: path.to_path_buf(),
                line: error.line(),
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self {
                version: 1,
                packs: BTreeMap::new(),
            }),
            Err(source) => Err(InstallError::Io {
                what: format!("cannot read {}", path.display()),
                source,
            }),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), InstallError> {
        let mut text = serde_json::to_vec_pretty(self).unwrap_or_default();
        text.push(b'\n');
        Ok(state::write_atomic(path, &text, 0o600)?)
    }
}

/// What an install did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// With the lock entry of the version it replaced, if one was recorded.
    Installed {
        previous: Option<Locked>,
    },
    Unchanged,
}

/// Where a change in flight keeps everything it has not finished:
/// `packs/.work/journal.json` (what the change is), `new/` (the staged version) and
/// `old/` (the version it replaces or removes). The folder exists only while a
/// change is in flight or after one was interrupted, so finding it costs one `stat`.
const WORK: &str = ".work";
const JOURNAL: &str = "journal.json";
const NEW: &str = "new";
const OLD: &str = "old";

/// The one change in flight, written (atomically) before the packs folder changes.
/// Whoever takes the lock next and finds it finishes the change or rolls it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "op", deny_unknown_fields)]
enum Journal {
    /// `new/` is swapped with `packs/<id>` (or renamed to it; where the kernel
    /// cannot swap, the installed version is first renamed to `old/`), then the lock
    /// entry is written.
    Install { entry: Locked },
    /// `packs/<id>` is renamed to `old/`, then the lock entry goes.
    Remove { id: String },
}

fn sync_dir(dir: &Path) {
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
}

fn remove_tree(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok() {
        let _ = std::fs::remove_dir_all(path);
    }
}

/// Removes the content-named copies a bound call ran this pack's CLI from
/// (`$HCP_HOME/.installed/ID-TAG/`, written by exec): once the pack is replaced or
/// removed they can never match its bindings again. Only names whose id part is
/// exactly `id` go (the tag holds no `-`), so pack `a` never takes `a-b`'s copies.
/// The caller holds the state lock. A call that is starting from a copy as it goes
/// fails to spawn and runs nothing.
fn prune_copies(home: &Path, id: &str) {
    let Ok(entries) = std::fs::read_dir(home.join(".installed")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name
            .to_str()
            .and_then(|name| name.rsplit_once('-'))
            .is_some_and(|(pack, _)| pack == id)
        {
            remove_tree(&entry.path());
        }
    }
}

/// The integrity of what is installed at `dir`, if it reads as a pack.
fn installed_integrity(dir: &Path) -> Option<String> {
    read_folder(dir).ok().map(|files| integrity(&files))
}

/// Finishes or rolls back a change a crash interrupted, and removes what it left.
/// The caller holds the state lock.
fn recover(home: &Path) -> Result<(), InstallError> {
    let packs = home.join("packs");
    let work = packs.join(WORK);
    let journal_path = work.join(JOURNAL);
    let lock_path = home.join("packs.lock.json");
    let journal =
        match std::fs::read(&journal_path) {
            Ok(bytes) => Some(serde_json::from_slice::<Journal>(&bytes).map_err(|_| {
                InstallError::JournalUnparsable {
                    journal: journal_path.clone(),
                    work: work.clone(),
                }
            })?),
            Err(error) if matches!(error.kind(), std::io::ErrorKind::NotFound) => None,
            Err(source) => {
                return Err(InstallError::Io {
                    what: format!("cannot read {}", journal_path.display()),
                    source,
                });
            }
        };
    let journaled = journal.is_some();
    match journal {
        // No journal: the change never touched the installed pack.
        None => {}
        Some(Journal::Install { entry }) => {
            let target = packs.join(&entry.id);
            if installed_integrity(&target).as_deref() == Some(entry.integrity.as_str()) {
                // The new version is in place: the lock follows it.
                let mut lock = LockFile::load(&lock_path)?;
                if lock.packs.get(&entry.id) != Some(&entry) {
                    lock.version = 1;
                    lock.packs.insert(entry.id.clone(), entry);
                    lock.save(&lock_path)?;
                }
            } else if std::fs::symlink_metadata(&target).is_err() && work.join(OLD).is_dir() {
                // The previous version was moved aside and nothing took its place.
                std::fs::rename(work.join(OLD), &target)
                    .map_err(io("cannot put the previous version back"))?;
            }
        }
        // The pack was moved out: its lock entry goes too.
        Some(Journal::Remove { id }) if std::fs::symlink_metadata(packs.join(&id)).is_err() => {
            let mut lock = LockFile::load(&lock_path)?;
            if lock.packs.remove(&id).is_some() {
                lock.save(&lock_path)?;
            }
        }
        // Not moved yet: nothing changed.
        Some(Journal::Remove { .. }) => {}
    }
    if journaled {
        // Whatever was finished or rolled back, the packs index is redone.
        crate::index::bump_generation(home)?;
    }
    finish(&packs)?;
    // Staging and set-aside folders of older versions of hcpx.
    if let Ok(entries) = std::fs::read_dir(&packs) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".tmp-") || name.starts_with(".old-") {
                remove_tree(&entry.path());
            }
        }
    }
    Ok(())
}

/// Recovers from an interrupted install or uninstall if one left its work folder;
/// a single `stat` when none did. For callers that read the packs folder.
pub fn recover_if_needed(home: &Path) -> Result<(), InstallError> {
    if std::fs::symlink_metadata(home.join("packs").join(WORK)).is_err() {
        return Ok(());
    }
    let _lock = state::Lock::acquire(home)?;
    recover(home)
}

/// Starts a change: a fresh work folder holding its journal.
fn begin(packs: &Path, journal: &Journal) -> Result<PathBuf, InstallError> {
    let work = packs.join(WORK);
    std::fs::create_dir(&work).map_err(io("cannot create the install work folder"))?;
    let text = serde_json::to_vec(journal).unwrap_or_default();
    state::write_atomic(&work.join(JOURNAL), &text, 0o600)?;
    Ok(work)
}

/// Ends a change whose lock entry is written: the work folder goes, journal last
/// (a crash halfway leaves a folder without a journal, which recovery just removes).
fn finish(packs: &Path) -> Result<(), InstallError> {
    let work = packs.join(WORK);
    if std::fs::symlink_metadata(&work).is_err() {
        return Ok(());
    }
    remove_tree(&work.join(NEW));
    remove_tree(&work.join(OLD));
    std::fs::remove_dir_all(&work).map_err(io("cannot remove the install work folder"))?;
    sync_dir(packs);
    Ok(())
}

#[cfg(test)]
thread_local! {
    static CRASH_AT: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    /// Tests of the two-rename path that kernels without an exchange take.
    static TWO_RENAMES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn may_exchange() -> bool {
    #[cfg(test)]
    if TWO_RENAMES.with(std::cell::Cell::get) {
        return false;
    }
    true
}

/// Whether a test asked this thread's change to stop dead at `point`, as a crash
/// would: nothing after it runs, no clean-up.
fn crash(point: &'static str) -> Result<(), InstallError> {
    #[cfg(test)]
    if CRASH_AT.with(std::cell::Cell::get) == Some(point) {
        return Err(InstallError::Crash(point));
    }
    let _ = point;
    Ok(())
}

/// Exchanges two folders in one step; `Ok(false)` where the kernel cannot.
fn exchange(a: &Path, b: &Path) -> Result<bool, InstallError> {
    #[cfg(target_os = "linux")]
    {
        match rustix::fs::renameat_with(
            rustix::fs::CWD,
            a,
            rustix::fs::CWD,
            b,
            rustix::fs::RenameFlags::EXCHANGE,
        ) {
            Ok(()) => return Ok(true),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(errno) => {
                return Err(InstallError::Io {
                    what: "cannot put the pack in place".to_owned(),
                    source: errno.into(),
                });
            }
        }
    }
    let _ = (a, b);
    Ok(false)
}

/// Places the pack under `$HCP_HOME/packs/<id>/` and records it, under the lock.
/// A journal records the change; the pack is staged beside its place and swapped
/// with the installed one in one step (where the kernel can); then the lock file is
/// written and the work folder removed. A crash at any point leaves a state that
/// the next install, uninstall or catalog read finishes or rolls back.
pub fn place(
    home: &Path,
    files: &Files,
    manifest: &Manifest,
    source: &str,
    now: String,
) -> Result<Outcome, InstallError> {
    let _lock = state::Lock::acquire(home)?;
    let packs = home.join("packs");
    std::fs::create_dir_all(&packs).map_err(io("cannot create HCP_HOME/packs"))?;
    recover(home)?;
    let lock_path = home.join("packs.lock.json");
    let mut lock = LockFile::load(&lock_path)?;
    let sum = integrity(files);
    let target = packs.join(&manifest.id);
    // "Nothing changed" only when the lock and the files on disk both say so.
    if let Some(existing) = lock.packs.get(&manifest.id)
        && existing.version == manifest.version.to_string()
        && existing.integrity == sum
        && existing.source == source
        && installed_integrity(&target).as_deref() == Some(sum.as_str())
    {
        return Ok(Outcome::Unchanged);
    }
    let entry = Locked {
        id: manifest.id.clone(),
        version: manifest.version.to_string(),
        source: source.to_owned(),
        integrity: sum,
        installed_at: now,
    };
    let work = begin(&packs, &Journal::Install { entry: entry.clone() })?;
    crash("journaled")?;
    let (staged, aside) = (work.join(NEW), work.join(OLD));
    let stage = || -> Result<(), InstallError> {
        std::fs::create_dir(&staged).map_err(io("cannot stage the pack"))?;
        for (name, bytes) in files {
            let mode = if manifest.bin_file() == Some(name.as_str()) {
                0o755
            } else {
                0o644
            };
            state::write_atomic(&staged.join(name), bytes, mode)?;
        }
        sync_dir(&staged);
        crash("staged")?;
        let exists = std::fs::symlink_metadata(&target).is_ok();
        if exists && may_exchange() && exchange(&staged, &target)? {
            return Ok(());
        }
        if exists {
            std::fs::rename(&target, &aside).map_err(io("cannot move the previous version aside"))?;
            crash("aside")?;
        }
        std::fs::rename(&staged, &target).map_err(io("cannot put the pack in place"))
    };
    if let Err(error) = stage() {
        #[cfg(test)]
        if matches!(error, InstallError::Crash(_)) {
            return Err(error);
        }
        recover(home)?;
        return Err(error);
    }
    sync_dir(&packs);
    crash("swapped")?;
    lock.version = 1;
    let previous = lock.packs.insert(manifest.id.clone(), entry);
    lock.save(&lock_path)?;
    // Before the journal goes: a crash in between leaves recovery to bump it.
    crate::index::bump_generation(home)?;
    crash("locked")?;
    finish(&packs)?;
    prune_copies(home, &manifest.id);
    Ok(Outcome::Installed { previous })
}

/// What the pack with this id is now, for bindings: a built-in by its source; an
/// installed pack by the source its lock entry records and the integrity of its
/// files as they are on disk (what will run), so a pack changed by any means no
/// longer matches what a credential was bound for.
pub fn identity(home: &Path, pack: &Pack) -> Identity {
    identity_and_files(home, pack).0
}

/// [`identity`], with the files of an installed pack it was computed from (`None`
/// for a built-in, or when they cannot be read as a pack).
pub fn identity_and_files(home: &Path, pack: &Pack) -> (Identity, Option<Files>) {
    match &pack.origin {
        Origin::Builtin { .. } => (
            Identity {
                source: format!("builtin:{}", pack.id()),
                integrity: None,
            },
            None,
        ),
        Origin::Installed { dir } => {
            let source = LockFile::load(&home.join("packs.lock.json"))
                .ok()
                .and_then(|lock| lock.packs.get(pack.id()).map(|entry| entry.source.clone()))
                .unwrap_or_else(|| format!("unrecorded:{}", dir.display()));
            let files = read_folder(dir).ok();
            let integrity = files.as_ref().map_or_else(|| "unreadable".to_owned(), integrity);
            (
                Identity {
                    source,
                    integrity: Some(integrity),
                },
                files,
            )
        }
    }
}

/// The identity a lock entry records.
pub fn locked_identity(entry: &Locked) -> Identity {
    Identity {
        source: entry.source.clone(),
        integrity: Some(entry.integrity.clone()),
    }
}

/// Whether two sources are the same place, so that a person's update from one to
/// the other may keep the pack's bindings: the same npm package name, the same
/// folder, or the same built-in id.
pub fn same_place(a: &str, b: &str) -> bool {
    fn origin(source: &str) -> &str {
        match source.strip_prefix("npm:") {
            // `npm:NAME@VERSION`; a scoped NAME starts with `@`.
            Some(spec) => match spec.get(1..).and_then(|rest| rest.rfind('@')) {
                Some(at) => &source[..4 + 1 + at],
                None => source,
            },
            None => source,
        }
    }
    origin(a) == origin(b)
}

/// Removes an installed pack and its lock entry, under the lock, journaled as
/// [`place`] is.
pub fn remove(home: &Path, id: &str) -> Result<bool, InstallError> {
    if !crate::template::is_pack_id(id) {
        return Err(InstallError::NotAPackId { id: id.to_owned() });
    }
    let _lock = state::Lock::acquire(home)?;
    let packs = home.join("packs");
    recover(home)?;
    let lock_path = home.join("packs.lock.json");
    let mut lock = LockFile::load(&lock_path)?;
    let target = packs.join(id);
    let existed = target.is_dir();
    if existed {
        let work = begin(&packs, &Journal::Remove { id: id.to_owned() })?;
        crash("journaled")?;
        std::fs::rename(&target, work.join(OLD)).map_err(io("cannot remove the pack"))?;
        sync_dir(&packs);
        crash("moved")?;
    }
    let locked = lock.packs.remove(id).is_some();
    if locked {
        lock.save(&lock_path)?;
    }
    if existed || locked {
        crate::index::bump_generation(home)?;
    }
    crash("locked")?;
    finish(&packs)?;
    prune_copies(home, id);
    Ok(existed || locked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(version: &str) -> Files {
        let manifest = format!(
            r#"{{"hcp":1,"id":"demo","version":"{version}","description":"d","bin":["./demo"],
            "commands":{{"go":{{"summary":"s","effect":"read","argv":[]}}}}}}"#
        );
        [
            (MANIFEST_FILE.to_owned(), manifest.into_bytes()),
            (
                SKILL_FILE.to_owned(),
                b"---\nname: demo\ndescription: d\n---\n".to_vec(),
            ),
            ("demo".to_owned(), b"#!/bin/sh\necho hi\n".to_vec()),
        ]
        .into()
    }

    #[test]
    fn place_same_version_is_unchanged_and_another_replaces() {
        let home = tempfile::tempdir().unwrap();
        let v1 = files("1.0.0");
        let manifest = validate(&v1).unwrap();
        assert_eq!(
            place(home.path(), &v1, &manifest, "./demo", "t".into()).unwrap(),
            Outcome::Installed { previous: None }
        );
        assert_eq!(
            place(home.path(), &v1, &manifest, "./demo", "t".into()).unwrap(),
            Outcome::Unchanged
        );
        let v2 = files("2.0.0");
        let manifest = validate(&v2).unwrap();
        let Outcome::Installed {
            previous: Some(previous),
        } = place(home.path(), &v2, &manifest, "./demo", "t".into()).unwrap()
        else {
            panic!("2.0.0 replaces 1.0.0")
        };
        assert_eq!(previous.version, "1.0.0");
        assert_eq!(previous.integrity, integrity(&v1));
        let lock = LockFile::load(&home.path().join("packs.lock.json")).unwrap();
        assert_eq!(lock.packs["demo"].version, "2.0.0");
        assert!(lock.packs["demo"].integrity.starts_with("sha512-"));
        let names: Vec<_> = std::fs::read_dir(home.path().join("packs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("demo")],
            "no staging left behind"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(home.path().join("packs/demo/demo"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o755);
        }
        assert!(remove(home.path(), "demo").unwrap());
        assert!(!remove(home.path(), "demo").unwrap());
    }

    #[test]
    fn integrity_depends_on_every_byte_and_name() {
        let a = files("1.0.0");
        let mut b = a.clone();
        b.insert("demo".into(), b"#!/bin/sh\necho ho\n".to_vec());
        assert_ne!(integrity(&a), integrity(&b));
    }

    fn tarball(entries: &[(&str, &[u8], tar::EntryType)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, bytes, kind) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            if kind.is_symlink() {
                header.set_link_name("/etc/passwd").unwrap();
                header.set_size(0);
            }
            // Write the raw name so `..` survives (set_path refuses it).
            let raw = &mut header.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            header.set_cksum();
            builder.append(&header, *bytes).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn tarballs_take_only_the_three_files_and_refuse_the_dangerous() {
        let good = files("1.0.0");
        let regular = tar::EntryType::Regular;
        let mut entries: Vec<(String, Vec<u8>, tar::EntryType)> = good
            .iter()
            .map(|(name, bytes)| (format!("package/{name}"), bytes.clone(), regular))
            .collect();
        entries.push(("package/README.md".into(), b"extra".to_vec(), regular));
        let view: Vec<(&str, &[u8], tar::EntryType)> = entries
            .iter()
            .map(|(n, b, k)| (n.as_str(), b.as_slice(), *k))
            .collect();
        assert_eq!(read_tarball(std::io::Cursor::new(tarball(&view))).unwrap(), good);
        for (bad, message) in [
            (("package/../evil", b"x".as_slice(), regular), "escapes"),
            (("package/link", b"".as_slice(), tar::EntryType::Symlink), "link"),
            (("package/dev", b"".as_slice(), tar::EntryType::Char), "device"),
        ] {
            let mut with = view.clone();
            with.push(bad);
            let error = read_tarball(std::io::Cursor::new(tarball(&with)))
                .unwrap_err()
                .to_string();
            assert!(error.contains(message), "{error}");
        }
    }

    /// A pack file swapped for a link to an outside file while it is read: the
    /// outside content must never be taken. The swapper flips the name between a
    /// regular file and a link with atomic renames, as fast as it can.
    #[cfg(unix)]
    #[test]
    fn folder_read_never_follows_a_link_swapped_in() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("pack");
        std::fs::create_dir(&dir).unwrap();
        for (name, bytes) in files("1.0.0") {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        let outside = root.path().join("outside");
        std::fs::write(&outside, b"#!/bin/sh\necho SECRET-OUTSIDE\n").unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let swapper = {
            let (dir, outside, stop) = (dir.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                let (link, regular) = (dir.join(".link"), dir.join(".regular"));
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::os::unix::fs::symlink(&outside, &link);
                    let _ = std::fs::rename(&link, dir.join("demo"));
                    let _ = std::fs::write(&regular, b"#!/bin/sh\necho hi\n");
                    let _ = std::fs::rename(&regular, dir.join("demo"));
                }
            })
        };
        let mut taken = 0;
        for _ in 0..20000 {
            if let Ok(read) = read_folder(&dir) {
                taken += 1;
                assert_eq!(
                    read["demo"],
                    b"#!/bin/sh\necho hi\n".to_vec(),
                    "outside content taken"
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(taken > 0, "no read succeeded at all");
    }

    #[cfg(unix)]
    #[test]
    fn folder_read_refuses_hard_links_and_special_files() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("pack");
        std::fs::create_dir(&dir).unwrap();
        for (name, bytes) in files("1.0.0") {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        assert_eq!(read_folder(&dir).unwrap(), files("1.0.0"));
        std::fs::hard_link(dir.join("demo"), root.path().join("elsewhere")).unwrap();
        let error = read_folder(&dir).unwrap_err();
        assert!(
            matches!(&error, InstallError::FolderHardLink { name, links: 2 } if name == "demo"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "demo has other hard links; packs carry files of their own"
        );
        std::fs::remove_file(root.path().join("elsewhere")).unwrap();
        std::fs::remove_file(dir.join("demo")).unwrap();
        std::os::unix::fs::symlink(dir.join(SKILL_FILE), dir.join("demo")).unwrap();
        let error = read_folder(&dir).unwrap_err();
        assert!(
            matches!(&error, InstallError::FolderLink { name } if name == "demo"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "demo is a link; packs carry regular files only"
        );
        std::fs::remove_file(dir.join("demo")).unwrap();
        std::fs::create_dir(dir.join("demo")).unwrap();
        let error = read_folder(&dir).unwrap_err();
        assert!(
            matches!(&error, InstallError::FolderNotRegular { name } if name == "demo"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "demo is not a regular file (a device, a FIFO or a folder)"
        );
    }

    fn pack_entries() -> Vec<(String, Vec<u8>, tar::EntryType)> {
        files("1.0.0")
            .into_iter()
            .map(|(name, bytes)| (format!("package/{name}"), bytes, tar::EntryType::Regular))
            .collect()
    }

    fn view(entries: &[(String, Vec<u8>, tar::EntryType)]) -> Vec<(&str, &[u8], tar::EntryType)> {
        entries
            .iter()
            .map(|(n, b, k)| (n.as_str(), b.as_slice(), *k))
            .collect()
    }

    /// A small tarball that unpacks to far more than the bound (zero-filled 16 MiB
    /// extra files) is refused by the bound, never held in memory.
    #[test]
    fn tarball_bombs_stop_at_the_unpacked_bound() {
        let zeros = vec![0_u8; MAX_FILE as usize];
        let mut entries = pack_entries();
        for i in 0..5 {
            entries.push((
                format!("package/zeros{i}"),
                zeros.clone(),
                tar::EntryType::Regular,
            ));
        }
        let bytes = tarball(&view(&entries));
        assert!(bytes.len() < 1024 * 1024, "{} bytes", bytes.len());
        let error = read_tarball(std::io::Cursor::new(bytes)).unwrap_err();
        assert!(
            matches!(
                error,
                InstallError::Bound {
                    bound: Bound::UnpackedBytes,
                    limit: MAX_UNPACKED
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "the package unpacks to more than 64 MiB, the most an install reads"
        );
    }

    #[test]
    fn tarballs_with_too_many_entries_or_twice_a_pack_file_are_refused() {
        let mut entries = pack_entries();
        for i in 0..MAX_ENTRIES {
            entries.push((format!("package/f{i}"), Vec::new(), tar::EntryType::Regular));
        }
        let error = read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err();
        assert!(
            matches!(
                error,
                InstallError::Bound {
                    bound: Bound::Entries,
                    limit: MAX_ENTRIES
                }
            ),
            "{error:?}"
        );
        let mut entries = pack_entries();
        entries.push((
            "package/demo".into(),
            b"#!/bin/sh\necho other\n".to_vec(),
            tar::EntryType::Regular,
        ));
        let error = read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err();
        assert_eq!(error.to_string(), "the package holds demo twice");
        // Files below the top are not pack files, whatever their name.
        let mut entries = pack_entries();
        entries.push(("package/lib/demo".into(), b"x".to_vec(), tar::EntryType::Regular));
        assert_eq!(
            read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap(),
            files("1.0.0")
        );
    }

    /// What the lock and the folder say about `demo` after recovery: the version
    /// both agree on, or `None` when neither has it. Nothing may be left over.
    fn agreed(home: &Path) -> Option<String> {
        let _lock = state::Lock::acquire(home).unwrap();
        recover(home).unwrap();
        let packs = home.join("packs");
        let left: Vec<_> = std::fs::read_dir(&packs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "demo")
            .collect();
        assert_eq!(left, Vec::<String>::new());
        let lock = LockFile::load(&home.join("packs.lock.json")).unwrap();
        match (lock.packs.get("demo"), read_folder(&packs.join("demo")).ok()) {
            (None, None) => None,
            (Some(entry), Some(files)) => {
                assert_eq!(entry.integrity, integrity(&files));
                Some(validate(&files).unwrap().version.to_string())
            }
            (entry, files) => panic!("lock {entry:?}, files {files:?}"),
        }
    }

    /// Every point where an install or uninstall can die, on both the one-step
    /// swap and the two-rename path: recovery leaves the old state or the new one,
    /// with the lock and the folder in agreement.
    #[test]
    fn a_crash_at_each_point_is_finished_or_rolled_back() {
        let expected = [
            // (point, two renames, what the crashed change was, state after recovery)
            ("journaled", false, "install", Some("1.0.0")),
            ("staged", false, "install", Some("1.0.0")),
            ("swapped", false, "install", Some("2.0.0")),
            ("locked", false, "install", Some("2.0.0")),
            ("staged", true, "install", Some("1.0.0")),
            ("aside", true, "install", Some("1.0.0")),
            ("swapped", true, "install", Some("2.0.0")),
            ("journaled", false, "remove", Some("1.0.0")),
            ("moved", false, "remove", None),
            ("locked", false, "remove", None),
        ];
        for (point, two, change, after) in expected {
            let home = tempfile::tempdir().unwrap();
            let v1 = files("1.0.0");
            place(home.path(), &v1, &validate(&v1).unwrap(), "./demo", "t".into()).unwrap();
            CRASH_AT.with(|at| at.set(Some(point)));
            TWO_RENAMES.with(|t| t.set(two));
            let v2 = files("2.0.0");
            let error = if change == "install" {
                place(home.path(), &v2, &validate(&v2).unwrap(), "./demo", "t".into()).unwrap_err()
            } else {
                remove(home.path(), "demo").unwrap_err()
            };
            CRASH_AT.with(|at| at.set(None));
            TWO_RENAMES.with(|t| t.set(false));
            assert!(
                matches!(error, InstallError::Crash(p) if p == point),
                "{point}: {error}"
            );
            assert!(
                home.path().join("packs").join(WORK).is_dir(),
                "{point}: the work folder is there"
            );
            assert_eq!(
                agreed(home.path()).as_deref(),
                after,
                "{change} crashed at {point} (two renames: {two})"
            );
            // And the next install of 1.0.0 reports a change exactly when it is one.
            let outcome = place(home.path(), &v1, &validate(&v1).unwrap(), "./demo", "t".into()).unwrap();
            assert_eq!(outcome == Outcome::Unchanged, after == Some("1.0.0"), "{point}");
        }
    }

    #[test]
    fn same_place_is_the_npm_name_the_folder_or_the_builtin() {
        assert!(same_place("npm:rt@1.0.0", "npm:rt@2.0.0"));
        assert!(same_place("npm:@acme/rt@1.0.0", "npm:@acme/rt@2.0.0"));
        assert!(!same_place("npm:@acme/rt@1.0.0", "npm:@evil/rt@1.0.0"));
        assert!(!same_place("npm:rt@1.0.0", "npm:rtx@1.0.0"));
        assert!(!same_place("npm:rt@1.0.0", "/home/me/rt"));
        assert!(same_place("/home/me/rt", "/home/me/rt"));
        assert!(!same_place("/home/me/rt", "/tmp/rt"));
        assert!(same_place("builtin:git", "builtin:git"));
    }

    /// Each refusal is its own variant carrying what was refused, and reads as it
    /// always has: the message is what users see, the variant is what code branches on.
    #[test]
    fn tarball_refusals_are_typed_and_read_as_before() {
        let refuse = |extra: Vec<(String, Vec<u8>, tar::EntryType)>| {
            let mut entries = pack_entries();
            entries.extend(extra);
            read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err()
        };
        let entry = |name: &str, kind| vec![(name.to_owned(), b"".to_vec(), kind)];
        let cases = [
            (
                refuse(entry("package/../evil", tar::EntryType::Regular)),
                "the package has a path that escapes it",
            ),
            (
                refuse(entry("package/link", tar::EntryType::Symlink)),
                "the package holds a link; packs carry regular files only",
            ),
            (
                refuse(entry("package/hard", tar::EntryType::Link)),
                "the package holds a link; packs carry regular files only",
            ),
            (
                refuse(entry("package/dev", tar::EntryType::Char)),
                "the package holds a device or special file",
            ),
            (
                refuse(entry("package/demo", tar::EntryType::Regular)),
                "the package holds demo twice",
            ),
        ];
        let messages: Vec<String> = cases.iter().map(|(error, _)| error.to_string()).collect();
        let expected: Vec<&str> = cases.iter().map(|(_, message)| *message).collect();
        assert_eq!(messages, expected);
        let [escapes, symbolic, hard, device, twice] = cases.map(|(error, _)| error);
        assert!(
            matches!(&escapes, InstallError::PackageEscapes { path } if path == Path::new("package/../evil")),
            "{escapes:?}"
        );
        assert!(
            matches!(&symbolic, InstallError::PackageLink { path, link: LinkKind::Symbolic } if path == Path::new("package/link")),
            "{symbolic:?}"
        );
        assert!(
            matches!(&hard, InstallError::PackageLink { path, link: LinkKind::Hard } if path == Path::new("package/hard")),
            "{hard:?}"
        );
        assert!(
            matches!(&device, InstallError::PackageSpecial { path } if path == Path::new("package/dev")),
            "{device:?}"
        );
        assert!(
            matches!(&twice, InstallError::PackageTwice { name } if name == "demo"),
            "{twice:?}"
        );
        // No hcp.json at the top, and a pack file the manifest names is missing.
        let only = |names: &[&str]| {
            let entries: Vec<_> = pack_entries()
                .into_iter()
                .filter(|(name, _, _)| names.iter().any(|keep| name.ends_with(keep)))
                .collect();
            read_tarball(std::io::Cursor::new(tarball(&view(&entries)))).unwrap_err()
        };
        let no_manifest = only(&[SKILL_FILE, "demo"]);
        assert!(
            matches!(no_manifest, InstallError::PackageNoManifest),
            "{no_manifest:?}"
        );
        assert_eq!(no_manifest.to_string(), "the package has no hcp.json at its top");
        let no_cli = only(&[MANIFEST_FILE, SKILL_FILE]);
        assert!(
            matches!(&no_cli, InstallError::PackageMissing { name } if name == "demo"),
            "{no_cli:?}"
        );
        assert_eq!(no_cli.to_string(), "the package has no demo");
    }

    #[test]
    fn state_and_id_refusals_are_typed_and_read_as_before() {
        let home = tempfile::tempdir().unwrap();
        let lock_path = home.path().join(LOCK_FILE);
        std::fs::write(&lock_path, "{\n  \"version\": 1,\n  oops\n}\n").unwrap();
        let error = LockFile::load(&lock_path).unwrap_err();
        assert!(
            matches!(&error, InstallError::LockUnparsable { path, line: 3 } if *path == lock_path),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "{} cannot be parsed (line 3); fix or remove it, it is never overwritten",
                lock_path.display()
            )
        );
        let error = remove(home.path(), "Not An Id").unwrap_err();
        assert!(
            matches!(&error, InstallError::NotAPackId { id } if id == "Not An Id"),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "\"Not An Id\" is not a pack id");
        let error = validate(&[(MANIFEST_FILE.to_owned(), vec![0xff, 0xfe])].into()).unwrap_err();
        assert!(matches!(error, InstallError::ManifestNotUtf8), "{error:?}");
        assert_eq!(error.to_string(), "hcp.json is not UTF-8 text");
    }
}
