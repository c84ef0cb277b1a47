//! The allowlist: entries parsed from `host:port`, and how a requested host is
//! matched against them (and against the hosts of a header binding).

use std::fmt;
use std::net::IpAddr;

/// Why an allowlist entry or a host pattern could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("'{0}' has no port: write host:port")]
    NoPort(String),
    #[error("'{0}' has a port that is not a number from 1 to 65535")]
    BadPort(String),
    #[error("'{0}' is not a host name, '*.suffix' or an IP address")]
    BadHost(String),
}

/// What an entry or a header binding's host names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// One name, lowercase.
    Name(String),
    /// Any subdomain of this suffix (lowercase, without the `*.`), never the suffix itself.
    Suffix(String),
    /// Only this IP literal.
    Ip(IpAddr),
}

/// A requested host: an IP literal or a name (as the client wrote it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    Ip(IpAddr),
    Name(String),
}

impl Host {
    /// Reads a host as a client sent it (`[::1]` with brackets for IPv6). Only the
    /// strict dotted-quad form is an IPv4 literal: `127.1` is a name.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            return inner
                .parse::<std::net::Ipv6Addr>()
                .ok()
                .map(|ip| Self::Ip(ip.into()));
        }
        if let Ok(ip) = text.parse::<std::net::Ipv4Addr>() {
            return Some(Self::Ip(ip.into()));
        }
        valid_name(text).then(|| Self::Name(text.to_owned()))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

/// A DNS name as hcpx accepts it: labels of letters, digits, `-` and `_`, none
/// empty except that one trailing dot is kept (and makes another name).
fn valid_name(text: &str) -> bool {
    let body = text.strip_suffix('.').unwrap_or(text);
    !body.is_empty()
        && text.len() <= 254
        && body.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

impl Pattern {
    /// Reads `name`, `*.suffix`, an IPv4 literal or an IPv6 literal (bare or in brackets).
    pub(crate) fn parse(text: &str) -> Result<Self, RuleError> {
        let bad = || RuleError::BadHost(text.to_owned());
        if let Some(suffix) = text.strip_prefix("*.") {
            if !valid_name(suffix) || suffix.ends_with('.') {
                return Err(bad());
            }
            return Ok(Self::Suffix(suffix.to_ascii_lowercase()));
        }
        if let Ok(ip) = text.parse::<std::net::Ipv6Addr>() {
            return Ok(Self::Ip(ip.into()));
        }
        match Host::parse(text).ok_or_else(bad)? {
            Host::Ip(ip) => Ok(Self::Ip(ip)),
            Host::Name(name) => Ok(Self::Name(name.to_ascii_lowercase())),
        }
    }

    /// Whether `host` is what this pattern names: names compare ASCII
    /// case-insensitively and exactly (`localhost.` is not `localhost`), a suffix
    /// matches subdomains only, an IP matches only the same IP literal.
    pub(crate) fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (Self::Ip(ip), Host::Ip(asked)) => ip == asked,
            (Self::Name(name), Host::Name(asked)) => name.eq_ignore_ascii_case(asked),
            (Self::Suffix(suffix), Host::Name(asked)) => {
                let asked = asked.to_ascii_lowercase();
                asked
                    .strip_suffix(suffix.as_str())
                    .and_then(|head| head.strip_suffix('.'))
                    .is_some_and(|head| !head.is_empty())
            }
            _ => false,
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Suffix(suffix) => write!(f, "*.{suffix}"),
            Self::Ip(ip) => Host::Ip(*ip).fmt(f),
        }
    }
}

/// One allowlist entry, parsed from "host:port", "*.suffix:port", "1.2.3.4:port", "[::1]:port".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allow {
    pattern: Pattern,
    port: u16,
}

impl Allow {
    /// Reads one entry. Names are kept lowercase.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| RuleError::NoPort(text.to_owned()))?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|port| *port != 0)
            .ok_or_else(|| RuleError::BadPort(text.to_owned()))?;
        // A bare IPv6 address must be in brackets here: `::1:443` is ambiguous.
        if host.contains(':') && !host.starts_with('[') {
            return Err(RuleError::BadHost(text.to_owned()));
        }
        let pattern = match Host::parse(host) {
            Some(Host::Ip(ip)) => Pattern::Ip(ip),
            _ => Pattern::parse(host).map_err(|_| RuleError::BadHost(text.to_owned()))?,
        };
        Ok(Self { pattern, port })
    }

    /// The IP of an IP entry.
    pub fn ip(&self) -> Option<IpAddr> {
        match self.pattern {
            Pattern::Ip(ip) => Some(ip),
            _ => None,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn pattern(&self) -> &Pattern {
        &self.pattern
    }

    pub(crate) fn matches(&self, host: &Host, port: u16) -> bool {
        self.port == port && self.pattern.matches(host)
    }
}

impl fmt::Display for Allow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.pattern, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> Host {
        Host::parse(text).unwrap()
    }

    #[test]
    fn entries_read_back_as_written() {
        let entries = [
            "api.github.com:443",
            "*.githubusercontent.com:443",
            "127.0.0.1:5432",
            "[::1]:6379",
            "localhost:8080",
        ];
        let back: Vec<String> = entries
            .iter()
            .map(|e| Allow::parse(e).unwrap().to_string())
            .collect();
        assert_eq!(back, entries);
        assert_eq!(
            Allow::parse("API.GitHub.com:443").unwrap().to_string(),
            "api.github.com:443"
        );
        let ip = Allow::parse("127.0.0.1:5432").unwrap();
        assert_eq!((ip.ip(), ip.port()), (Some("127.0.0.1".parse().unwrap()), 5432));
        assert_eq!(Allow::parse("x.test:1").unwrap().ip(), None);
    }

    #[test]
    fn bad_entries_say_why() {
        let errors: Vec<RuleError> = [
            "x.test",
            "x.test:0",
            "x.test:http",
            "::1:443",
            "a..b:1",
            "*.:1",
            "*.x.:1",
            "a b:1",
            ":443",
        ]
        .iter()
        .map(|e| Allow::parse(e).unwrap_err())
        .collect();
        assert_eq!(
            errors,
            vec![
                RuleError::NoPort("x.test".into()),
                RuleError::BadPort("x.test:0".into()),
                RuleError::BadPort("x.test:http".into()),
                RuleError::BadHost("::1:443".into()),
                RuleError::BadHost("a..b:1".into()),
                RuleError::BadHost("*.:1".into()),
                RuleError::BadHost("*.x.:1".into()),
                RuleError::BadHost("a b:1".into()),
                RuleError::BadHost(":443".into()),
            ]
        );
    }

    #[test]
    fn names_match_exactly_and_without_case() {
        let entry = Allow::parse("localhost:80").unwrap();
        assert!(entry.matches(&host("localhost"), 80));
        assert!(entry.matches(&host("LocalHost"), 80));
        assert!(!entry.matches(&host("localhost."), 80));
        assert!(!entry.matches(&host("localhost"), 81));
        assert!(!entry.matches(&host("127.0.0.1"), 80));
    }

    #[test]
    fn suffixes_match_subdomains_only() {
        let entry = Allow::parse("*.x.test:443").unwrap();
        assert!(entry.matches(&host("a.x.test"), 443));
        assert!(entry.matches(&host("b.A.X.Test"), 443));
        assert!(!entry.matches(&host("x.test"), 443));
        assert!(!entry.matches(&host("ax.test"), 443));
        assert!(!entry.matches(&host("a.x.test."), 443));
        assert!(!entry.matches(&host("a.x.test.evil"), 443));
        assert_eq!(Host::parse(".x.test"), None);
    }

    #[test]
    fn ips_match_only_the_same_literal() {
        let entry = Allow::parse("127.0.0.1:5432").unwrap();
        assert!(entry.matches(&host("127.0.0.1"), 5432));
        assert_eq!(host("127.1"), Host::Name("127.1".into()));
        assert!(!entry.matches(&host("127.1"), 5432));
        assert!(!entry.matches(&host("localhost"), 5432));
        assert!(!entry.matches(&host("[::ffff:127.0.0.1]"), 5432));
        let six = Allow::parse("[::1]:1").unwrap();
        assert!(six.matches(&host("[::1]"), 1));
        assert!(six.matches(&host("[0:0::1]"), 1));
    }

    #[test]
    fn header_hosts_read_bare_ipv6_too() {
        assert_eq!(
            Pattern::parse("::1").unwrap(),
            Pattern::Ip("::1".parse().unwrap())
        );
        assert_eq!(
            Pattern::parse("[::1]").unwrap(),
            Pattern::Ip("::1".parse().unwrap())
        );
        assert_eq!(Pattern::parse("*.X.test").unwrap().to_string(), "*.x.test");
    }
}
