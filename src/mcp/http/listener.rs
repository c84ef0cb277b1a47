//! Where the HTTP server listens: a TCP address, or a unix socket file of mode 0600
//! made safely (a path that exists and is not a socket is never touched; a socket
//! is taken over only when it is ours and nothing answers on it) and removed when
//! the server stops.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::HttpError;

/// A listening socket.
pub(super) enum Listener {
    Tcp(tokio::net::TcpListener),
    #[cfg(unix)]
    Unix(UnixSocket),
}

/// One accepted connection, with what the gate needs to know about it.
pub(super) enum Accepted {
    Tcp {
        stream: tokio::net::TcpStream,
        local: SocketAddr,
        peer: SocketAddr,
    },
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

impl Listener {
    /// Binds `address` (port 0 picks a free one).
    pub(super) async fn tcp(address: SocketAddr) -> Result<Self, HttpError> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| HttpError::Bind {
                address: address.to_string(),
                source,
            })?;
        Ok(Self::Tcp(listener))
    }

    /// The TCP address listened on, `None` for a unix socket.
    pub(super) fn tcp_address(&self) -> Option<SocketAddr> {
        match self {
            Self::Tcp(listener) => listener.local_addr().ok(),
            #[cfg(unix)]
            Self::Unix(_) => None,
        }
    }

    /// The next connection.
    pub(super) async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Self::Tcp(listener) => {
                let (stream, peer) = listener.accept().await?;
                let local = stream.local_addr()?;
                // An answer goes out in several writes (headers, events, the end):
                // without NODELAY, Nagle holds the last one for the client's delayed ACK.
                let _ = stream.set_nodelay(true);
                Ok(Accepted::Tcp { stream, local, peer })
            }
            #[cfg(unix)]
            Self::Unix(socket) => Ok(Accepted::Unix(socket.listener.accept().await?.0)),
        }
    }
}

/// A unix socket file this server made; removed when dropped, if it is still the
/// one it made.
#[cfg(unix)]
pub(super) struct UnixSocket {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    /// The file's device and inode, so that only our own socket is removed.
    identity: (u64, u64),
    /// The lock beside the socket, held while this server runs (see `lock_beside`).
    _lock: std::fs::File,
}

#[cfg(unix)]
impl Listener {
    /// Listens on a new socket file at `path`, readable and writable only by this
    /// user. A socket left at `path` by a server of ours that is gone is replaced;
    /// anything else there is refused.
    pub(super) fn unix(path: &Path) -> Result<Self, HttpError> {
        use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
        let refuse = |reason: String| HttpError::UnixPath {
            path: path.to_path_buf(),
            reason,
        };
        // Held from before the socket is looked at until the server stops: of two
        // servers started at once, one cannot remove the socket the other just made.
        let lock = lock_beside(path).map_err(refuse)?;
        match std::fs::symlink_metadata(path) {
            Ok(metadata) if !metadata.file_type().is_socket() => {
                return Err(refuse(
                    "it exists and is not a socket; give a path that does not exist".to_owned(),
                ));
            }
            Ok(metadata) => {
                if metadata.uid() != super::peer::Gate::effective_uid() {
                    return Err(refuse("it is another user's socket".to_owned()));
                }
                // Something listens there, and the process that listens is alive:
                // another server is running. A killed server's socket may stay
                // listening for a moment in a helper of its that shares its
                // descriptors (making a namespace), answering nobody: it is taken
                // over, as when nothing listens at all.
                if serving(path) {
                    return Err(refuse(IN_USE.to_owned()));
                }
                std::fs::remove_file(path)
                    .map_err(|error| refuse(format!("the stale socket cannot be removed: {error}")))?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(refuse(error.to_string())),
        }
        let listener = tokio::net::UnixListener::bind(path).map_err(|source| HttpError::Bind {
            address: path.display().to_string(),
            source,
        })?;
        // bind(2) made it with the umask's mode; no other user may connect. Each
        // connection's peer is checked as well, so this is the first wall of two.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|error| refuse(format!("its mode cannot be set to 0600: {error}")))?;
        let metadata = std::fs::symlink_metadata(path).map_err(|error| refuse(error.to_string()))?;
        Ok(Self::Unix(UnixSocket {
            listener,
            path: path.to_path_buf(),
            identity: (metadata.dev(), metadata.ino()),
            _lock: lock,
        }))
    }
}

#[cfg(unix)]
const IN_USE: &str = "it is in use by a running server";

/// How long a lock held by a server that does not serve yet (or no longer) is
/// waited for: one starting takes it for a few milliseconds, and a killed one's
/// helper (which shares its descriptors) keeps it only until it exits.
#[cfg(unix)]
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether a server listens at `path` and the process that listens lives.
#[cfg(unix)]
fn serving(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok_and(|stream| listener_lives(&stream))
}

/// Takes the lock file `PATH.lock` beside the socket (made 0600, never followed as
/// a link, kept afterwards: removing it would let two servers lock two files). A
/// running server holds it; one that holds it without serving is waited for.
#[cfg(unix)]
fn lock_beside(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&lock_path)
        .map_err(|error| format!("its lock file {} cannot be opened: {error}", lock_path.display()))?;
    let metadata = file.metadata().map_err(|error| error.to_string())?;
    if !metadata.is_file() || metadata.uid() != super::peer::Gate::effective_uid() {
        return Err(format!(
            "its lock file {} is not a file of this user's",
            lock_path.display()
        ));
    }
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(rustix::io::Errno::WOULDBLOCK) => {
                if serving(path) || std::time::Instant::now() > deadline {
                    return Err(IN_USE.to_owned());
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(error) => {
                return Err(format!(
                    "its lock file {} cannot be locked: {error}",
                    lock_path.display()
                ));
            }
        }
    }
}

/// Whether the process that made `stream`'s peer listen still runs: the kernel
/// records it at `listen(2)` (`SO_PEERCRED`). When that cannot be told, it is taken
/// to run, and the socket is left alone.
#[cfg(unix)]
fn listener_lives(stream: &std::os::unix::net::UnixStream) -> bool {
    use std::os::fd::AsFd as _;
    // A listener in a PID namespace this process cannot see (pid 0) cannot be
    // told to have exited.
    let Some(pid) = hcpx_process::runtime::Credentials::of(stream.as_fd())
        .ok()
        .and_then(|peer| i32::try_from(peer.pid).ok())
        .and_then(rustix::process::Pid::from_raw)
    else {
        return true;
    };
    match rustix::process::test_kill_process(pid) {
        // A process that has exited and is not yet reaped still takes signals.
        Ok(()) => !exited(pid),
        Err(rustix::io::Errno::SRCH) => false,
        Err(_) => true,
    }
}

/// Whether `pid` has exited and waits to be reaped (its state in `/proc` is `Z`).
#[cfg(unix)]
fn exited(pid: rustix::process::Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
        .ok()
        .and_then(|stat| {
            let (_, after) = stat.rsplit_once(')')?;
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

#[cfg(unix)]
impl Drop for UnixSocket {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt as _;
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|metadata| (metadata.dev(), metadata.ino()) == self.identity);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
