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
//! metadata address included). A listener on an address that is not loopback (a
//! port forward for an allowlist entry such as `10.0.0.5:5432`) gets that address
//! on `lo` first, so that a client connecting to it reaches the listener and
//! nothing else: the address is local in the namespace, never a route out.

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

/// A call's network namespace, made and not yet entered (with its mount namespace
/// when it was given a hosts file).
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
    /// `RTM_NEWADDR` requests that put the addresses that are not loopback on `lo`.
    local: &'a [Vec<u8>],
    /// What `/etc/hosts` reads in a mount namespace of the call's own, if anything.
    hosts: Option<&'a [u8]>,
    /// The mount namespace that one copies (the `/proc` namespace, as root), if
    /// not this process's.
    base: RawFd,
    listeners: &'a mut [RawFd],
    user: RawFd,
    net: RawFd,
    mount: RawFd,
    errno: i32,
}

/// Makes a network namespace with listeners on `addrs` (port 0 lets the kernel
/// choose). `user`: in a new user namespace too (hcpx is not root). `hosts`: also a
/// mount namespace, a copy of `base` (or of this process's), where `/etc/hosts` is a
/// read-only file of these bytes; made here because the call's processes cannot
/// mount (Landlock forbids it to them).
pub fn net_namespace(
    user: bool,
    addrs: &[SocketAddr],
    hosts: Option<&[u8]>,
    base: Option<std::os::fd::BorrowedFd<'_>>,
) -> std::io::Result<NetNamespace> {
    use std::os::fd::AsRawFd as _;
    if addrs.len() > MAX_LISTENERS {
        return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
    }
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    let raw: Vec<(RawAddr, u32, i32)> = addrs.iter().map(raw_addr).collect();
    let local = local_requests(addrs);
    let mut listeners = vec![-1; addrs.len()];
    let mut job = Job {
        uid_map: user.then_some(uid_map.as_bytes()),
        gid_map: gid_map.as_bytes(),
        addrs: &raw,
        local: &local,
        hosts,
        base: base.map_or(-1, |fd| fd.as_raw_fd()),
        listeners: &mut listeners,
        user: -1,
        net: -1,
        mount: -1,
        errno: 0,
    };
    let stack = Stack::take()?;
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
    let (user_fd, net_fd, mount_fd) = (job.user, job.net, job.mount);
    // SAFETY: descriptors the helper opened in our table, now ours alone.
    let own = |fd: RawFd| (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    let listeners: Vec<Option<OwnedFd>> = listeners.iter().map(|fd| own(*fd)).collect();
    let user_fd = own(user_fd);
    let net_fd = own(net_fd);
    let mount = own(mount_fd);
    if errno != 0 {
        return Err(std::io::Error::from_raw_os_error(errno));
    }
    let (Some(net), true, true) = (
        net_fd,
        user_fd.is_some() == user,
        mount.is_some() == hosts.is_some(),
    ) else {
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
        join: NetJoin {
            user: user_fd,
            net,
            mount,
        },
        listeners,
    })
}

/// The index of `lo` in every network namespace (the kernel's `LOOPBACK_IFINDEX`).
const LOOPBACK_INDEX: u32 = 1;

/// One `RTM_NEWADDR` request (with an acknowledgement) per address of `addrs` that
/// is neither loopback nor unspecified, each once: the address alone (`/32` or
/// `/128`), on `lo`, of host scope.
fn local_requests(addrs: &[SocketAddr]) -> Vec<Vec<u8>> {
    let mut seen: Vec<std::net::IpAddr> = Vec::new();
    for addr in addrs {
        let ip = addr.ip();
        if !ip.is_loopback() && !ip.is_unspecified() && !seen.contains(&ip) {
            seen.push(ip);
        }
    }
    seen.iter()
        .zip(1_u32..)
        .map(|(ip, sequence)| {
            let (family, octets, flags): (i32, Vec<u8>, u32) = match ip {
                std::net::IpAddr::V4(v4) => (libc::AF_INET, v4.octets().to_vec(), 0),
                // No duplicate address detection, which would leave it tentative.
                std::net::IpAddr::V6(v6) => (libc::AF_INET6, v6.octets().to_vec(), libc::IFA_F_NODAD),
            };
            // Two attributes: the local address and the address (the same here).
            let attribute = 4 + octets.len();
            let length = 16 + 8 + 2 * attribute;
            let mut message = Vec::with_capacity(length);
            // struct nlmsghdr
            message.extend(u32::try_from(length).unwrap_or(u32::MAX).to_ne_bytes());
            message.extend(libc::RTM_NEWADDR.to_ne_bytes());
            let request = libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_EXCL;
            message.extend(u16::try_from(request).unwrap_or(0).to_ne_bytes());
            message.extend(sequence.to_ne_bytes());
            message.extend(0_u32.to_ne_bytes());
            // struct ifaddrmsg
            message.push(u8::try_from(family).unwrap_or(0));
            message.push(u8::try_from(octets.len() * 8).unwrap_or(0));
            message.push(u8::try_from(flags).unwrap_or(0));
            message.push(libc::RT_SCOPE_HOST);
            message.extend(LOOPBACK_INDEX.to_ne_bytes());
            // struct rtattr, twice; addresses are 4 or 16 bytes, so no padding.
            for kind in [libc::IFA_LOCAL, libc::IFA_ADDRESS] {
                message.extend(u16::try_from(attribute).unwrap_or(0).to_ne_bytes());
                message.extend(kind.to_ne_bytes());
                message.extend(&octets);
            }
            message
        })
        .collect()
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
        if !job.local.is_empty() {
            add_local(job.local)?;
        }
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
        if let Some(hosts) = job.hosts {
            if job.base >= 0 {
                syscall!(Sysno::setns, job.base, libc::CLONE_NEWNS)?;
            }
            hosts_namespace(hosts)?;
            job.mount = open(c"/proc/self/ns/mnt")?;
        }
    }
    Ok(())
}

/// A new mount namespace that sends no mount back (each a slave of where it came
/// from), whose `/etc/hosts` is a read-only file holding `hosts`. The file is made
/// in a scratch tmpfs, detached once the file is bound, so that it exists nowhere
/// else.
unsafe fn hosts_namespace(hosts: &[u8]) -> Result<(), Errno> {
    const FILE: &std::ffi::CStr = c"/tmp/hosts";
    let sealed = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: as `make`: this helper's own new namespace.
    unsafe {
        super::mounts::own_mount_namespace()?;
        super::mounts::scratch_file(FILE, c"mode=755,size=64k,nr_inodes=4", 0o644, hosts)?;
        super::mounts::bind_with(FILE, c"/etc/hosts", sealed)?;
        super::mounts::drop_scratch()
    }
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

/// Sends each of `requests` to the kernel's routing socket and reads its
/// acknowledgement: an error in any fails the whole.
unsafe fn add_local(requests: &[Vec<u8>]) -> Result<(), Errno> {
    // SAFETY: a netlink socket of our own, requests and an answer buffer that outlive
    // the calls; closed before returning.
    unsafe {
        let socket = syscall!(
            Sysno::socket,
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE
        )?;
        let result = (|| {
            for request in requests {
                syscall!(Sysno::sendto, socket, request.as_ptr(), request.len(), 0, 0, 0)?;
                let mut answer = [0_u8; 512];
                let read = syscall!(
                    Sysno::recvfrom,
                    socket,
                    answer.as_mut_ptr(),
                    answer.len(),
                    0,
                    0,
                    0
                )?;
                acknowledged(answer.get(..read).unwrap_or_default())?;
            }
            Ok(())
        })();
        let _ = syscall!(Sysno::close, socket);
        result
    }
}

/// The outcome a netlink acknowledgement carries (`NLMSG_ERROR`, error 0 for done).
fn acknowledged(answer: &[u8]) -> Result<(), Errno> {
    let field = |range: std::ops::Range<usize>| answer.get(range).ok_or(Errno::EIO);
    let kind = u16::from_ne_bytes(field(4..6)?.try_into().map_err(|_| Errno::EIO)?);
    if i32::from(kind) != libc::NLMSG_ERROR {
        return Err(Errno::EIO);
    }
    match i32::from_ne_bytes(field(16..20)?.try_into().map_err(|_| Errno::EIO)?) {
        0 => Ok(()),
        negative => Err(Errno::new(negative.saturating_neg())),
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
            None,
            None,
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

    /// A listener on an address that is not loopback gets that address on the
    /// namespace's `lo` (binding fails with EADDRNOTAVAIL otherwise), for IPv4 and
    /// IPv6; loopback and repeated addresses get no request of their own.
    #[test]
    fn addresses_that_are_not_loopback_are_put_on_lo() {
        let root = rustix::process::geteuid().is_root();
        let addrs: Vec<SocketAddr> = [
            "127.0.0.1:0",
            "198.51.100.7:5432",
            "198.51.100.7:6379",
            "[2001:db8::7]:0",
        ]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
        assert_eq!(local_requests(&addrs).len(), 2);
        let namespace = net_namespace(!root, &addrs, None, None)
            .unwrap_or_else(|error| panic!("this test needs network namespaces: {error}"));
        let bound: Vec<String> = namespace
            .listeners
            .iter()
            .map(|listener| listener.local_addr().unwrap().ip().to_string())
            .collect();
        assert_eq!(
            bound,
            ["127.0.0.1", "198.51.100.7", "198.51.100.7", "2001:db8::7"]
        );
    }

    /// The request for one IPv4 address, byte for byte (as `ip address add
    /// 198.51.100.7/32 dev lo scope host` sends it, with sequence 1).
    #[test]
    fn a_request_is_laid_out_as_the_kernel_reads_it() {
        let request = local_requests(&["198.51.100.7:1".parse().unwrap()]);
        let mut expected = Vec::new();
        expected.extend(40_u32.to_ne_bytes());
        expected.extend(20_u16.to_ne_bytes());
        expected.extend(0x0605_u16.to_ne_bytes());
        expected.extend(1_u32.to_ne_bytes());
        expected.extend(0_u32.to_ne_bytes());
        expected.extend([2, 32, 0, 254]);
        expected.extend(1_u32.to_ne_bytes());
        for kind in [2_u16, 1] {
            expected.extend(8_u16.to_ne_bytes());
            expected.extend(kind.to_ne_bytes());
            expected.extend([198, 51, 100, 7]);
        }
        assert_eq!(request, vec![expected]);
    }

    #[test]
    fn acknowledgements_say_done_or_the_error() {
        let answer = |kind: u16, error: i32| {
            let mut bytes = vec![0; 4];
            bytes.extend(kind.to_ne_bytes());
            bytes.extend([0; 10]);
            bytes.extend(error.to_ne_bytes());
            bytes
        };
        assert_eq!(acknowledged(&answer(2, 0)), Ok(()));
        assert_eq!(acknowledged(&answer(2, -libc::EEXIST)), Err(Errno::EEXIST));
        assert_eq!(acknowledged(&answer(3, 0)), Err(Errno::EIO));
        assert_eq!(acknowledged(&[2, 0]), Err(Errno::EIO));
    }
}
