//! One call's egress: its policy, how it decides on a destination, the refusals
//! so far, and the tasks that serve its listeners.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::address::{Special, canonical, special};
use crate::authority::Authority;
use crate::rule::{Allow, Host, Pattern};
use crate::tls::Upstream;

/// Refusals kept per call; later ones are still logged and counted.
const KEPT_REFUSALS: usize = 1000;

/// A header added to HTTPS requests to `hosts` (exact names, `*.suffix`, or IP literals).
#[derive(Debug, Clone)]
pub struct Header {
    pub name: String,
    pub value: zeroize::Zeroizing<String>,
    pub hosts: Vec<String>,
}

/// What one call may reach.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub allow: Vec<Allow>,
    pub headers: Vec<Header>,
}

/// A connection the proxy refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub host: String,
    pub port: u16,
    pub why: String,
}

/// How the proxy turns names into addresses.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// The system's resolver.
    #[default]
    System,
    /// Only these names (ASCII case-insensitive), for tests: any other name does not resolve.
    Map(HashMap<String, Vec<IpAddr>>),
}

/// The limits of one call.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections open at once, over all of the call's listeners.
    pub connections: usize,
    /// How long a client may take to send a request head, and a TLS handshake.
    pub head_timeout: Duration,
    /// How long resolving a name, or connecting to a server, may take.
    pub connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connections: 64,
            head_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// A header binding ready to be set, or why it cannot be.
#[derive(Debug)]
struct Bound {
    hosts: Vec<Pattern>,
    header: Result<(HeaderName, HeaderValue), String>,
}

/// Where an allowed connection goes.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) host: Host,
    pub(crate) port: u16,
    pub(crate) addrs: Vec<SocketAddr>,
}

/// Why a destination was not connected to.
#[derive(Debug)]
pub(crate) enum Denied {
    /// By policy: answered 403 and recorded.
    Refused(String),
    /// The name did not resolve, or no address answered: answered 502.
    Failed(String),
}

/// What ending TLS takes: this server's authority, which signs the leaf a client
/// sees, and the roots the real server is checked against. Only a call with header
/// bindings ends TLS, so only such a call needs them: loading the system's roots
/// reads every file of `/etc/ssl/certs`.
#[derive(Debug, Clone)]
pub struct Tls {
    pub authority: Arc<Authority>,
    pub upstream: Arc<Upstream>,
}

/// One call's egress: its policy, the refusals so far.
pub struct Call {
    allow: Vec<Allow>,
    headers: Vec<Bound>,
    pub(crate) tls: Option<Tls>,
    resolver: Resolver,
    pub(crate) limits: Limits,
    refusals: Mutex<(Vec<Refusal>, usize)>,
    pub(crate) slots: Arc<Semaphore>,
    /// Over-cap connections whose request is read to say what was refused.
    pub(crate) overflow: Arc<Semaphore>,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

/// What every task of a call shares.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) call: Arc<Call>,
    pub(crate) cancel: CancellationToken,
}

impl Ctx {
    /// Runs `task` until it ends or the call's `Running` is dropped.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let cancel = self.cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {}
                () = task => {}
            }
        });
    }
}

/// A connection's place under the call's cap, kept by every task serving it.
pub(crate) type Slot = Option<Arc<OwnedSemaphorePermit>>;

impl Call {
    /// `tls` is what ending TLS takes: needed when `policy` has headers to add (a
    /// request that should get them is answered 502 without it).
    pub fn new(policy: Policy, tls: Option<Tls>) -> Arc<Self> {
        Self::with(policy, tls, Resolver::System, Limits::default())
    }

    /// A call whose names resolve only through `names` (tests).
    pub fn with_resolver(policy: Policy, tls: Option<Tls>, names: HashMap<String, Vec<IpAddr>>) -> Arc<Self> {
        Self::with(policy, tls, Resolver::Map(names), Limits::default())
    }

    pub fn with(policy: Policy, tls: Option<Tls>, resolver: Resolver, limits: Limits) -> Arc<Self> {
        let headers = policy.headers.iter().map(bind).collect();
        Arc::new(Self {
            allow: policy.allow,
            headers,
            tls,
            resolver,
            slots: Arc::new(Semaphore::new(limits.connections)),
            overflow: Arc::new(Semaphore::new(16)),
            limits,
            refusals: Mutex::new((Vec::new(), 0)),
        })
    }

    /// The refusals so far (the first thousand).
    pub fn refusals(&self) -> Vec<Refusal> {
        self.refusals
            .lock()
            .map(|kept| kept.0.clone())
            .unwrap_or_default()
    }

    /// How many refusals there were in all, also those past the kept ones.
    pub fn refused(&self) -> usize {
        self.refusals.lock().map(|kept| kept.1).unwrap_or_default()
    }

    /// Records and logs a refusal.
    pub(crate) fn refuse(&self, host: &str, port: u16, why: &str) {
        tracing::warn!(host, port, why, "egress refused");
        if let Ok(mut kept) = self.refusals.lock() {
            kept.1 += 1;
            if kept.0.len() < KEPT_REFUSALS {
                kept.0.push(Refusal {
                    host: host.to_owned(),
                    port,
                    why: why.to_owned(),
                });
            }
        }
    }

    /// The headers to set on requests to `host`, or why one cannot be (`None`: the
    /// host gets a plain tunnel).
    pub(crate) fn headers_for(&self, host: &Host) -> Option<Result<Vec<(HeaderName, HeaderValue)>, String>> {
        let mut found = self
            .headers
            .iter()
            .filter(|bound| bound.hosts.iter().any(|p| p.matches(host)))
            .map(|bound| bound.header.clone())
            .peekable();
        found.peek()?;
        if self.tls.is_none() {
            return Some(Err(format!(
                "the headers for {host} cannot be added: this proxy was started without a certificate authority"
            )));
        }
        Some(found.collect())
    }

    /// Whether `host:port` may be reached, and at which addresses.
    pub(crate) async fn decide(&self, host_text: &str, port: u16) -> Result<Target, Denied> {
        let Some(host) = Host::parse(host_text) else {
            return Err(Denied::Refused(format!(
                "{host_text} is not a host name or an IP address"
            )));
        };
        let matched: Vec<&Allow> = self.allow.iter().filter(|a| a.matches(&host, port)).collect();
        if matched.is_empty() {
            return Err(Denied::Refused(format!("{host}:{port} is not in the allowlist")));
        }
        let name = match &host {
            // An IP entry names this very address.
            Host::Ip(ip) => {
                let addrs = vec![SocketAddr::new(canonical(*ip), port)];
                return Ok(Target { host, port, addrs });
            }
            Host::Name(name) => name.clone(),
        };
        let ips = self.resolve(&name, port).await?;
        let localhost = matched
            .iter()
            .any(|a| matches!(a.pattern(), Pattern::Name(n) if n == "localhost"));
        let mut addrs = Vec::with_capacity(ips.len());
        for ip in ips {
            let ip = canonical(ip);
            if let Some(kind) = special(ip) {
                let named = self
                    .allow
                    .iter()
                    .any(|a| a.port() == port && a.ip().map(canonical) == Some(ip));
                if !(named || (kind == Special::Loopback && localhost)) {
                    return Err(Denied::Refused(format!(
                        "{name} resolves to {ip}, {}, which the allowlist does not name",
                        kind.describe()
                    )));
                }
            }
            addrs.push(SocketAddr::new(ip, port));
        }
        Ok(Target { host, port, addrs })
    }

    async fn resolve(&self, name: &str, port: u16) -> Result<Vec<IpAddr>, Denied> {
        let failed = |why: String| Denied::Failed(format!("could not resolve {name}: {why}"));
        let ips: Vec<IpAddr> = match &self.resolver {
            Resolver::Map(names) => names
                .iter()
                .find(|(known, _)| known.eq_ignore_ascii_case(name))
                .map(|(_, ips)| ips.clone())
                .unwrap_or_default(),
            Resolver::System => {
                let lookup = tokio::net::lookup_host((name, port));
                match tokio::time::timeout(self.limits.connect_timeout, lookup).await {
                    Ok(Ok(addrs)) => addrs.map(|a| a.ip()).collect(),
                    Ok(Err(e)) => return Err(failed(e.to_string())),
                    Err(_) => return Err(failed("it took too long".into())),
                }
            }
        };
        if ips.is_empty() {
            return Err(failed("no address".into()));
        }
        Ok(ips)
    }

    /// Connects to the first of `target`'s addresses that answers.
    pub(crate) async fn connect(&self, target: &Target) -> Result<TcpStream, String> {
        let mut last = String::from("no address");
        for addr in &target.addrs {
            match tokio::time::timeout(self.limits.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Ok(Err(e)) => last = format!("{addr}: {e}"),
                Err(_) => last = format!("{addr}: no answer in time"),
            }
        }
        Err(format!(
            "could not connect to {}:{}: {last}",
            target.host, target.port
        ))
    }
}

fn bind(header: &Header) -> Bound {
    let hosts = header
        .hosts
        .iter()
        .filter_map(|h| match Pattern::parse(h) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(header = %header.name, error = %e, "a header binding's host is ignored");
                None
            }
        })
        .collect();
    let name = HeaderName::from_bytes(header.name.as_bytes());
    let value = HeaderValue::from_str(&header.value);
    let header = match (name, value) {
        (Ok(name), Ok(mut value)) => {
            value.set_sensitive(true);
            Ok((name, value))
        }
        (Err(_), _) => Err(format!("'{}' is not a header name", header.name)),
        (_, Err(_)) => Err(format!(
            "the value bound to header {} is not a valid header value",
            header.name
        )),
    };
    Bound { hosts, header }
}

pub(crate) fn over_cap(call: &Call) -> String {
    format!(
        "the call has {} connections open, as many as it may",
        call.limits.connections
    )
}
