//! `hcpx mcp --http ADDR --oauth-issuer URL --audience URL`: the server as an OAuth
//! 2.1 resource server (see docs/mcp.md), the other of the two auth modes (a static
//! token is the first; never both). It says where its authorization server is
//! (RFC 9728 protected resource metadata, at the root well-known URL and the one
//! with the endpoint's path, as hosts look in either), answers a request without a
//! good token `401` with `WWW-Authenticate: Bearer resource_metadata=…`, checks
//! each JWT access token ([`token`]) against the issuer's keys ([`keys`], fetched by
//! [`fetch`], verified by ring through [`verify`]), and one whose scopes are short
//! `403 insufficient_scope`. A token's subject is the call's caller: it reaches the
//! MCP server as [`Authorized`], and an HTTP session is bound to the subject that
//! opened it.
//!
//! Scopes: [`READ_SCOPE`] gives the read-only tool (every command that is not a
//! read denied), [`FULL_SCOPE`] everything the policy allows; `--scope full`
//! serves only tokens with the full scope.

mod fetch;
mod keys;
mod token;
mod verify;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use url::Url;

pub use keys::DiscoveryError;

use crate::policy::Caller;

/// The scope that gives the read-only tool.
pub const READ_SCOPE: &str = "hcp.read";
/// The scope that gives full use.
pub const FULL_SCOPE: &str = "hcp.full";
/// The claim groups are read from unless `--groups-claim` names another.
pub const GROUPS_CLAIM: &str = "groups";
/// Where RFC 9728 puts protected resource metadata.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The most session bindings kept (four times the sessions that may live): past
/// it the oldest goes, and its session, no longer bound, is refused.
const MAX_BINDINGS: usize = 4 * super::limits::MAX_SESSIONS;

/// What an OAuth caller's request carries to the MCP server: who it is, and
/// whether its token grants full use (else only the read-only tool).
#[derive(Debug, Clone)]
pub struct Authorized {
    pub caller: Arc<Caller>,
    pub full: bool,
}

/// The least a token must grant to be served (`--scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Least {
    /// [`READ_SCOPE`] (or [`FULL_SCOPE`]); the read scope alone gives the read-only tool.
    Read,
    /// [`FULL_SCOPE`].
    Full,
}

/// Why the OAuth options cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error(
        "--oauth-issuer `{0}` is not an issuer URL: give https://host[/path] (http only on loopback), no query"
    )]
    Issuer(String),
    #[error(
        "--audience `{0}` is not this server's URL: give the URL hosts connect to, e.g. https://hcp.example.com/mcp \
         (http only on loopback)"
    )]
    Audience(String),
    #[error("--groups-claim `{0}` is not a claim name")]
    GroupsClaim(String),
}

/// The OAuth options, checked.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// The issuer, exactly as its tokens and metadata name it.
    pub issuer: String,
    /// This server's URL: the audience its tokens must be for (RFC 8707), and the
    /// `resource` of its metadata.
    pub audience: String,
    pub least: Least,
    pub groups_claim: String,
    /// The server is read-only (`--read-only`): the read scope is all it needs.
    pub read_only: bool,
}

/// An issuer or audience URL: https, or http to loopback; no query or fragment.
fn web_url(text: &str) -> Option<Url> {
    let url = Url::parse(text).ok()?;
    (fetch::allowed(&url) && url.query().is_none() && url.fragment().is_none()).then_some(url)
}

impl OAuthSettings {
    pub fn new(
        issuer: &str,
        audience: &str,
        least: Least,
        groups_claim: &str,
        read_only: bool,
    ) -> Result<Self, OAuthError> {
        web_url(issuer).ok_or_else(|| OAuthError::Issuer(issuer.to_owned()))?;
        web_url(audience).ok_or_else(|| OAuthError::Audience(audience.to_owned()))?;
        if groups_claim.is_empty() || groups_claim.chars().any(char::is_control) {
            return Err(OAuthError::GroupsClaim(groups_claim.to_owned()));
        }
        Ok(Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            least,
            groups_claim: groups_claim.to_owned(),
            read_only,
        })
    }

    /// The audience's path, without a trailing slash (`/mcp`; empty at the root).
    fn resource_path(&self) -> String {
        Url::parse(&self.audience)
            .map(|url| url.path().trim_end_matches('/').to_owned())
            .unwrap_or_default()
    }

    /// Where the metadata is served: the root well-known path, and the one with the
    /// endpoint's path after it (RFC 9728 §3.1).
    fn metadata_paths(&self) -> Vec<String> {
        let mut paths = vec![METADATA_PATH.to_owned()];
        let path = self.resource_path();
        if !path.is_empty() {
            paths.push(format!("{METADATA_PATH}{path}"));
        }
        paths
    }

    /// The metadata's URL, as `WWW-Authenticate` gives it: on the audience's origin,
    /// with the endpoint's path.
    pub fn metadata_url(&self) -> String {
        match Url::parse(&self.audience) {
            Ok(url) => format!(
                "{}{METADATA_PATH}{}",
                url.origin().ascii_serialization(),
                self.resource_path()
            ),
            Err(_) => METADATA_PATH.to_owned(),
        }
    }

    /// The scopes a token needs to be served.
    fn needed(&self) -> &'static str {
        match (self.least, self.read_only) {
            (Least::Full, false) => FULL_SCOPE,
            _ => READ_SCOPE,
        }
    }

    /// The scopes a client should ask for.
    fn wanted(&self) -> &'static str {
        match (self.least, self.read_only) {
            (_, true) => READ_SCOPE,
            (Least::Full, false) => FULL_SCOPE,
            (Least::Read, false) => "hcp.read hcp.full",
        }
    }

    /// The protected resource metadata (RFC 9728).
    pub fn document(&self) -> serde_json::Value {
        let scopes: Vec<&str> = if self.read_only {
            vec![READ_SCOPE]
        } else {
            vec![READ_SCOPE, FULL_SCOPE]
        };
        serde_json::json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "hcpx",
        })
    }
}

/// The running resource server: its settings, the issuer's keys, and which
/// subject opened each HTTP session.
pub(super) struct Gate {
    settings: OAuthSettings,
    expect: token::Expect,
    keys: keys::Keys,
    sessions: Mutex<HashMap<String, (Arc<str>, Instant)>>,
}

/// Finds the issuer's keys (its metadata, then its key set) and makes the gate.
pub(super) async fn gate(settings: OAuthSettings) -> Result<Arc<Gate>, DiscoveryError> {
    verify::install();
    if !verify::installed() {
        return Err(DiscoveryError::Provider);
    }
    let keys = keys::Keys::discover(&settings.issuer, Arc::new(fetch::Client::default())).await?;
    Ok(Arc::new(Gate {
        expect: token::Expect {
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
            groups_claim: settings.groups_claim.clone(),
        },
        settings,
        keys,
        sessions: Mutex::default(),
    }))
}

impl Gate {
    /// A `401` or `403` with its `WWW-Authenticate` challenge.
    fn challenge(&self, status: StatusCode, error: Option<(&str, &str)>, scope: &str) -> Response {
        let mut value = format!("Bearer resource_metadata=\"{}\"", self.settings.metadata_url());
        if let Some((code, description)) = error {
            value.push_str(&format!(
                ", error=\"{code}\", error_description=\"{description}\""
            ));
        }
        value.push_str(&format!(", scope=\"{scope}\""));
        let body = match error {
            Some((_, description)) => format!("{}: {description}\n", status.canonical_reason().unwrap_or("")),
            None => "Unauthorized: an OAuth access token is required\n".to_owned(),
        };
        let mut response = (status, body).into_response();
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The subject that opened session `id`, if one did.
    fn bound(&self, id: &str) -> Option<Arc<str>> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.get(id).map(|(subject, _)| subject.clone())
    }

    /// Binds session `id` to `subject`, the oldest binding going past [`MAX_BINDINGS`].
    fn bind(&self, id: &str, subject: Arc<str>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions.len() >= MAX_BINDINGS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.to_owned(), (subject, Instant::now()));
    }
}

/// The metadata, at either of its paths; `None` for any other request.
fn metadata(gate: &Gate, request: &Request) -> Option<Response> {
    let path = request.uri().path();
    if !gate.settings.metadata_paths().iter().any(|served| served == path) {
        return None;
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Some((StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n").into_response());
    }
    let mut response = (
        [(header::CONTENT_TYPE, "application/json")],
        gate.settings.document().to_string(),
    )
        .into_response();
    // Public, and read by browser-based clients on other origins.
    response
        .headers_mut()
        .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    Some(response)
}

/// The bearer token of a request, if it has one (`Bearer`, any case, RFC 7235).
fn bearer(request: &Request) -> Option<&str> {
    let value = request.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The resource server's gate, in front of everything: the metadata is served; any
/// other discovery document is not there (`404`); every other request needs a
/// valid access token with the scope the server needs, and one in a session needs
/// the subject that opened it. The token goes no further than this.
pub(super) async fn require(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    if let Some(response) = metadata(&gate, &request) {
        return response;
    }
    if super::is_discovery(request.uri().path()) {
        return (StatusCode::NOT_FOUND, "Not Found\n").into_response();
    }
    let wanted = gate.settings.wanted();
    let Some(offered) = bearer(&request) else {
        return gate.challenge(StatusCode::UNAUTHORIZED, None, wanted);
    };
    let granted = match token::check(offered, &gate.keys, &gate.expect).await {
        Ok(granted) => granted,
        Err(refused) => {
            tracing::debug!("refused an HTTP request: {refused}");
            return gate.challenge(
                StatusCode::UNAUTHORIZED,
                Some(("invalid_token", &refused.to_string())),
                wanted,
            );
        }
    };
    let has = |scope: &str| granted.scopes.iter().any(|granted| granted == scope);
    let full = has(FULL_SCOPE);
    let needed = gate.settings.needed();
    if !(full || (needed == READ_SCOPE && has(READ_SCOPE))) {
        let description = format!("the access token does not grant {needed}");
        return gate.challenge(
            StatusCode::FORBIDDEN,
            Some(("insufficient_scope", &description)),
            needed,
        );
    }
    let subject: Arc<str> = Arc::from(granted.subject.as_str());
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && gate.bound(id).as_deref() != Some(&*subject)
    {
        // Another subject's session, or one no longer bound: as if there were none.
        tracing::debug!("refused a request in a session another subject opened");
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(Authorized {
        caller: Arc::new(Caller {
            subject: granted.subject,
            groups: granted.groups,
        }),
        full: full && !gate.settings.read_only,
    });
    let response = next.run(request).await;
    if session.is_none()
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
    {
        gate.bind(id, subject);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(audience: &str, least: Least, read_only: bool) -> OAuthSettings {
        OAuthSettings::new("https://id.example.com", audience, least, "groups", read_only).unwrap()
    }

    #[test]
    fn the_metadata_is_served_at_the_root_and_with_the_endpoints_path() {
        let at_mcp = settings("https://hcp.example.com/mcp", Least::Read, false);
        assert_eq!(
            at_mcp.metadata_paths(),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp"
            ]
        );
        assert_eq!(
            at_mcp.metadata_url(),
            "https://hcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let root = settings("https://hcp.example.com:8443/", Least::Read, false);
        assert_eq!(root.metadata_paths(), ["/.well-known/oauth-protected-resource"]);
        assert_eq!(
            root.metadata_url(),
            "https://hcp.example.com:8443/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            at_mcp.document(),
            serde_json::json!({
                "resource": "https://hcp.example.com/mcp",
                "authorization_servers": ["https://id.example.com"],
                "scopes_supported": ["hcp.read", "hcp.full"],
                "bearer_methods_supported": ["header"],
                "resource_name": "hcpx",
            })
        );
    }

    #[test]
    fn the_scopes_needed_and_asked_for() {
        let read = settings("https://h.example.com/mcp", Least::Read, false);
        assert_eq!((read.needed(), read.wanted()), (READ_SCOPE, "hcp.read hcp.full"));
        let full = settings("https://h.example.com/mcp", Least::Full, false);
        assert_eq!((full.needed(), full.wanted()), (FULL_SCOPE, FULL_SCOPE));
        let read_only = settings("https://h.example.com/mcp", Least::Full, true);
        assert_eq!((read_only.needed(), read_only.wanted()), (READ_SCOPE, READ_SCOPE));
        assert_eq!(
            read_only.document()["scopes_supported"],
            serde_json::json!(["hcp.read"])
        );
    }

    #[test]
    fn issuer_and_audience_are_web_urls() {
        let new =
            |issuer: &str, audience: &str| OAuthSettings::new(issuer, audience, Least::Read, "groups", false);
        assert!(
            new(
                "https://id.example.com/realms/team",
                "https://hcp.example.com/mcp"
            )
            .is_ok()
        );
        assert!(new("http://127.0.0.1:8080", "http://localhost:8765/mcp").is_ok());
        for (issuer, audience) in [
            ("http://id.example.com", "https://hcp.example.com/mcp"),
            ("id.example.com", "https://hcp.example.com/mcp"),
            ("https://id.example.com?x=1", "https://hcp.example.com/mcp"),
            ("https://id.example.com", "http://hcp.example.com/mcp"),
            ("https://id.example.com", "api://hcpx"),
            ("https://id.example.com", "https://hcp.example.com/mcp#x"),
        ] {
            assert!(new(issuer, audience).is_err(), "{issuer} {audience}");
        }
        assert!(matches!(
            OAuthSettings::new(
                "https://i.example.com",
                "https://h.example.com",
                Least::Read,
                "",
                false
            ),
            Err(OAuthError::GroupsClaim(_))
        ));
    }
}
