//! Step 4 for a command with `network.allow`: a network namespace of the call's own
//! (no route out), the proxy and the port forwards hcpx serves into it for the
//! call, the variables that lead the child's clients to them (and to the
//! certificate authority the proxy signs with, when a header binding needs TLS
//! ended), and, after the call, what the proxy refused: a warning each on the
//! result and an audit line each.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use hcpx_egress::{Allow, Call, Header, Policy, Refusal, Running};
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
    .details(vec![message])
    .next(Next::hcpx(["doctor"]))
}

/// The forwards a command's allowlist gets: each entry that is a loopback address,
/// listened on at that very address in the namespace and connected to outside (for
/// clients that ignore proxy variables, such as psql and redis-cli). Other entries
/// are reached through the proxy.
pub(super) fn forwards(allow: &[Endpoint]) -> Vec<SocketAddr> {
    allow
        .iter()
        .filter_map(|endpoint| match endpoint.host {
            Host::Ip(ip) if ip.is_loopback() => Some(SocketAddr::new(ip, endpoint.port)),
            _ => None,
        })
        .collect()
}

/// Sets up the call's egress for `allow`, with `headers` added on the way out.
pub(super) fn prepare(
    ctx: &Context,
    allow: &[Endpoint],
    headers: Vec<HeaderValue>,
    tmpdir: &Path,
) -> Result<Egress, Failure> {
    let forwards = forwards(allow);
    let proxy_at = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
    let addrs: Vec<SocketAddr> = std::iter::once(proxy_at)
        .chain(forwards.iter().copied())
        .collect();
    let namespace = ctx
        .session
        .sandbox
        .net_namespace(&addrs)
        .map_err(|error| failure(format!("cannot make the network namespace: {error}")))?;
    let mut listeners = namespace.listeners.into_iter();
    let proxy = listeners
        .next()
        .ok_or_else(|| failure("the namespace came without the proxy's listener".to_owned()))?;
    let proxy_port = proxy
        .local_addr()
        .map_err(|error| failure(format!("the proxy's listener has no address: {error}")))?
        .port();
    let ports: Vec<u16> = std::iter::once(proxy_port)
        .chain(forwards.iter().map(SocketAddr::port))
        .collect();
    let tls = !headers.is_empty();
    let (authority, upstream) = ctx
        .session
        .egress(&ctx.home, ctx.env.get(EXTRA_ROOTS).map(Path::new))
        .map_err(failure)?;
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
    let call = Call::new(policy, Arc::clone(&authority), upstream);
    let running = call
        .serve(
            proxy,
            listeners
                .zip(forwards.into_iter().map(hcpx_egress::Destination::from))
                .collect(),
        )
        .map_err(|error| failure(format!("cannot serve the proxy: {error}")))?;
    let mut env: Vec<(String, String)> = PROXY_VARIABLES
        .iter()
        .map(|name| ((*name).to_owned(), format!("http://127.0.0.1:{proxy_port}")))
        .collect();
    if tls {
        env.extend(authority_files(tmpdir, authority.cert_pem())?);
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
