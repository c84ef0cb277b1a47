//! Tokens made here and signed with ring (Ed25519 and P-256 keys made for the
//! test), each attack on its own: the tests against a real issuer are in
//! tests/it/oauth.rs.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{self as ring_sig, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};
use url::Url;

use super::*;
use crate::mcp::http::oauth::fetch::FetchError;
use crate::mcp::http::oauth::keys::Source;

const ISSUER: &str = "https://id.example.com";
const AUDIENCE: &str = "https://hcp.example.com/mcp";

/// The issuer's metadata and key set.
struct Issuer(Value);

impl Source for Issuer {
    fn json<'a>(
        &'a self,
        url: &'a Url,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, FetchError>> + Send + 'a>> {
        Box::pin(async move {
            Ok(match url.path() {
                "/jwks" => self.0.clone(),
                _ => json!({ "issuer": ISSUER, "jwks_uri": "https://id.example.com/jwks" }),
            })
        })
    }
}

/// Signing keys: the issuer's Ed25519 and P-256 keys, and one of an attacker's.
struct Signers {
    ed: Ed25519KeyPair,
    ec: EcdsaKeyPair,
    rogue: Ed25519KeyPair,
}

fn signers() -> Signers {
    let rng = SystemRandom::new();
    let ed = |rng: &SystemRandom| {
        Ed25519KeyPair::from_pkcs8(Ed25519KeyPair::generate_pkcs8(rng).unwrap().as_ref()).unwrap()
    };
    let alg = &ring_sig::ECDSA_P256_SHA256_FIXED_SIGNING;
    let ec_pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    Signers {
        ed: ed(&rng),
        ec: EcdsaKeyPair::from_pkcs8(alg, ec_pkcs8.as_ref(), &rng).unwrap(),
        rogue: ed(&rng),
    }
}

fn ed_jwk(pair: &Ed25519KeyPair, kid: &str) -> Value {
    json!({ "kty": "OKP", "crv": "Ed25519", "kid": kid, "use": "sig", "x": B64.encode(pair.public_key().as_ref()) })
}

fn ec_jwk(pair: &EcdsaKeyPair, kid: &str) -> Value {
    let point = pair.public_key().as_ref();
    json!({ "kty": "EC", "crv": "P-256", "kid": kid,
            "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65]) })
}

async fn keys(signers: &Signers) -> Keys {
    let set = json!({ "keys": [ed_jwk(&signers.ed, "ed"), ec_jwk(&signers.ec, "ec")] });
    Keys::discover_with(
        ISSUER,
        Arc::new(Issuer(set)),
        Duration::from_secs(3600),
        Duration::from_secs(3600),
    )
    .await
    .unwrap()
}

fn expect() -> Expect {
    Expect {
        issuer: ISSUER.to_owned(),
        audience: AUDIENCE.to_owned(),
        groups_claim: "groups".to_owned(),
    }
}

fn now() -> i64 {
    i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap()
}

/// Claims a good token has: this issuer, this audience, alice, ten minutes.
fn claims() -> Value {
    json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now(), "exp": now() + 600,
            "scope": "hcp.read hcp.full", "groups": ["admins", "dev"] })
}

/// `header.claims.signature`, signed by `sign` over the first two parts.
fn token(header: &Value, claims: &Value, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
    let message = format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    );
    let signature = sign(message.as_bytes());
    format!("{message}.{}", B64.encode(signature))
}

fn ed_token(pair: &Ed25519KeyPair, header: &Value, claims: &Value) -> String {
    token(header, claims, |message| pair.sign(message).as_ref().to_vec())
}

fn ed_header() -> Value {
    json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "ed" })
}

async fn checked(token: &str, signers: &Signers) -> Result<Granted, Refused> {
    check(token, &keys(signers).await, &expect()).await
}

#[tokio::test]
async fn a_good_token_grants_its_subject_groups_and_scopes() {
    let signers = signers();
    let good = ed_token(&signers.ed, &ed_header(), &claims());
    assert_eq!(
        checked(&good, &signers).await,
        Ok(Granted {
            subject: "alice".to_owned(),
            groups: vec!["admins".to_owned(), "dev".to_owned()],
            scopes: vec!["hcp.read".to_owned(), "hcp.full".to_owned()],
        })
    );
    let rng = SystemRandom::new();
    let ec = token(&json!({ "alg": "ES256", "kid": "ec" }), &claims(), |message| {
        signers.ec.sign(&rng, message).unwrap().as_ref().to_vec()
    });
    assert_eq!(checked(&ec, &signers).await.unwrap().subject, "alice");
    // `aud` as a list that holds ours; `scp` as a list; groups under another claim.
    let mut other = claims();
    other["aud"] = json!(["https://other.example.com", AUDIENCE]);
    other["scp"] = json!(["hcp.read"]);
    other["scope"] = Value::Null;
    other["roles"] = json!("ops");
    let granted = check(
        &ed_token(&signers.ed, &ed_header(), &other),
        &keys(&signers).await,
        &Expect {
            groups_claim: "roles".to_owned(),
            ..expect()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        (granted.groups, granted.scopes),
        (vec!["ops".to_owned()], vec!["hcp.read".to_owned()])
    );
}

#[tokio::test]
async fn expiry_counts_with_a_small_leeway() {
    let signers = signers();
    let at = |exp: i64| {
        let mut claims = claims();
        claims["exp"] = json!(exp);
        ed_token(&signers.ed, &ed_header(), &claims)
    };
    let lag = i64::try_from(LEEWAY).unwrap();
    assert!(
        checked(&at(now() - lag / 2), &signers).await.is_ok(),
        "within the leeway"
    );
    assert_eq!(
        checked(&at(now() - lag - 5), &signers).await,
        Err(Refused::Expired)
    );
    assert_eq!(checked(&at(now() - 3600), &signers).await, Err(Refused::Expired));
    let mut early = claims();
    early["nbf"] = json!(now() + 600);
    assert_eq!(
        checked(&ed_token(&signers.ed, &ed_header(), &early), &signers).await,
        Err(Refused::NotYet)
    );
}

#[tokio::test]
async fn another_issuer_or_audience_is_refused() {
    let signers = signers();
    for (claim, value, refused) in [
        ("iss", json!("https://evil.example.com"), Refused::Issuer),
        ("iss", json!("https://id.example.com/"), Refused::Issuer),
        ("aud", json!("https://hcp.example.com"), Refused::Audience),
        (
            "aud",
            json!(["https://hcp.example.com/mcp/", "x"]),
            Refused::Audience,
        ),
    ] {
        let mut claims = claims();
        claims[claim] = value.clone();
        let token = ed_token(&signers.ed, &ed_header(), &claims);
        assert_eq!(checked(&token, &signers).await, Err(refused), "{claim}: {value}");
    }
    for missing in ["iss", "aud", "sub", "exp"] {
        let mut claims = claims();
        claims.as_object_mut().unwrap().remove(missing);
        let token = ed_token(&signers.ed, &ed_header(), &claims);
        assert_eq!(
            checked(&token, &signers).await,
            Err(Refused::Claims),
            "without {missing}"
        );
    }
    let mut empty = claims();
    empty["sub"] = json!("");
    let token = ed_token(&signers.ed, &ed_header(), &empty);
    assert_eq!(checked(&token, &signers).await, Err(Refused::Claims));
}

#[tokio::test]
async fn no_algorithm_but_the_allowed_ones_and_no_key_but_the_issuers() {
    let signers = signers();
    // `none`: no signature at all.
    let none = format!(
        "{}.{}.",
        B64.encode(json!({ "alg": "none", "kid": "ed" }).to_string()),
        B64.encode(claims().to_string())
    );
    assert_eq!(checked(&none, &signers).await, Err(Refused::Malformed));
    // HS256 keyed with the issuer's public key, which anyone can read.
    let public = signers.ed.public_key().as_ref().to_vec();
    let hs = token(&json!({ "alg": "HS256", "kid": "ed" }), &claims(), |message| {
        ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &public), message)
            .as_ref()
            .to_vec()
    });
    assert_eq!(checked(&hs, &signers).await, Err(Refused::Algorithm));
    // The attacker's own key, under an id the issuer does not have, or in the header.
    let rogue = ed_token(
        &signers.rogue,
        &json!({ "alg": "EdDSA", "kid": "rogue" }),
        &claims(),
    );
    assert_eq!(checked(&rogue, &signers).await, Err(Refused::UnknownKey));
    let embedded = ed_token(
        &signers.rogue,
        &json!({ "alg": "EdDSA", "kid": "rogue", "jwk": ed_jwk(&signers.rogue, "rogue") }),
        &claims(),
    );
    assert_eq!(checked(&embedded, &signers).await, Err(Refused::UnknownKey));
    // ... or under the issuer's own key id: the signature does not verify.
    let posing = ed_token(&signers.rogue, &ed_header(), &claims());
    assert_eq!(checked(&posing, &signers).await, Err(Refused::Signature));
    // A key of the issuer, for another algorithm than the token says.
    let crossed = ed_token(&signers.ed, &json!({ "alg": "EdDSA", "kid": "ec" }), &claims());
    assert_eq!(checked(&crossed, &signers).await, Err(Refused::UnknownKey));
    // A good token whose claims were changed after signing.
    let good = ed_token(&signers.ed, &ed_header(), &claims());
    let mut forged = claims();
    forged["sub"] = json!("root");
    let parts: Vec<&str> = good.split('.').collect();
    let altered = format!("{}.{}.{}", parts[0], B64.encode(forged.to_string()), parts[2]);
    assert_eq!(checked(&altered, &signers).await, Err(Refused::Signature));
}

#[tokio::test]
async fn what_cannot_be_read_is_refused_unread() {
    let signers = signers();
    for garbage in ["", "a.b", "a.b.c", "not a token", "....", &"x".repeat(20_000)] {
        assert_eq!(
            checked(garbage, &signers).await,
            Err(Refused::Malformed),
            "{garbage:.20}"
        );
    }
    let critical = ed_token(
        &signers.ed,
        &json!({ "alg": "EdDSA", "kid": "ed", "crit": ["exp"] }),
        &claims(),
    );
    assert_eq!(checked(&critical, &signers).await, Err(Refused::Critical));
    let long = "s".repeat(2000);
    let mut claims = claims();
    claims["sub"] = json!(long);
    assert_eq!(
        checked(&ed_token(&signers.ed, &ed_header(), &claims), &signers).await,
        Err(Refused::Claims)
    );
}
