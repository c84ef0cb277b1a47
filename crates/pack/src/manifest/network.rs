//! `sandbox.network` and a command's `network`: none (`false`), the network as the
//! user has it (`true`), or `{"allow": ["host:port", ...]}`: only those places,
//! through hcpx's proxy, from a network namespace with no other way out.

use std::fmt;
use std::net::IpAddr;

use serde::Serialize;
use serde_json::Value;

use super::walk::{Walk, join};

/// The most entries one allowlist may have.
pub const MAX_ALLOW: usize = 64;

/// What a pack or a command may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// No network at all (the default).
    #[default]
    Off,
    /// IPv4 and IPv6 as the user has them.
    On,
    /// Only these host:port pairs, through the proxy.
    Allow(Vec<Endpoint>),
}

impl Network {
    /// Whether the pack may open IPv4 and IPv6 sockets at all.
    pub fn any(&self) -> bool {
        !matches!(self, Self::Off)
    }

    /// In a few words for people: "no network", `on` (the network as it is), or
    /// "network only to HOST:PORT, ...".
    pub fn summary(&self, on: &str) -> String {
        match self {
            Self::Off => "no network".to_owned(),
            Self::On => on.to_owned(),
            Self::Allow(endpoints) => format!(
                "network only to {}",
                endpoints
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The allowlist, when it is one.
    pub fn allowlist(&self) -> Option<&[Endpoint]> {
        match self {
            Self::Allow(endpoints) => Some(endpoints),
            _ => None,
        }
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        match self {
            Self::Off => serializer.serialize_bool(false),
            Self::On => serializer.serialize_bool(true),
            Self::Allow(endpoints) => {
                let mut map = serializer.serialize_map(Some(1))?;
                let entries: Vec<String> = endpoints.iter().map(ToString::to_string).collect();
                map.serialize_entry("allow", &entries)?;
                map.end()
            }
        }
    }
}

/// One allowlist entry: a host (a name, `*.suffix` or an IP address) and a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub host: Host,
    pub port: u16,
}

/// The host of an [`Endpoint`] or of a header binding's `hosts`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// Exactly this name (lower case, no final dot).
    Name(String),
    /// Any name that ends in `.` and this (`*.example.com`: `api.example.com`, not
    /// `example.com`).
    Suffix(String),
    /// Exactly this address (a name that resolves to it does not match).
    Ip(IpAddr),
}

impl Host {
    /// Reads `api.github.com`, `*.githubusercontent.com`, `127.0.0.1` or `::1`
    /// (a bare IPv6 address; `[::1]` too).
    pub fn parse(text: &str) -> Result<Self, String> {
        let bare = text
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(Self::Ip(ip));
        }
        if let Some(suffix) = text.strip_prefix("*.") {
            check_name(suffix)?;
            return Ok(Self::Suffix(suffix.to_owned()));
        }
        check_name(text)?;
        Ok(Self::Name(text.to_owned()))
    }

    /// Whether `name` (as a client wrote it: a name or an address) is this host.
    /// Names compare without regard to ASCII case; an address matches only the
    /// same address written as one.
    pub fn matches(&self, name: &str) -> bool {
        let bare = name
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or(name);
        match self {
            Self::Ip(ip) => bare.parse::<IpAddr>().is_ok_and(|other| other == *ip),
            Self::Name(own) => own.eq_ignore_ascii_case(name),
            Self::Suffix(suffix) => {
                name.len() > suffix.len() + 1
                    && name
                        .get(name.len() - suffix.len()..)
                        .is_some_and(|end| end.eq_ignore_ascii_case(suffix))
                    && name.as_bytes().get(name.len() - suffix.len() - 1) == Some(&b'.')
            }
        }
    }
}

impl Serialize for Host {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Suffix(suffix) => write!(f, "*.{suffix}"),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl Endpoint {
    /// Reads `host:port`, `*.suffix:port`, `1.2.3.4:port` or `[::1]:port`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err("must be host:port (a port is required)".to_owned());
        };
        if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
            return Err("an IPv6 address goes in brackets: [::1]:443".to_owned());
        }
        let digits = !port.is_empty() && !port.starts_with('0') && port.bytes().all(|b| b.is_ascii_digit());
        let port = match port.parse::<u16>() {
            Ok(number) if digits => number,
            _ => return Err(format!("the port `{port}` must be a number from 1 to 65535")),
        };
        Ok(Self {
            host: Host::parse(host)?,
            port,
        })
    }

    /// Whether a connection to `name:port` is this entry.
    pub fn matches(&self, name: &str, port: u16) -> bool {
        self.port == port && self.host.matches(name)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// A DNS name as an allowlist takes it: lower case letters, digits and `-` in
/// labels of 1 to 63, at most 253 in all, no final dot.
fn check_name(name: &str) -> Result<(), String> {
    let valid_label = |label: &str| {
        (1..=63).contains(&label.len())
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(valid_label) {
        return Err(format!(
            "`{name}` is not a host name hcpx takes: lower case letters, digits, - and dots, no final dot \
             (or `*.` and a name, or an IP address)"
        ));
    }
    Ok(())
}

/// Reads `network` at `path`: `true`, `false` or `{"allow": [...]}`.
pub(super) fn network(walk: &mut Walk, path: &str, value: Option<&Value>) -> Network {
    match value {
        None | Some(Value::Bool(false)) => Network::Off,
        Some(Value::Bool(true)) => Network::On,
        Some(Value::Object(object)) => {
            walk.unknown_fields(path, object, &["allow"]);
            let allow_path = join(path, "allow");
            let Some(entries) = object.get("allow") else {
                walk.problem(&allow_path, "is required: the host:port pairs the pack may reach");
                return Network::Off;
            };
            let entries = walk.strings(&allow_path, Some(entries));
            if entries.is_empty() {
                walk.problem(
                    &allow_path,
                    "is empty: a pack that reaches nothing takes \"network\": false",
                );
            } else if entries.len() > MAX_ALLOW {
                walk.problem(&allow_path, format!("has more than {MAX_ALLOW} entries"));
            }
            let mut endpoints: Vec<Endpoint> = Vec::new();
            for (index, entry) in entries.iter().enumerate() {
                match Endpoint::parse(entry) {
                    Ok(endpoint) if endpoints.contains(&endpoint) => {
                        walk.problem(&format!("{allow_path}[{index}]"), "is listed twice");
                    }
                    Ok(endpoint) => endpoints.push(endpoint),
                    Err(message) => walk.problem(&format!("{allow_path}[{index}]"), message),
                }
            }
            Network::Allow(endpoints)
        }
        Some(_) => {
            walk.problem(path, "must be true, false or {\"allow\": [\"host:port\", ...]}");
            Network::Off
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_and_print_back() {
        for text in [
            "api.github.com:443",
            "*.githubusercontent.com:443",
            "127.0.0.1:5432",
            "[::1]:8080",
        ] {
            assert_eq!(Endpoint::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn bad_entries_say_why() {
        let error = |text: &str| Endpoint::parse(text).unwrap_err();
        assert_eq!(error("api.github.com"), "must be host:port (a port is required)");
        assert_eq!(error("a.b:0"), "the port `0` must be a number from 1 to 65535");
        assert_eq!(
            error("a.b:+80"),
            "the port `+80` must be a number from 1 to 65535"
        );
        assert_eq!(
            error("a.b:065"),
            "the port `065` must be a number from 1 to 65535"
        );
        assert_eq!(error("::1:80"), "an IPv6 address goes in brackets: [::1]:443");
        assert!(error("localhost.:80").starts_with("`localhost.` is not a host name"));
        assert!(error("API.github.com:443").starts_with("`API.github.com` is not"));
        assert!(error("*:443").starts_with("`*` is not"));
        assert!(error("*.:443").starts_with("`` is not"));
    }

    #[test]
    fn names_suffixes_and_addresses_match_only_themselves() {
        let name = Endpoint::parse("api.example.com:443").unwrap();
        assert!(name.matches("API.example.com", 443));
        assert!(!name.matches("api.example.com", 80));
        assert!(!name.matches("api.example.com.", 443));
        let suffix = Endpoint::parse("*.example.com:443").unwrap();
        assert!(suffix.matches("a.b.example.com", 443));
        assert!(!suffix.matches("example.com", 443));
        assert!(!suffix.matches("badexample.com", 443));
        let ip = Endpoint::parse("127.0.0.1:80").unwrap();
        assert!(ip.matches("127.0.0.1", 80));
        assert!(!ip.matches("127.1", 80));
        assert!(!ip.matches("localhost", 80));
        assert!(!ip.matches("127.0.0.2", 80));
        let v6 = Endpoint::parse("[::1]:80").unwrap();
        assert!(v6.matches("[::1]", 80) && v6.matches("::1", 80));
        assert!(!v6.matches("[::ffff:127.0.0.1]", 80));
    }

    #[test]
    fn serialises_as_written() {
        let allow = Network::Allow(vec![Endpoint::parse("a.b:1").unwrap()]);
        assert_eq!(
            serde_json::to_value(&allow).unwrap(),
            serde_json::json!({"allow": ["a.b:1"]})
        );
        assert_eq!(
            serde_json::to_value(Network::On).unwrap(),
            serde_json::json!(true)
        );
        assert_eq!(
            serde_json::to_value(Network::Off).unwrap(),
            serde_json::json!(false)
        );
    }
}
