//! The Landlock rulesets of a call: the keeper's (signal scope only) and the call's
//! own (its read allowlist, writes, TCP and scopes), and the write grants opened
//! without following links out of the working directory.

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::*;
use crate::sandbox::hidden::{self, Hide};
use crate::sandbox::rules::{FS_ABI, Opened, Rules, landlock_error};
use crate::sandbox::{ChildPlan, Machine, SYSTEM_READS, SandboxError};

/// The keeper's layer: the signal scope, as a hard requirement, and nothing of the
/// filesystem. Every layer denies moving or linking a file into another folder
/// (Landlock's "refer" right) unless a rule allows it, even a layer that handles no
/// other filesystem right: this one allows it everywhere, so that the call's own
/// layers alone decide (where they grant everything: its writes and its temporary
/// folder). Without that rule no file of a call could change folders (rustc renames
/// a crate's metadata into place; it failed with EXDEV).
pub(crate) fn keeper_ruleset() -> Result<OwnedFd, SandboxError> {
    let root = PathFd::new("/").map_err(landlock_error)?;
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::Refer)
        .map_err(landlock_error)?
        .scope(Scope::Signal)
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?
        .add_rule(PathBeneath::new(root, AccessFs::Refer))
        .map_err(landlock_error)?;
    Option::<OwnedFd>::from(ruleset)
        .ok_or_else(|| SandboxError::Landlock("the kernel did not create the keeper's ruleset".into()))
}

/// Opens each write grant beneath the working directory without following a link
/// out of it: a grant that leads outside is refused, one that does not exist is
/// left out (the pack cannot create it).
pub(crate) fn open_writes(cwd: &Path, writes: &[String]) -> Result<Vec<OwnedFd>, SandboxError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    if writes.is_empty() {
        return Ok(Vec::new());
    }
    let dir = rustix::fs::open(
        cwd,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|error| SandboxError::Cwd(error.into()))?;
    let mut fds = Vec::new();
    for write in writes {
        match rustix::fs::openat2(
            &dir,
            write.as_str(),
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => fds.push(fd),
            Err(rustix::io::Errno::NOENT) => {}
            Err(rustix::io::Errno::XDEV | rustix::io::Errno::LOOP) => {
                return Err(SandboxError::WriteOutside { path: write.clone() });
            }
            Err(error) => {
                return Err(SandboxError::WriteUnusable {
                    path: write.clone(),
                    source: error.into(),
                });
            }
        }
    }
    Ok(fds)
}

/// The call's layer: its reads, its writes (grants opened beneath the working
/// directory, the temporary folder, [`WRITABLE_DEVICES`]), no TCP without the
/// network, and the scopes. System folders come opened from the cache; only what
/// is particular to the call is opened here.
pub(crate) fn call_ruleset(
    plan: &ChildPlan,
    machine: &Machine,
    cache: &Cache,
    writes: Vec<OwnedFd>,
    secrets_covered: bool,
) -> Result<(OwnedFd, Hide), SandboxError> {
    let abi = machine.landlock_abi;
    let rules = Rules::new(abi, |mut ruleset| {
        if abi >= NET_ABI && !plan.network.full() {
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
        }
        if abi >= SCOPE_ABI {
            let scopes = if plan.network.full() {
                Scope::Signal.into()
            } else {
                Scope::Signal | Scope::AbstractUnixSocket
            };
            ruleset = ruleset.scope(scopes)?;
        }
        Ok(ruleset)
    })?;
    let read = AccessFs::from_read(FS_ABI);
    let system = cache.system(machine);
    // Secrets the call's namespace covers are nothing to hide here.
    let secrets: &[std::path::PathBuf] = if secrets_covered { &[] } else { &system.secrets };
    let root_secrets = system.root && !secrets_covered;
    let aliases = &plan.home.aliases;
    // What a folder granted here holds of the hidden paths: only that needs the layer
    // that hides them (a merge of hundreds of rules a call otherwise skips).
    let mut hide = Hide::default();
    let held = |path: &Path| Hide {
        home: aliases.iter().any(|alias| alias.starts_with(path)),
        secrets: secrets.iter().any(|secret| secret.starts_with(path)),
    };
    let inside = |path: &Path| {
        aliases
            .iter()
            .chain(secrets)
            .any(|hidden| path.starts_with(hidden))
    };
    let add = |hide: &mut Hide, more: Hide| {
        hide.home |= more.home;
        hide.secrets |= more.secrets;
    };
    for (opened, real, holds_secrets) in &system.reads {
        add(
            &mut hide,
            Hide {
                home: aliases.iter().any(|alias| alias.starts_with(real)),
                secrets: *holds_secrets && !secrets_covered,
            },
        );
        rules.allow(opened, read)?;
    }
    // A folder the call names is checked where it really is, as opened: a link
    // swapped in after hcpx's checks is caught here.
    let mut grant = |opened: &Opened,
                     real: Option<std::path::PathBuf>,
                     access: landlock::BitFlags<AccessFs>|
     -> Result<(), SandboxError> {
        match real {
            Some(real) if inside(&real) => return Ok(()),
            Some(real) => add(&mut hide, held(&real)),
            None => add(
                &mut hide,
                Hide {
                    home: true,
                    secrets: root_secrets,
                },
            ),
        }
        rules.allow(opened, access)
    };
    // What the system folders already grant is not granted again.
    let covered = |path: &Path| SYSTEM_READS.iter().any(|root| path.starts_with(root));
    for path in plan.reads.outside.iter().filter(|path| !covered(path)) {
        if let Some((opened, real)) = Opened::with_real(path) {
            grant(&opened, real, read)?;
        }
    }
    for fd in writes {
        let opened = Opened::fd(fd);
        let real = opened.real_path();
        grant(&opened, real, rules.all)?;
    }
    if !plan.reads.pack.is_empty()
        && let Some(home) = hidden::open_home(plan.home.real())
    {
        for relative in &plan.reads.pack {
            if let Some(opened) = hidden::open_beneath(&home, relative) {
                rules.allow(&opened, read)?;
            }
        }
    }
    for device in &system.writable {
        rules.allow(device, rules.all)?;
    }
    if let Some(tmpdir) = Opened::path(&plan.tmpdir) {
        rules.allow(&tmpdir, rules.all)?;
    }
    // In its own namespace, a pack connects only to hcpx's listeners there.
    if abi >= NET_ABI {
        for port in plan.network.ports() {
            rules.allow_connect(*port)?;
        }
    }
    Ok((rules.fd, hide))
}
