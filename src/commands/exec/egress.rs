//! Step 4 for a command with `network.allow`: a network namespace of the call's own
//! (no route out), the proxy and the port forwards hcpx serves into it for the
//! call, the variables that lead the child's clients to them (and to the
//! certificate authority the proxy signs with, when a header binding needs TLS
//! ended), and, after the call, what the proxy refused: a warning each on the
//! result and an audit line each.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use hcpx_egress::{Allow, Call, Destination, Header, Policy, Refusal, Running};
use hcpx_pack::manifest::{Endpoint, Host};

use crate::binding::Secret;
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::next::Next;
use crate::sandbox::ChildNetwork;

/// The proxy variables every client reads, in both cases.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];
/// The variables that name a bundle of roots (the system's and hcpx's authority).
const BUNDLE_VARIABLES: [&str; 4] = [
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "GIT_SSL_CAINFO",
];
/// Node adds the roots of this file to its own.
const NODE_EXTRA: &str = "NODE_EXTRA_CA_CERTS";
/// The system's bundle of roots, where Debian, Ubuntu, Arch and Alpine keep it; then
/// Fedora's and openSUSE's.
const SYSTEM_BUNDLES: [&str; 3] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
];
/// The machine's hosts file, whose loopback names the namespace's keeps.
const ETC_HOSTS: &str = "/etc/hosts";
/// The variable that names extra roots the proxy trusts for real servers (a
/// company's TLS inspection, a test's own authority).
pub(crate) const EXTRA_ROOTS: &str = "HCP_EGRESS_ROOTS";

/// A header binding as the proxy adds it: the header, its value filled in, the
/// hosts it goes to.
#[derive(Debug)]
pub(super) struct HeaderValue {
    pub(super) header: String,
    pub(super) value: Secret,
    pub(super) hosts: Vec<Host>,
}

/// One call's egress, served until it is dropped.
pub(super) struct Egress {
    _running: Running,
    call: Arc<Call>,
    /// What the child enters.
    pub(super) network: ChildNetwork,
    /// The proxy and authority variables for the child.
    pub(super) env: Vec<(String, String)>,
}

impl Egress {
    /// What the proxy refused so far.
    pub(super) fn refusals(&self) -> Vec<Refusal> {
        self.call.refusals()
    }
}

fn failure(message: String) -> Failure {
    Failure::new(
        Reason::NotRunnable,
        "the call's network namespace and proxy could not be set up; nothing of the pack ran",
    )
    .data(serde_json::json!({ "details": [&message] }))
    .details(vec![message])
    .next(Next::hcpx(["doctor"]))
}

/// Where forwarded names get their addresses in the namespace: loopback addresses
/// from 127.100.0.1 up, each name its own (so that two names may share a port).
const NAMED_FROM: [u8; 4] = [127, 100, 0, 1];

/// One port forward: where it listens in the namespace, and what it leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Forward {
    pub(super) listen: SocketAddr,
    pub(super) to: Destination,
}

/// A command's port forwards, and the names the namespace's hosts file gives the
/// addresses of their listeners.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Forwards {
    pub(super) list: Vec<Forward>,
    pub(super) names: Vec<(IpAddr, String)>,
}

/// The forwards a command's allowlist gets, for clients that ignore proxy variables
/// (psql, redis-cli). Each entry is listened on in the namespace where such a
/// client would connect, and its connections go where the proxy would let them:
/// - an IP entry at that very address (one that is not loopback is put on the
///   namespace's `lo` for it);
/// - `localhost` at 127.0.0.1;
/// - another name at a loopback address of its own, which the namespace's hosts
///   file gives that name (the name is resolved outside, on each connection).
///
/// A `*.suffix` entry names no host to forward: only the proxy reaches those.
pub(super) fn forwards(allow: &[Endpoint]) -> Forwards {
    let taken: Vec<IpAddr> = allow
        .iter()
        .filter_map(|endpoint| match endpoint.host {
            Host::Ip(ip) => Some(ip),
            _ => None,
        })
        .collect();
    let mut next = u32::from_be_bytes(NAMED_FROM);
    let mut forwards = Forwards::default();
    for endpoint in allow {
        let (ip, host) = match &endpoint.host {
            Host::Ip(ip) if ip.is_unspecified() || ip.is_multicast() => continue,
            Host::Ip(ip) => (*ip, Destination::from(SocketAddr::new(*ip, endpoint.port)).host),
            Host::Name(name) if name == "localhost" => (IpAddr::V4(Ipv4Addr::LOCALHOST), name.clone()),
            Host::Name(name) => {
                let known = forwards.names.iter().find(|(_, known)| known == name);
                let ip = match known {
                    Some((ip, _)) => *ip,
                    None => {
                        let ip = loop {
                            let ip = IpAddr::V4(Ipv4Addr::from(next));
                            next += 1;
                            if !taken.contains(&ip) {
                                break ip;
                            }
                        };
                        forwards.names.push((ip, name.clone()));
                        ip
                    }
                };
                (ip, name.clone())
            }
            Host::Suffix(_) => continue,
        };
        let listen = SocketAddr::new(ip, endpoint.port);
        if forwards.list.iter().all(|forward| forward.listen != listen) {
            forwards.list.push(Forward {
                listen,
                to: Destination {
                    host,
                    port: endpoint.port,
                },
            });
        }
    }
    forwards
}

/// The hosts file of a namespace whose forwards give `names`: those names first, then
/// the loopback lines of the machine's `machine` file without them (an address
/// outside is out of reach in the namespace anyway).
pub(super) fn hosts_file(names: &[(IpAddr, String)], machine: &str) -> String {
    let mut out = String::from("# Written by hcpx for one call: the names its allowlist forwards.\n");
    for (ip, name) in names {
        out.push_str(&format!("{ip} {name}\n"));
    }
    let ours = |word: &str| names.iter().any(|(_, name)| name.eq_ignore_ascii_case(word));
    for line in machine.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(address) = words.next() else { continue };
        if !address.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
            continue;
        }
        let kept: Vec<&str> = words.filter(|word| !ours(word)).collect();
        if !kept.is_empty() {
            out.push_str(&format!("{address} {}\n", kept.join(" ")));
        }
    }
    out
}

/// Sets up the call's egress for `allow`, with `headers` added on the way out.
pub(super) fn prepare(
    ctx: &Context,
    allow: &[Endpoint],
    headers: Vec<HeaderValue>,
    tmpdir: &Path,
) -> Result<Egress, Failure> {
    // Only header bindings end TLS: a call without them never loads the authority
    // or the system's roots (every file of /etc/ssl/certs, 5 ms here). Loaded before
    // the namespace is made, so that roots that cannot be read start nothing.
    let tls = if headers.is_empty() {
        None
    } else {
        Some(
            ctx.session
                .egress(&ctx.home, ctx.env.get(EXTRA_ROOTS).map(Path::new))
                .map_err(failure)?,
        )
    };
    let forwards = forwards(allow);
    let proxy_at = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
    let addrs: Vec<SocketAddr> = std::iter::once(proxy_at)
        .chain(forwards.list.iter().map(|forward| forward.listen))
        .collect();
    // Forwarded names get a hosts file, which keeps the machine's loopback names.
    let hosts = (!forwards.names.is_empty()).then(|| {
        let machine = std::fs::read_to_string(ETC_HOSTS).unwrap_or_default();
        hosts_file(&forwards.names, &machine)
    });
    let namespace = ctx
        .session
        .sandbox
        .net_namespace(&addrs, hosts.as_deref())
        .map_err(|error| match hosts {
            Some(_) => failure(format!(
                "cannot make the network namespace, with the mount namespace whose hosts file gives the allowlist's names their forwards: {error}"
            )),
            None => failure(format!("cannot make the network namespace: {error}")),
        })?;
    let mut listeners = namespace.listeners.into_iter();
    let proxy = listeners
        .next()
        .ok_or_else(|| failure("the namespace came without the proxy's listener".to_owned()))?;
    let proxy_port = proxy
        .local_addr()
        .map_err(|error| failure(format!("the proxy's listener has no address: {error}")))?
        .port();
    let ports: Vec<u16> = std::iter::once(proxy_port)
        .chain(forwards.list.iter().map(|forward| forward.listen.port()))
        .collect();
    let policy = Policy {
        allow: allow
            .iter()
            .map(|endpoint| Allow::parse(&endpoint.to_string()))
            .collect::<Result<_, _>>()
            .map_err(|error| failure(error.to_string()))?,
        headers: headers
            .into_iter()
            .map(|header| Header {
                name: header.header,
                value: zeroize::Zeroizing::new(header.value.expose().to_owned()),
                hosts: header.hosts.iter().map(ToString::to_string).collect(),
            })
            .collect(),
    };
    let authority_pem = tls.as_ref().map(|tls| tls.authority.cert_pem().to_owned());
    let call = Call::new(policy, tls);
    let running = call
        .serve(
            proxy,
            listeners
                .zip(forwards.list.into_iter().map(|forward| forward.to))
                .collect(),
        )
        .map_err(|error| failure(format!("cannot serve the proxy: {error}")))?;
    let mut env: Vec<(String, String)> = PROXY_VARIABLES
        .iter()
        .map(|name| ((*name).to_owned(), format!("http://127.0.0.1:{proxy_port}")))
        .collect();
    if let Some(pem) = &authority_pem {
        env.extend(authority_files(tmpdir, pem)?);
    }

    Ok(Egress {
        _running: running,
        call,
        network: ChildNetwork::Namespace {
            join: Arc::new(namespace.join),
            ports,
        },
        env,
    })
}

/// The authority's certificate, alone (for Node) and after the system's roots (for
/// everything that takes one bundle), in the call's temporary folder.
fn authority_files(tmpdir: &Path, pem: &str) -> Result<Vec<(String, String)>, Failure> {
    let system = SYSTEM_BUNDLES
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default();
    let write = |name: &str, content: &str| {
        let path = tmpdir.join(name);
        std::fs::write(&path, content)
            .map(|()| path.display().to_string())
            .map_err(|error| failure(format!("cannot write {}: {error}", path.display())))
    };
    let alone = write("hcpx-authority.pem", pem)?;
    let bundle = write("hcpx-roots.pem", &format!("{system}\n{pem}"))?;
    let mut env: Vec<(String, String)> = BUNDLE_VARIABLES
        .iter()
        .map(|name| ((*name).to_owned(), bundle.clone()))
        .collect();
    env.push((NODE_EXTRA.to_owned(), alone));
    Ok(env)
}

/// What a refusal says on the result.
pub(super) fn warning(refusal: &Refusal) -> crate::reply::Warning {
    crate::reply::Warning::Egress {
        host: refusal.host.clone(),
        port: refusal.port,
        why: refusal.why.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward(listen: &str, host: &str, port: u16) -> Forward {
        Forward {
            listen: listen.parse().unwrap(),
            to: Destination {
                host: host.to_owned(),
                port,
            },
        }
    }

    /// Every entry that names one host gets a forward where a client that ignores
    /// the proxy would connect: IPs at themselves, `localhost` at 127.0.0.1, names
    /// at an address of their own (one per name, past the addresses IP entries use),
    /// each listen address once; `*.suffix` entries get none.
    #[test]
    fn forwards_listen_where_clients_connect() {
        let allow: Vec<Endpoint> = [
            "127.0.0.1:5432",
            "10.0.0.5:5432",
            "[2001:db8::5]:6379",
            "localhost:8080",
            "127.100.0.1:9000",
            "db.example.com:5432",
            "cache.example.com:6379",
            "db.example.com:5433",
            "*.example.org:443",
            "10.0.0.5:5432",
        ]
        .iter()
        .map(|entry| Endpoint::parse(entry).unwrap())
        .collect();
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert_eq!(
            forwards(&allow),
            Forwards {
                list: vec![
                    forward("127.0.0.1:5432", "127.0.0.1", 5432),
                    forward("10.0.0.5:5432", "10.0.0.5", 5432),
                    forward("[2001:db8::5]:6379", "[2001:db8::5]", 6379),
                    forward("127.0.0.1:8080", "localhost", 8080),
                    forward("127.100.0.1:9000", "127.100.0.1", 9000),
                    forward("127.100.0.2:5432", "db.example.com", 5432),
                    forward("127.100.0.3:6379", "cache.example.com", 6379),
                    forward("127.100.0.2:5433", "db.example.com", 5433),
                ],
                names: vec![
                    (ip("127.100.0.2"), "db.example.com".to_owned()),
                    (ip("127.100.0.3"), "cache.example.com".to_owned()),
                ],
            }
        );
    }

    /// The namespace's hosts file: the forwarded names, then the machine's loopback
    /// lines without those names (a line left with no name goes); other addresses
    /// and comments go.
    #[test]
    fn the_hosts_file_gives_forwarded_names_their_listeners() {
        let names = [("127.100.0.1".parse().unwrap(), "db.example.com".to_owned())];
        let machine = "127.0.0.1\tlocalhost\n::1 localhost ip6-localhost # both\n\
                       192.0.2.10 db.example.com other\n127.0.1.1 vm DB.example.com\n\
                       127.0.0.2 db.example.com\n# 127.0.0.3 gone\n";
        assert_eq!(
            hosts_file(&names, machine),
            "# Written by hcpx for one call: the names its allowlist forwards.\n\
             127.100.0.1 db.example.com\n\
             127.0.0.1 localhost\n\
             ::1 localhost ip6-localhost\n\
             127.0.1.1 vm\n"
        );
    }
}
