//! The certificate authority of this hcpx server: the child trusts it, and the
//! proxy presents leaves it signs for the hosts whose requests get a header.

use std::collections::HashMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use time::{Duration, OffsetDateTime};

use crate::tls;

/// The authority's subject; a leaf names it as its issuer.
const CA_NAME: &str = "hcpx egress proxy CA";
/// Leaves kept in memory per server; past it the cache starts again.
const LEAVES: usize = 1024;
/// A leaf is valid for 30 days and made again after one: a server may run for months.
const LEAF_KEPT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Why the authority could not be loaded, made or used.
#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a private key this server made: {source}")]
    BadKey { path: PathBuf, source: rcgen::Error },
    #[error("could not make a certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("could not use a leaf certificate: {0}")]
    Tls(#[from] rustls::Error),
}

/// The CA of this server: `Authority::load_or_make(dir)` keeps `ca.key` (0600) and
/// `ca.pem` in `dir` (made 0700), makes them on first use; `cert_pem()` gives the PEM
/// the child trusts. Leaf certificates per host (DNS name or IP SAN) made on demand
/// and cached in memory.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    leaves: Mutex<HashMap<String, (Instant, Arc<ServerConfig>)>>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").finish_non_exhaustive()
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> AuthorityError {
    let path = path.to_owned();
    move |source| AuthorityError::Io { action, path, source }
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, CA_NAME);
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
}

/// Writes `text` to `path` through a temporary file in the same folder (mode
/// 0600), so that a reader never sees half of it. With `replace` false an
/// existing file wins: `Ok(false)`.
fn write_new(dir: &Path, path: &Path, text: &str, replace: bool) -> Result<bool, AuthorityError> {
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io("create a file in", dir))?;
    file.write_all(text.as_bytes())
        .map_err(io("write", file.path()))?;
    file.as_file().sync_all().map_err(io("write", file.path()))?;
    if replace {
        file.persist(path).map_err(|e| io("write", path)(e.error))?;
        return Ok(true);
    }
    match file.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io("write", path)(e.error)),
    }
}

fn read(path: &Path) -> Result<Option<String>, AuthorityError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", path)(e)),
    }
}

impl Authority {
    /// Loads the authority kept in `dir`, or makes it there. Two servers starting
    /// at once agree on one key: the first to write it wins.
    pub fn load_or_make(dir: &Path) -> Result<Self, AuthorityError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io("create", dir))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("set the mode of", dir))?;
        let key_path = dir.join("ca.key");
        let cert_path = dir.join("ca.pem");
        let mut made = false;
        let key_pem = match read(&key_path)? {
            Some(pem) => pem,
            None => {
                let pem = KeyPair::generate()?.serialize_pem();
                made = write_new(dir, &key_path, &pem, false)?;
                if made {
                    pem
                } else {
                    read(&key_path)?.unwrap_or_default()
                }
            }
        };
        let key = KeyPair::from_pem(&key_pem).map_err(|source| AuthorityError::BadKey {
            path: key_path.clone(),
            source,
        })?;
        let cert_pem = match read(&cert_path)? {
            Some(pem) if !made => pem,
            _ => {
                let mut params = ca_params();
                let now = OffsetDateTime::now_utc();
                params.not_before = now - Duration::days(1);
                params.not_after = now + Duration::days(3650);
                let pem = params.self_signed(&key)?.pem();
                write_new(dir, &cert_path, &pem, true)?;
                pem
            }
        };
        Ok(Self {
            issuer: Issuer::new(ca_params(), key),
            cert_pem,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The PEM certificate that the child trusts.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A leaf certificate and key for `host` (a DNS name, or an IP literal without
    /// brackets), DER, signed by this authority.
    pub(crate) fn leaf(&self, host: &str) -> Result<(Vec<u8>, Vec<u8>), AuthorityError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![host.to_owned()])?;
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, host);
        params.distinguished_name = name;
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::days(1);
        params.not_after = now + Duration::days(30);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.der().to_vec(), key.serialize_der()))
    }

    /// The TLS server side for `host` (ALPN http/1.1 only), made once per host.
    pub(crate) fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, AuthorityError> {
        let key = host.to_ascii_lowercase();
        let kept = self.leaves.lock().ok().and_then(|l| l.get(&key).cloned());
        if let Some((made, config)) = kept
            && made.elapsed() < LEAF_KEPT
        {
            return Ok(config);
        }
        let (cert, private) = self.leaf(&key)?;
        let mut config = ServerConfig::builder_with_provider(tls::provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.into()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(private)),
            )?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        if let Ok(mut leaves) = self.leaves.lock() {
            if leaves.len() >= LEAVES {
                leaves.clear();
            }
            leaves.insert(key, (Instant::now(), Arc::clone(&config)));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use rustls::client::danger::ServerCertVerifier as _;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o777
    }

    fn verify(authority: &Authority, leaf: &[u8], name: &str) -> Result<(), rustls::Error> {
        let roots = tls::roots_from_pem(authority.cert_pem().as_bytes()).unwrap();
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), tls::provider())
                .build()
                .unwrap();
        verifier
            .verify_server_cert(
                &CertificateDer::from(leaf.to_vec()),
                &[],
                &ServerName::try_from(name.to_owned()).unwrap(),
                &[],
                UnixTime::now(),
            )
            .map(|_| ())
    }

    #[test]
    fn made_private_then_reused() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("egress");
        let first = Authority::load_or_make(&dir).unwrap();
        assert_eq!(
            (mode(&dir), mode(&dir.join("ca.key")), mode(&dir.join("ca.pem"))),
            (0o700, 0o600, 0o600)
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("ca.pem")).unwrap(),
            first.cert_pem()
        );
        assert!(first.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        let key = std::fs::read_to_string(dir.join("ca.key")).unwrap();
        let second = Authority::load_or_make(&dir).unwrap();
        assert_eq!(second.cert_pem(), first.cert_pem());
        assert_eq!(std::fs::read_to_string(dir.join("ca.key")).unwrap(), key);
        // A leaf the second load signs chains to the PEM the first one gave.
        let (leaf, _) = second.leaf("api.test").unwrap();
        verify(&first, &leaf, "api.test").unwrap();
    }

    #[test]
    fn a_folder_others_could_read_is_made_private() {
        let home = tempfile::tempdir().unwrap();
        std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Authority::load_or_make(home.path()).unwrap();
        assert_eq!(mode(home.path()), 0o700);
    }

    #[test]
    fn leaves_for_a_name_and_an_ip() {
        let home = tempfile::tempdir().unwrap();
        let authority = Authority::load_or_make(home.path()).unwrap();
        let (name, _) = authority.leaf("api.github.com").unwrap();
        verify(&authority, &name, "api.github.com").unwrap();
        assert!(verify(&authority, &name, "evil.test").is_err());
        let (ip, _) = authority.leaf("127.0.0.1").unwrap();
        verify(&authority, &ip, "127.0.0.1").unwrap();
        assert!(verify(&authority, &ip, "127.0.0.2").is_err());
        // Another server's authority is not trusted for it.
        let other = tempfile::tempdir().unwrap();
        let stranger = Authority::load_or_make(other.path()).unwrap();
        assert!(verify(&stranger, &name, "api.github.com").is_err());
    }

    #[test]
    fn server_configs_are_cached_per_host() {
        let home = tempfile::tempdir().unwrap();
        let authority = Authority::load_or_make(home.path()).unwrap();
        let a = authority.server_config("a.test").unwrap();
        let again = authority.server_config("A.test").unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(a.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[test]
    fn a_key_that_is_not_one_is_refused() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("ca.key"), "not a key").unwrap();
        let error = Authority::load_or_make(home.path()).unwrap_err();
        assert!(matches!(error, AuthorityError::BadKey { .. }), "{error}");
    }
}
