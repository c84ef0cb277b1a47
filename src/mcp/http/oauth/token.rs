//! One access token checked: a JWT (RFC 9068) signed by the issuer with a key of its
//! key set, by an algorithm of [`ALGORITHMS`] (never `none`, never HMAC: a public
//! key is no secret), issued by the issuer, for this server's audience, not expired
//! (with [`LEEWAY`] for clocks apart), and naming a subject. What it grants: its
//! subject, its groups (from the configured claim) and its scopes. Everything else
//! is a refusal whose text is fixed: nothing of the token is echoed.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::keys::Keys;

/// The signature algorithms taken: RSA (PKCS#1 v1.5 and PSS), ECDSA on P-256 and
/// P-384, Ed25519.
pub(crate) const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];
/// Seconds a token's `exp` (and `nbf`) may be off, for clocks that differ.
pub(crate) const LEEWAY: u64 = 30;
/// The longest token read; a longer one is refused unread.
const MAX_TOKEN: usize = 16 * 1024;
/// The longest subject and group name taken.
const MAX_NAME: usize = 1024;
/// The most groups read from a token.
const MAX_GROUPS: usize = 256;

/// What a token must be, besides well signed.
#[derive(Debug, Clone)]
pub(super) struct Expect {
    pub issuer: String,
    pub audience: String,
    pub groups_claim: String,
}

/// What a valid token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Granted {
    pub subject: String,
    pub groups: Vec<String>,
    pub scopes: Vec<String>,
}

/// Why a token is refused: the `error_description` of the 401, fixed words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("the access token is not a JWT this server reads")]
    Malformed,
    #[error("the access token is signed with an algorithm this server does not take")]
    Algorithm,
    #[error("the access token carries a critical header this server does not understand")]
    Critical,
    #[error("the access token is signed with no key of the issuer")]
    UnknownKey,
    #[error("the access token's signature does not verify")]
    Signature,
    #[error("the access token has expired")]
    Expired,
    #[error("the access token is not valid yet")]
    NotYet,
    #[error("the access token is from another issuer")]
    Issuer,
    #[error("the access token is for another audience")]
    Audience,
    #[error("the access token lacks a claim this server needs (exp, iss, aud, sub)")]
    Claims,
}

/// Checks `token` against the issuer's `keys` and `expect`.
pub(super) async fn check(token: &str, keys: &Keys, expect: &Expect) -> Result<Granted, Refused> {
    // jsonwebtoken has no signature check of its own: ring's, installed once.
    super::verify::install();
    if !super::verify::installed() {
        return Err(Refused::Algorithm);
    }
    if token.len() > MAX_TOKEN {
        return Err(Refused::Malformed);
    }
    // `none`, and any algorithm name jsonwebtoken does not know, fails to parse.
    let header = jsonwebtoken::decode_header(token).map_err(|_| Refused::Malformed)?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(Refused::Algorithm);
    }
    if header.crit.is_some() {
        return Err(Refused::Critical);
    }
    // Only the issuer's key set counts: a key or a key URL in the header (`jwk`,
    // `jku`, `x5u`, `x5c`) is never looked at.
    let key = keys
        .key(header.kid.as_deref(), header.alg)
        .await
        .ok_or(Refused::UnknownKey)?;
    let mut validation = Validation::new(header.alg);
    validation.algorithms = vec![header.alg];
    validation.leeway = LEEWAY;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_issuer(&[&expect.issuer]);
    validation.set_audience(&[&expect.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data =
        jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|error| match error
            .kind()
        {
            ErrorKind::InvalidSignature => Refused::Signature,
            ErrorKind::ExpiredSignature => Refused::Expired,
            ErrorKind::ImmatureSignature => Refused::NotYet,
            ErrorKind::InvalidIssuer => Refused::Issuer,
            ErrorKind::InvalidAudience => Refused::Audience,
            ErrorKind::MissingRequiredClaim(_) => Refused::Claims,
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidKeyFormat => Refused::Algorithm,
            _ => Refused::Malformed,
        })?;
    granted(&data.claims, &expect.groups_claim)
}

/// The subject, groups and scopes of verified claims.
fn granted(claims: &Map<String, Value>, groups_claim: &str) -> Result<Granted, Refused> {
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|subject| !subject.is_empty() && subject.len() <= MAX_NAME)
        .ok_or(Refused::Claims)?
        .to_owned();
    let groups = names(claims.get(groups_claim))
        .into_iter()
        .filter(|group| !group.is_empty() && group.len() <= MAX_NAME)
        .take(MAX_GROUPS)
        .collect();
    // RFC 9068's `scope` (words), or `scp` (a list or words) as some issuers write it.
    let mut scopes = names(claims.get("scope"));
    scopes.extend(names(claims.get("scp")));
    Ok(Granted {
        subject,
        groups,
        scopes,
    })
}

/// A claim's names: the words of a string, or the strings of a list.
fn names(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::String(words)) => words.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
