//! Starting a call under its keeper on Linux, without `fork`.
//!
//! Forking a multi-threaded server copies its page tables and leaves both sides to
//! take copy-on-write faults: measured here, that alone cost more than running the
//! pack's CLI. So the keeper is started with `clone(CLONE_VM)` on a stack of its
//! own, and the keeper starts the child with `clone(CLONE_VM)` on a second stack:
//! no memory is copied. The keeper does not wait for the child to exec: the runtime
//! learns it from the report pipe, which the child alone holds open until its exec
//! closes it. (The C library's `clone` wrapper runs the new
//! process's function on the new stack; it writes `errno` only if the clone fails.) Both share hcpx's memory and its thread-local state,
//! so everything they run after the clone makes raw system calls only (no `errno`,
//! no allocation, no lock), on data prepared here before the clone and left alone
//! until the child has exec'd. Signals stay blocked in both (a handler would be
//! hcpx's code on hcpx's memory); the child resets every disposition and unblocks
//! them right before exec.

#![expect(
    unsafe_code,
    reason = "the keeper and the child run on shared memory with raw system calls"
)]

use std::ffi::{CString, c_void};
use std::os::fd::{AsFd as _, AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;

use syscalls::{Errno, Sysno, syscall};

use super::Spawn;
use crate::confine::{Confinement, ProcNamespace};

/// The keeper's stack, and the child's (used until it execs).
const STACK: usize = 128 * 1024;
/// The page left inaccessible below each stack, so an overflow faults.
const GUARD: usize = 4096;
/// Signals numbered 1 to 64 on Linux.
const SIGNALS: i32 = 64;

/// Stacks whose keepers are reaped, kept for the next calls (at most [`SPARES`]):
/// a mapping per call cost a map, two protections and an unmap, and an unmap in a
/// multi-threaded server interrupts every CPU that ran one of its threads.
static SPARE: Spares = Spares(std::sync::Mutex::new(Vec::new()));
/// How many stacks are kept: as many calls as commonly start at once.
const SPARES: usize = 4;

/// Stacks kept for the next calls.
#[derive(Debug, Default)]
struct Spares(std::sync::Mutex<Vec<Stack>>);

impl Spares {
    fn take(&self) -> Option<Stack> {
        self.0.lock().ok()?.pop()
    }

    /// Keeps the mapping at `base`, `len` bytes, when there is room: then it is the
    /// spares' to give out, and the caller must not unmap it.
    fn keep(&self, base: *mut c_void, len: usize) -> bool {
        let Ok(mut spare) = self.0.lock() else {
            return false;
        };
        if spare.len() >= SPARES {
            return false;
        }
        spare.push(Stack { base, len });
        true
    }
}

/// The stacks of the keeper (the top one) and of the child, each above a guard
/// page, in one mapping given back only once the keeper is gone (and the child has
/// exec'd or died): kept for another call, or unmapped.
#[derive(Debug)]
pub(super) struct Stack {
    base: *mut c_void,
    len: usize,
}

// SAFETY: the mapping is only unmapped, by whichever thread drops it.
unsafe impl Send for Stack {}

impl Stack {
    /// A spare stack, or a new one.
    pub(super) fn take() -> std::io::Result<Self> {
        SPARE.take().map_or_else(Self::new, Ok)
    }

    fn new() -> std::io::Result<Self> {
        use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};
        let len = 2 * (GUARD + STACK);
        // SAFETY: a fresh anonymous mapping, at an address the kernel picks.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::STACK,
            )
        }?;
        let stack = Self { base, len };
        // SAFETY: the lowest page of each half of the mapping made above.
        unsafe {
            rustix::mm::mprotect(base, GUARD, MprotectFlags::empty())?;
            rustix::mm::mprotect(
                base.wrapping_byte_add(GUARD + STACK),
                GUARD,
                MprotectFlags::empty(),
            )?;
        }
        Ok(stack)
    }

    /// The top of the keeper's stack (stacks grow down; the mapping is page-aligned).
    fn keeper_top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(self.len)
    }

    /// The top of the child's stack.
    pub(super) fn child_top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(GUARD + STACK)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // Neither the keeper nor the child runs on it any more (see `Keeper`), so
        // the next call's may.
        if SPARE.keep(self.base, self.len) {
            return;
        }
        // SAFETY: our own mapping; its keeper is gone (see `Keeper`).
        let _ = unsafe { rustix::mm::munmap(self.base, self.len) };
    }
}

/// What the keeper and the child read, laid out before the clone.
struct Prepared<'a> {
    program: CString,
    /// Null-terminated pointers into `strings`.
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    _strings: Vec<CString>,
    /// Where the child's stack starts.
    child_stack: *mut c_void,
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    /// Where the keeper or the child writes the errno that stopped it.
    report: RawFd,
    /// The keeper's end of the control pipe.
    control: RawFd,
    confinement: &'a Confinement,
    /// The keeper was started from the confinement's spawner thread, whose filter
    /// and dropped bounding set it and the child inherit.
    inherited: bool,
}

/// A started call: the keeper, its stack, the read ends of the child's output, and
/// the write end of its standard input when it is a pipe.
#[derive(Debug)]
pub(super) struct Started {
    pub(super) pidfd: OwnedFd,
    pub(super) stdout: OwnedFd,
    pub(super) stderr: OwnedFd,
    pub(super) stdin: Option<OwnedFd>,
    pub(super) stack: Stack,
}

fn c_string(bytes: &[u8]) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
}

/// Starts the keeper, which starts the child; returns once the child has exec'd,
/// or with the reason it could not. The child's stdin is `/dev/null`, or with
/// `piped` a pipe whose write end comes back (close-on-exec, so the keeper's copy
/// goes when it closes every descriptor and the child's when it execs: the
/// parent's is the only writer left).
pub(super) fn start(
    spawn: &Spawn,
    confinement: &Confinement,
    control: RawFd,
    piped: bool,
) -> std::io::Result<Started> {
    use rustix::fs::{Mode, OFlags};
    use rustix::pipe::{PipeFlags, pipe_with};
    let program = c_string(spawn.program.as_os_str().as_bytes())?;
    let mut strings = vec![program.clone()];
    for arg in &spawn.args {
        strings.push(c_string(arg.as_bytes())?);
    }
    let argc = strings.len();
    for (key, value) in &spawn.env {
        strings.push(c_string(format!("{key}={value}").as_bytes())?);
    }
    let pointers = |range: &[CString]| -> Vec<*const libc::c_char> {
        range
            .iter()
            .map(|string| string.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let (stdin, stdin_w) = if piped {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC)?;
        (read, Some(write))
    } else {
        let null = rustix::fs::open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
        (null, None)
    };
    let (stdout, stdout_w) = pipe_with(PipeFlags::CLOEXEC)?;
    let (stderr, stderr_w) = pipe_with(PipeFlags::CLOEXEC)?;
    let (report, report_w) = pipe_with(PipeFlags::CLOEXEC)?;
    let stack = Stack::take()?;
    crate::mark("spawn prepared");
    let mut prepared = Prepared {
        program,
        argv: pointers(&strings[..argc]),
        envp: pointers(&strings[argc..]),
        cwd: c_string(spawn.cwd.as_os_str().as_bytes())?,
        _strings: strings,
        child_stack: stack.child_top(),
        stdin: stdin.as_raw_fd(),
        stdout: stdout_w.as_raw_fd(),
        stderr: stderr_w.as_raw_fd(),
        report: report_w.as_raw_fd(),
        control,
        confinement,
        inherited: false,
    };
    let mut pidfd: libc::c_int = -1;
    let top = Raw(stack.keeper_top());
    let out = Raw((&raw mut pidfd).cast::<c_void>());
    // The clone of the keeper, on whichever thread runs it: `keeper_main` on its own
    // stack with `prepared`, which lives, unchanged, until the child has exec'd (the
    // read below), as do the stack and `pidfd`; this thread waits for the clone. The
    // keeper's parent is this process, whichever of its threads cloned it.
    let keeper_clone = |prepared: &Prepared<'_>| {
        let arg = Raw(std::ptr::from_ref(prepared).cast_mut().cast::<c_void>());
        // SAFETY: as above.
        move || unsafe {
            clone_blocked(
                keeper_main,
                top.get(),
                libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD,
                arg.get(),
                out.get().cast::<libc::c_int>(),
            )
        }
    };
    prepared.inherited = confinement.spawner.is_some();
    let started = match &confinement.spawner {
        Some(spawner) => match spawner.run(keeper_clone(&prepared)) {
            Ok(started) => started,
            // Nothing of it ran: started here, the child applies every layer.
            Err(super::spawner::Gone::Before) => {
                prepared.inherited = false;
                keeper_clone(&prepared)()
            }
            Err(super::spawner::Gone::During) => Err(std::io::Error::from_raw_os_error(libc::EIO)),
        },
        None => keeper_clone(&prepared)(),
    };
    started?;
    crate::mark("keeper cloned");
    // SAFETY: CLONE_PIDFD wrote the keeper's pidfd, ours alone.
    let keeper = unsafe { OwnedFd::from_raw_fd(pidfd) };
    drop((stdout_w, stderr_w, report_w, stdin));
    // The report pipe closes when the child has exec'd and the keeper has let go of
    // it; four bytes are the errno of what failed instead.
    let mut errno = [0_u8; 4];
    let mut got = 0;
    while got < errno.len() {
        match rustix::io::read(&report, &mut errno[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    crate::mark("child exec'd");
    drop(prepared);
    if got == errno.len() {
        // The keeper exits at once; reap it before its stack goes.
        let _ = rustix::process::waitid(
            rustix::process::WaitId::PidFd(keeper.as_fd()),
            rustix::process::WaitIdOptions::EXITED,
        );
        return Err(std::io::Error::from_raw_os_error(i32::from_ne_bytes(errno)));
    }
    Ok(Started {
        pidfd: keeper,
        stdout,
        stderr,
        stdin: stdin_w,
        stack,
    })
}

/// A pointer handed to the spawner's thread for one clone, while the thread that
/// owns what it points to waits for that clone.
#[derive(Clone, Copy)]
struct Raw(*mut c_void);

// SAFETY: only passed to the spawner's thread for a clone the owner waits for.
unsafe impl Send for Raw {}

impl Raw {
    /// The pointer (a method, so that a closure takes the whole `Raw`, which is
    /// `Send`, not its field).
    fn get(self) -> *mut c_void {
        self.0
    }
}

/// What the helper reads and hands back through the memory it shares with its
/// parent.
struct NamespaceOut<'a> {
    covers: &'a [Cover],
    mount: RawFd,
    proc: RawFd,
    errno: i32,
}

/// A path the namespace covers, so that whoever has no capabilities (a pack, root or
/// not) is refused it as by its mode: a folder with an empty read-only tmpfs of mode
/// 000, a file with an empty file of mode 000 bound read-only over it (see
/// [`proc_namespace`]).
#[derive(Debug)]
pub(crate) struct Cover {
    pub(crate) path: CString,
    pub(crate) folder: bool,
}

impl Cover {
    pub(crate) fn new(path: &std::path::Path, folder: bool) -> std::io::Result<Self> {
        Ok(Self {
            path: c_string(path.as_os_str().as_bytes())?,
            folder,
        })
    }
}

/// Makes the [`ProcNamespace`], with `covers` covered in it (the system's secret
/// files, as root: a pack in the namespace reads nothing there, and no Landlock rule
/// has to leave them out one entry at a time); needs CAP_SYS_ADMIN (root).
pub(crate) fn proc_namespace(covers: &[Cover]) -> std::io::Result<ProcNamespace> {
    let stack = Stack::take()?;
    let mut out = NamespaceOut {
        covers,
        mount: -1,
        proc: -1,
        errno: 0,
    };
    // SAFETY: the helper runs `namespace_main` on its own stack with `out`, and this
    // thread waits until it has exited (CLONE_VFORK). It shares this process's
    // descriptor table (CLONE_FILES), so the descriptors it opens are ours.
    let helper = unsafe {
        clone_blocked(
            namespace_main,
            stack.child_top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD,
            (&raw mut out).cast::<c_void>(),
            std::ptr::null_mut(),
        )?
    };
    let _ = rustix::process::waitpid(
        rustix::process::Pid::from_raw(helper),
        rustix::process::WaitOptions::empty(),
    );
    // SAFETY: descriptors the helper opened in our table, now ours alone.
    let own = |fd: RawFd| (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    match (own(out.mount), own(out.proc)) {
        (Some(mount), Some(proc)) if out.errno == 0 => Ok(ProcNamespace { mount, proc }),
        _ => Err(std::io::Error::from_raw_os_error(if out.errno == 0 {
            libc::EIO
        } else {
            out.errno
        })),
    }
}

/// The empty file of mode 000 the file covers are bound from.
const COVER: &std::ffi::CStr = c"/tmp/cover";

/// The helper: a new mount namespace (following the machine's mounts, sending none
/// back), a `/proc` of its own, the covers, and the two descriptors.
extern "C" fn namespace_main(arg: *mut c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `NamespaceOut`, alive while it waits for us.
    let out = unsafe { &mut *arg.cast::<NamespaceOut<'_>>() };
    // SAFETY: system calls on C strings and on this process.
    let made: Result<(), Errno> = unsafe {
        (|| {
            super::mounts::own_mount_namespace()?;
            syscall!(
                Sysno::mount,
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                // gid= names the group exempt from hidepid; it must be one the pack
                // is not in, and the default is 0, root's own.
                c"hidepid=2,gid=4294967294".as_ptr()
            )?;
            let sealed = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            let files = out.covers.iter().any(|cover| !cover.folder);
            if files {
                // The file covers are binds of one empty file of mode 000, made in a
                // scratch tmpfs, which goes again once they are bound (they keep the
                // file).
                super::mounts::scratch_file(COVER, c"mode=700,size=4k,nr_inodes=4", 0, &[])?;
            }
            for cover in out.covers {
                if cover.folder {
                    // An empty tmpfs nobody may enter, read-only from the start.
                    syscall!(
                        Sysno::mount,
                        c"tmpfs".as_ptr(),
                        cover.path.as_ptr(),
                        c"tmpfs".as_ptr(),
                        sealed,
                        c"mode=000,size=4k,nr_inodes=1".as_ptr()
                    )?;
                } else {
                    super::mounts::bind_with(COVER, &cover.path, sealed)?;
                }
            }
            if files {
                super::mounts::drop_scratch()?;
            }
            let open = |path: &std::ffi::CStr, flags: i32| {
                syscall!(Sysno::openat, libc::AT_FDCWD, path.as_ptr(), flags)
                    .map(|fd| RawFd::try_from(fd).unwrap_or(-1))
            };
            out.mount = open(c"/proc/self/ns/mnt", libc::O_RDONLY | libc::O_CLOEXEC)?;
            out.proc = open(c"/proc", libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)?;
            Ok(())
        })()
    };
    match made {
        Ok(()) => 0,
        Err(errno) => {
            out.errno = errno.into_raw();
            1
        }
    }
}

/// `clone` with every signal blocked in this thread meanwhile, so that the new
/// process starts with them blocked (a handler would be hcpx's code on hcpx's
/// memory). Returns its pid.
///
/// # Safety
/// `main` runs on `stack` with `arg`: both must stay valid as long as it may use
/// them; `pidfd` is where CLONE_PIDFD writes, or null.
pub(super) unsafe fn clone_blocked(
    main: extern "C" fn(*mut c_void) -> libc::c_int,
    stack: *mut c_void,
    flags: libc::c_int,
    arg: *mut c_void,
    pidfd: *mut libc::c_int,
) -> std::io::Result<libc::pid_t> {
    // SAFETY: as the caller promises; the signal masks live on this stack.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
        #[expect(
            clippy::disallowed_methods,
            reason = "runtime.rs is the one place that starts processes"
        )]
        let pid = libc::clone(main, stack, flags, arg, pidfd);
        let error = std::io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, std::ptr::null_mut());
        if pid < 0 { Err(error) } else { Ok(pid) }
    }
}

/// Writes why the keeper or the child stopped where the parent reads it.
unsafe fn report(fd: RawFd, errno: Errno) {
    let bytes = errno.into_raw().to_ne_bytes();
    // SAFETY: writes four bytes from this stack.
    let _ = unsafe { syscall!(Sysno::write, fd, bytes.as_ptr(), bytes.len()) };
}

/// The keeper: its layers, the child, then the loop that ends the call. Returns its
/// exit status (the child's), which the clone wrapper passes to `exit`.
extern "C" fn keeper_main(arg: *mut c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Prepared` that `start` keeps alive until the child has
    // exec'd; it is not read after that.
    let prepared = unsafe { &*arg.cast::<Prepared<'_>>() };
    let (control, report_fd) = (prepared.control, prepared.report);
    // SAFETY: we are the keeper.
    let scoped = match unsafe { prepared.confinement.enter_keeper() } {
        Ok(scoped) => scoped,
        Err(errno) => {
            // SAFETY: the report pipe is open in this process.
            unsafe { report(report_fd, errno) };
            return 127;
        }
    };
    let mut pidfd: libc::c_int = -1;
    let start = Start {
        prepared,
        // SAFETY: a plain system call.
        keeper: unsafe { syscall!(Sysno::getpid) }.map_or(-1, |pid| i32::try_from(pid).unwrap_or(-1)),
    };
    // Not CLONE_VFORK: the keeper does not wait for the child to exec. It lets go of
    // the report pipe at once, so that the child's copy alone holds it open, and the
    // runtime learns that the child has exec'd (its copy closes on exec) without the
    // keeper having to be scheduled in between. The child runs on its own stack and
    // reads `start` (on this stack, which stays: this function returns only after
    // the child is gone) and `prepared` (kept by the runtime until the report pipe
    // closes), and writes neither.
    // SAFETY: the child runs `child_main` on its own stack with `start`, as above.
    let child = unsafe {
        #[expect(
            clippy::disallowed_methods,
            reason = "runtime.rs is the one place that starts processes"
        )]
        libc::clone(
            child_main,
            prepared.child_stack,
            libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD,
            std::ptr::from_ref(&start).cast_mut().cast::<c_void>(),
            &raw mut pidfd,
        )
    };
    if child < 0 {
        // SAFETY: as above; the C library's errno is not read (it is hcpx's).
        unsafe { report(report_fd, Errno::EAGAIN) };
        return 127;
    }
    // SAFETY: the keeper's own descriptors and children; `prepared` is not read
    // again.
    unsafe {
        close_all_but(control, pidfd);
        // Also done by the child: whichever is first, TERM finds the group.
        let _ = syscall!(Sysno::setpgid, child, child);
        crate::confine::supervise(control, pidfd, child, scoped)
    }
}

/// Closes every descriptor but `a` and `b`: the runtime's pipes (the child's
/// output, the report pipe) must close when the child's do.
unsafe fn close_all_but(a: RawFd, b: RawFd) {
    let (low, high) = (a.min(b).max(0).unsigned_abs(), a.max(b).max(0).unsigned_abs());
    let ranges = [
        (0, low.checked_sub(1)),
        (low + 1, high.checked_sub(1)),
        (high + 1, Some(u32::MAX)),
    ];
    for (first, last) in ranges {
        if let Some(last) = last
            && first <= last
        {
            // SAFETY: closes descriptors of this process only.
            let _ = unsafe { syscall!(Sysno::close_range, first, last, 0) };
        }
    }
}

/// What the keeper hands the child.
struct Start<'a, 'b> {
    prepared: &'a Prepared<'b>,
    keeper: i32,
}

/// The child: its standard streams, its folder, its layers, then exec. Returns (to
/// the clone wrapper, which exits with it) only if that failed, with the errno
/// reported.
extern "C" fn child_main(arg: *mut c_void) -> libc::c_int {
    // SAFETY: `arg` is the keeper's `Start`, alive until the keeper has reaped us.
    let start = unsafe { &*arg.cast::<Start<'_, '_>>() };
    // SAFETY: we are the child, before exec.
    let errno = unsafe { exec(start.prepared, start.keeper) };
    // SAFETY: the report pipe is open until exec.
    unsafe { report(start.prepared.report, errno) };
    127
}

/// Moves `from` to descriptor `to`, open across exec.
unsafe fn dup_to(from: RawFd, to: RawFd) -> Result<(), Errno> {
    // SAFETY: descriptors of this process.
    unsafe {
        if from == to {
            syscall!(Sysno::fcntl, to, libc::F_SETFD, 0)?;
        } else {
            syscall!(Sysno::dup3, from, to, 0)?;
        }
    }
    Ok(())
}

/// Everything before exec, then exec; returns the errno of what failed.
unsafe fn exec(prepared: &Prepared<'_>, keeper: i32) -> Errno {
    // SAFETY: system calls on this process with data in `prepared`, which the parent
    // keeps unchanged until this process execs.
    let result: Result<(), Errno> = unsafe {
        (|| {
            // The defaults, for every signal: an ignored one (SIGPIPE in hcpx) would
            // stay ignored across exec.
            let default = [0_u64; 4];
            for signal in 1..=SIGNALS {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    let _ = syscall!(Sysno::rt_sigaction, signal, &raw const default, 0, 8);
                }
            }
            dup_to(prepared.stdin, 0)?;
            dup_to(prepared.stdout, 1)?;
            dup_to(prepared.stderr, 2)?;
            // Into the namespaces (the mount namespace with a /proc of its own among
            // them) before the working folder: entering a mount namespace moves a
            // process to its root.
            prepared.confinement.enter_namespaces()?;
            syscall!(Sysno::chdir, prepared.cwd.as_ptr())?;
            prepared
                .confinement
                .enter_child(Some(keeper), prepared.inherited)?;
            let empty = 0_u64;
            syscall!(Sysno::rt_sigprocmask, libc::SIG_SETMASK, &raw const empty, 0, 8)?;
            syscall!(
                Sysno::execve,
                prepared.program.as_ptr(),
                prepared.argv.as_ptr(),
                prepared.envp.as_ptr()
            )?;
            Ok(())
        })()
    };
    match result {
        Ok(()) => Errno::ENOEXEC,
        Err(errno) => errno,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stack given back is the next one taken, and no more than [`SPARES`] are
    /// kept: the rest are unmapped.
    #[test]
    fn a_stack_given_back_is_taken_again_up_to_the_spares_kept() {
        let spares = Spares::default();
        let stacks: Vec<Stack> = (0..=SPARES).map(|_| Stack::new().unwrap()).collect();
        let bases: Vec<*mut c_void> = stacks.iter().map(|stack| stack.base).collect();
        let kept: Vec<bool> = stacks
            .into_iter()
            .map(|stack| {
                let kept = spares.keep(stack.base, stack.len);
                if kept {
                    // The spares hold the mapping now.
                    std::mem::forget(stack);
                }
                kept
            })
            .collect();
        assert_eq!(kept, [true, true, true, true, false]);
        let taken: Vec<*mut c_void> = std::iter::from_fn(|| spares.take())
            .map(|stack| stack.base)
            .collect();
        assert_eq!(taken, [bases[3], bases[2], bases[1], bases[0]]);
    }
}
