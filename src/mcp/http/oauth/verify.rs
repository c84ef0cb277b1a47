//! jsonwebtoken's signature checks, done by ring: its `CryptoProvider` interface
//! (made for exactly this: a crypto library of the program's own choosing) with
//! ring's verification algorithms, already in the build for rustls. Nothing here
//! is cryptography: each supported JWS algorithm is handed to ring's verifier of the
//! same name, with the key as jsonwebtoken decoded it from the JWK. Verification
//! only: the server signs nothing, and an HMAC algorithm has no verifier at all, so
//! a token signed with a public key as an HMAC secret cannot pass.

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::signature;
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature::{self as ring_sig, UnparsedPublicKey, VerificationAlgorithm};

/// The provider, installed once per process before any token is decoded.
static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: |_| Err(unsupported()),
        rsa_pub_components_from_public_key: |_| Err(unsupported()),
        ec_pub_components_from_private_key: |_, _| Err(unsupported()),
        ed_pub_components_from_private_key: |_, _| Err(unsupported()),
        compute_digest: |_, _| Err(unsupported()),
    },
};

/// Makes ring jsonwebtoken's provider for this process (a second call, or another
/// provider installed first, changes nothing: then that one must be ring's too,
/// which [`installed`] checks).
pub(super) fn install() {
    let _ = PROVIDER.install_default();
}

/// Whether the provider in force is this one.
pub(super) fn installed() -> bool {
    CryptoProvider::try_get_default().is_some_and(|provider| std::ptr::eq(provider, &PROVIDER))
}

fn unsupported() -> Error {
    ErrorKind::InvalidAlgorithm.into()
}

fn no_signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Err(unsupported())
}

/// ring's verifier for `algorithm` with `key`; none for HMAC.
fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    let ring: &'static dyn VerificationAlgorithm = match algorithm {
        Algorithm::RS256 => &ring_sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &ring_sig::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &ring_sig::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &ring_sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &ring_sig::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &ring_sig::RSA_PSS_2048_8192_SHA512,
        Algorithm::ES256 => &ring_sig::ECDSA_P256_SHA256_FIXED,
        Algorithm::ES384 => &ring_sig::ECDSA_P384_SHA384_FIXED,
        Algorithm::EdDSA => &ring_sig::ED25519,
        // HMAC (a public key is no secret), and any algorithm added later.
        _ => return Err(unsupported()),
    };
    if key.family() != algorithm.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    Ok(Box::new(Ring {
        algorithm: *algorithm,
        ring,
        key: key.clone(),
    }))
}

/// One check: the JWS algorithm, ring's verifier for it, the public key.
struct Ring {
    algorithm: Algorithm,
    ring: &'static dyn VerificationAlgorithm,
    key: DecodingKey,
}

impl signature::Verifier<Vec<u8>> for Ring {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let checked = match self.key.kind() {
            // A JWK's RSA key: its modulus and exponent.
            DecodingKeyKind::RsaModulusExponent { n, e } => match rsa_parameters(self.algorithm) {
                Some(parameters) => {
                    ring_sig::RsaPublicKeyComponents { n, e }.verify(parameters, message, signature)
                }
                None => return Err(signature::Error::new()),
            },
            // A JWK's EC point (uncompressed) or Ed25519 key, as ring takes them.
            DecodingKeyKind::SecretOrDer(bytes) => {
                UnparsedPublicKey::new(self.ring, bytes).verify(message, signature)
            }
        };
        checked.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Ring {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

/// ring's RSA parameters for an RSA JWS algorithm (the same as [`verifier`] picks).
fn rsa_parameters(algorithm: Algorithm) -> Option<&'static ring_sig::RsaParameters> {
    Some(match algorithm {
        Algorithm::RS256 => &ring_sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &ring_sig::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &ring_sig::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &ring_sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &ring_sig::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &ring_sig::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}
