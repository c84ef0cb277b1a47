//! `hcpx mcp --http ADDR` (or `--unix PATH`): the same server as on stdio, behind
//! rmcp's Streamable HTTP transport at `/mcp`. This module is only the front end:
//! where to listen ([`listener`]), who may connect ([`peer`]: without a token, only
//! the user who started it), who may call (a bearer token, checked in constant time
//! and never logged; or, exclusively, an OAuth access token: [`oauth`]), which
//! `Host` and `Origin` values are accepted (against DNS rebinding and foreign web
//! pages), what any one client may take ([`limits`], [`connections`],
//! [`sessions`]), the probes of load balancers ([`health`], answered before either
//! auth mode), and an orderly stop that cancels running calls so that their
//! children are killed, and ends each open stream with its final result. The tool,
//! the resources and confirmation are [`super::Server`]'s, unchanged.

mod connections;
#[cfg(target_os = "linux")]
mod diag;
mod health;
mod limits;
mod listener;
pub mod oauth;
mod peer;
mod sessions;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;

use crate::context::Context;
pub use limits::MAX_BODY;
pub use oauth::{Authorized, OAuthSettings};

/// The environment variable that holds the bearer token when no file is given.
pub const TOKEN_VAR: &str = "HCP_MCP_TOKEN";
/// The shortest token accepted: anything shorter is guessable.
const MIN_TOKEN: usize = 16;
/// How long a stop waits for open connections to finish what they are sending.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("`{0}` is not an address to listen on: give IP:PORT, e.g. 127.0.0.1:8765 (port 0 picks one)")]
    Address(String),
    #[error(
        "{0} is not a loopback address, so every request must carry a bearer token: pass --token-file PATH \
         or set HCP_MCP_TOKEN"
    )]
    TokenRequired(SocketAddr),
    #[error(
        "without a token, a server on loopback serves only the user who started it, and {0}: pass \
         --token-file PATH (or set HCP_MCP_TOKEN), or serve on a socket file with --unix PATH"
    )]
    PeersUnknown(String),
    #[error("the token file {path} cannot be read: {source}")]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the bearer token is shorter than {MIN_TOKEN} characters; use a long random one")]
    TokenTooShort,
    #[error(
        "HCP_MCP_TOKEN is set, and --oauth-issuer makes OAuth access tokens the only way in: the two auth modes \
         are exclusive, so unset HCP_MCP_TOKEN"
    )]
    TwoAuthModes,
    #[error(transparent)]
    OAuth(#[from] oauth::OAuthError),
    #[error("OAuth: {0}")]
    Discovery(#[from] oauth::DiscoveryError),
    #[error("--allow-origin `{0}` is not an origin: give scheme://host[:port], e.g. https://app.example.com")]
    Origin(String),
    #[error("{path} cannot be the server's socket: {reason}")]
    UnixPath { path: PathBuf, reason: String },
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: String,
        #[source]
        source: std::io::Error,
    },
}

/// A bearer token. Its `Debug` never shows it, and it is compared in constant time.
#[derive(Clone)]
pub struct Token(Arc<[u8]>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Whether `offered` is this token. Both sides are hashed first, so the time
    /// taken says nothing about the token, its length included.
    fn matches(&self, offered: &[u8]) -> bool {
        let expected = Sha256::digest(&self.0);
        let offered = Sha256::digest(offered);
        expected
            .iter()
            .zip(offered.iter())
            .fold(0_u8, |difference, (a, b)| difference | (a ^ b))
            == 0
    }
}

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A TCP address (`--http`).
    Tcp(SocketAddr),
    /// A unix socket file (`--unix`).
    Unix(PathBuf),
}

/// What `hcpx mcp --http` (or `--unix`) was asked for, resolved and checked.
#[derive(Debug, Clone)]
pub struct Settings {
    pub place: Place,
    pub token: Option<Token>,
    /// The OAuth resource server mode, exclusive with `token`.
    pub oauth: Option<OAuthSettings>,
    pub allow_hosts: Vec<String>,
    pub allow_origins: Vec<String>,
    pub session_idle: Duration,
    pub stateless: bool,
}

impl Settings {
    /// Resolves the command line's HTTP options: the token comes from `--token-file`
    /// or else `HCP_MCP_TOKEN` in `ctx`'s environment.
    pub fn resolve(args: &crate::cli::McpArgs, ctx: &Context) -> Result<Self, HttpError> {
        let place = match &args.unix {
            Some(path) => Place::Unix(path.clone()),
            None => {
                let raw = args.http.as_deref().unwrap_or_default();
                Place::Tcp(raw.parse().map_err(|_| HttpError::Address(raw.to_owned()))?)
            }
        };
        let token = match &args.token_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| HttpError::TokenFile {
                    path: path.clone(),
                    source,
                })?;
                Some(text.trim().to_owned())
            }
            None => ctx.var(TOKEN_VAR).map(|value| value.trim().to_owned()),
        }
        .filter(|token| !token.is_empty());
        let oauth = match (&args.oauth_issuer, &args.audience) {
            (Some(issuer), Some(audience)) => {
                if token.is_some() {
                    return Err(HttpError::TwoAuthModes);
                }
                let least = match args.scope {
                    crate::cli::ScopeArg::Read => oauth::Least::Read,
                    crate::cli::ScopeArg::Full => oauth::Least::Full,
                };
                Some(OAuthSettings::new(
                    issuer,
                    audience,
                    least,
                    &args.groups_claim,
                    args.read_only,
                )?)
            }
            _ => None,
        };
        if token.as_ref().is_some_and(|token| token.len() < MIN_TOKEN) {
            return Err(HttpError::TokenTooShort);
        }
        if let (Place::Tcp(address), None, None) = (&place, &token, &oauth) {
            if !address.ip().is_loopback() {
                return Err(HttpError::TokenRequired(*address));
            }
            peer::tcp_peers_known().map_err(HttpError::PeersUnknown)?;
        }
        for origin in &args.allow_origin {
            if origin != "null" && !origin.contains("://") {
                return Err(HttpError::Origin(origin.clone()));
            }
        }
        Ok(Self {
            place,
            token: token.map(|token| Token(Arc::from(token.into_bytes()))),
            oauth,
            allow_hosts: args.allow_host.clone(),
            allow_origins: args.allow_origin.clone(),
            session_idle: Duration::from_secs(args.session_idle_secs),
            stateless: args.stateless,
        })
    }
}

/// A listening socket, before it serves.
pub struct Listening {
    listener: listener::Listener,
    settings: Settings,
    /// The OAuth resource server, its issuer's keys found.
    gate: Option<Arc<oauth::Gate>>,
}

/// Where a bound server can be reached, as its start line says.
#[derive(Debug, Clone)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(address) => write!(f, "http://{address}/mcp"),
            Self::Unix(path) => write!(f, "http://localhost/mcp over the unix socket {}", path.display()),
        }
    }
}

/// Binds the address (port 0 picks a free one: see [`Listening::endpoint`]) or makes
/// the socket file; with OAuth, finds the issuer's keys first (a server that could
/// check no token does not start).
pub async fn bind(settings: Settings) -> Result<Listening, HttpError> {
    let gate = match &settings.oauth {
        Some(oauth) => Some(oauth::gate(oauth.clone()).await?),
        None => None,
    };
    let listener = match &settings.place {
        Place::Tcp(address) => listener::Listener::tcp(*address).await?,
        #[cfg(unix)]
        Place::Unix(path) => listener::Listener::unix(path)?,
        #[cfg(not(unix))]
        Place::Unix(path) => {
            return Err(HttpError::UnixPath {
                path: path.clone(),
                reason: "unix sockets exist only on Unix".to_owned(),
            });
        }
    };
    Ok(Listening {
        listener,
        settings,
        gate,
    })
}

/// The names a `Host` header may carry: loopback names, the bound address (unless it
/// is the wildcard) and any the user added. Any port.
fn allowed_hosts(address: Option<SocketAddr>, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(str::to_owned).to_vec();
    if let Some(address) = address.filter(|address| !address.ip().is_unspecified()) {
        hosts.push(address.ip().to_string());
    }
    hosts.extend(extra.iter().cloned());
    hosts
}

/// The browser origins accepted: the server's own (loopback names on the bound
/// port, or without a port on a unix socket) and any the user added. A request
/// without `Origin` (not from a browser) is not concerned.
fn allowed_origins(address: Option<SocketAddr>, extra: &[String]) -> Vec<String> {
    let Some(address) = address else {
        let mut origins = vec!["http://localhost".to_owned()];
        origins.extend(extra.iter().cloned());
        return origins;
    };
    let port = address.port();
    let mut origins = vec![
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
    ];
    match address.ip() {
        IpAddr::V4(ip) if !ip.is_unspecified() && !ip.is_loopback() => {
            origins.push(format!("http://{ip}:{port}"))
        }
        IpAddr::V6(ip) if !ip.is_unspecified() && !ip.is_loopback() => {
            origins.push(format!("http://[{ip}]:{port}"))
        }
        _ => {}
    }
    origins.extend(extra.iter().cloned());
    origins
}

/// Whether `path` asks for a discovery document (`/.well-known/…`, anywhere in the
/// path, as OAuth and OpenID clients put it before or after the endpoint's path).
fn is_discovery(path: &str) -> bool {
    path.split('/').any(|segment| segment == ".well-known")
}

/// Refuses a request without the right `Authorization: Bearer` (when a token is set).
/// A request for a discovery document is answered `404 Not Found` before the token
/// is looked at, and never reaches the endpoint: the server has no OAuth, and a 401
/// there sends hosts (Claude Code) into OAuth discovery and Dynamic Client
/// Registration instead of sending the header they were configured with.
async fn require_token(State(token): State<Option<Token>>, mut request: Request, next: Next) -> Response {
    if is_discovery(request.uri().path()) {
        return (StatusCode::NOT_FOUND, "Not Found: this server has no OAuth\n").into_response();
    }
    let Some(token) = token else {
        return next.run(request).await;
    };
    let offered = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if offered.is_some_and(|offered| token.matches(offered.trim().as_bytes())) {
        // Past this point nothing needs the token: it never reaches the MCP layer,
        // whose request context (and any log of it) holds the request's headers.
        request.headers_mut().remove(header::AUTHORIZATION);
        return next.run(request).await;
    }
    tracing::debug!("refused an HTTP request without the right bearer token");
    let mut refusal = (
        StatusCode::UNAUTHORIZED,
        "Unauthorized: a bearer token is required\n",
    )
        .into_response();
    refusal
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    refusal
}

/// A session ended with `DELETE` is answered `204 No Content` rather than rmcp's
/// `202 Accepted`: the session is gone at once, and clients (the Python SDK among
/// them) take anything but 200 or 204 for a failure.
async fn session_ended(request: Request, next: Next) -> Response {
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

impl Listening {
    /// Where the server is reached.
    pub fn endpoint(&self) -> Endpoint {
        match (&self.settings.place, self.listener.tcp_address()) {
            (Place::Unix(path), _) => Endpoint::Unix(path.clone()),
            (Place::Tcp(_), Some(address)) => Endpoint::Tcp(address),
            (Place::Tcp(address), None) => Endpoint::Tcp(*address),
        }
    }

    /// Serves until the server's cancellation token fires (main.rs fires it on
    /// SIGTERM or SIGINT), then stops: listening ends, running calls are cancelled
    /// (their children killed) and awaited, `subscriptions/listen` streams end with
    /// their final result, sessions end, and open connections get a moment to send
    /// what they hold.
    pub async fn serve(self, server: super::Server) -> Result<(), HttpError> {
        let Self {
            listener,
            settings,
            gate,
        } = self;
        let address = listener.tcp_address();
        let shutdown = server.base.cancel.clone();
        // rmcp cuts every event stream when its own token fires: it fires last, so
        // that the streams the stop ends (listen streams, calls) send their end first.
        let streams = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(!settings.stateless)
            .with_json_response(settings.stateless)
            .with_allowed_hosts(allowed_hosts(address, &settings.allow_hosts))
            .with_allowed_origins(allowed_origins(address, &settings.allow_origins))
            .enforce_origin_validation()
            .with_max_request_body_bytes(MAX_BODY)
            .with_cancellation_token(streams.clone());
        let sessions = Arc::new(sessions::BoundedSessions::new(
            limits::MAX_SESSIONS,
            settings.session_idle,
            limits::ANSWERS_KEPT,
        ));
        // Every session (and every stateless request) gets a clone: the same agent
        // context, policy and read-only setting, sharing the listeners and calls.
        let factory = server.clone();
        let service = StreamableHttpService::new(move || Ok(factory.clone()), sessions.clone(), config);
        let app = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn(session_ended))
            .layer(middleware::from_fn(limits::read_body));
        // One auth mode: OAuth access tokens, or the static token (or none).
        let app = match &gate {
            Some(oauth) => app.layer(middleware::from_fn_with_state(oauth.clone(), oauth::require)),
            None => app.layer(middleware::from_fn_with_state(
                settings.token.clone(),
                require_token,
            )),
        };
        // Outermost, before either auth mode: probes are answered unauthenticated
        // (OAuth's gate would answer them 401, the token's 401 too).
        let app = app.layer(middleware::from_fn_with_state(server.clone(), health::answer));
        server.probe_sandbox();
        let gate = peer::Gate::new(
            settings.token.is_some() || settings.oauth.is_some(),
            peer::Gate::effective_uid(),
        );
        let connections = connections::Connections::new(limits::connection_cap(limits::descriptor_limit()));
        connections.serve(&listener, app, gate, &shutdown).await;
        // No new connection from here on (and a socket file goes away).
        drop(listener);
        let _ = tokio::time::timeout(super::CALLS_GRACE, server.shut_down()).await;
        sessions.close_all().await;
        // An event stream still open does not hold the stop for long.
        let _ = tokio::time::timeout(CLOSE_GRACE, connections.closed()).await;
        streams.cancel();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_themselves() {
        let token = Token(Arc::from(&b"0123456789abcdef"[..]));
        assert!(token.matches(b"0123456789abcdef"));
        assert!(!token.matches(b"0123456789abcdeF"));
        assert!(!token.matches(b"0123456789abcde"));
        assert!(!token.matches(b""));
        assert_eq!(format!("{token:?}"), "Token(..)");
    }

    fn args(http: &str) -> crate::cli::McpArgs {
        crate::cli::McpArgs {
            read_only: false,
            http: Some(http.to_owned()),
            unix: None,
            token_file: None,
            allow_origin: Vec::new(),
            allow_host: Vec::new(),
            session_idle_secs: 60,
            stateless: false,
            state_key_file: None,
            oauth_issuer: None,
            audience: None,
            scope: crate::cli::ScopeArg::Read,
            groups_claim: "groups".to_owned(),
        }
    }

    fn ctx(vars: &[(&str, &str)]) -> Context {
        let vars = vars
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .chain([("HOME".to_owned(), "/h".to_owned())]);
        Context::new(vars, "/w".into(), false).unwrap()
    }

    #[test]
    fn a_token_is_needed_off_loopback() {
        // Loopback without a token: where the peer's user can be found.
        for loopback in ["127.0.0.1:0", "[::1]:0"] {
            let resolved = Settings::resolve(&args(loopback), &ctx(&[]));
            if peer::tcp_peers_known().is_ok() {
                assert!(resolved.is_ok(), "{resolved:?}");
            } else {
                assert!(
                    matches!(resolved, Err(HttpError::PeersUnknown(_))),
                    "{resolved:?}"
                );
            }
        }
        // A socket file needs none, and takes no address.
        let mut unix = args("");
        (unix.http, unix.unix) = (None, Some("/run/hcp.sock".into()));
        let resolved = Settings::resolve(&unix, &ctx(&[])).unwrap();
        assert_eq!(resolved.place, Place::Unix("/run/hcp.sock".into()));
        assert!(matches!(
            Settings::resolve(&args("0.0.0.0:0"), &ctx(&[])),
            Err(HttpError::TokenRequired(_))
        ));
        let with_token =
            Settings::resolve(&args("0.0.0.0:0"), &ctx(&[(TOKEN_VAR, "0123456789abcdef0123")])).unwrap();
        assert!(with_token.token.is_some());
        assert!(matches!(
            Settings::resolve(&args("0.0.0.0:0"), &ctx(&[(TOKEN_VAR, "short")])),
            Err(HttpError::TokenTooShort)
        ));
        assert!(matches!(
            Settings::resolve(&args("localhost"), &ctx(&[])),
            Err(HttpError::Address(_))
        ));
    }

    /// OAuth is the boundary off loopback as a token is, and never beside one.
    #[test]
    fn oauth_is_one_auth_mode_and_needs_no_token() {
        let mut oauth = args("0.0.0.0:0");
        oauth.oauth_issuer = Some("https://id.example.com".to_owned());
        oauth.audience = Some("https://hcp.example.com/mcp".to_owned());
        let resolved = Settings::resolve(&oauth, &ctx(&[])).unwrap();
        assert!(resolved.token.is_none());
        assert_eq!(
            resolved.oauth.map(|settings| settings.metadata_url()),
            Some("https://hcp.example.com/.well-known/oauth-protected-resource/mcp".to_owned())
        );
        assert!(matches!(
            Settings::resolve(&oauth, &ctx(&[(TOKEN_VAR, "0123456789abcdef0123")])),
            Err(HttpError::TwoAuthModes)
        ));
        oauth.audience = Some("http://hcp.example.com/mcp".to_owned());
        assert!(matches!(
            Settings::resolve(&oauth, &ctx(&[])),
            Err(HttpError::OAuth(oauth::OAuthError::Audience(_)))
        ));
    }

    #[test]
    fn the_wildcard_is_no_allowed_host() {
        let any: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        assert_eq!(allowed_hosts(Some(any), &[]), ["localhost", "127.0.0.1", "::1"]);
        let lan: SocketAddr = "10.1.2.3:8765".parse().unwrap();
        assert!(allowed_hosts(Some(lan), &[]).contains(&"10.1.2.3".to_owned()));
        assert!(allowed_origins(Some(lan), &[]).contains(&"http://10.1.2.3:8765".to_owned()));
        assert_eq!(allowed_hosts(None, &[]), ["localhost", "127.0.0.1", "::1"]);
        assert_eq!(allowed_origins(None, &[]), ["http://localhost"]);
    }
}
