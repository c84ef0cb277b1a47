//! The key set: discovery, which key a token gets, and how often the issuer is
//! asked again, against a stand-in issuer that counts its fetches.

use std::collections::HashMap;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::*;

const ISSUER: &str = "https://id.example.com";

/// An issuer's documents by URL, and how many times the key set was fetched.
#[derive(Default)]
struct Stand {
    documents: StdMutex<HashMap<String, Value>>,
    jwks_fetches: AtomicUsize,
}

impl Stand {
    fn with(keys: Value) -> Arc<Self> {
        let stand = Self::default();
        stand.set(
            "https://id.example.com/.well-known/openid-configuration",
            json!({ "issuer": ISSUER, "jwks_uri": "https://id.example.com/jwks" }),
        );
        stand.set("https://id.example.com/jwks", keys);
        Arc::new(stand)
    }

    fn set(&self, url: &str, document: Value) {
        self.documents.lock().unwrap().insert(url.to_owned(), document);
    }

    fn fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }
}

impl Source for Stand {
    fn json<'a>(
        &'a self,
        url: &'a Url,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, FetchError>> + Send + 'a>> {
        Box::pin(async move {
            if url.path() == "/jwks" {
                self.jwks_fetches.fetch_add(1, Ordering::SeqCst);
            }
            self.documents
                .lock()
                .unwrap()
                .get(url.as_str())
                .cloned()
                .ok_or_else(|| FetchError::Failed {
                    url: url.to_string(),
                    reason: "answered 404 Not Found".to_owned(),
                })
        })
    }
}

fn rsa(kid: &str) -> Value {
    json!({ "kty": "RSA", "kid": kid, "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB" })
}

fn p256(kid: &str) -> Value {
    json!({ "kty": "EC", "crv": "P-256", "kid": kid,
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" })
}

async fn keys(stand: &Arc<Stand>, gap: Duration, max_age: Duration) -> Keys {
    Keys::discover_with(ISSUER, stand.clone(), gap, max_age)
        .await
        .unwrap()
}

#[tokio::test]
async fn discovery_needs_the_issuer_to_name_itself_and_a_key() {
    let stand = Stand::with(json!({ "keys": [rsa("a")] }));
    assert!(Keys::discover(ISSUER, stand.clone()).await.is_ok());
    assert_eq!(stand.fetches(), 1);
    let error =
        |stand: Arc<Stand>| async move { Keys::discover(ISSUER, stand).await.err().unwrap().to_string() };
    let posing = Stand::with(json!({ "keys": [rsa("a")] }));
    posing.set(
        "https://id.example.com/.well-known/openid-configuration",
        json!({ "issuer": "https://evil.example.com", "jwks_uri": "https://id.example.com/jwks" }),
    );
    assert_eq!(
        error(posing).await,
        "the issuer's metadata at https://id.example.com/.well-known/openid-configuration names the issuer \
         \"https://evil.example.com\", not \"https://id.example.com\": give --oauth-issuer exactly as the issuer \
         names itself"
    );
    let plain = Stand::with(json!({ "keys": [rsa("a")] }));
    plain.set(
        "https://id.example.com/.well-known/openid-configuration",
        json!({ "issuer": ISSUER, "jwks_uri": "http://id.example.com/jwks" }),
    );
    assert!(error(plain).await.contains("has no usable jwks_uri"));
    // Only symmetric and encryption keys: nothing to verify a token with.
    let useless = Stand::with(json!({ "keys": [
        { "kty": "oct", "kid": "h", "k": "c2VjcmV0" },
        { "kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB" },
        { "kty": "RSA", "kid": "ops", "key_ops": ["encrypt"], "n": "AQAB", "e": "AQAB" },
        { "kty": "WHAT", "kid": "w" },
    ] }));
    assert_eq!(
        error(useless).await,
        "the issuer's key set at https://id.example.com/jwks holds no signing key hcpx can use (no RSA, P-256, \
         P-384 or Ed25519 key for signatures)"
    );
    // RFC 8414's place, when OpenID Connect's has nothing.
    let oauth = Stand::with(json!({ "keys": [rsa("a")] }));
    let openid = oauth
        .documents
        .lock()
        .unwrap()
        .remove("https://id.example.com/.well-known/openid-configuration")
        .unwrap();
    oauth.set(
        "https://id.example.com/.well-known/oauth-authorization-server",
        openid,
    );
    assert!(Keys::discover(ISSUER, oauth).await.is_ok());
}

#[tokio::test]
async fn a_token_gets_the_key_of_its_kid_only_when_it_fits_its_alg() {
    let stand = Stand::with(json!({ "keys": [
        rsa("r"), p256("e"),
        { "kty": "RSA", "kid": "named", "alg": "PS256", "n": "AQAB", "e": "AQAB" },
    ] }));
    let keys = keys(&stand, Duration::from_secs(3600), MAX_AGE).await;
    assert!(keys.key(Some("r"), Algorithm::RS256).await.is_some());
    assert!(keys.key(Some("r"), Algorithm::PS512).await.is_some());
    assert!(keys.key(Some("e"), Algorithm::ES256).await.is_some());
    // The wrong family, the wrong curve, an alg other than the key names.
    assert!(keys.key(Some("r"), Algorithm::ES256).await.is_none());
    assert!(keys.key(Some("e"), Algorithm::RS256).await.is_none());
    assert!(keys.key(Some("e"), Algorithm::ES384).await.is_none());
    assert!(keys.key(Some("r"), Algorithm::HS256).await.is_none());
    assert!(keys.key(Some("named"), Algorithm::PS256).await.is_some());
    assert!(keys.key(Some("named"), Algorithm::RS256).await.is_none());
    // Without a kid: the one key that fits, or none when two do.
    assert!(keys.key(None, Algorithm::ES256).await.is_some());
    assert!(
        keys.key(None, Algorithm::RS256).await.is_some(),
        "`named` is for PS256 only"
    );
    assert!(keys.key(None, Algorithm::PS256).await.is_none());
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_set_again_at_most_once_per_gap() {
    let stand = Stand::with(json!({ "keys": [rsa("old")] }));
    let keys = keys(&stand, Duration::from_millis(300), MAX_AGE).await;
    assert_eq!(stand.fetches(), 1);
    // Right after start, within the gap: no fetch, and the unknown kid is refused.
    assert!(keys.key(Some("new"), Algorithm::RS256).await.is_none());
    assert_eq!(stand.fetches(), 1);
    // The issuer rotates its keys; past the gap a token with the new kid fetches once.
    stand.set("https://id.example.com/jwks", json!({ "keys": [rsa("new")] }));
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(keys.key(Some("new"), Algorithm::RS256).await.is_some());
    assert_eq!(stand.fetches(), 2);
    // A flood of made-up kids: one fetch per gap, whatever their number.
    for n in 0..50 {
        assert!(
            keys.key(Some(&format!("made-up-{n}")), Algorithm::RS256)
                .await
                .is_none()
        );
    }
    assert_eq!(stand.fetches(), 2);
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(keys.key(Some("made-up"), Algorithm::RS256).await.is_none());
    assert_eq!(stand.fetches(), 3);
    // The old key was withdrawn with the rotation.
    assert!(keys.key(Some("old"), Algorithm::RS256).await.is_none());
    assert!(keys.key(Some("new"), Algorithm::RS256).await.is_some());
    assert_eq!(stand.fetches(), 3, "a known kid needs no fetch");
}

#[tokio::test]
async fn an_old_set_is_fetched_again_and_a_failed_fetch_keeps_it() {
    let stand = Stand::with(json!({ "keys": [rsa("a")] }));
    let keys = keys(&stand, Duration::ZERO, Duration::from_millis(100)).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    // The issuer withdrew `a`: once the set is old, `a` is no longer taken.
    stand.set("https://id.example.com/jwks", json!({ "keys": [rsa("b")] }));
    assert!(keys.key(Some("a"), Algorithm::RS256).await.is_none());
    assert_eq!(stand.fetches(), 2);
    // The issuer cannot be reached: the set in hand stays.
    stand
        .documents
        .lock()
        .unwrap()
        .remove("https://id.example.com/jwks");
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(keys.key(Some("b"), Algorithm::RS256).await.is_some());
    assert_eq!(stand.fetches(), 3);
}
