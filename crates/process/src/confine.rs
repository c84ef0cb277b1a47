//! The layers a call's own processes apply to themselves: the keeper's (a session,
//! no core dumps, the signal scope, child subreaper), the child's (its process
//! group, death with the keeper, descriptors 0, 1 and 2 only, no privileges, the
//! Landlock layers and the seccomp filters), and the keeper's loop that ends the
//! call.
//!
//! [`crate::sandbox`] prepares it in the parent; [`crate::runtime`] starts the
//! processes that apply it. It is its own module, below both, so that neither has to
//! know the other's insides.
//!
//! On Linux this code runs in processes that [`crate::runtime`] starts with
//! `clone(CLONE_VM)`: they share hcpx's memory, and its thread-local state, until
//! the child execs (the keeper for the whole call). So it makes only raw system
//! calls through `syscalls`, which never write `errno`, and never allocates, locks
//! or unwinds. Errors are returned as the kernel's [`Errno`].

#![expect(
    unsafe_code,
    reason = "the layers are raw system calls made by the call's own processes"
)]

#[cfg(target_os = "linux")]
use std::sync::Arc;

#[cfg(target_os = "linux")]
pub(crate) use syscalls::Errno;
#[cfg(target_os = "linux")]
use syscalls::{Sysno, syscall};

/// What a call's processes apply to themselves, prepared by the parent.
#[derive(Debug, Default)]
pub struct Confinement {
    /// Run the call under a keeper (Linux with pidfds and `close_range`).
    #[cfg(target_os = "linux")]
    pub(crate) keeper: Option<KeeperEnd>,
    /// The Landlock layer that hides `$HCP_HOME` (shared between calls).
    #[cfg(target_os = "linux")]
    pub(crate) base: Option<Arc<std::os::fd::OwnedFd>>,
    /// This call's Landlock layer.
    #[cfg(target_os = "linux")]
    pub(crate) call: Option<std::os::fd::OwnedFd>,
    #[cfg(target_os = "linux")]
    pub(crate) filters: Option<Arc<Filters>>,
    /// The filter that sends `connect` to hcpx, and the end of the call's socket
    /// pair its listener goes back through (packs that declare sockets).
    #[cfg(target_os = "linux")]
    pub(crate) notify: Option<Notify>,
    /// The mount namespace with a `/proc` of its own, entered by the child.
    #[cfg(target_os = "linux")]
    pub(crate) proc: Option<Arc<ProcNamespace>>,
    /// The call's network namespace (`network.allow`), entered by the child first.
    #[cfg(target_os = "linux")]
    pub(crate) net: Option<Arc<NetJoin>>,
    /// A server's thread that starts the keeper with `filters` loaded and the
    /// bounding set dropped already (see `runtime::Spawner`).
    #[cfg(target_os = "linux")]
    pub(crate) spawner: Option<Arc<crate::runtime::Spawner>>,
    pub(crate) close_descriptors: bool,
    pub(crate) drop_privileges: bool,
    pub(crate) drop_bounding: bool,
    pub(crate) cap_last: u32,
}

/// The keeper's half of the control pipe, and its Landlock layer (the signal scope)
/// when the kernel has scopes.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct KeeperEnd {
    pub(crate) control: std::os::fd::OwnedFd,
    pub(crate) scope: Option<Arc<std::os::fd::OwnedFd>>,
}

/// The shell's convention for "killed by signal N": 128 + N.
pub(crate) const SIGNAL_BASE: i32 = 128;

/// The seccomp program of a call, built once per network setting.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct Filters {
    pub(crate) program: seccompiler::BpfProgram,
}

/// What the child needs for the unix socket check: the filter to load and its end
/// of the socket pair (see `sandbox/notify.rs`).
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct Notify {
    pub(crate) program: Arc<Vec<libc::sock_filter>>,
    pub(crate) channel: std::os::fd::OwnedFd,
}

/// A mount namespace of the machine's mounts with a `/proc` of its own, mounted
/// `hidepid=2` (exempting a group nobody is in): there a process sees the entries
/// of only the processes it may trace, so a pack sees its own call's and no other's
/// (command lines included). Made once by `runtime::proc_namespace`; the namespace
/// lives as long as `mount`.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct ProcNamespace {
    /// The namespace, for `setns`.
    pub(crate) mount: std::os::fd::OwnedFd,
    /// Its `/proc`, for Landlock rules (it is not the `/proc` outside).
    pub(crate) proc: std::os::fd::OwnedFd,
}

/// A network namespace made for one call (see `runtime::net_namespace`): no
/// interface but loopback, where only hcpx's listeners answer. With its user
/// namespace when hcpx is not root (making one takes that); the child joins both.
#[derive(Debug)]
pub struct NetJoin {
    #[cfg(target_os = "linux")]
    pub(crate) user: Option<std::os::fd::OwnedFd>,
    #[cfg(target_os = "linux")]
    pub(crate) net: std::os::fd::OwnedFd,
    /// A mount namespace of the call's own, whose `/etc/hosts` names the call's
    /// forwards; entered instead of the `/proc` namespace (it is a copy of it).
    #[cfg(target_os = "linux")]
    pub(crate) mount: Option<std::os::fd::OwnedFd>,
}

#[cfg(target_os = "linux")]
fn raw(fd: &std::os::fd::OwnedFd) -> usize {
    use std::os::fd::AsRawFd as _;
    usize::try_from(fd.as_raw_fd()).unwrap_or(usize::MAX)
}

/// A signal number or pid as a system call argument (negative ones sign-extended,
/// as the kernel reads them).
#[cfg(target_os = "linux")]
#[expect(clippy::cast_sign_loss, reason = "the kernel takes the two's complement")]
fn arg(value: i32) -> usize {
    value as isize as usize
}

#[cfg(target_os = "linux")]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "pids fit in i32"
)]
fn pid(value: usize) -> i32 {
    value as i32
}

impl Confinement {
    /// The descriptor of the mount namespace the child enters, if any.
    #[cfg(target_os = "linux")]
    pub(crate) fn mount_namespace(&self) -> Option<usize> {
        let own = self.net.as_deref().and_then(|join| join.mount.as_ref());
        own.or(self.proc.as_deref().map(|proc| &proc.mount)).map(raw)
    }

    /// Into the call's network namespace (and its user namespace, which gives the
    /// capabilities to enter it), then into its mount namespace: the call's own
    /// (owned by that user namespace, so entered after it), else the `/proc`
    /// namespace. Entering a mount namespace moves a process to its root: the
    /// caller sets the working folder after.
    ///
    /// # Safety
    /// Only in a child started by the runtime, before it execs.
    #[cfg(target_os = "linux")]
    pub(crate) unsafe fn enter_namespaces(&self) -> Result<(), Errno> {
        // SAFETY: `setns` on descriptors owned by `self`.
        unsafe {
            if let Some(join) = &self.net {
                if let Some(user) = &join.user {
                    syscall!(Sysno::setns, raw(user), libc::CLONE_NEWUSER)?;
                }
                syscall!(Sysno::setns, raw(&join.net), libc::CLONE_NEWNET)?;
            }
            if let Some(mount) = self.mount_namespace() {
                syscall!(Sysno::setns, mount, libc::CLONE_NEWNS)?;
            }
        }
        Ok(())
    }

    /// For a process started without a keeper, between fork and exec: the child's
    /// layers (the fork path, used where the kernel has no pidfds).
    #[cfg(unix)]
    pub fn enter(&self) -> std::io::Result<()> {
        common().map_err(std::io::Error::from)?;
        #[cfg(target_os = "linux")]
        // SAFETY: runs in the forked child, which has its own copy of memory. The
        // working folder (set by the caller before this runs) is kept by its
        // descriptor across the namespaces.
        unsafe {
            (|| {
                let here = syscall!(
                    Sysno::openat,
                    libc::AT_FDCWD,
                    c".".as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC
                )?;
                let entered = self.enter_namespaces();
                let back = syscall!(Sysno::fchdir, here);
                let _ = syscall!(Sysno::close, here);
                entered?;
                back?;
                self.enter_child(None, false)
            })()
            .map_err(|errno| std::io::Error::from_raw_os_error(errno.into_raw()))
        }
        #[cfg(not(target_os = "linux"))]
        Ok(())
    }

    /// The keeper's layers: a session of its own when hcpx has a controlling
    /// terminal (see [`leave_terminal`]), no core dumps, the signal scope
    /// (returns whether it is on), and child subreaper, so that every process of
    /// the call that loses its parent comes to the keeper.
    ///
    /// # Safety
    /// Only in a keeper started by the runtime: it changes the calling process.
    #[cfg(target_os = "linux")]
    pub(crate) unsafe fn enter_keeper(&self) -> Result<bool, Errno> {
        // SAFETY: system calls on integers and on the ruleset descriptor we own.
        unsafe {
            // First: from here on, whoever the call's processes connect to can tell
            // they are a call's (see `runtime::tie`).
            name_keeper()?;
            leave_terminal()?;
            no_core_dumps()?;
            let scoped = match self.keeper.as_ref().and_then(|keeper| keeper.scope.as_deref()) {
                Some(scope) => {
                    syscall!(Sysno::prctl, libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)?;
                    syscall!(Sysno::landlock_restrict_self, raw(scope), 0)?;
                    true
                }
                None => false,
            };
            syscall!(Sysno::prctl, libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)?;
            Ok(scoped)
        }
    }

    /// The child's layers, in the child before it execs: its own process group,
    /// death with its keeper (`keeper` is the keeper's pid), every descriptor but 0,
    /// 1 and 2 closed at exec, no capabilities and `no_new_privs`, the Landlock
    /// layers, the seccomp filters (last: they may refuse what comes before).
    ///
    /// # Safety
    /// Only in a child started by the runtime, before it execs. `inherited`: it was
    /// started from a [`Confinement::spawner`] thread, whose filter and dropped
    /// bounding set it holds already (the filter is loaded all the same if the
    /// kernel says there is none).
    #[cfg(target_os = "linux")]
    pub(crate) unsafe fn enter_child(&self, keeper: Option<i32>, inherited: bool) -> Result<(), Errno> {
        // SAFETY: system calls on integers, on descriptors owned by `self`, and on
        // structures on this stack or owned by `self`.
        unsafe {
            syscall!(Sysno::prctl, libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0)?;
            if let Some(keeper) = keeper {
                syscall!(Sysno::setpgid, 0, 0)?;
                // The keeper died before the death signal was set: nobody would send it.
                if pid(syscall!(Sysno::getppid)?) != keeper {
                    return Err(Errno::ESRCH);
                }
            }
            if self.close_descriptors {
                syscall!(Sysno::close_range, 3, u32::MAX, libc::CLOSE_RANGE_CLOEXEC)?;
            }
            if self.drop_privileges {
                drop_capabilities(self.drop_bounding && !inherited, self.cap_last)?;
                syscall!(Sysno::prctl, libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)?;
            }
            for layer in [self.base.as_deref(), self.call.as_ref()].into_iter().flatten() {
                syscall!(Sysno::prctl, libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)?;
                syscall!(Sysno::landlock_restrict_self, raw(layer), 0)?;
            }
            if let Some(filters) = &self.filters {
                syscall!(Sysno::prctl, libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)?;
                let on = inherited
                    && syscall!(Sysno::prctl, libc::PR_GET_SECCOMP, 0, 0, 0, 0)?
                        == usize::try_from(libc::SECCOMP_MODE_FILTER).unwrap_or(usize::MAX);
                if !on {
                    load_filter(filters)?;
                }
            }
            if let Some(notify) = &self.notify {
                let prog = libc::sock_fprog {
                    len: u16::try_from(notify.program.len()).map_err(|_| Errno::EINVAL)?,
                    filter: notify.program.as_ptr().cast_mut(),
                };
                let listener = syscall!(
                    Sysno::seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                    &raw const prog
                )?;
                let sent = send_fd(raw(&notify.channel), listener);
                let _ = syscall!(Sysno::close, listener);
                sent?;
            }
        }
        Ok(())
    }
}

/// Sends descriptor `fd` over the unix socket `channel` (`SCM_RIGHTS`), with one byte
/// of data, from structures on this stack.
#[cfg(target_os = "linux")]
unsafe fn send_fd(channel: usize, fd: usize) -> Result<(), Errno> {
    /// A control message holding one descriptor, laid out as `CMSG_SPACE(4)`.
    #[repr(C)]
    struct Rights {
        header: libc::cmsghdr,
        fd: libc::c_int,
        pad: libc::c_int,
    }
    let mut byte = 0_u8;
    let mut iov = libc::iovec {
        iov_base: (&raw mut byte).cast(),
        iov_len: 1,
    };
    // SAFETY: plain old data, every field set below.
    let mut rights: Rights = unsafe { std::mem::zeroed() };
    // The field's type is the C library's (usize in glibc, u32 in musl); the size is
    // a few bytes either way.
    rights.header.cmsg_len = (std::mem::size_of::<libc::cmsghdr>() + std::mem::size_of::<libc::c_int>()) as _;
    rights.header.cmsg_level = libc::SOL_SOCKET;
    rights.header.cmsg_type = libc::SCM_RIGHTS;
    rights.fd = libc::c_int::try_from(fd).map_err(|_| Errno::EBADF)?;
    // SAFETY: as above.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &raw mut iov;
    message.msg_iovlen = 1;
    message.msg_control = (&raw mut rights).cast();
    message.msg_controllen = std::mem::size_of::<Rights>() as _;
    // SAFETY: sendmsg reads the message, its one byte and its control data, all on
    // this stack.
    unsafe { syscall!(Sysno::sendmsg, channel, &raw const message, libc::MSG_NOSIGNAL) }.map(|_| ())
}

/// A session of its own (no controlling terminal, so no input can be pushed into
/// the caller's terminal) and no core dumps: for a child started without a keeper.
#[cfg(unix)]
fn common() -> rustix::io::Result<()> {
    rustix::process::setsid()?;
    rustix::process::setrlimit(
        rustix::process::Resource::Core,
        rustix::process::Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    )
}

/// A session of its own, and so no controlling terminal, for the keeper (whose
/// child stays in it) when this process has a controlling terminal, or may have one
/// (anything but ENXIO from opening `/dev/tty`). Without one there is none to leave,
/// and no new session is made: making one costs the kernel a scheduling group
/// (about 17 µs a call, measured here).
#[cfg(target_os = "linux")]
unsafe fn leave_terminal() -> Result<(), Errno> {
    // SAFETY: opens a C string path; the descriptor is closed at once.
    let tty = unsafe {
        syscall!(
            Sysno::openat,
            arg(libc::AT_FDCWD),
            c"/dev/tty".as_ptr(),
            libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC
        )
    };
    match tty {
        Err(Errno::ENXIO) => Ok(()),
        other => {
            if let Ok(fd) = other {
                // SAFETY: the descriptor opened above.
                let _ = unsafe { syscall!(Sysno::close, fd) };
            }
            // SAFETY: a plain system call on this process.
            unsafe { syscall!(Sysno::setsid) }.map(|_| ())
        }
    }
}

/// Names the calling process (the keeper) `hcpx-keeper`, which the processes of its
/// call cannot change.
#[cfg(target_os = "linux")]
unsafe fn name_keeper() -> Result<(), Errno> {
    let name = crate::runtime::KEEPER_NAME_C;
    // SAFETY: PR_SET_NAME reads the NUL-terminated name (at most 16 bytes) from this
    // static; it renames the calling process, the keeper.
    unsafe { syscall!(Sysno::prctl, libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) }.map(|_| ())
}

/// No core files: a crashing child would write hcpx's memory to disk.
#[cfg(target_os = "linux")]
unsafe fn no_core_dumps() -> Result<(), Errno> {
    let zero = [0_u64; 2];
    // SAFETY: prlimit64 on this process reads the two limits on this stack.
    unsafe { syscall!(Sysno::prlimit64, 0, libc::RLIMIT_CORE, &raw const zero, 0) }.map(|_| ())
}

/// Loads the call's seccomp program on the calling thread (`no_new_privs` or
/// CAP_SYS_ADMIN needed).
#[cfg(target_os = "linux")]
unsafe fn load_filter(filters: &Filters) -> Result<(), Errno> {
    let program = &filters.program;
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| Errno::EINVAL)?,
        // The same layout: the kernel's `struct sock_filter`.
        filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: the kernel reads the program through `prog`, both alive here.
    unsafe { syscall!(Sysno::seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &raw const prog) }.map(|_| ())
}

/// Makes the calling thread a spawner's (see `runtime::Spawner`): `no_new_privs`,
/// the bounding set dropped when `drop_bounding`, and `filters` loaded. Each is a
/// property of this thread alone, which every process cloned from it inherits, so
/// the calls' children pay neither the filter's compilation nor the credential copy
/// of each capability dropped.
///
/// # Safety
/// Only on a thread of its own, which runs nothing but the spawner's work after.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn make_spawner(
    filters: &Filters,
    drop_bounding: bool,
    cap_last: u32,
) -> Result<(), Errno> {
    // SAFETY: prctl on integers, and the program as `load_filter` reads it.
    unsafe {
        syscall!(Sysno::prctl, libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)?;
        if drop_bounding {
            for cap in 0..=cap_last {
                syscall!(Sysno::prctl, libc::PR_CAPBSET_DROP, cap, 0, 0, 0)?;
            }
        }
        load_filter(filters)
    }
}

/// Drops every capability: the bounding set (when we may), the ambient set, and the
/// effective, permitted and inheritable sets. With `no_new_privs`, exec cannot give
/// any back, also to root.
#[cfg(target_os = "linux")]
unsafe fn drop_capabilities(bounding: bool, cap_last: u32) -> Result<(), Errno> {
    /// The kernel's `_LINUX_CAPABILITY_VERSION_3`.
    const VERSION_3: u32 = 0x2008_0522;
    let header: [u32; 2] = [VERSION_3, 0];
    // Two `{effective, permitted, inheritable}` triples, all empty.
    let data = [0_u32; 6];
    // SAFETY: prctl on integers; capset reads the header and data on this stack,
    // laid out as the kernel's version 3 structures.
    unsafe {
        if bounding {
            for cap in 0..=cap_last {
                syscall!(Sysno::prctl, libc::PR_CAPBSET_DROP, cap, 0, 0, 0)?;
            }
        }
        // Ambient capabilities exist since Linux 4.3; before, there are none to clear.
        match syscall!(
            Sysno::prctl,
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0
        ) {
            Ok(_) | Err(Errno::EINVAL) => {}
            Err(errno) => return Err(errno),
        }
        syscall!(Sysno::capset, &raw const header, &raw const data).map(|_| ())
    }
}

/// The keeper's loop: until the child exits or the control pipe closes, pass TERM
/// on to the child's process group when asked. Then kill and reap every process of
/// the call; the status is the child's, as the shell shows it.
///
/// # Safety
/// Only in a keeper: `control` and `pidfd` are its descriptors, `child` its child.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn supervise(control: i32, pidfd: i32, child: i32, scoped: bool) -> i32 {
    let mut status = None;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: control,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is an array of two pollfd on this stack; no timeout, no mask.
        match unsafe { syscall!(Sysno::ppoll, fds.as_mut_ptr(), 2, 0, 0, 0) } {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => break,
        }
        if fds[1].revents != 0 {
            let mut raw_status = 0_i32;
            // SAFETY: waits for our own child; the status goes to this stack.
            let reaped = unsafe { syscall!(Sysno::wait4, arg(child), &raw mut raw_status, libc::WNOHANG, 0) };
            if let Ok(reaped) = reaped
                && pid(reaped) == child
            {
                status = Some(exit_code(raw_status));
            }
            break;
        }
        if fds[0].revents != 0 {
            let mut byte = 0_u8;
            // SAFETY: reads one byte into `byte`.
            match unsafe { syscall!(Sysno::read, control, &raw mut byte, 1) } {
                Ok(1) => {
                    // SAFETY: signals the child's process group.
                    let _ = unsafe { syscall!(Sysno::kill, arg(-child), libc::SIGTERM) };
                    continue;
                }
                Err(Errno::EINTR) => continue,
                // End of file: the runtime ended the call, or hcpx is gone.
                _ => break,
            }
        }
    }
    // SAFETY: the keeper's own children.
    unsafe { sweep(child, scoped, &mut status) };
    status.unwrap_or(SIGNAL_BASE + libc::SIGKILL)
}

/// `wait4` status as the shell shows it.
#[cfg(target_os = "linux")]
fn exit_code(raw_status: i32) -> i32 {
    if libc::WIFSIGNALED(raw_status) {
        SIGNAL_BASE + libc::WTERMSIG(raw_status)
    } else {
        libc::WEXITSTATUS(raw_status)
    }
}

/// Kills every process of the call and reaps it. With the signal scope, `kill(-1)`
/// reaches exactly the processes of the call's Landlock domain (the keeper's layer
/// scopes its signals, so nothing else); without it, the keeper kills its children,
/// whose orphans come to it as the subreaper, until none is left.
///
/// First, though, it reaps what has exited: every process of the call is in the
/// keeper's tree (an orphan comes to it as the subreaper, and `CLONE_PARENT` makes a
/// sibling, which is in the tree too), so a keeper with no child left has nothing
/// to sweep. Then it ends without `kill(-1)`, whose cost grows with every process of
/// the machine (the kernel asks the scope about each): 36 µs a call here, with 84.
#[cfg(target_os = "linux")]
unsafe fn sweep(child: i32, scoped: bool, status: &mut Option<i32>) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: reaps children of ours only.
    if unsafe { reap_exited(child, status) } {
        return;
    }
    loop {
        // SAFETY: signals processes; with `scoped` the kernel limits -1 to the call.
        unsafe {
            if scoped {
                let _ = syscall!(Sysno::kill, arg(-1), libc::SIGKILL);
            } else {
                let _ = syscall!(Sysno::kill, arg(-child), libc::SIGKILL);
                kill_children();
            }
        }
        // SAFETY: as above.
        if unsafe { reap_exited(child, status) } {
            return;
        }
        // SAFETY: sleeps on a timespec on this stack.
        let _ = unsafe {
            syscall!(
                Sysno::clock_nanosleep,
                libc::CLOCK_MONOTONIC,
                0,
                &raw const pause,
                0
            )
        };
    }
}

/// Reaps every child of the keeper that has exited; whether none is left.
#[cfg(target_os = "linux")]
unsafe fn reap_exited(child: i32, status: &mut Option<i32>) -> bool {
    loop {
        let mut raw_status = 0_i32;
        // SAFETY: reaps any child of ours without waiting; the status goes to this stack.
        match unsafe { syscall!(Sysno::wait4, arg(-1), &raw mut raw_status, libc::WNOHANG, 0) } {
            Ok(0) => return false,
            Ok(reaped) => {
                if pid(reaped) == child && status.is_none() {
                    *status = Some(exit_code(raw_status));
                }
            }
            Err(Errno::EINTR) => {}
            // ECHILD: no process of the call is left (nor can any wait be made).
            Err(_) => return true,
        }
    }
}

/// Kills every child of this process, read from `/proc/thread-self/children`
/// without allocating.
#[cfg(target_os = "linux")]
unsafe fn kill_children() {
    // SAFETY: opens a C string path; the descriptor is closed below.
    let Ok(fd) = (unsafe {
        syscall!(
            Sysno::openat,
            arg(libc::AT_FDCWD),
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC
        )
    }) else {
        return;
    };
    let mut buffer = [0_u8; 512];
    let mut pid = 0_i32;
    let mut digits = false;
    // SAFETY: reads into `buffer`, at most its length; signals children of ours.
    unsafe {
        while let Ok(read) = syscall!(Sysno::read, fd, buffer.as_mut_ptr(), buffer.len()) {
            if read == 0 {
                break;
            }
            for byte in buffer.get(..read).unwrap_or_default() {
                if byte.is_ascii_digit() {
                    pid = pid.saturating_mul(10).saturating_add(i32::from(byte - b'0'));
                    digits = true;
                } else if digits {
                    let _ = syscall!(Sysno::kill, arg(pid), libc::SIGKILL);
                    pid = 0;
                    digits = false;
                }
            }
        }
        if digits {
            let _ = syscall!(Sysno::kill, arg(pid), libc::SIGKILL);
        }
        let _ = syscall!(Sysno::close, fd);
    }
}
