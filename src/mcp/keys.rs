//! The state key file (`hcpx mcp --state-key-file PATH`, see docs/mcp.md): the keys
//! that seal confirmation states (2026-07-28), shared by every replica of a server
//! so that a question one replica asked is answered on any other. One key a line,
//! `ID BASE64`; the first line's key seals, every key opens. The file is read again
//! whenever it changes (its identity, size or time), so keys rotate without a
//! restart and without dropping a confirmation in flight: a state sealed with a
//! key still listed opens until it expires. A file that no longer reads leaves the
//! keys read last in force, and the server says it is not ready.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use base64::Engine as _;
use rmcp::model::RequestStateCodec;

/// The largest key file read: a few keys take a few hundred bytes.
const MAX_FILE: u64 = 64 * 1024;
/// The most keys a file may hold (the current one and those still draining).
const MAX_KEYS: usize = 16;
/// The longest key id.
const MAX_ID: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyFileError {
    #[error("the state key file {path} cannot be read: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("the state key file {path}, line {line}: {reason}")]
    Line {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("the state key file {path} holds no key: write a line `ID KEY` (see docs/mcp.md)")]
    Empty { path: PathBuf },
}

/// What identifies one version of the file: device, inode, size and change time.
type Stamp = (u64, u64, u64, Option<SystemTime>, Option<SystemTime>);

/// The keys as last read.
struct Loaded {
    stamp: Stamp,
    codec: Arc<RequestStateCodec>,
    /// The last reading failed: why (the keys of the reading before stay in force).
    broken: Option<KeyFileError>,
}

/// The state key file, read again when it changes.
pub struct StateKeys {
    path: PathBuf,
    loaded: Mutex<Loaded>,
}

impl std::fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKeys")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl StateKeys {
    /// Reads the key file at `path`; a server does not start on one that is missing
    /// or malformed.
    pub fn load(path: &Path) -> Result<Self, KeyFileError> {
        let (stamp, codec) = read(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            loaded: Mutex::new(Loaded {
                stamp,
                codec: Arc::new(codec),
                broken: None,
            }),
        })
    }

    /// The codec of the keys in force, after reading the file again if it changed.
    pub(crate) fn codec(&self) -> Arc<RequestStateCodec> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        self.refresh(&mut loaded);
        loaded.codec.clone()
    }

    /// Whether the file, as it is now, holds keys in force; why not when it does not.
    pub(crate) fn check(&self) -> Result<(), KeyFileError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        self.refresh(&mut loaded);
        loaded.broken.clone().map_or(Ok(()), Err)
    }

    fn refresh(&self, loaded: &mut Loaded) {
        let now = stamp_of(&self.path);
        if now.as_ref().ok() == Some(&loaded.stamp) && loaded.broken.is_none() {
            return;
        }
        match read(&self.path) {
            Ok((stamp, codec)) => {
                if loaded.broken.is_some() || stamp != loaded.stamp {
                    tracing::info!("read the state key file {} again", self.path.display());
                }
                *loaded = Loaded {
                    stamp,
                    codec: Arc::new(codec),
                    broken: None,
                };
            }
            Err(error) => {
                if loaded.broken.as_ref() != Some(&error) {
                    tracing::warn!("{error}; the keys read before stay in force");
                }
                loaded.broken = Some(error);
            }
        }
    }
}

fn stamp_of(path: &Path) -> Result<Stamp, KeyFileError> {
    let metadata = std::fs::metadata(path).map_err(|error| read_error(path, &error))?;
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt as _;
        (metadata.dev(), metadata.ino())
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0, 0);
    Ok((
        dev,
        ino,
        metadata.len(),
        metadata.modified().ok(),
        metadata.created().ok(),
    ))
}

fn read_error(path: &Path, error: &std::io::Error) -> KeyFileError {
    KeyFileError::Read {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// Reads and parses the file (following links: a Kubernetes secret volume swaps a
/// link to rotate).
fn read(path: &Path) -> Result<(Stamp, RequestStateCodec), KeyFileError> {
    use std::io::Read as _;
    let stamp = stamp_of(path)?;
    let file = std::fs::File::open(path).map_err(|error| read_error(path, &error))?;
    let mut text = String::new();
    file.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|error| read_error(path, &error))?;
    if text.len() as u64 > MAX_FILE {
        return Err(KeyFileError::Read {
            path: path.to_path_buf(),
            reason: format!("it is larger than {MAX_FILE} bytes"),
        });
    }
    Ok((stamp, parse(path, &text)?))
}

/// The keys of the file's `text`: one `ID KEY` a line (blank lines and `#` comments
/// skipped), the first one sealing.
fn parse(path: &Path, text: &str) -> Result<RequestStateCodec, KeyFileError> {
    let line_error = |line: usize, reason: &str| KeyFileError::Line {
        path: path.to_path_buf(),
        line,
        reason: reason.to_owned(),
    };
    let mut keys: Vec<(String, Vec<u8>)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(id), Some(key), None) = (words.next(), words.next(), words.next()) else {
            return Err(line_error(number, "expected two words, `ID KEY`"));
        };
        if id.len() > MAX_ID
            || !id
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"._-".contains(&byte))
        {
            return Err(line_error(
                number,
                "a key id is 1 to 64 letters, digits, `.`, `_` or `-`",
            ));
        }
        let Some(bytes) = decode(key) else {
            return Err(line_error(number, "the key is not base64"));
        };
        if bytes.len() < RequestStateCodec::MIN_KEY_LENGTH {
            return Err(line_error(
                number,
                "the key is shorter than 32 bytes: make one with `head -c 32 /dev/urandom | base64`",
            ));
        }
        if keys.iter().any(|(known, _)| known == id) {
            return Err(line_error(number, "this key id is listed twice"));
        }
        if keys.len() == MAX_KEYS {
            return Err(line_error(number, "at most 16 keys may be listed"));
        }
        keys.push((id.to_owned(), bytes));
    }
    let Some((active, _)) = keys.first() else {
        return Err(KeyFileError::Empty {
            path: path.to_path_buf(),
        });
    };
    let active = active.clone();
    RequestStateCodec::new_with_keyring(active, keys).map_err(|error| KeyFileError::Read {
        path: path.to_path_buf(),
        reason: error.to_string(),
    })
}

/// A key in standard or URL-safe base64, padded or not.
fn decode(key: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(key).ok())
}

#[cfg(test)]
mod tests {
    use rmcp::model::SealOptions;

    use super::*;

    const KEY_A: &str = "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE="; // 32 × "a"
    const KEY_B: &str = "YmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmI="; // 32 × "b"

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("keys");
        // A new file each time (as a secret volume or an atomic rename does).
        let temp = dir.join("keys.new");
        std::fs::write(&temp, text).unwrap();
        std::fs::rename(&temp, &path).unwrap();
        path
    }

    fn seal(keys: &StateKeys, data: &[u8]) -> String {
        keys.codec()
            .seal_with(b"x", &SealOptions::new().associated_data(data))
    }

    fn opens(keys: &StateKeys, state: &str, data: &[u8]) -> bool {
        keys.codec().open_with(state, data).is_ok()
    }

    #[test]
    fn the_first_key_seals_and_every_listed_key_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), &format!("# current first\nold {KEY_A}\n"));
        let keys = StateKeys::load(&path).unwrap();
        let old_state = seal(&keys, b"call");
        assert!(old_state.starts_with("rs2."), "{old_state}");
        // Rotation: a new key first, the old one kept while its states drain.
        write(dir.path(), &format!("new {KEY_B}\nold {KEY_A}\n"));
        assert!(opens(&keys, &old_state, b"call"), "a state of the old key");
        assert!(!opens(&keys, &old_state, b"another call"));
        let new_state = seal(&keys, b"call");
        assert_ne!(new_state, old_state);
        // A replica that still has only the old key cannot open the new state, so
        // the new key is listed second first (docs/mcp.md says so).
        let other = tempfile::tempdir().unwrap();
        let lagging = StateKeys::load(&write(other.path(), &format!("old {KEY_A}\n"))).unwrap();
        assert!(!opens(&lagging, &new_state, b"call"));
        write(other.path(), &format!("old {KEY_A}\nnew {KEY_B}\n"));
        assert!(opens(&lagging, &new_state, b"call"));
        // The old key removed: its states no longer open.
        write(dir.path(), &format!("new {KEY_B}\n"));
        assert!(!opens(&keys, &old_state, b"call"));
        assert!(opens(&keys, &new_state, b"call"));
    }

    #[test]
    fn a_broken_file_keeps_the_keys_in_force_and_is_not_ready() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), &format!("k1 {KEY_A}\n"));
        let keys = StateKeys::load(&path).unwrap();
        let state = seal(&keys, b"c");
        write(dir.path(), "k1 not-base64!\n");
        assert!(matches!(keys.check(), Err(KeyFileError::Line { line: 1, .. })));
        assert!(opens(&keys, &state, b"c"), "the keys read before stay");
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(keys.check(), Err(KeyFileError::Read { .. })));
        write(dir.path(), &format!("k1 {KEY_A}\n"));
        assert_eq!(keys.check(), Ok(()));
    }

    #[test]
    fn malformed_files_are_refused_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let short = base64::engine::general_purpose::STANDARD.encode([7_u8; 31]);
        for (text, expected) in [
            (String::new(), "holds no key"),
            ("# only a comment\n\n".to_owned(), "holds no key"),
            (format!("{KEY_A}\n"), "line 1: expected two words"),
            (format!("a b {KEY_A}\n"), "line 1: expected two words"),
            (format!("k/1 {KEY_A}\n"), "line 1: a key id is"),
            (
                format!("k1 {short}\n"),
                "line 1: the key is shorter than 32 bytes",
            ),
            (
                format!("k1 {KEY_A}\n\nk1 {KEY_B}\n"),
                "line 3: this key id is listed twice",
            ),
        ] {
            let path = write(dir.path(), &text);
            let error = StateKeys::load(&path).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let missing = StateKeys::load(&dir.path().join("nothing")).unwrap_err();
        assert!(matches!(missing, KeyFileError::Read { .. }), "{missing}");
        // URL-safe base64 without padding is a key too.
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xfb_u8; 40]);
        assert!(StateKeys::load(&write(dir.path(), &format!("k {url}\n"))).is_ok());
    }
}
