//! Who is at the other end of a unix socket, and what confines it from outside
//! hcpx: what a resident hcpx server compares with itself before it runs a call
//! for a client, so that no client can step out of its own confinement by having
//! the server run the call instead (an agent's shell in its host's sandbox, a
//! process with lower limits or another root).
//!
//! The kernel names the process that connected (`SO_PEERCRED`) and hands out a
//! pidfd for it (`SO_PEERPIDFD`, Linux 6.5). Everything about it is read from
//! `/proc/PID` and only counts if that process is still running afterwards
//! ([`Peer::running`]): its pid cannot have been reused by then.
//!
//! A Landlock domain is the one confinement `/proc` does not show. A process can
//! enter one unprivileged only after setting no_new_privs, which shows; so a
//! server refuses to start when it has no_new_privs or a seccomp filter itself
//! ([`Surroundings::confined`]), and every peer with either differs from it.

use std::os::fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};
use std::path::PathBuf;

/// The process that connected to a unix socket, pinned by a pidfd.
#[derive(Debug)]
pub struct Peer {
    pid: u32,
    uid: u32,
    pidfd: OwnedFd,
}

impl Peer {
    /// The process that connected to `socket`, as the kernel recorded it; an error
    /// when it is in a PID namespace this process cannot see.
    pub fn of(socket: BorrowedFd<'_>) -> std::io::Result<Self> {
        let credentials = Credentials::of(socket)?;
        if credentials.pid == 0 {
            return Err(std::io::Error::other(
                "it runs in a PID namespace this process cannot see",
            ));
        }
        Ok(Self {
            pid: credentials.pid,
            uid: credentials.uid,
            pidfd: peer_pidfd(socket)?,
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Whether the process has not exited: while it has not, its pid names it and
    /// nothing else, so what was read from `/proc/PID` before was its.
    pub fn running(&self) -> bool {
        use rustix::event::{PollFd, PollFlags, poll};
        // A pidfd becomes readable when its process exits.
        let mut fds = [PollFd::new(&self.pidfd, PollFlags::IN)];
        matches!(poll(&mut fds, Some(&rustix::event::Timespec::default())), Ok(0))
    }
}

/// Who is at the other end of a unix socket, as the kernel recorded it when the
/// socket connected (`SO_PEERCRED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credentials {
    /// The process, as this process's PID namespace numbers it: 0 when it runs in
    /// a namespace this one cannot see.
    pub pid: u32,
    pub uid: u32,
}

impl Credentials {
    /// `socket`'s peer. (rustix's `socket_peercred` takes the pid for nonzero,
    /// which the kernel does not promise: a peer in a PID namespace this process
    /// cannot see has pid 0.)
    #[expect(unsafe_code, reason = "getsockopt SO_PEERCRED into a plain C struct")]
    pub fn of(socket: BorrowedFd<'_>) -> std::io::Result<Self> {
        let mut credentials = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut length = libc::socklen_t::try_from(std::mem::size_of::<libc::ucred>())
            .map_err(|_| std::io::Error::other("a ucred's size does not fit a socklen_t"))?;
        // SAFETY: `credentials` and `length` live on this stack for the call, and
        // `length` says how many bytes `credentials` has; every bit pattern of its
        // integer fields is valid.
        let result = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut credentials).cast(),
                &raw mut length,
            )
        };
        if result != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self {
            pid: u32::try_from(credentials.pid)
                .map_err(|_| std::io::Error::other("the kernel gave a negative pid"))?,
            uid: credentials.uid,
        })
    }
}

/// `SO_PEERPIDFD`, which rustix does not wrap.
#[expect(unsafe_code, reason = "getsockopt SO_PEERPIDFD, which rustix does not wrap")]
fn peer_pidfd(socket: BorrowedFd<'_>) -> std::io::Result<OwnedFd> {
    let mut pidfd: libc::c_int = -1;
    let mut length = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>())
        .map_err(|_| std::io::Error::other("an int's size does not fit a socklen_t"))?;
    // SAFETY: `pidfd` and `length` live on this stack for the call, and `length`
    // says how many bytes `pidfd` has.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERPIDFD,
            (&raw mut pidfd).cast(),
            &raw mut length,
        )
    };
    if result != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pidfd < 0 {
        return Err(std::io::Error::other("the kernel gave no pidfd for the peer"));
    }
    // SAFETY: the kernel made this descriptor for this call; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(pidfd) })
}

/// The `/proc/PID/status` lines compared: who the process is (all four uids and
/// gids, its groups), its umask, and what confines it.
const STATUS_LINES: [&str; 12] = [
    "Umask",
    "Uid",
    "Gid",
    "Groups",
    "NoNewPrivs",
    "Seccomp",
    "Seccomp_filters",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
];
/// The namespaces compared.
const NAMESPACES: [&str; 8] = ["cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"];

/// What confines a process from outside hcpx, as `/proc` shows it: its ids, umask,
/// capabilities, no_new_privs and seccomp mode, namespaces, root folder, cgroup,
/// LSM label, resource limits, and the binary it runs. Two processes with the same
/// surroundings can do the same things (bar a Landlock domain; see the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surroundings {
    /// Each fact by name, in a fixed order.
    facts: Vec<(String, String)>,
    /// Whether an LSM labels processes on this kernel: without one, reading a
    /// process's label fails alike for every process, so a peer's is not read.
    labels: bool,
}

impl Surroundings {
    /// This process's.
    pub fn own() -> Result<Self, String> {
        Self::read(PathBuf::from("/proc/self"), true)
    }

    /// Process `pid`'s, to compare with these, read while it runs (check
    /// [`Peer::running`] afterwards).
    pub fn peer(&self, pid: u32) -> Result<Self, String> {
        Self::read(PathBuf::from(format!("/proc/{pid}")), self.labels)
    }

    fn read(dir: PathBuf, labels: bool) -> Result<Self, String> {
        use rustix::fs::{AtFlags, Mode, OFlags};
        // One lookup of the process's folder; each file is opened from it.
        let dir = rustix::fs::open(
            &dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|error| format!("{} cannot be opened: {error}", dir.display()))?;
        let text = |name: &str| -> std::io::Result<String> {
            let file = rustix::fs::openat(&dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
            super::procfs::read_file(std::fs::File::from(file))
        };
        let read = |name: &str| text(name).map_err(|error| format!("{name} cannot be read: {error}"));
        let mut facts = Vec::with_capacity(STATUS_LINES.len() + NAMESPACES.len() + 5);
        let status = read("status")?;
        for wanted in STATUS_LINES {
            let value = status
                .lines()
                .find_map(|line| line.strip_prefix(wanted)?.strip_prefix(':'))
                .map(|value| value.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            facts.push((wanted.to_owned(), value));
        }
        for namespace in NAMESPACES {
            let name = format!("ns/{namespace}");
            let link = match rustix::fs::readlinkat(&dir, name.as_str(), Vec::new()) {
                Ok(link) => link.to_string_lossy().into_owned(),
                // A kernel without this kind of namespace has it for nobody.
                Err(rustix::io::Errno::NOENT) => String::new(),
                Err(error) => return Err(format!("{name} cannot be read: {error}")),
            };
            facts.push((name, link));
        }
        for name in ["root", "exe"] {
            let found = rustix::fs::statat(&dir, name, AtFlags::empty())
                .map_err(|error| format!("{name} cannot be read: {error}"))?;
            facts.push((name.to_owned(), format!("{}:{}", found.st_dev, found.st_ino)));
        }
        facts.push(("cgroup".to_owned(), read("cgroup")?));
        facts.push(("limits".to_owned(), read("limits")?));
        // No LSM that labels processes (EINVAL): the same for every process.
        let (label, labels) = match labels.then(|| text("attr/current")) {
            None => (String::new(), false),
            Some(Ok(label)) => (label, true),
            Some(Err(error)) => (String::new(), error.raw_os_error() != Some(libc::EINVAL)),
        };
        facts.push(("attr/current".to_owned(), label));
        Ok(Self { facts, labels })
    }

    /// The first fact in which `other` differs from these, by name (`ns/mnt`,
    /// `NoNewPrivs`, `limits`, ...); `None` when it has the same surroundings.
    pub fn differs(&self, other: &Self) -> Option<&str> {
        self.facts
            .iter()
            .zip(&other.facts)
            .find(|(mine, theirs)| mine != theirs)
            .map(|((name, _), _)| name.as_str())
            .or_else(|| (self.facts.len() != other.facts.len()).then_some("facts"))
    }

    /// Why a process in these surroundings could not tell a confined peer from an
    /// unconfined one: it has no_new_privs set, or a seccomp filter (so may be in a
    /// Landlock domain, which `/proc` does not show). `None` when it has neither.
    pub fn confined(&self) -> Option<&'static str> {
        let fact = |wanted: &str| {
            self.facts
                .iter()
                .find(|(name, _)| name == wanted)
                .map(|(_, value)| value.as_str())
        };
        if fact("NoNewPrivs").is_some_and(|value| value != "0") {
            return Some("it runs with no_new_privs set");
        }
        if fact("Seccomp").is_some_and(|value| value != "0") {
            return Some("it runs under a seccomp filter");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's surroundings equal themselves, read again, and those read
    /// through its pid.
    #[test]
    fn a_process_has_the_surroundings_it_has() {
        let own = Surroundings::own().unwrap();
        assert_eq!(own.differs(&Surroundings::own().unwrap()), None);
        assert_eq!(own.differs(&own.peer(std::process::id()).unwrap()), None);
        let names: Vec<&str> = own.facts.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Umask",
                "Uid",
                "Gid",
                "Groups",
                "NoNewPrivs",
                "Seccomp",
                "Seccomp_filters",
                "CapInh",
                "CapPrm",
                "CapEff",
                "CapBnd",
                "CapAmb",
                "ns/cgroup",
                "ns/ipc",
                "ns/mnt",
                "ns/net",
                "ns/pid",
                "ns/time",
                "ns/user",
                "ns/uts",
                "root",
                "exe",
                "cgroup",
                "limits",
                "attr/current"
            ]
        );
    }

    /// A process's label is read only where an LSM labels processes: where reading
    /// it fails with EINVAL, it does for every process.
    #[test]
    fn a_label_is_read_where_processes_have_labels() {
        let unlabelled = std::fs::read("/proc/self/attr/current")
            .is_err_and(|error| error.raw_os_error() == Some(libc::EINVAL));
        let own = Surroundings::own().unwrap();
        assert_eq!(own.labels, !unlabelled);
        assert_eq!(own.peer(std::process::id()).unwrap().labels, !unlabelled);
    }

    /// Each fact is told apart by its name, the first that differs.
    #[test]
    fn the_first_fact_that_differs_is_named() {
        let own = Surroundings::own().unwrap();
        let mut other = own.clone();
        let limits = other.facts.iter_mut().find(|(name, _)| name == "limits").unwrap();
        limits.1.push_str("Max open files 1 1 files\n");
        assert_eq!(own.differs(&other), Some("limits"));
        let nnp = other
            .facts
            .iter_mut()
            .find(|(name, _)| name == "NoNewPrivs")
            .unwrap();
        nnp.1 = "1".to_owned();
        assert_eq!(own.differs(&other), Some("NoNewPrivs"));
        assert_eq!(other.confined(), Some("it runs with no_new_privs set"));
    }

    /// A peer in a PID namespace this process cannot see: the kernel gives pid 0,
    /// which rustix's `socket_peercred` would take for nonzero. The socket is read
    /// from a new PID namespace, where the process that made it is not seen. Needs
    /// PID namespaces (root, or user namespaces): a failure says so.
    #[test]
    #[expect(
        unsafe_code,
        reason = "fork and unshare, to read a socket from another PID namespace"
    )]
    #[expect(
        clippy::disallowed_methods,
        reason = "the runtime's own test forks to read a socket from another PID namespace"
    )]
    fn a_peer_in_a_pid_namespace_this_one_cannot_see_has_pid_zero() {
        use std::io::Read as _;
        use std::os::fd::AsFd as _;
        let (here, there) = std::os::unix::net::UnixStream::pair().unwrap();
        let (mut answers, answer) = std::os::unix::net::UnixStream::pair().unwrap();
        let flags = if rustix::process::geteuid().is_root() {
            libc::CLONE_NEWPID
        } else {
            libc::CLONE_NEWPID | libc::CLONE_NEWUSER
        };
        // SAFETY: the child and its child make system calls only (no allocation,
        // no lock), then exit.
        unsafe {
            let child = libc::fork();
            if child == 0 {
                if libc::unshare(flags) != 0 {
                    libc::_exit(1);
                }
                let grandchild = libc::fork();
                if grandchild == 0 {
                    let seen: u8 = match Credentials::of(there.as_fd()) {
                        Ok(credentials) if credentials.pid == 0 => b'0',
                        Ok(_) => b'p',
                        Err(_) => b'e',
                    };
                    libc::write(answer.as_raw_fd(), (&raw const seen).cast(), 1);
                    libc::_exit(0);
                }
                libc::waitpid(grandchild, std::ptr::null_mut(), 0);
                libc::_exit(0);
            }
            libc::waitpid(child, std::ptr::null_mut(), 0);
        }
        drop(answer);
        let mut seen = Vec::new();
        answers.read_to_end(&mut seen).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&seen),
            "0",
            "(nothing: no PID namespace could be made; this test needs root or user namespaces)"
        );
        // From here, the same socket names this process.
        assert_eq!(
            Credentials::of(here.as_fd()).unwrap(),
            Credentials {
                pid: std::process::id(),
                uid: rustix::process::geteuid().as_raw(),
            }
        );
    }

    /// A peer is the process that connected, pinned while it runs.
    #[test]
    fn the_peer_of_a_socket_pair_is_this_process() {
        let (one, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        use std::os::fd::AsFd as _;
        let peer = Peer::of(one.as_fd()).unwrap();
        assert_eq!(peer.pid(), std::process::id());
        assert_eq!(peer.uid(), rustix::process::geteuid().as_raw());
        assert!(peer.running());
    }
}
