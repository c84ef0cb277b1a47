//! The issuer's signing keys: where they are (its metadata's `jwks_uri`, found at
//! start), the set as last fetched, and when to fetch it again. A token whose `kid`
//! is not in the set makes one fetch (the issuer rotated its keys), at most one per
//! [`REFRESH_GAP`] whatever tokens arrive, so that made-up key ids cannot turn the
//! server into a flood toward the issuer; a set older than [`MAX_AGE`] is fetched
//! again when next used (a key the issuer withdrew stops counting). A failed fetch
//! keeps the set there was.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;
use tokio::sync::Mutex;
use url::Url;

use super::fetch::{Client, FetchError, allowed};

/// The least time between two fetches of the key set.
pub(super) const REFRESH_GAP: Duration = Duration::from_secs(10);
/// How long a fetched key set is used before it is fetched again.
pub(super) const MAX_AGE: Duration = Duration::from_secs(15 * 60);

/// Where a document comes from: the network, or (in tests) a stand-in that counts.
pub(super) trait Source: Send + Sync {
    fn json<'a>(
        &'a self,
        url: &'a Url,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, FetchError>> + Send + 'a>>;
}

impl Source for Client {
    fn json<'a>(
        &'a self,
        url: &'a Url,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, FetchError>> + Send + 'a>> {
        Box::pin(Client::json(self, url))
    }
}

/// Why the issuer's keys could not be found at start.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("the issuer's metadata: {0}")]
    Fetch(#[from] FetchError),
    #[error(
        "the issuer's metadata at {url} names the issuer {found:?}, not {expected:?}: give --oauth-issuer exactly \
         as the issuer names itself"
    )]
    Issuer {
        url: String,
        found: String,
        expected: String,
    },
    #[error("the issuer's metadata at {0} has no usable jwks_uri (https, or http on loopback)")]
    NoKeys(String),
    #[error("another JWT crypto provider than ring's is installed in this process")]
    Provider,
    #[error("the issuer's key set at {url} holds no signing key hcpx can use ({why})")]
    Empty { url: String, why: String },
}

/// The key set as last fetched.
struct Fetched {
    keys: Vec<Jwk>,
    at: Instant,
}

/// The issuer's keys, fetched as needed.
pub(super) struct Keys {
    jwks_uri: Url,
    source: Arc<dyn Source>,
    fetched: std::sync::RwLock<Arc<Fetched>>,
    /// [`REFRESH_GAP`] and [`MAX_AGE`] (shorter in tests).
    gap: Duration,
    max_age: Duration,
    /// When the set was last asked for: the gate of [`REFRESH_GAP`], held while
    /// one fetch runs so that others wait for it instead of fetching too.
    last_try: Mutex<Instant>,
}

/// Where an issuer's metadata may be: OpenID Connect's place, then RFC 8414's.
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut urls = Vec::new();
    let mut openid = issuer.clone();
    openid.set_path(&format!("{path}/.well-known/openid-configuration"));
    urls.push(openid);
    let mut oauth = issuer.clone();
    oauth.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    urls.push(oauth);
    urls
}

impl Keys {
    /// Finds the issuer's key set through its metadata (which must name `issuer`
    /// exactly) and fetches it once; fails when there is no usable key.
    pub(super) async fn discover(issuer: &str, source: Arc<dyn Source>) -> Result<Self, DiscoveryError> {
        Self::discover_with(issuer, source, REFRESH_GAP, MAX_AGE).await
    }

    pub(super) async fn discover_with(
        issuer: &str,
        source: Arc<dyn Source>,
        gap: Duration,
        max_age: Duration,
    ) -> Result<Self, DiscoveryError> {
        let issuer_url = Url::parse(issuer).map_err(|_| DiscoveryError::NoKeys(issuer.to_owned()))?;
        let mut last = None;
        let mut metadata = None;
        for url in metadata_urls(&issuer_url) {
            match source.json(&url).await {
                Ok(document) => {
                    metadata = Some((url, document));
                    break;
                }
                Err(error) => last = Some(error),
            }
        }
        let (url, metadata) = match (metadata, last) {
            (Some(found), _) => found,
            (None, Some(error)) => return Err(error.into()),
            (None, None) => return Err(DiscoveryError::NoKeys(issuer.to_owned())),
        };
        let named = metadata["issuer"].as_str().unwrap_or_default();
        if named != issuer {
            return Err(DiscoveryError::Issuer {
                url: url.to_string(),
                found: named.to_owned(),
                expected: issuer.to_owned(),
            });
        }
        let jwks_uri = metadata["jwks_uri"]
            .as_str()
            .and_then(|uri| Url::parse(uri).ok())
            .filter(allowed)
            .ok_or_else(|| DiscoveryError::NoKeys(url.to_string()))?;
        let keys = Self {
            jwks_uri,
            source,
            fetched: std::sync::RwLock::new(Arc::new(Fetched {
                keys: Vec::new(),
                at: Instant::now(),
            })),
            gap,
            max_age,
            last_try: Mutex::new(Instant::now()),
        };
        let set = keys.fetch().await?;
        if set.is_empty() {
            return Err(DiscoveryError::Empty {
                url: keys.jwks_uri.to_string(),
                why: "no RSA, P-256, P-384 or Ed25519 key for signatures".to_owned(),
            });
        }
        keys.store(set);
        Ok(keys)
    }

    fn current(&self) -> Arc<Fetched> {
        self.fetched.read().map_or_else(
            |poisoned| poisoned.into_inner().clone(),
            |fetched| fetched.clone(),
        )
    }

    fn store(&self, keys: Vec<Jwk>) {
        let fresh = Arc::new(Fetched {
            keys,
            at: Instant::now(),
        });
        match self.fetched.write() {
            Ok(mut fetched) => *fetched = fresh,
            Err(poisoned) => *poisoned.into_inner() = fresh,
        }
    }

    /// The usable signing keys of the set at `jwks_uri`.
    async fn fetch(&self) -> Result<Vec<Jwk>, FetchError> {
        let document = self.source.json(&self.jwks_uri).await?;
        Ok(usable(&document))
    }

    /// The key that verifies a token signed with `alg` under `kid`: from the set in
    /// hand, else (an unknown `kid`, or a set past [`MAX_AGE`]) from a fresh set,
    /// at most one fetch per [`REFRESH_GAP`].
    pub(super) async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let fetched = self.current();
        let stale = fetched.at.elapsed() > self.max_age;
        if !stale && let Some(key) = pick(&fetched.keys, kid, alg) {
            return Some(key);
        }
        self.refresh(&fetched).await;
        pick(&self.current().keys, kid, alg)
    }

    /// Fetches the set again unless it changed since `seen` or was tried within
    /// [`REFRESH_GAP`]; one fetch at a time.
    async fn refresh(&self, seen: &Arc<Fetched>) {
        let mut last_try = self.last_try.lock().await;
        if !Arc::ptr_eq(&self.current(), seen) || last_try.elapsed() < self.gap {
            return;
        }
        *last_try = Instant::now();
        match self.fetch().await {
            Ok(keys) if !keys.is_empty() => self.store(keys),
            Ok(_) => tracing::warn!(
                "the issuer's key set at {} holds no usable key; the old one stays",
                self.jwks_uri
            ),
            Err(error) => {
                tracing::warn!("the issuer's key set could not be fetched again ({error}); the old one stays")
            }
        }
    }
}

/// The keys of a JWK set a token may be verified with: public keys for signatures
/// (no `use` but `sig`, no `key_ops` without `verify`) of the families hcpx takes,
/// never a symmetric one. A key it cannot read is left out, not the whole set.
fn usable(document: &Value) -> Vec<Jwk> {
    let Some(keys) = document["keys"].as_array() else {
        return Vec::new();
    };
    keys.iter()
        .filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok())
        .filter(|jwk| {
            let for_signing = match &jwk.common.public_key_use {
                None | Some(PublicKeyUse::Signature) => true,
                Some(_) => false,
            };
            let may_verify = jwk
                .common
                .key_operations
                .as_ref()
                .is_none_or(|operations| operations.contains(&KeyOperations::Verify));
            for_signing && may_verify && family(jwk).is_some()
        })
        .collect()
}

/// What a JWK can verify: its family and, for an EC key, the one algorithm of its
/// curve.
fn family(jwk: &Jwk) -> Option<(AlgorithmFamily, Option<Algorithm>)> {
    match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Some((AlgorithmFamily::Rsa, None)),
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Some((AlgorithmFamily::Ec, Some(Algorithm::ES256))),
            EllipticCurve::P384 => Some((AlgorithmFamily::Ec, Some(Algorithm::ES384))),
            _ => None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            Some((AlgorithmFamily::Ed, Some(Algorithm::EdDSA)))
        }
        _ => None,
    }
}

/// Whether `jwk` may verify a signature made with `alg`: its family (and curve)
/// fits, and the algorithm it names, if it names one, is `alg`.
fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    let Some((family, only)) = family(jwk) else {
        return false;
    };
    let named = jwk.common.key_algorithm.is_none_or(|named| same(named, alg));
    family == alg.family() && only.is_none_or(|only| only == alg) && named
}

/// Whether a JWK's `alg` is the JWS algorithm `alg` (both by their JOSE names).
fn same(named: KeyAlgorithm, alg: Algorithm) -> bool {
    let name = |value: Result<Value, _>| value.ok().and_then(|value| value.as_str().map(str::to_owned));
    let (named, alg) = (name(serde_json::to_value(named)), name(serde_json::to_value(alg)));
    named.is_some() && named == alg
}

/// The key for a token's `kid` and `alg`: the key with that id, when it fits `alg`;
/// without a `kid`, the one key of the set that fits, if exactly one does.
fn pick(keys: &[Jwk], kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
    let chosen = match kid {
        Some(kid) => keys
            .iter()
            .find(|jwk| jwk.common.key_id.as_deref() == Some(kid))
            .filter(|jwk| fits(jwk, alg))?,
        None => {
            let mut fitting = keys.iter().filter(|jwk| fits(jwk, alg));
            match (fitting.next(), fitting.next()) {
                (Some(only), None) => only,
                _ => return None,
            }
        }
    };
    DecodingKey::from_jwk(chosen).ok()
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
