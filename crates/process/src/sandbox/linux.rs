//! The Linux layers, prepared in the parent: what the kernel supports (probed once,
//! without changing this process), the Landlock rulesets, the seccomp programs and
//! the write grants, opened without following links out of the working directory.
//!
//! A call's Landlock domain has two or three layers: the keeper's (signal scope only,
//! so its final `kill(-1)` reaches exactly the call's processes), the call's own (its
//! read allowlist, writes, TCP and scopes) and, only when a folder the call is
//! granted holds a hidden path (`$HCP_HOME`, or as root a secret of the system),
//! the base layer (everything but the hidden paths; cached, as listing the folders on
//! the way is most of the cost). Layers intersect: a pack gets what every layer
//! allows.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use landlock::{AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};

use super::bpf;
use super::hidden::{self, Hide, Shape};
use super::rules::{FS_ABI, Opened, Rules, landlock_error, open_root};
use super::{
    ChildPlan, Control, DEVICES, HomeView, LINKED_CONFIG, Machine, SYSTEM_READS, SandboxError, Support,
};
use crate::confine::{Confinement, Filters, KeeperEnd, ProcNamespace};

/// Truncation (ABI 3) is the last write path Landlock closes: below it a pack could
/// truncate files it was never granted.
const MIN_FS_ABI: i32 = 3;
/// TCP bind and connect rules.
const NET_ABI: i32 = 4;
/// Signal and abstract unix socket scopes.
const SCOPE_ABI: i32 = 6;
/// Devices every pack may write.
const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn landlock_abi() -> i32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only returns the
    // ABI version; nothing is created or changed.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0_usize,
            1_u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn probe_seccomp() -> Support {
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is given.
    let available = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0_u32,
            &raw const action,
        )
    };
    if available == 0 {
        Support::yes("seccomp filters")
    } else {
        Support::no(format!(
            "this kernel has no seccomp filters: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn probe_close_range() -> Support {
    // SAFETY: marks no descriptor at all (the range is past any open one) close-on-exec;
    // it only tells whether the kernel knows the flag.
    let result = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            u32::MAX - 1,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if result == 0 {
        Support::yes("close_range")
    } else {
        Support::no(format!(
            "this kernel has no close_range(CLOSE_RANGE_CLOEXEC) (Linux 5.11): {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn probe_sockets(seccomp: &Support) -> Support {
    if !seccomp.enforced {
        return seccomp.clone();
    }
    let action: u32 = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is given.
    let notify = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0_u32,
            &raw const action,
        )
    };
    if notify != 0 {
        return Support::no(
            "this kernel has no seccomp user notification (Linux 5.5), which checks each unix socket a pack connects to",
        );
    }
    // SAFETY: pidfd_getfd on no descriptor only tells whether the call exists
    // (EBADF) or not (ENOSYS).
    let getfd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, -1_i32, 0_i32, 0_u32) };
    if getfd == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        return Support::no(
            "this kernel has no pidfd_getfd (Linux 5.6), which hcpx needs to connect a pack's socket",
        );
    }
    Support::yes("seccomp user notification")
}

fn probe_containment() -> Support {
    let pid = rustix::process::getpid();
    match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(_) => Support::yes("a keeper"),
        Err(error) => Support::no(format!(
            "this kernel has no pidfds (Linux 5.3), which the keeper needs: {error}"
        )),
    }
}

/// Whether this process holds these capabilities (CAP_SETPCAP drops the bounding
/// set; CAP_SYS_ADMIN and CAP_SYS_CHROOT make and enter a mount namespace).
fn holds(capabilities: rustix::thread::CapabilitySet) -> bool {
    rustix::thread::capabilities(None).is_ok_and(|sets| sets.effective.contains(capabilities))
}

pub(super) fn probe() -> Machine {
    let abi = landlock_abi();
    let landlock = match abi {
        0 => Support::no("Landlock is not enabled in this kernel (Linux 5.13, lsm=landlock)"),
        abi if abi < MIN_FS_ABI => Support::no(format!(
            "Landlock ABI {abi} cannot stop truncation of files outside the grants; Linux 6.2 (ABI 3) can"
        )),
        abi => Support::yes(format!("Landlock ABI {abi}")),
    };
    let scopes = if abi >= SCOPE_ABI {
        Support::yes(format!("Landlock ABI {abi}"))
    } else {
        Support::no(format!(
            "Landlock scopes need ABI 6 (Linux 6.12); this kernel has ABI {abi}, so a pack could signal processes outside its call"
        ))
    };
    let descriptors = probe_close_range();
    let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(40);
    let seccomp = probe_seccomp();
    Machine {
        landlock,
        landlock_abi: abi,
        scopes,
        sockets: probe_sockets(&seccomp),
        seccomp,
        containment: if descriptors.enforced {
            probe_containment()
        } else {
            Support::no("the keeper needs close_range (Linux 5.11) to let go of the runtime's pipes")
        },
        descriptors,
        privileges: Support::yes("prctl and capset"),
        // Decided by the cache, which tries to make the namespace (see `process_list`).
        process_list: Support::no("not tried"),
        can_mount: holds(
            rustix::thread::CapabilitySet::SYS_ADMIN | rustix::thread::CapabilitySet::SYS_CHROOT,
        ),
        drop_bounding: holds(rustix::thread::CapabilitySet::SETPCAP),
        cap_last,
    }
}

/// A built base layer, for one `$HCP_HOME`, with the shape it was built from.
#[derive(Debug)]
struct BaseLayer {
    shape: Shape,
    ruleset: Arc<OwnedFd>,
}

#[derive(Debug, Default)]
pub(super) struct Cache {
    base: Mutex<Option<BaseLayer>>,
    /// The mount namespace with a `/proc` of its own, made once when hcpx may.
    proc: OnceLock<Result<Arc<ProcNamespace>, String>>,
    /// The system folders, opened once: the call's layer names them in every call.
    system: OnceLock<System>,
    keeper: OnceLock<Result<Arc<OwnedFd>, String>>,
    /// By network, then declared sockets.
    filters: [OnceLock<Result<Arc<Filters>, String>>; 4],
    /// The filter that sends `connect` to hcpx, for packs that declare sockets.
    notify: OnceLock<Arc<Vec<libc::sock_filter>>>,
}

impl Cache {
    /// The layer that hides `$HCP_HOME` (every path of it in `view`) and, as root, the
    /// system's secrets; built again when a folder on the way changes.
    fn base(&self, view: &HomeView, hide: Hide, machine: &Machine) -> Result<Arc<OwnedFd>, SandboxError> {
        let mut slot = self
            .base
            .lock()
            .map_err(|_| SandboxError::Landlock("the base layer cache is poisoned".into()))?;
        if let Some(built) = slot.as_ref()
            && built.shape.holds(view, hide)
        {
            return Ok(Arc::clone(&built.ruleset));
        }
        let shape = Shape::of(view, hide);
        let proc = self.proc_root(machine);
        let ruleset = Arc::new(hidden::ruleset(
            &shape,
            view.real(),
            machine.landlock_abi,
            proc.as_ref(),
        )?);
        *slot = Some(BaseLayer {
            shape,
            ruleset: Arc::clone(&ruleset),
        });
        Ok(ruleset)
    }

    fn proc(&self) -> Result<Arc<ProcNamespace>, String> {
        self.proc
            .get_or_init(|| {
                crate::runtime::proc_namespace()
                    .map(Arc::new)
                    .map_err(|error| error.to_string())
            })
            .clone()
    }

    /// Whether the process list is hidden here: hcpx may mount, and the namespace
    /// could be made.
    pub(super) fn process_list(&self, machine: &Machine) -> Support {
        if !machine.can_mount {
            return Support::no(
                "a /proc of the call's own takes root (CAP_SYS_ADMIN); other processes' command lines stay visible, as to any local user",
            );
        }
        match self.proc() {
            Ok(_) => Support::yes("a mount namespace with /proc mounted hidepid=2"),
            Err(error) => Support::no(format!(
                "the namespace for a /proc of its own could not be made: {error}"
            )),
        }
    }

    /// The `/proc` the pack sees: its namespace's when it has one.
    fn proc_root(&self, machine: &Machine) -> Option<OwnedFd> {
        machine
            .process_list
            .enforced
            .then(|| self.proc().ok())
            .flatten()
            .and_then(|proc| proc.proc.try_clone().ok())
    }

    fn system(&self, machine: &Machine) -> &System {
        self.system.get_or_init(|| {
            let proc = self.proc_root(machine);
            let root = rustix::process::geteuid().is_root();
            let secrets = hidden::hidden_paths(&HomeView::default(), root);
            let covered = |path: &Path| SYSTEM_READS.iter().any(|root| path.starts_with(root));
            // The folders that `/etc` files lead to when they are links (systemd-resolved
            // keeps `resolv.conf` in `/run/systemd/resolve`).
            let linked: Vec<PathBuf> = LINKED_CONFIG
                .iter()
                .filter_map(|file| Path::new(file).canonicalize().ok())
                .filter_map(|real| real.parent().map(Path::to_path_buf))
                .filter(|dir| !covered(dir) && dir != Path::new("/"))
                .collect();
            let reads = SYSTEM_READS
                .iter()
                .chain(DEVICES.iter())
                .map(PathBuf::from)
                .chain(linked)
                .filter_map(|path| {
                    let opened = open_root(&path, proc.as_ref())?;
                    // Where it really is (`/bin` may be `/usr/bin`), from what was opened;
                    // `/proc` may be the namespace's own, which has no path here.
                    let real = match path == Path::new("/proc") {
                        true => path,
                        false => opened.real_path().unwrap_or(path),
                    };
                    let holds = secrets.iter().any(|secret| secret.starts_with(&real));
                    Some((opened, real, holds))
                })
                .collect();
            let writable = WRITABLE_DEVICES
                .iter()
                .filter_map(|path| Opened::path(Path::new(path)))
                .collect();
            System {
                secrets,
                reads,
                writable,
                root,
            }
        })
    }

    fn keeper(&self) -> Result<Arc<OwnedFd>, SandboxError> {
        self.keeper
            .get_or_init(|| keeper_ruleset().map(Arc::new).map_err(|error| error.to_string()))
            .clone()
            .map_err(SandboxError::Landlock)
    }

    fn filters(&self, network: bool, sockets: bool) -> Result<Arc<Filters>, SandboxError> {
        self.filters[usize::from(network) + 2 * usize::from(sockets)]
            .get_or_init(|| {
                seccomp_program(network, sockets)
                    .map(|program| Arc::new(Filters { program }))
                    .map_err(|error| error.to_string())
            })
            .clone()
            .map_err(SandboxError::Seccomp)
    }
}

/// The system's folders and devices, opened once per process.
#[derive(Debug)]
struct System {
    /// [`SYSTEM_READS`], [`DEVICES`] and the folders linked configuration leads to,
    /// each with its real path and whether it holds a secret of the system (as root).
    reads: Vec<(Opened, PathBuf, bool)>,
    /// [`WRITABLE_DEVICES`].
    writable: Vec<Opened>,
    /// Whether hcpx runs as root, so the system's secrets are hidden too (by the
    /// base layer: `/etc` holds them).
    root: bool,
    /// Those secrets (none but as root), to tell whether a grant holds one.
    secrets: Vec<PathBuf>,
}

/// The keeper's layer: nothing but the signal scope, as a hard requirement.
fn keeper_ruleset() -> Result<OwnedFd, SandboxError> {
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::Signal)
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?;
    Option::<OwnedFd>::from(ruleset)
        .ok_or_else(|| SandboxError::Landlock("the kernel did not create the keeper's ruleset".into()))
}

/// Opens each write grant beneath the working directory without following a link
/// out of it: a grant that leads outside is refused, one that does not exist is
/// left out (the pack cannot create it).
fn open_writes(cwd: &Path, writes: &[String]) -> Result<Vec<OwnedFd>, SandboxError> {
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
fn call_ruleset(
    plan: &ChildPlan,
    machine: &Machine,
    cache: &Cache,
    writes: Vec<OwnedFd>,
) -> Result<(OwnedFd, Hide), SandboxError> {
    let abi = machine.landlock_abi;
    let rules = Rules::new(abi, |mut ruleset| {
        if abi >= NET_ABI && !plan.network {
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
        }
        if abi >= SCOPE_ABI {
            let scopes = if plan.network {
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
    let secrets = &system.secrets;
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
                secrets: *holds_secrets,
            },
        );
        rules.allow(opened, read)?;
    }
    // A folder the call names is checked where it really is, as opened: a link
    // swapped in after hcpx's checks is caught here.
    let mut grant = |opened: &Opened, access: landlock::BitFlags<AccessFs>| -> Result<(), SandboxError> {
        match opened.real_path() {
            Some(real) if inside(&real) => return Ok(()),
            Some(real) => add(&mut hide, held(&real)),
            None => add(
                &mut hide,
                Hide {
                    home: true,
                    secrets: system.root,
                },
            ),
        }
        rules.allow(opened, access)
    };
    // What the system folders already grant is not granted again.
    let covered = |path: &Path| SYSTEM_READS.iter().any(|root| path.starts_with(root));
    for path in plan.reads.outside.iter().filter(|path| !covered(path)) {
        if let Some(opened) = Opened::path(path) {
            grant(&opened, read)?;
        }
    }
    for fd in writes {
        grant(&Opened::fd(fd), rules.all)?;
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
    Ok((rules.fd, hide))
}

/// The seccomp program: on x86_64 first a guard that refuses the x32 ABI (its
/// system call numbers would slip past the rules), then the rules: no kernel
/// keyrings, no io_uring (it would make sockets past the filter), no terminal input
/// injection, no System V IPC or POSIX message queues (kept by the kernel after the
/// call, and readable by the next one), no socket but unix socket pairs without the
/// network, and with it only IPv4 and IPv6 sockets (no unix socket by path or name,
/// no netlink, no raw packets).
fn seccomp_program(
    network: bool,
    sockets: bool,
) -> Result<seccompiler::BpfProgram, seccompiler::BackendError> {
    program(network, sockets, true)
}

/// The program without the network and declared sockets, with or without the
/// IPC guard ([`bpf::ipc_guard`]): what `cargo bench --bench ipc` weighs.
pub(super) fn program_for_bench(refuse_ipc: bool) -> Result<seccompiler::BpfProgram, String> {
    program(false, false, refuse_ipc).map_err(|error| error.to_string())
}

fn program(
    network: bool,
    sockets: bool,
    refuse_ipc: bool,
) -> Result<seccompiler::BpfProgram, seccompiler::BackendError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let arch = if cfg!(target_arch = "x86_64") {
        seccompiler::TargetArch::x86_64
    } else if cfg!(target_arch = "aarch64") {
        seccompiler::TargetArch::aarch64
    } else {
        seccompiler::TargetArch::riscv64
    };
    let when = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
            .and_then(|condition| SeccompRule::new(vec![condition]))
    };
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ]
    .into_iter()
    .map(|nr| (nr, Vec::new()))
    .collect();
    rules.insert(
        libc::SYS_ioctl,
        vec![
            when(1, SeccompCmpOp::Eq, u64::from(libc::TIOCSTI as u32))?,
            when(1, SeccompCmpOp::Eq, u64::from(libc::TIOCLINUX as u32))?,
        ],
    );
    // The families a socket may have: IPv4 and IPv6 with the network, unix stream
    // and seqpacket sockets when the pack declares sockets (each connect is then
    // checked, see `notify`; a datagram socket could send to any path without one).
    let family = |op, value: i32| SeccompCondition::new(0, SeccompCmpArgLen::Dword, op, value as u64);
    let mut open: Vec<i32> = Vec::new();
    if network {
        open.extend([libc::AF_INET, libc::AF_INET6]);
    }
    if sockets {
        open.push(libc::AF_UNIX);
    }
    let mut socket_rules = Vec::new();
    if !open.is_empty() {
        socket_rules.push(SeccompRule::new(
            open.iter()
                .map(|value| family(SeccompCmpOp::Ne, *value))
                .collect::<Result<_, _>>()?,
        )?);
    }
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(
        libc::SYS_socketpair,
        vec![when(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?],
    );
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let main: seccompiler::BpfProgram = filter.try_into()?;
    // One program, not two: the kernel compiles each program it loads, per call.
    let mut program = if cfg!(target_arch = "x86_64") {
        bpf::x32_guard()
    } else {
        Vec::new()
    };
    if refuse_ipc {
        program.extend(bpf::ipc_guard());
    }
    program.extend(main);
    Ok(program)
}

/// Prepares everything the forked processes apply, with the layers this machine
/// enforces.
pub(super) fn prepare(
    plan: &ChildPlan,
    machine: &Machine,
    cache: &Cache,
) -> Result<(Confinement, Option<Control>), SandboxError> {
    let landlock = machine.landlock.enforced;
    let writes = open_writes(&plan.cwd, &plan.writes)?;
    let (call, hide) = match landlock {
        true => {
            let (call, hide) = call_ruleset(plan, machine, cache, writes)?;
            (Some(call), hide)
        }
        false => (None, Hide::default()),
    };
    let base = hide
        .any()
        .then(|| cache.base(&plan.home, hide, machine))
        .transpose()?;
    let sockets = !plan.sockets.is_empty();
    let filters = machine
        .seccomp
        .enforced
        .then(|| cache.filters(plan.network, sockets))
        .transpose()?;
    let notify = (sockets && machine.sockets.enforced)
        .then(|| {
            let program = Arc::clone(cache.notify.get_or_init(|| Arc::new(super::notify::program())));
            super::notify::prepare(&plan.sockets, plan.network, program)
        })
        .transpose()?;
    let (keeper, control) = if machine.containment.enforced {
        let scope = machine.scopes.enforced.then(|| cache.keeper()).transpose()?;
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|error| SandboxError::Pipe(error.into()))?;
        (Some(KeeperEnd { control: read, scope }), Some(Control(write)))
    } else {
        (None, None)
    };
    // The namespace goes with the keeper: the fork path enters none.
    let proc = (machine.process_list.enforced && keeper.is_some())
        .then(|| cache.proc().ok())
        .flatten();
    let confinement = Confinement {
        proc,
        keeper,
        base,
        call,
        filters,
        notify,
        close_descriptors: machine.descriptors.enforced,
        drop_privileges: machine.privileges.enforced,
        drop_bounding: machine.drop_bounding,
        cap_last: machine.cap_last,
    };
    Ok((confinement, control))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_grants_stay_beneath_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join("out")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), cwd.join("away")).unwrap();
        std::os::unix::fs::symlink("out", cwd.join("inside")).unwrap();
        assert_eq!(
            open_writes(&cwd, &["out".into(), "inside".into()]).unwrap().len(),
            2
        );
        assert_eq!(open_writes(&cwd, &["missing".into()]).unwrap().len(), 0);
        let error = open_writes(&cwd, &["away".into()]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the pack's write path `away` leads out of the working directory through a link"
        );
        assert!(matches!(
            open_writes(&cwd, &["../outside".into()]),
            Err(SandboxError::WriteOutside { .. })
        ));
    }

    #[test]
    fn seccomp_program_builds_for_both_network_settings() {
        for (network, sockets) in [(false, false), (true, false), (false, true), (true, true)] {
            let program = seccomp_program(network, sockets).unwrap();
            // The x32 guard, then seccompiler's rules, which start with the arch check.
            let guard = if cfg!(target_arch = "x86_64") { 3 } else { 0 };
            assert_eq!(program[guard].k, 4, "the arch check loads seccomp_data.arch");
        }
    }
}
