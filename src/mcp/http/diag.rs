//! The client's side of a TCP connection, asked of the kernel by its addresses and
//! ports (`sock_diag`: one `SOCK_DIAG_BY_FAMILY` request without `NLM_F_DUMP`,
//! which the kernel answers from its connection hash table). Reading
//! `/proc/net/tcp` instead walks every TCP socket of the machine, those in
//! TIME_WAIT included, so that any local user who opens and closes connections
//! fast enough made every new connection to the server slower.

use std::net::{IpAddr, SocketAddr};

use netlink_packet_core::{NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_sys::{Socket, SocketAddr as NetlinkAddr, protocols::NETLINK_SOCK_DIAG};

/// What the kernel said of the socket at the client's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClientSocket {
    /// Connected (or closing), made by `uid`, with inode `inode`.
    Connected { uid: u32, inode: u64 },
    /// No socket has these addresses, or only one that is no longer connected (in
    /// TIME_WAIT it belongs to nobody).
    Absent,
}

/// The states (as the kernel numbers them) of a socket that is, or was until just
/// now, one end of a connection: established, closing in either direction. The
/// same as the `/proc/net/tcp` reader's.
const CONNECTED: [u8; 6] = [1, 4, 5, 8, 9, 11];
/// `ENOENT`: the kernel found no socket with these addresses.
const NOT_FOUND: i32 = 2;
/// A reply is one `inet_diag_msg` and a few attributes; its headers are 88 bytes.
const REPLY_BUFFER: usize = 4096;

/// Looks up the socket whose own address is `peer` and whose remote one is `local`
/// (the client's side; the server's is the reverse). An error means sock_diag
/// could not answer here (no `inet_diag` in this kernel, a refused netlink
/// socket): the caller then reads the tables instead.
pub(super) fn client_socket(local: SocketAddr, peer: SocketAddr) -> std::io::Result<ClientSocket> {
    let Some((family, id)) = socket_id(local, peer) else {
        return Ok(ClientSocket::Absent);
    };
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST;
    let mut request = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::all(),
            socket_id: id,
        })
        .into(),
    );
    request.finalize();
    let mut bytes = vec![0_u8; request.buffer_len()];
    request.serialize(&mut bytes);

    let socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.connect(&NetlinkAddr::new(0, 0))?;
    socket.send(&bytes, 0)?;
    // The kernel answers a request while sending it, so the reply is already
    // queued: never wait for one.
    let mut reply = Vec::with_capacity(REPLY_BUFFER);
    socket.recv(&mut reply, libc::MSG_DONTWAIT)?;
    read_reply(&reply)
}

/// Whether sock_diag answers here: a lookup of a socket that cannot exist (port 0)
/// is told "none" rather than failing.
pub(super) fn answers() -> bool {
    let nowhere = SocketAddr::from(([127, 0, 0, 1], 0));
    client_socket(nowhere, nowhere).is_ok()
}

/// The request's family and the id of the client's socket: its own address and
/// port are the source, the server's the destination. An IPv4 address seen by an
/// IPv6 socket (`::ffff:a.b.c.d`) is asked as IPv4, which finds the socket whatever
/// its family.
fn socket_id(local: SocketAddr, peer: SocketAddr) -> Option<(u8, SocketId)> {
    let (local, peer) = (super::peer::canonical(local), super::peer::canonical(peer));
    let family = match (peer.ip(), local.ip()) {
        (IpAddr::V4(_), IpAddr::V4(_)) => AF_INET,
        (IpAddr::V6(_), IpAddr::V6(_)) => AF_INET6,
        _ => return None,
    };
    let mut id = if family == AF_INET {
        SocketId::new_v4()
    } else {
        SocketId::new_v6()
    };
    id.source_address = peer.ip();
    id.source_port = peer.port();
    id.destination_address = local.ip();
    id.destination_port = local.port();
    // INET_DIAG_NOCOOKIE: any socket with these addresses, not one by its cookie.
    id.cookie = [0xff; 8];
    Some((family, id))
}

/// The answer to one lookup: the socket, or the kernel's error.
fn read_reply(reply: &[u8]) -> std::io::Result<ClientSocket> {
    let message = NetlinkMessage::<SockDiagMessage>::deserialize(reply)
        .map_err(|error| std::io::Error::other(format!("an unreadable sock_diag reply: {error}")))?;
    match message.payload {
        NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(response)) => {
            let header = &response.header;
            Ok(if CONNECTED.contains(&header.state) {
                ClientSocket::Connected {
                    uid: header.uid,
                    inode: u64::from(header.inode),
                }
            } else {
                ClientSocket::Absent
            })
        }
        NetlinkPayload::Error(error) if error.raw_code().abs() == NOT_FOUND => Ok(ClientSocket::Absent),
        NetlinkPayload::Error(error) => Err(error.to_io()),
        other => Err(std::io::Error::other(format!(
            "an unexpected sock_diag reply (type {})",
            other.message_type()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_connection_names_its_owner_and_the_same_inode_as_proc() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let peer = client.local_addr().unwrap();
        let found = client_socket(local, peer).unwrap();
        let uid = rustix::process::geteuid().as_raw();
        let inode = socket_inode(&client);
        assert_eq!(found, ClientSocket::Connected { uid, inode });
        // The server's side, asked the other way round, is another socket.
        let (server_side, _) = listener.accept().unwrap();
        assert_eq!(
            client_socket(peer, local).unwrap(),
            ClientSocket::Connected {
                uid,
                inode: socket_inode(&server_side)
            }
        );
    }

    #[test]
    fn an_ipv4_client_of_a_dual_stack_listener_is_found_by_its_mapped_address() {
        let Ok(listener) = std::net::TcpListener::bind("[::]:0") else {
            panic!("this test needs IPv6 (a dual-stack listener on [::])");
        };
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (server_side, seen) = listener.accept().unwrap();
        // What the server sees: both addresses IPv4-mapped.
        let local = server_side.local_addr().unwrap();
        assert!(
            matches!(seen.ip(), IpAddr::V6(ip) if ip.to_ipv4_mapped().is_some()),
            "{seen}"
        );
        let uid = rustix::process::geteuid().as_raw();
        assert_eq!(
            client_socket(local, seen).unwrap(),
            ClientSocket::Connected {
                uid,
                inode: socket_inode(&client)
            }
        );
    }

    #[test]
    fn an_ipv6_loopback_connection_is_found_as_ipv6() {
        let Ok(listener) = std::net::TcpListener::bind("[::1]:0") else {
            panic!("this test needs IPv6 loopback (::1)");
        };
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let peer = client.local_addr().unwrap();
        assert!(peer.is_ipv6() && peer.ip().is_loopback(), "{peer}");
        assert_eq!(
            client_socket(local, peer).unwrap(),
            ClientSocket::Connected {
                uid: rustix::process::geteuid().as_raw(),
                inode: socket_inode(&client)
            }
        );
    }

    #[test]
    fn a_closed_or_unknown_connection_is_absent() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let peer = client.local_addr().unwrap();
        let (server_side, _) = listener.accept().unwrap();
        // The client closes first, so its side ends in TIME_WAIT.
        drop(client);
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut &server_side, &mut rest).unwrap();
        drop(server_side);
        assert_eq!(client_socket(local, peer).unwrap(), ClientSocket::Absent);
        // A port nobody connected from.
        let nobody = SocketAddr::new(peer.ip(), 1);
        assert_eq!(client_socket(local, nobody).unwrap(), ClientSocket::Absent);
        // Addresses of two families never form a connection.
        let six: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(client_socket(local, six).unwrap(), ClientSocket::Absent);
    }

    #[test]
    fn this_kernel_answers_and_a_server_may_start_without_a_token() {
        assert!(
            answers(),
            "this test needs a kernel with inet_diag (sock_diag for TCP)"
        );
        assert_eq!(super::super::peer::tcp_peers_known(), Ok(()));
    }

    /// The inode of a socket.
    fn socket_inode(stream: &std::net::TcpStream) -> u64 {
        use std::os::fd::AsRawFd as _;
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(format!("/proc/self/fd/{}", stream.as_raw_fd()))
            .unwrap()
            .ino()
    }
}
