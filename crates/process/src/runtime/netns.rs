//! Making a call's network namespace: a helper process, started as the keeper is
//! (`clone(CLONE_VM)`, raw system calls only), that is born in a new network
//! namespace (and, when hcpx is not root, a new user namespace that maps only this
//! user, which is what lets it make one), brings its loopback interface up, opens
//! the listeners hcpx serves from outside (the proxy's, and one per port forward)
//! and the descriptors that let the call's child join it. Then it exits: the
//! namespace lives as long as those descriptors.
//!
//! The namespace has no interface but loopback, so no route out: a connection to
//! anything but those listeners has nowhere to go (DNS, IPv6, raw sockets, the
//! metadata address included).

#![expect(
    unsafe_code,
    reason = "the helper runs on shared memory with raw system calls"
)]

use std::ffi::c_void;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{FromRawFd as _, OwnedFd, RawFd};

use syscalls::{Errno, Sysno, syscall};

use super::clone::{Stack, clone_blocked};
use crate::confine::NetJoin;

/// The most listeners one namespace gets (the proxy's and the forwards').
pub const MAX_LISTENERS: usize = 65;

/// A call's network namespace, made and not yet entered.
#[derive(Debug)]
pub struct NetNamespace {
    /// What the child enters.
    pub join: NetJoin,
    /// Listening sockets inside it, in the order their addresses were asked for.
    pub listeners: Vec<TcpListener>,
}

/// A socket address as the kernel takes it, laid out before the clone.
#[repr(C)]
union RawAddr {
    v4: libc::sockaddr_in,
    v6: libc::sockaddr_in6,
}

/// What the helper reads and writes, all laid out by the parent.
struct Job<'a> {
    /// `/proc/self/uid_map` and `gid_map` lines, when it makes a user namespace.
    uid_map: Option<&'a [u8]>,
    gid_map: &'a [u8],
    addrs: &'a [(RawAddr, u32, i32)],
    listeners: &'a mut [RawFd],
    user: RawFd,
    net: RawFd,
    errno: i32,
}

/// Makes a network namespace with listeners on `addrs` (loopback addresses; port 0
/// lets the kernel choose). `user`: in a new user namespace too (hcpx is not root).
pub fn net_namespace(user: bool, addrs: &[SocketAddr]) -> std::io::Result<NetNamespace> {
    if addrs.len() > MAX_LISTENERS {
        return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
    }
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    let raw: Vec<(RawAddr, u32, i32)> = addrs.iter().map(raw_addr).collect();
    let mut listeners = vec![-1; addrs.len()];
    let mut job = Job {
        uid_map: user.then_some(uid_map.as_bytes()),
        gid_map: gid_map.as_bytes(),
        addrs: &raw,
        listeners: &mut listeners,
        user: -1,
        net: -1,
        errno: 0,
    };
    let stack = Stack::new()?;
    let mut flags =
        libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::CLONE_NEWNET | libc::SIGCHLD;
    if user {
        flags |= libc::CLONE_NEWUSER;
    }
    // SAFETY: the helper runs `helper_main` on its own stack with `job`, and this
    // thread waits until it has exited (CLONE_VFORK). It shares this process's
    // descriptor table (CLONE_FILES), so the descriptors it opens are ours.
    let helper = unsafe {
        clone_blocked(
            helper_main,
            stack.child_top(),
            flags,
            (&raw mut job).cast::<c_void>(),
            std::ptr::null_mut(),
        )?
    };
    let _ = rustix::process::waitpid(
        rustix::process::Pid::from_raw(helper),
        rustix::process::WaitOptions::empty(),
    );
    let errno = job.errno;
    let (user_fd, net_fd) = (job.user, job.net);
    // SAFETY: descriptors the helper opened in our table, now ours alone.
    let own = |fd: RawFd| (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    let listeners: Vec<Option<OwnedFd>> = listeners.iter().map(|fd| own(*fd)).collect();
    let user_fd = own(user_fd);
    let net_fd = own(net_fd);
    if errno != 0 {
        return Err(std::io::Error::from_raw_os_error(errno));
    }
    let (Some(net), true) = (net_fd, user_fd.is_some() == user) else {
        return Err(std::io::Error::from_raw_os_error(libc::EIO));
    };
    let listeners = listeners
        .into_iter()
        .map(|fd| {
            fd.map(TcpListener::from)
                .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EIO))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    Ok(NetNamespace {
        join: NetJoin { user: user_fd, net },
        listeners,
    })
}

fn raw_addr(addr: &SocketAddr) -> (RawAddr, u32, i32) {
    // SAFETY: plain old data; every field the kernel reads is set below.
    let mut raw: RawAddr = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(v4) => {
            raw.v4 = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            (raw, size_of::<libc::sockaddr_in>() as u32, libc::AF_INET)
        }
        SocketAddr::V6(v6) => {
            raw.v6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: 0,
            };
            (raw, size_of::<libc::sockaddr_in6>() as u32, libc::AF_INET6)
        }
    }
}

/// The helper: the maps, loopback up, the listeners, the namespace descriptors.
extern "C" fn helper_main(arg: *mut c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Job`, alive while it waits for us.
    let job = unsafe { &mut *arg.cast::<Job<'_>>() };
    // SAFETY: system calls on C strings, on this process and on `job`'s data.
    match unsafe { make(job) } {
        Ok(()) => 0,
        Err(errno) => {
            job.errno = errno.into_raw();
            1
        }
    }
}

unsafe fn make(job: &mut Job<'_>) -> Result<(), Errno> {
    let fd = |value: usize| RawFd::try_from(value).map_err(|_| Errno::EBADF);
    // SAFETY: as `helper_main` says.
    unsafe {
        if let Some(uid_map) = job.uid_map {
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", uid_map)?;
            write_file(c"/proc/self/gid_map", job.gid_map)?;
        }
        loopback_up()?;
        for (index, (addr, len, family)) in job.addrs.iter().enumerate() {
            let socket = fd(syscall!(
                Sysno::socket,
                *family,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0
            )?)?;
            if let Some(slot) = job.listeners.get_mut(index) {
                *slot = socket;
            }
            let one: libc::c_int = 1;
            syscall!(
                Sysno::setsockopt,
                socket,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                &raw const one,
                size_of::<libc::c_int>()
            )?;
            if *family == libc::AF_INET6 {
                syscall!(
                    Sysno::setsockopt,
                    socket,
                    libc::IPPROTO_IPV6,
                    libc::IPV6_V6ONLY,
                    &raw const one,
                    size_of::<libc::c_int>()
                )?;
            }
            syscall!(Sysno::bind, socket, std::ptr::from_ref(addr), *len)?;
            syscall!(Sysno::listen, socket, 128)?;
        }
        let open = |path: &std::ffi::CStr| {
            syscall!(
                Sysno::openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC
            )
            .and_then(fd)
        };
        job.net = open(c"/proc/self/ns/net")?;
        if job.uid_map.is_some() {
            job.user = open(c"/proc/self/ns/user")?;
        }
    }
    Ok(())
}

/// Writes `bytes` to the file at `path` in one write.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), Errno> {
    // SAFETY: opens a C string path; writes from `bytes`; closes what it opened.
    unsafe {
        let fd = syscall!(
            Sysno::openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC
        )?;
        let written = syscall!(Sysno::write, fd, bytes.as_ptr(), bytes.len());
        let _ = syscall!(Sysno::close, fd);
        match written {
            Ok(count) if count == bytes.len() => Ok(()),
            Ok(_) => Err(Errno::EIO),
            Err(errno) => Err(errno),
        }
    }
}

/// Brings `lo` up: a new network namespace starts with it down.
unsafe fn loopback_up() -> Result<(), Errno> {
    // SAFETY: plain old data; the name and flags are set below.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: a socket for the ioctl, which reads `request` on this stack; closed.
    unsafe {
        let socket = syscall!(
            Sysno::socket,
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0
        )?;
        let done = syscall!(Sysno::ioctl, socket, libc::SIOCSIFFLAGS, &raw const request);
        let _ = syscall!(Sysno::close, socket);
        done.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In the namespace only its listeners answer: the proxy's port does, and any
    /// other port or address has nothing behind it.
    #[test]
    fn a_namespace_has_its_listeners_and_nothing_else() {
        let root = rustix::process::geteuid().is_root();
        let made = net_namespace(
            !root,
            &["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()],
        );
        // Needs network namespaces (root, or user namespaces): a failure here says so.
        let namespace = made.unwrap_or_else(|error| panic!("this test needs network namespaces: {error}"));
        assert_eq!(namespace.listeners.len(), 2);
        assert_eq!(namespace.join.user.is_some(), !root);
        let v4 = namespace.listeners[0].local_addr().unwrap();
        assert!(v4.ip().is_loopback() && v4.port() != 0, "{v4}");
        // The listener is inside the namespace: from here, that port is not it.
        let outside = std::net::TcpStream::connect(v4);
        if let Ok(stream) = outside {
            namespace.listeners[0].set_nonblocking(true).unwrap();
            assert!(
                namespace.listeners[0].accept().is_err(),
                "a connection from outside reached the namespace's listener ({stream:?})"
            );
        }
    }
}
