//! Who is on the other end of a connection, decided before a byte of it is read.
//! Without a bearer token the server serves only the user who started it, since
//! loopback is reachable by every local user: over TCP the connecting socket is
//! found in the kernel's table (`/proc/net/tcp` and `tcp6`, by its address and
//! ours) and its owner compared with our effective uid; over a unix socket the
//! kernel says who connected (`SO_PEERCRED`). With a token, the token is the
//! boundary and any peer may try.

use std::net::{IpAddr, SocketAddr};

/// What a connection must pass before HTTP is spoken on it.
#[derive(Debug, Clone)]
pub(super) struct Gate {
    /// `None` when a token is set: then anyone may connect, and must send it.
    own_uid: Option<u32>,
    /// The unix socket peers' ancestors found in no call (their shells and
    /// agents), where the next peer's walk up stops.
    #[cfg(target_os = "linux")]
    clear: std::sync::Arc<hcpx_process::runtime::Clear>,
}

/// Why a connection was turned away; its text is the body of the 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The peer belongs to another user.
    OtherUser,
    /// The peer could not be identified (it left, or the table could not be read).
    Unknown(String),
    /// The peer is a process of a pack's call, or hcpx connecting for one (a
    /// declared socket, the allowlist's proxy): a pack never drives hcpx.
    Call { acting: bool },
    /// A process of a pack's call hides its descriptors, so the peer may be it.
    HiddenCall,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OtherUser => f.write_str("this connection comes from another user"),
            Self::Unknown(reason) => write!(f, "the user behind this connection is unknown ({reason})"),
            Self::Call { acting: false } => f.write_str("this connection comes from a pack's call"),
            Self::Call { acting: true } => {
                f.write_str("this connection comes from hcpx connecting for a pack's call")
            }
            Self::HiddenCall => f.write_str(
                "a process of a pack's call hides its descriptors, so this connection may come from a pack's call",
            ),
        }
    }
}

impl Refusal {
    /// The message sent to the peer: what happened and how to connect instead.
    pub(super) fn message(&self) -> String {
        if matches!(self, Self::Call { .. } | Self::HiddenCall) {
            return format!(
                "Forbidden: {self}. A pack's CLI cannot drive hcpx: it would run other packs with \
                 their bindings. Call hcpx from outside the pack.\n"
            );
        }
        format!(
            "Forbidden: this hcpx server has no token, so it serves only the user who started it, and \
             {self}. Connect as that user, over its --unix socket, or start the server with a bearer \
             token (--token-file PATH or HCP_MCP_TOKEN) and send it.\n"
        )
    }
}

/// Whether a tokenless TCP server can tell its peers apart here; the reason when
/// not, so that it refuses to start rather than refuse every connection.
pub(super) fn tcp_peers_known() -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err("hcpx can tell who is connecting over TCP only on Linux".to_owned());
    }
    #[cfg(target_os = "linux")]
    if super::diag::answers() {
        return Ok(());
    }
    std::fs::File::open("/proc/net/tcp").map(drop).map_err(|error| {
        format!(
            "neither the kernel's sock_diag nor /proc/net/tcp can say who is connecting \
             (/proc/net/tcp: {error})"
        )
    })
}

impl Gate {
    /// A gate for a server with (`token`) or without a bearer token, run by `own_uid`.
    pub(super) fn new(token: bool, own_uid: u32) -> Self {
        Self {
            own_uid: (!token).then_some(own_uid),
            #[cfg(target_os = "linux")]
            clear: std::sync::Arc::default(),
        }
    }

    /// The effective uid of this process: the user whose connections are served.
    #[cfg(unix)]
    pub(super) fn effective_uid() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    /// Off Unix no peer can be identified, so a token is always required and this
    /// is never compared.
    #[cfg(not(unix))]
    pub(super) fn effective_uid() -> u32 {
        u32::MAX
    }

    /// Checks a TCP connection from `peer` to our `local` address.
    pub(super) async fn admit_tcp(&self, local: SocketAddr, peer: SocketAddr) -> Result<(), Refusal> {
        let Some(own) = self.own_uid else {
            return Ok(());
        };
        // The tables can be long on a busy host, and finding a call's process reads
        // `/proc`: off the server's thread.
        tokio::task::spawn_blocking(move || {
            let (owner, inode) = tcp_owner(local, peer)?;
            if owner != own {
                return Err(Refusal::OtherUser);
            }
            not_a_call_holding(inode, owner)
        })
        .await
        .map_err(|error| Refusal::Unknown(error.to_string()))?
    }

    /// Checks a unix socket connection by the credentials the kernel recorded.
    #[cfg(unix)]
    pub(super) fn admit_unix(&self, stream: &tokio::net::UnixStream) -> Result<(), Refusal> {
        let Some(own) = self.own_uid else {
            return Ok(());
        };
        let credentials = stream
            .peer_cred()
            .map_err(|error| Refusal::Unknown(format!("no peer credentials: {error}")))?;
        if credentials.uid() != own {
            return Err(Refusal::OtherUser);
        }
        // The process that connected (for a declared socket, hcpx connecting for
        // the pack); 0 or none when it is in a PID namespace this one cannot see,
        // where hcpx starts no call.
        match credentials
            .pid()
            .and_then(|pid| u32::try_from(pid).ok())
            .filter(|pid| *pid > 0)
        {
            Some(pid) => self.not_a_call(pid),
            None => Ok(()),
        }
    }
}

impl Gate {
    /// Refuses process `pid` when it is tied to a pack's call; one that left before
    /// it was looked at cannot be told apart, and is refused too.
    #[cfg(target_os = "linux")]
    fn not_a_call(&self, pid: u32) -> Result<(), Refusal> {
        not_a_call(pid, &self.clear)
    }

    /// Off Linux hcpx runs no sandboxed call.
    #[cfg(all(unix, not(target_os = "linux")))]
    fn not_a_call(&self, _pid: u32) -> Result<(), Refusal> {
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn not_a_call(pid: u32, clear: &hcpx_process::runtime::Clear) -> Result<(), Refusal> {
    use hcpx_process::runtime::Tie;
    match hcpx_process::runtime::tie_remembering(pid, clear) {
        Ok(None) => Ok(()),
        Ok(Some(tie)) => Err(Refusal::Call {
            acting: tie == Tie::ActsForCall,
        }),
        Err(error) => Err(Refusal::Unknown(error)),
    }
}

/// Refuses a TCP connection whose socket (`inode`, made by user `owner`) a process
/// of a pack's call holds, or may hold.
#[cfg(target_os = "linux")]
fn not_a_call_holding(inode: u64, owner: u32) -> Result<(), Refusal> {
    use hcpx_process::runtime::{Holder, Tie};
    match hcpx_process::runtime::socket_holder(inode, owner) {
        Holder::None => Ok(()),
        Holder::Tied(_, tie) => Err(Refusal::Call {
            acting: tie == Tie::ActsForCall,
        }),
        Holder::Hidden(_) => Err(Refusal::HiddenCall),
    }
}

#[cfg(not(target_os = "linux"))]
fn not_a_call_holding(_inode: u64, _owner: u32) -> Result<(), Refusal> {
    Ok(())
}

/// The owner and inode of the socket that connected from `peer` to `local`: asked
/// of the kernel for that one socket (sock_diag), or, where it cannot answer, the
/// entry of `/proc/net/tcp` or `tcp6` whose own address is `peer` and whose remote
/// one is `local` (the client's side of the connection; ours is the reverse).
#[cfg(target_os = "linux")]
fn tcp_owner(local: SocketAddr, peer: SocketAddr) -> Result<(u32, u64), Refusal> {
    use super::diag::{ClientSocket, client_socket};
    match client_socket(local, peer) {
        Ok(ClientSocket::Connected { uid, inode }) => Ok((uid, inode)),
        Ok(ClientSocket::Absent) => Err(Refusal::Unknown(
            "the kernel lists no connected socket at its address".to_owned(),
        )),
        Err(error) => {
            tracing::debug!("sock_diag cannot look up a TCP peer here ({error}); reading /proc/net/tcp");
            tcp_owner_in_tables(local, peer)
        }
    }
}

/// The same, from the tables: every TCP socket of the machine, read and parsed.
#[cfg(target_os = "linux")]
fn tcp_owner_in_tables(local: SocketAddr, peer: SocketAddr) -> Result<(u32, u64), Refusal> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        match std::fs::read_to_string(table) {
            Ok(text) => found.extend(owners_in(&text, peer, local)),
            // A kernel without IPv6 has no tcp6.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(Refusal::Unknown(format!("{table} cannot be read: {error}"))),
        }
    }
    found.sort_unstable();
    found.dedup();
    match found.as_slice() {
        [socket] => Ok(*socket),
        [] => Err(Refusal::Unknown("its socket is not in /proc/net/tcp".to_owned())),
        _ => Err(Refusal::Unknown(
            "its address is listed for several users".to_owned(),
        )),
    }
}

#[cfg(not(target_os = "linux"))]
fn tcp_owner(_local: SocketAddr, _peer: SocketAddr) -> Result<(u32, u64), Refusal> {
    Err(Refusal::Unknown(
        "hcpx can tell TCP peers apart only on Linux".to_owned(),
    ))
}

/// The owners (uid) and inodes of the connected sockets in a `/proc/net/tcp`-style
/// `table` whose own address is `address` and whose remote one is `remote`.
fn owners_in(table: &str, address: SocketAddr, remote: SocketAddr) -> Vec<(u32, u64)> {
    let (address, remote) = (canonical(address), canonical(remote));
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (own, other, state, uid, inode) = (
                fields.get(1)?,
                fields.get(2)?,
                fields.get(3)?,
                fields.get(7)?,
                fields.get(9)?,
            );
            // A socket in TIME_WAIT is listed with uid 0 and belongs to nobody;
            // listening and half-open ones are not a client's side of a connection.
            if !CONNECTED.contains(state) {
                return None;
            }
            (parse_address(own)? == address && parse_address(other)? == remote)
                .then(|| Some((uid.parse().ok()?, inode.parse().ok()?)))
                .flatten()
        })
        .collect()
}

/// The states (in the tables' hex) of a socket that is, or was until just now,
/// one end of a connection: established, closing in either direction.
const CONNECTED: [&str; 6] = ["01", "04", "05", "08", "09", "0B"];

/// An IPv4 address as an IPv6 socket sees it (`::ffff:a.b.c.d`) is the IPv4 one.
pub(super) fn canonical(address: SocketAddr) -> SocketAddr {
    match address.ip() {
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(four) => SocketAddr::new(IpAddr::V4(four), address.port()),
            None => address,
        },
        IpAddr::V4(_) => address,
    }
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): the kernel prints
/// each 32-bit word of the address in host byte order, the port as a number.
fn parse_address(field: &str) -> Option<SocketAddr> {
    let (ip, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
    let ip = match ip.len() {
        8 => IpAddr::from(word(ip)?),
        32 => {
            let mut bytes = [0_u8; 16];
            for (index, chunk) in bytes.chunks_exact_mut(4).enumerate() {
                chunk.copy_from_slice(&word(ip.get(index * 8..index * 8 + 8)?)?);
            }
            IpAddr::from(bytes)
        }
        _ => return None,
    };
    Some(canonical(SocketAddr::new(ip, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same lines as the kernel writes them (on a little-endian machine).
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:9C42 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4 1 0000000000000000 20 4 30 10 -1
   1: 00000000000000000000000001000000:A000 00000000000000000000000001000000:1F91 01 00000000:00000000 00:00000000 00000000  1001        0 5 1 0000000000000000 20 4 30 10 -1
";

    fn at(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_client_side_of_the_connection_names_its_owner() {
        let server = at("127.0.0.1:8080");
        assert_eq!(owners_in(TCP, at("127.0.0.1:40000"), server), [(65534, 2)]);
        // Our own side of the same connection is the reverse: not the client's.
        assert_eq!(owners_in(TCP, server, at("127.0.0.1:40000")), [(0, 3)]);
        assert_eq!(
            owners_in(TCP, at("127.0.0.1:40000"), at("127.0.0.1:8081")),
            Vec::<(u32, u64)>::new()
        );
    }

    #[test]
    fn a_socket_in_time_wait_belongs_to_nobody() {
        assert_eq!(
            owners_in(TCP, at("127.0.0.1:40001"), at("127.0.0.1:8080")),
            Vec::<(u32, u64)>::new()
        );
    }

    #[test]
    fn ipv6_and_mapped_ipv4_addresses_are_read() {
        // An IPv6 socket that reached an IPv4 server through ::ffff:127.0.0.1.
        assert_eq!(
            owners_in(TCP6, at("127.0.0.1:40002"), at("127.0.0.1:8080")),
            [(1000, 4)]
        );
        assert_eq!(
            owners_in(
                TCP6,
                at("[::ffff:127.0.0.1]:40002"),
                at("[::ffff:127.0.0.1]:8080")
            ),
            [(1000, 4)]
        );
        assert_eq!(owners_in(TCP6, at("[::1]:40960"), at("[::1]:8081")), [(1001, 5)]);
    }

    #[test]
    fn garbage_is_no_match() {
        assert_eq!(parse_address("0100007F"), None);
        assert_eq!(parse_address("XYZ:1F90"), None);
        assert_eq!(parse_address("0100007F:1F90"), Some(at("127.0.0.1:8080")));
        assert_eq!(
            owners_in("header only\n  0: 1 2\n", at("127.0.0.1:1"), at("127.0.0.1:2")),
            Vec::<(u32, u64)>::new()
        );
    }

    #[test]
    fn with_a_token_every_peer_may_try() {
        assert!(Gate::new(true, 0).own_uid.is_none());
        assert_eq!(Gate::new(false, 1000).own_uid, Some(1000));
        let message = Refusal::OtherUser.message();
        assert!(
            message.contains("--unix") && message.contains("--token-file"),
            "{message}"
        );
    }

    /// This very process's connection to itself is found, and is its own, with the
    /// client's socket's inode: asked of the kernel, and read from the tables alike.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_live_connection_is_found_in_the_kernels_table() {
        use std::os::fd::AsRawFd as _;
        use std::os::unix::fs::MetadataExt as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server_side, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        let client_inode = std::fs::metadata(format!("/proc/self/fd/{}", client.as_raw_fd()))
            .unwrap()
            .ino();
        let local = listener.local_addr().unwrap();
        let expected = (Gate::effective_uid(), client_inode);
        assert_eq!(tcp_owner(local, peer), Ok(expected));
        assert_eq!(tcp_owner_in_tables(local, peer), Ok(expected));
    }
}
