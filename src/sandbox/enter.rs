//! The code that runs between fork and exec: the keeper and the confined child.
//!
//! [`Confinement::enter`] runs in the process [`crate::runtime`] forks, a copy of a
//! multi-threaded hcpx. Until exec it may only make system calls on data prepared
//! in the parent: no allocation, no locks, no unwinding. On Linux with the
//! containment layer that process becomes the call's keeper and never returns: it
//! forks the child (with a raw `clone`, so no fork handler of the C library runs),
//! which returns into the runtime's exec after confining itself, while the keeper
//! waits for the child, for the runtime's control pipe to say TERM, or for it to
//! close (the runtime ends the call, or hcpx died), and then kills and reaps every
//! process of the call before it exits with the child's status.

#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd as _, OwnedFd};
#[cfg(target_os = "linux")]
use std::sync::Arc;

/// What the forked child applies to itself, prepared by the parent.
#[derive(Debug, Default)]
pub struct Confinement {
    /// Run the call under a keeper (Linux with pidfds and `close_range`).
    #[cfg(target_os = "linux")]
    pub(crate) keeper: Option<Keeper>,
    /// The Landlock layer that hides `$HCP_HOME` (shared between calls).
    #[cfg(target_os = "linux")]
    pub(crate) base: Option<Arc<OwnedFd>>,
    /// This call's Landlock layer.
    #[cfg(target_os = "linux")]
    pub(crate) call: Option<OwnedFd>,
    #[cfg(target_os = "linux")]
    pub(crate) filters: Option<Arc<super::linux::Filters>>,
    pub(crate) close_descriptors: bool,
    pub(crate) drop_privileges: bool,
    pub(crate) drop_bounding: bool,
    pub(crate) cap_last: u32,
}

/// The keeper's half of the control pipe, and its Landlock layer (the signal scope)
/// when the kernel has scopes.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct Keeper {
    pub(crate) control: OwnedFd,
    pub(crate) scope: Option<Arc<OwnedFd>>,
}

/// The shell's convention for "killed by signal N": 128 + N.
#[cfg(target_os = "linux")]
const SIGNAL_BASE: libc::c_int = 128;

impl Confinement {
    /// Applies the confinement to the calling process, which is the runtime's forked
    /// child. Returns to exec the pack's CLI; with a keeper only the confined child
    /// returns, the keeper exits when the call is over.
    #[cfg(target_os = "linux")]
    pub fn enter(&self) -> std::io::Result<()> {
        common()?;
        match &self.keeper {
            Some(keeper) => self.keep(keeper),
            None => self.confine(None),
        }
    }

    #[cfg(all(unix, not(target_os = "linux")))]
    pub fn enter(&self) -> std::io::Result<()> {
        common()
    }

    /// The keeper: scope, subreaper, fork the child, then supervise.
    #[cfg(target_os = "linux")]
    #[expect(
        unsafe_code,
        reason = "raw, async-signal-safe system calls between fork and exec"
    )]
    fn keep(&self, keeper: &Keeper) -> std::io::Result<()> {
        let control = keeper.control.as_raw_fd();
        let scoped = match &keeper.scope {
            Some(scope) => {
                no_new_privs()?;
                restrict_self(scope.as_raw_fd())?;
                true
            }
            None => false,
        };
        let mut pidfd: libc::c_int = -1;
        // SAFETY: plain system calls on values on this stack. The raw clone (no
        // CLONE_VM) gives the child a copy of this process, as fork would, without
        // running the C library's fork handlers, whose locks another thread of the
        // parent may have held when it forked us.
        let child = unsafe {
            check(libc::c_long::from(libc::prctl(
                libc::PR_SET_CHILD_SUBREAPER,
                1,
                0,
                0,
                0,
            )))?;
            // The tokio SIGCHLD handler inherited from hcpx has nothing to do here.
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
            let keeper_pid = libc::getpid();
            let child = libc::syscall(
                libc::SYS_clone,
                libc::c_long::from(libc::CLONE_PIDFD | libc::SIGCHLD),
                0_usize,
                &raw mut pidfd,
                0_usize,
                0_usize,
            );
            if child < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if child == 0 {
                return self.confine(Some(keeper_pid));
            }
            libc::pid_t::try_from(child).unwrap_or(libc::pid_t::MAX)
        };
        // SAFETY: as above; the keeper never returns to the runtime's code, it exits.
        unsafe {
            // Also set by the child itself: whichever runs first, TERM finds the group.
            libc::setpgid(child, child);
            // Keep only the control pipe and the pidfd: the runtime's pipes (its
            // stdout, stderr and exec-error pipe) must close when the child's do.
            close_all_but(control, pidfd);
            let status = supervise(control, pidfd, child, scoped);
            libc::_exit(status)
        }
    }

    /// The child: its own process group, death with the keeper, descriptors 0, 1 and
    /// 2 only, no privileges, the Landlock layers, the seccomp filters.
    #[cfg(target_os = "linux")]
    #[expect(
        unsafe_code,
        reason = "raw, async-signal-safe system calls between fork and exec"
    )]
    fn confine(&self, keeper: Option<libc::pid_t>) -> std::io::Result<()> {
        // SAFETY: plain system calls on values owned by `self` or on the stack; none
        // allocates, and all are async-signal-safe.
        unsafe {
            check(libc::c_long::from(libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL,
            )))?;
            if let Some(keeper) = keeper {
                check(libc::c_long::from(libc::setpgid(0, 0)))?;
                // The keeper died before the death signal was set: nobody would.
                if libc::getppid() != keeper {
                    libc::_exit(SIGNAL_BASE + libc::SIGKILL);
                }
            }
            if self.close_descriptors {
                // Every descriptor but 0, 1 and 2 closes at exec, whatever the caller
                // had open; the runtime's exec-error pipe still works until then.
                check(libc::syscall(
                    libc::SYS_close_range,
                    3_u32,
                    u32::MAX,
                    libc::CLOSE_RANGE_CLOEXEC,
                ))?;
            }
        }
        if self.drop_privileges {
            drop_capabilities(self.drop_bounding, self.cap_last)?;
            no_new_privs()?;
        }
        for layer in [self.base.as_deref(), self.call.as_ref()].into_iter().flatten() {
            no_new_privs()?;
            restrict_self(layer.as_raw_fd())?;
        }
        if let Some(filters) = &self.filters {
            no_new_privs()?;
            for program in &filters.programs {
                load_filter(program)?;
            }
        }
        Ok(())
    }
}

/// For every child: a session of its own (no controlling terminal, so no input can
/// be pushed into the caller's terminal), and no core dumps.
#[cfg(unix)]
fn common() -> std::io::Result<()> {
    rustix::process::setsid()?;
    rustix::process::setrlimit(
        rustix::process::Resource::Core,
        rustix::process::Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    )?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn check(result: libc::c_long) -> std::io::Result<()> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn no_new_privs() -> std::io::Result<()> {
    rustix::thread::set_no_new_privs(true).map_err(std::io::Error::from)
}

#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "landlock_restrict_self has no safe wrapper that takes a raw fd"
)]
fn restrict_self(ruleset: libc::c_int) -> std::io::Result<()> {
    // SAFETY: `ruleset` is an open Landlock ruleset descriptor owned by the confinement.
    check(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0_u32) })
}

#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "seccomp(2) takes a raw pointer to the program")]
fn load_filter(program: &[seccompiler::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?,
        // The same layout: the kernel's `struct sock_filter`.
        filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: the kernel copies the program; `prog` and the slice outlive the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0_u32,
            &raw const prog,
        )
    })
}

/// Drops every capability: the bounding set (when we may), the ambient set, and the
/// effective, permitted and inheritable sets. With `no_new_privs`, exec cannot give
/// any back, also to root.
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "prctl and capset between fork and exec")]
fn drop_capabilities(bounding: bool, cap_last: u32) -> std::io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: prctl with integer arguments, and capset reading the two structures on
    // this stack, laid out as the kernel's version 3 header and data.
    unsafe {
        if bounding {
            for cap in 0..=cap_last {
                check(libc::c_long::from(libc::prctl(
                    libc::PR_CAPBSET_DROP,
                    libc::c_ulong::from(cap),
                    0,
                    0,
                    0,
                )))?;
            }
        }
        // Ambient capabilities exist since Linux 4.3; before, there are none to clear.
        let cleared = libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        if cleared < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return Err(std::io::Error::last_os_error());
        }
        check(libc::syscall(libc::SYS_capset, &raw const header, data.as_ptr()))
    }
}

/// Closes every descriptor but `a` and `b` (both above 2).
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "close_range between fork and exec")]
fn close_all_but(a: libc::c_int, b: libc::c_int) {
    let (low, high) = (a.min(b), a.max(b));
    let as_u32 = |fd: libc::c_int| u32::try_from(fd).unwrap_or(0);
    let mut ranges = [
        (0, as_u32(low).saturating_sub(1)),
        (as_u32(low) + 1, as_u32(high).saturating_sub(1)),
        (as_u32(high) + 1, u32::MAX),
    ];
    if low == high {
        ranges[1] = (1, 0);
    }
    for (first, last) in ranges {
        if first <= last {
            // SAFETY: closes descriptors of this process only; nothing here uses them.
            unsafe {
                libc::syscall(libc::SYS_close_range, first, last, 0_u32);
            }
        }
    }
}

/// `waitpid` status as the shell shows it.
#[cfg(target_os = "linux")]
fn exit_code(raw: libc::c_int) -> libc::c_int {
    if libc::WIFSIGNALED(raw) {
        SIGNAL_BASE + libc::WTERMSIG(raw)
    } else {
        libc::WEXITSTATUS(raw)
    }
}

/// The keeper's loop: until the child exits or the control pipe closes, pass TERM
/// on when asked. Then kill and reap everything; the status is the child's.
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "poll, read, waitpid and kill in the keeper")]
fn supervise(control: libc::c_int, pidfd: libc::c_int, child: libc::pid_t, scoped: bool) -> libc::c_int {
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
        // SAFETY: `fds` is a valid array of two pollfd on this stack.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        if fds[1].revents != 0 {
            let mut raw = 0;
            // SAFETY: waits for our own child; `raw` is on this stack.
            if unsafe { libc::waitpid(child, &raw mut raw, libc::WNOHANG) } == child {
                status = Some(exit_code(raw));
            }
            break;
        }
        if fds[0].revents != 0 {
            let mut byte = 0_u8;
            // SAFETY: reads one byte into `byte`.
            let read = unsafe { libc::read(control, (&raw mut byte).cast(), 1) };
            if read == 1 {
                // SAFETY: signals the child's process group.
                unsafe { libc::kill(-child, libc::SIGTERM) };
                continue;
            }
            if read < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // End of file: the runtime ended the call, or hcpx is gone.
            break;
        }
    }
    sweep(child, scoped, &mut status);
    status.unwrap_or(SIGNAL_BASE + libc::SIGKILL)
}

/// Kills every process of the call and reaps it. With the signal scope, `kill(-1)`
/// reaches exactly the processes of the call's Landlock domain (and nothing else:
/// the keeper's layer scopes its signals), so no process can hide by leaving the
/// tree; without it, the keeper kills its children, whose orphans come to it as the
/// subreaper, until none is left.
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "kill, waitpid and nanosleep in the keeper")]
fn sweep(child: libc::pid_t, scoped: bool, status: &mut Option<libc::c_int>) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    loop {
        // SAFETY: signals processes; with `scoped` the kernel limits -1 to the call.
        unsafe {
            if scoped {
                libc::kill(-1, libc::SIGKILL);
            } else {
                libc::kill(-child, libc::SIGKILL);
                kill_children();
            }
        }
        loop {
            let mut raw = 0;
            // SAFETY: reaps any child of ours; `raw` is on this stack.
            let pid = unsafe { libc::waitpid(-1, &raw mut raw, libc::WNOHANG) };
            if pid > 0 {
                if pid == child && status.is_none() {
                    *status = Some(exit_code(raw));
                }
                continue;
            }
            if pid == 0 {
                break;
            }
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // ECHILD: no process of the call is left.
            return;
        }
        // SAFETY: sleeps on a timespec on this stack.
        unsafe { libc::nanosleep(&raw const pause, std::ptr::null_mut()) };
    }
}

/// Kills every child of this process, read from `/proc/thread-self/children`
/// without allocating.
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "open, read and kill in the keeper")]
fn kill_children() {
    // SAFETY: a valid C string; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return;
    }
    let mut buffer = [0_u8; 512];
    let mut pid: libc::pid_t = 0;
    let mut digits = false;
    loop {
        // SAFETY: reads into `buffer`, at most its length.
        let read = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
        let Ok(read) = usize::try_from(read) else { break };
        if read == 0 {
            break;
        }
        for byte in buffer.get(..read).unwrap_or_default() {
            if byte.is_ascii_digit() {
                pid = pid
                    .saturating_mul(10)
                    .saturating_add(libc::pid_t::from(byte - b'0'));
                digits = true;
            } else if digits {
                // SAFETY: signals one child of ours.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                pid = 0;
                digits = false;
            }
        }
    }
    if digits {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(fd) };
}
