//! The mount steps the namespace helpers share (`proc_namespace`'s and
//! `net_namespace`'s), raw system calls only: they run in a `clone(CLONE_VM)`
//! helper, which must not allocate.

#![expect(
    unsafe_code,
    reason = "raw system calls in a helper that shares the parent's memory"
)]

use std::ffi::CStr;

use syscalls::{Errno, Sysno, syscall};

/// Where a helper makes its scratch files: a tmpfs over `/tmp`, in its own
/// namespace only, detached again by [`drop_scratch`].
const SCRATCH: &CStr = c"/tmp";

/// A new mount namespace for this process that follows the one it came from and
/// sends it no mount back: every mount a slave.
///
/// # Safety
/// Only in a helper process of the runtime: it changes the calling process.
pub(super) unsafe fn own_mount_namespace() -> Result<(), Errno> {
    // SAFETY: system calls on C strings that outlive them, on this process.
    unsafe {
        syscall!(Sysno::unshare, libc::CLONE_NEWNS)?;
        syscall!(
            Sysno::mount,
            0,
            c"/".as_ptr(),
            0,
            libc::MS_REC | libc::MS_SLAVE,
            0
        )?;
    }
    Ok(())
}

/// Makes `file` (a path in `/tmp`) with `mode`, holding `bytes`, in a tmpfs mounted
/// over `/tmp` with `options` in this process's namespace (see
/// [`own_mount_namespace`]); bind it where it is needed, then [`drop_scratch`].
///
/// # Safety
/// As [`own_mount_namespace`], after it.
pub(super) unsafe fn scratch_file(file: &CStr, options: &CStr, mode: u32, bytes: &[u8]) -> Result<(), Errno> {
    // SAFETY: system calls on C strings and `bytes`, which outlive them; the file
    // is closed before returning.
    unsafe {
        syscall!(
            Sysno::mount,
            c"tmpfs".as_ptr(),
            SCRATCH.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            options.as_ptr()
        )?;
        let fd = syscall!(
            Sysno::openat,
            libc::AT_FDCWD,
            file.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
            mode
        )?;
        let written = match bytes.is_empty() {
            true => Ok(0),
            false => syscall!(Sysno::write, fd, bytes.as_ptr(), bytes.len()),
        };
        let _ = syscall!(Sysno::close, fd);
        if written? != bytes.len() {
            return Err(Errno::EIO);
        }
    }
    Ok(())
}

/// Detaches the scratch tmpfs: what was bound from it keeps its file.
///
/// # Safety
/// As [`scratch_file`], after it.
pub(super) unsafe fn drop_scratch() -> Result<(), Errno> {
    // SAFETY: a system call on a C string constant.
    unsafe { syscall!(Sysno::umount2, SCRATCH.as_ptr(), libc::MNT_DETACH) }.map(|_| ())
}

/// Binds `from` over `to`, then gives the bind `flags` (with `MS_BIND`): a bind
/// mount takes its flags only from a remount.
///
/// # Safety
/// As [`own_mount_namespace`], after it.
pub(super) unsafe fn bind_with(from: &CStr, to: &CStr, flags: libc::c_ulong) -> Result<(), Errno> {
    // SAFETY: system calls on C strings that outlive them.
    unsafe {
        syscall!(Sysno::mount, from.as_ptr(), to.as_ptr(), 0, libc::MS_BIND, 0)?;
        syscall!(
            Sysno::mount,
            0,
            to.as_ptr(),
            0,
            libc::MS_REMOUNT | libc::MS_BIND | flags,
            0
        )?;
    }
    Ok(())
}
