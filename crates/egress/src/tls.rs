//! TLS toward real servers: the roots the proxy trusts, and the one crypto provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::{ClientConfig, RootCertStore};

/// Why the roots could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("could not read the certificates in {path}: {source}")]
    Pem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{path} holds no certificate hcpx can use")]
    NoneIn { path: PathBuf },
    #[error("no root certificates: the system has none that load ({system}), and no extra roots were given")]
    NoRoots { system: String },
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The one crypto provider: ring.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM text as roots.
#[cfg(test)]
pub(crate) fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, rustls::pki_types::pem::Error> {
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>()?;
    roots.add_parsable_certificates(certs);
    Ok(roots)
}

/// How the proxy verifies real servers: the system roots (rustls-native-certs) plus `extra` PEM roots.
#[derive(Debug)]
pub struct Upstream {
    config: Arc<ClientConfig>,
}

impl Upstream {
    /// The system's roots (as rustls-native-certs finds them: `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` of hcpx's own environment, else the platform's store) and
    /// the certificates of the PEM file `extra`.
    pub fn new(extra: Option<&Path>) -> Result<Self, TlsError> {
        let system = rustls_native_certs::load_native_certs();
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(system.certs);
        if let Some(path) = extra {
            let pem = |source| TlsError::Pem {
                path: path.to_owned(),
                source,
            };
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(pem)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(pem)?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(TlsError::NoneIn {
                    path: path.to_owned(),
                });
            }
        }
        if roots.is_empty() {
            let system = system
                .errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            return Err(TlsError::NoRoots { system });
        }
        Self::with_roots(roots)
    }

    fn with_roots(roots: RootCertStore) -> Result<Self, TlsError> {
        let mut config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The client configuration: these roots, ring, HTTP/1.1 by ALPN.
    pub fn config(&self) -> Arc<ClientConfig> {
        Arc::clone(&self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_roots_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no pem here\n").unwrap();
        let error = Upstream::new(Some(&empty)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{} holds no certificate hcpx can use", empty.display())
        );
        let missing = dir.path().join("missing.pem");
        assert!(matches!(
            Upstream::new(Some(&missing)).unwrap_err(),
            TlsError::Pem { .. }
        ));
    }

    #[test]
    fn extra_roots_are_added() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let pem = params.self_signed(&key).unwrap().pem();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, &pem).unwrap();
        let upstream = Upstream::new(Some(&path)).unwrap();
        assert_eq!(upstream.config().alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert_eq!(roots_from_pem(pem.as_bytes()).unwrap().len(), 1);
    }
}
