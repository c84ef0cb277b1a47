//! The unix sockets a pack declares (`sandbox.sockets`), enforced per path (Linux):
//! every `connect` of the call's processes stops in the kernel and comes here, as a
//! seccomp user notification; hcpx reads the address, and connects the pack's own
//! socket itself (taken with `pidfd_getfd`) to that address only when it is one the
//! manifest names (or, with the network, an IPv4 or IPv6 address). Since hcpx
//! connects with its copy of the address, a pack that changes the address in its
//! memory after the check gains nothing.
//!
//! The child loads a second, tiny seccomp filter for this (`connect` → notify) with
//! a new listener, sends the listener here over a socket pair made for the call, and
//! closes it before it execs: the pack never holds it. A thread per call answers
//! until the call's processes are gone.

#![expect(
    unsafe_code,
    reason = "seccomp notification ioctls and reading the pack's memory"
)]

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use super::SandboxError;
use crate::confine::Notify;

/// `connect` goes to the listener; every other system call is left to the main
/// filter (which has already refused a foreign architecture).
pub(super) fn program() -> Vec<libc::sock_filter> {
    let statement = |code: u32, k: u32| libc::sock_filter {
        code: u16::try_from(code).unwrap_or_default(),
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: u16::try_from(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K).unwrap_or_default(),
        jt,
        jf,
        k,
    };
    let nr = u32::try_from(libc::SYS_connect).unwrap_or(u32::MAX);
    vec![
        // seccomp_data.nr is at offset 0.
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        jump(nr, 0, 1),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_USER_NOTIF),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}

/// What the call may connect to.
#[derive(Debug, Clone)]
struct Allowed {
    sockets: Vec<Vec<u8>>,
    network: bool,
}

/// Makes the call's socket pair and starts the thread that will answer its
/// connects; the child's end goes into its confinement.
pub(super) fn prepare(
    sockets: &[PathBuf],
    network: bool,
    program: Arc<Vec<libc::sock_filter>>,
) -> Result<Notify, SandboxError> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|error| SandboxError::Sockets(error.to_string()))?;
    let allowed = Allowed {
        sockets: sockets
            .iter()
            .map(|path| resolved(path.as_os_str().as_encoded_bytes()))
            .collect(),
        network,
    };
    std::thread::Builder::new()
        .name("hcpx-sockets".to_owned())
        .spawn(move || supervise(&ours, &allowed))
        .map_err(|error| SandboxError::Sockets(error.to_string()))?;
    Ok(Notify {
        program,
        channel: theirs,
    })
}

/// Receives the listener, then answers every notification until no process of the
/// call is left (the listener hangs up) or the child never sent it.
fn supervise(channel: &OwnedFd, allowed: &Allowed) {
    let Some(listener) = receive_listener(channel) else {
        return;
    };
    let listener = Arc::new(listener);
    loop {
        let mut fds = [rustix::event::PollFd::new(
            &*listener,
            rustix::event::PollFlags::IN,
        )];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let revents = fds[0].revents();
        if !revents.contains(rustix::event::PollFlags::IN) {
            // Hung up: every process of the call is gone.
            return;
        }
        // SAFETY: the kernel fills the structure, which must be zeroed first.
        let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: SECCOMP_IOCTL_NOTIF_RECV on our listener with a structure of the
        // size the request encodes.
        let received = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &raw mut notif,
            )
        };
        if received != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                // Interrupted, or the process left before we took it.
                Some(libc::EINTR | libc::ENOENT) => continue,
                _ => return,
            }
        }
        let Some(given) = address(&notif) else {
            respond(&listener, notif.id, libc::EFAULT);
            continue;
        };
        if family_of(&given.0) == libc::AF_UNIX {
            answer(&listener, &notif, &given, allowed);
        } else {
            // An IPv4 or IPv6 connect may wait for the peer: it does not hold up
            // the call's other connects.
            let (shared, allowed) = (Arc::clone(&listener), allowed.clone());
            let spawned = std::thread::Builder::new()
                .name("hcpx-connect".to_owned())
                .spawn(move || answer(&shared, &notif, &given, &allowed));
            if spawned.is_err() {
                respond(&listener, notif.id, libc::EAGAIN);
            }
        }
    }
}

/// The listener the child sends once it has loaded its filter.
fn receive_listener(channel: &OwnedFd) -> Option<OwnedFd> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0_u8; 1];
    rustix::net::recvmsg(
        channel,
        &mut [std::io::IoSliceMut::new(&mut byte)],
        &mut ancillary,
        RecvFlags::CMSG_CLOEXEC,
    )
    .ok()?;
    ancillary.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    })
}

/// The address the pack passed to `connect`, read from its memory: the bytes and
/// their length.
fn address(notif: &libc::seccomp_notif) -> Option<([u8; 128], usize)> {
    let mut bytes = [0_u8; 128];
    let len = usize::try_from(notif.data.args[2]).ok()?.min(bytes.len());
    if len < 2 {
        return None;
    }
    let local = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: usize::try_from(notif.data.args[1]).ok()? as *mut libc::c_void,
        iov_len: len,
    };
    let pid = libc::pid_t::try_from(notif.pid).ok()?;
    // SAFETY: copies at most `len` bytes of the target's memory into `bytes`, which
    // holds 128; the remote range is only read by the kernel.
    let read = unsafe { libc::process_vm_readv(pid, &raw const local, 1, &raw const remote, 1, 0) };
    (usize::try_from(read).ok() == Some(len)).then_some((bytes, len))
}

fn family_of(bytes: &[u8]) -> i32 {
    i32::from(u16::from_ne_bytes([bytes[0], bytes[1]]))
}

/// A socket path as the kernel would resolve it, every link on the way followed (so
/// `/var/run/x` is `/run/x`); for a socket that does not exist (yet), its folder's.
fn resolved(path: &[u8]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt as _;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    if let Ok(real) = path.canonicalize() {
        return real.as_os_str().as_bytes().to_vec();
    }
    match (path.parent().map(std::path::Path::canonicalize), path.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name).as_os_str().as_bytes().to_vec(),
        _ => path.as_os_str().as_bytes().to_vec(),
    }
}

/// The address hcpx connects to for this one, when the call may reach it: a unix
/// socket the manifest declares (by its resolved path, which is what hcpx then
/// connects to, so a link swapped after the check leads nowhere), or, with the
/// network, an IPv4 or IPv6 address as given.
fn permitted(bytes: &[u8; 128], len: usize, allowed: &Allowed) -> Option<([u8; 128], usize)> {
    match family_of(bytes) {
        libc::AF_UNIX => {
            let path = bytes.get(2..len)?;
            let path = path.split(|byte| *byte == 0).next().unwrap_or_default();
            // An abstract or unnamed address starts with NUL: `path` is then empty.
            if !path.starts_with(b"/") {
                return None;
            }
            let path = resolved(path);
            if !allowed.sockets.contains(&path) {
                return None;
            }
            let mut out = [0_u8; 128];
            out[..2].copy_from_slice(&bytes[..2]);
            out.get_mut(2..2 + path.len())?.copy_from_slice(&path);
            Some((out, 2 + path.len() + 1))
        }
        libc::AF_INET | libc::AF_INET6 if allowed.network => Some((*bytes, len)),
        _ => None,
    }
}

/// Checks one connect and answers it: on the pack's own socket, connected by hcpx
/// with the address it checked, or refused with `EACCES`.
fn answer(listener: &OwnedFd, notif: &libc::seccomp_notif, given: &([u8; 128], usize), allowed: &Allowed) {
    // The memory we read belongs to the process that is still waiting.
    let id = notif.id;
    // SAFETY: SECCOMP_IOCTL_NOTIF_ID_VALID reads the u64 id.
    if unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &raw const id,
        )
    } != 0
    {
        return;
    }
    let Some((bytes, len)) = permitted(&given.0, given.1, allowed) else {
        tracing::debug!("refused a pack's connect to an address it did not declare");
        respond(listener, id, libc::EACCES);
        return;
    };
    let error = match connect_for(listener, notif, &bytes, len) {
        Ok(()) => 0,
        Err(errno) => errno,
    };
    respond(listener, id, error);
}

/// Connects the pack's socket (argument 0 of its `connect`) to `bytes`.
fn connect_for(
    listener: &OwnedFd,
    notif: &libc::seccomp_notif,
    bytes: &[u8; 128],
    len: usize,
) -> Result<(), i32> {
    let tgid = thread_group(notif.pid).ok_or(libc::ESRCH)?;
    let pid = rustix::process::Pid::from_raw(tgid).ok_or(libc::ESRCH)?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        .map_err(rustix::io::Errno::raw_os_error)?;
    let target = i32::try_from(notif.data.args[0]).map_err(|_| libc::EBADF)?;
    // `target` is a number in the pack's descriptor table, never used here as ours.
    let socket = rustix::process::pidfd_getfd(&pidfd, target, rustix::process::PidfdGetfdFlags::empty())
        .map_err(rustix::io::Errno::raw_os_error)?;
    // The process is still the one that asked (its pid not reused since): the socket
    // taken is its own.
    let id = notif.id;
    // SAFETY: SECCOMP_IOCTL_NOTIF_ID_VALID reads the u64 id.
    if unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &raw const id,
        )
    } != 0
    {
        return Err(libc::ESRCH);
    }
    let len = libc::socklen_t::try_from(len).map_err(|_| libc::EINVAL)?;
    // SAFETY: connects a socket we hold to the `len` bytes of `bytes`, a socket
    // address as the pack gave it (the kernel checks its form).
    let connected = unsafe { libc::connect(socket.as_raw_fd(), bytes.as_ptr().cast(), len) };
    if connected == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    }
}

/// The process a thread belongs to, from `/proc/TID/status`.
fn thread_group(tid: u32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|value| value.trim().parse().ok())
}

/// Answers a notification: `error` 0 for success, else the errno the pack sees.
fn respond(listener: &OwnedFd, id: u64, error: i32) {
    let mut response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: -error,
        flags: 0,
    };
    // SAFETY: SECCOMP_IOCTL_NOTIF_SEND with a response of the size the request
    // encodes. A process that is gone makes it fail with ENOENT: nothing to do.
    let _ = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &raw mut response,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(path: &[u8]) -> ([u8; 128], usize) {
        let mut bytes = [0_u8; 128];
        bytes[..2].copy_from_slice(&u16::try_from(libc::AF_UNIX).unwrap().to_ne_bytes());
        bytes[2..2 + path.len()].copy_from_slice(path);
        (bytes, 2 + path.len() + 1)
    }

    #[test]
    fn only_declared_paths_and_with_the_network_ip_addresses_are_permitted() {
        let allowed = Allowed {
            sockets: vec![b"/run/postgresql/.s.PGSQL.5432".to_vec()],
            network: false,
        };
        let (bytes, len) = unix(b"/run/postgresql/.s.PGSQL.5432");
        assert_eq!(permitted(&bytes, len, &allowed), Some((bytes, len)));
        for other in [
            &b"/run/docker.sock"[..],
            b"\0abstract",
            b"",
            b"run/postgresql/.s.PGSQL.5432",
            b"/run/postgresql/.s.PGSQL.54321",
        ] {
            let (bytes, len) = unix(other);
            assert_eq!(permitted(&bytes, len, &allowed), None, "{other:?}");
        }
        let mut inet = [0_u8; 128];
        inet[..2].copy_from_slice(&u16::try_from(libc::AF_INET).unwrap().to_ne_bytes());
        assert_eq!(permitted(&inet, 16, &allowed), None);
        assert_eq!(
            permitted(
                &inet,
                16,
                &Allowed {
                    network: true,
                    ..allowed
                }
            ),
            Some((inet, 16))
        );
    }
}
