//! Which resolved addresses the proxy connects to only when the allowlist names them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A kind of address that a name must not lead to unless the allowlist names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    Loopback,
    LinkLocal,
    Metadata,
    Unspecified,
    Multicast,
    Broadcast,
}

impl Special {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Loopback => "a loopback address",
            Self::LinkLocal => "a link-local address",
            Self::Metadata => "a cloud metadata address",
            Self::Unspecified => "an unspecified address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "a broadcast address",
        }
    }
}

/// The address as the kernel would treat it: an IPv4-mapped IPv6 address is IPv4.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(six) => six.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

const METADATA_V4: [Ipv4Addr; 2] = [
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(100, 100, 100, 200),
];
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

/// What is special about `ip`, if anything.
pub(crate) fn special(ip: IpAddr) -> Option<Special> {
    match canonical(ip) {
        IpAddr::V4(four) => {
            if METADATA_V4.contains(&four) {
                Some(Special::Metadata)
            } else if four.is_loopback() {
                Some(Special::Loopback)
            } else if four.is_link_local() {
                Some(Special::LinkLocal)
            // 0.0.0.0/8: Linux connects 0.0.0.0 to the host itself.
            } else if four.octets()[0] == 0 {
                Some(Special::Unspecified)
            } else if four.is_multicast() {
                Some(Special::Multicast)
            } else if four.is_broadcast() {
                Some(Special::Broadcast)
            } else {
                None
            }
        }
        IpAddr::V6(six) => {
            if six == METADATA_V6 {
                Some(Special::Metadata)
            } else if six.is_loopback() {
                Some(Special::Loopback)
            } else if six.segments()[0] & 0xffc0 == 0xfe80 {
                Some(Special::LinkLocal)
            } else if six.is_unspecified() {
                Some(Special::Unspecified)
            } else if six.is_multicast() {
                Some(Special::Multicast)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(text: &str) -> Option<Special> {
        special(text.parse().unwrap())
    }

    #[test]
    fn special_addresses_are_named() {
        let judged: Vec<(&str, Option<Special>)> = [
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "::ffff:127.0.0.1",
            "169.254.1.1",
            "fe80::1",
            "febf::1",
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "100.100.100.200",
            "fd00:ec2::254",
            "0.0.0.0",
            "0.1.2.3",
            "::",
            "224.0.0.1",
            "ff02::1",
            "255.255.255.255",
            "93.184.215.14",
            "10.0.0.1",
            "2001:db8::1",
            "fec0::1",
        ]
        .into_iter()
        .map(|a| (a, judge(a)))
        .collect();
        use Special::*;
        assert_eq!(
            judged,
            vec![
                ("127.0.0.1", Some(Loopback)),
                ("127.9.9.9", Some(Loopback)),
                ("::1", Some(Loopback)),
                ("::ffff:127.0.0.1", Some(Loopback)),
                ("169.254.1.1", Some(LinkLocal)),
                ("fe80::1", Some(LinkLocal)),
                ("febf::1", Some(LinkLocal)),
                ("169.254.169.254", Some(Metadata)),
                ("::ffff:169.254.169.254", Some(Metadata)),
                ("100.100.100.200", Some(Metadata)),
                ("fd00:ec2::254", Some(Metadata)),
                ("0.0.0.0", Some(Unspecified)),
                ("0.1.2.3", Some(Unspecified)),
                ("::", Some(Unspecified)),
                ("224.0.0.1", Some(Multicast)),
                ("ff02::1", Some(Multicast)),
                ("255.255.255.255", Some(Broadcast)),
                ("93.184.215.14", None),
                ("10.0.0.1", None),
                ("2001:db8::1", None),
                ("fec0::1", None),
            ]
        );
    }
}
