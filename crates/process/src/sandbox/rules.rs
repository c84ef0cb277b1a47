//! Landlock rules, built in the parent (Linux): a ruleset with the filesystem rights
//! this kernel handles, and the files and folders its rules name, opened once
//! (`O_PATH`). Both layers of a call ([`super::hidden`] and the call's own in
//! [`super::linux`]) are made of these.

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};

use super::SandboxError;

/// The Landlock ABI with the filesystem rights hcpx asks for: up to ABI 5 (device
/// ioctls). Newer kernels still enforce these.
pub(super) const FS_ABI: landlock::ABI = landlock::ABI::V5;

pub(super) fn landlock_error(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(error.to_string())
}

/// A file or folder opened once (`O_PATH`) to be named in Landlock rules, and
/// whether it is a folder (a file takes only file rights).
#[derive(Debug)]
pub(super) struct Opened {
    fd: OwnedFd,
    dir: bool,
}

/// Opens a path for rules; `/proc` as the pack will see it, when it gets its own.
pub(super) fn open_root(path: &Path, proc: Option<&OwnedFd>) -> Option<Opened> {
    match proc {
        Some(proc) if path == Path::new("/proc") => proc.try_clone().ok().map(|fd| Opened { fd, dir: true }),
        _ => Opened::path(path),
    }
}

impl Opened {
    /// `None` when the path does not exist (or is gone since it was listed): it
    /// simply gets no rule.
    pub(super) fn path(path: &Path) -> Option<Self> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
        Some(Self::fd(fd))
    }

    /// `path` opened, with where it really is (see [`super::home::open_real`]);
    /// `None` when the path does not exist.
    #[cfg(target_os = "linux")]
    pub(super) fn with_real(path: &Path) -> Option<(Self, Option<std::path::PathBuf>)> {
        let (fd, real) = super::home::open_real(path).ok()?;
        Some((Self::fd(fd), real))
    }

    /// Where the opened file really is, every link resolved, as the kernel names
    /// it; `None` when it cannot tell (gone since).
    pub(super) fn real_path(&self) -> Option<std::path::PathBuf> {
        use std::os::fd::AsRawFd as _;
        let path = std::fs::read_link(format!("/proc/self/fd/{}", self.fd.as_raw_fd())).ok()?;
        (path.is_absolute() && !path.to_string_lossy().ends_with(" (deleted)")).then_some(path)
    }

    pub(super) fn fd(fd: OwnedFd) -> Self {
        let dir = rustix::fs::fstat(&fd).is_ok_and(|stat| {
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory
        });
        Self { fd, dir }
    }
}

/// A Landlock ruleset being filled, with the filesystem rights this kernel handles.
pub(super) struct Rules {
    pub(super) fd: OwnedFd,
    pub(super) all: landlock::BitFlags<AccessFs>,
    file: landlock::BitFlags<AccessFs>,
}

impl Rules {
    /// Creates a ruleset handling every filesystem right of [`FS_ABI`] this kernel
    /// knows; `extra` adds network rights and scopes, as hard requirements.
    pub(super) fn new(
        abi: i32,
        extra: impl FnOnce(Ruleset) -> Result<Ruleset, landlock::RulesetError>,
    ) -> Result<Self, SandboxError> {
        let known = landlock::ABI::from(abi.min(5));
        let all = AccessFs::from_all(known) & AccessFs::from_all(FS_ABI);
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(all)
            .map_err(landlock_error)?;
        let created = extra(ruleset)
            .map_err(landlock_error)?
            .create()
            .map_err(landlock_error)?;
        let fd = Option::<OwnedFd>::from(created)
            .ok_or_else(|| SandboxError::Landlock("the kernel did not create the ruleset".into()))?;
        Ok(Self {
            fd,
            all,
            file: AccessFs::from_file(known) & all,
        })
    }

    /// Allows TCP connections to `port` (for a ruleset that handles them), with one
    /// system call.
    pub(super) fn allow_connect(&self, port: u16) -> Result<(), SandboxError> {
        #[repr(C, packed)]
        struct NetPortAttr {
            allowed_access: u64,
            port: u64,
        }
        let attr = NetPortAttr {
            allowed_access: landlock::BitFlags::from(landlock::AccessNet::ConnectTcp).bits(),
            port: u64::from(port),
        };
        // LANDLOCK_RULE_NET_PORT.
        self.add(2, &attr)
    }

    /// Allows `access` beneath an opened path (narrowed for a file), with one system
    /// call: the rule's sources are opened once and kept (see [`Cache`]).
    pub(super) fn allow(
        &self,
        opened: &Opened,
        access: landlock::BitFlags<AccessFs>,
    ) -> Result<(), SandboxError> {
        use std::os::fd::AsRawFd as _;
        #[repr(C, packed)]
        struct PathBeneathAttr {
            allowed_access: u64,
            parent_fd: i32,
        }
        let access = access & if opened.dir { self.all } else { self.file };
        let attr = PathBeneathAttr {
            allowed_access: access.bits(),
            parent_fd: opened.fd.as_raw_fd(),
        };
        // LANDLOCK_RULE_PATH_BENEATH.
        self.add(1, &attr)
    }

    /// `landlock_add_rule` of rule type `kind` with its attribute `attr`, which
    /// must be laid out as the kernel's packed structure of that type.
    #[expect(unsafe_code, reason = "landlock_add_rule with a prepared attribute")]
    fn add<T>(&self, kind: i32, attr: &T) -> Result<(), SandboxError> {
        use std::os::fd::AsRawFd as _;
        // SAFETY: a ruleset we own, and the attribute of that rule type on the
        // caller's stack (each caller lays it out as the kernel's structure).
        let added = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                kind,
                std::ptr::from_ref(attr),
                0_u32,
            )
        };
        if added == 0 {
            Ok(())
        } else {
            Err(SandboxError::Landlock(format!(
                "cannot add a rule: {}",
                std::io::Error::last_os_error()
            )))
        }
    }
}
