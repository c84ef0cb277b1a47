//! `$HCP_HOME/adopted.json`: what `adopt` wrote into host files, so that it can tell
//! its own entries from a person's and undo only its own. Per host file (the path of
//! the bytes, links followed) it keeps the file before adopt first wrote it (as a
//! digest: the bytes themselves stay in `NAME.bak`), the digest of what adopt last
//! wrote, and per key the entry adopt wrote and the one that was there before. An
//! entry is adopt's own while it equals what adopt wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::AdoptError;
use crate::state;

/// The record's file name under `$HCP_HOME`.
pub const FILE: &str = crate::layout::ADOPTED_FILE;

/// The only layout this build reads and writes.
const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Record {
    pub version: u32,
    /// By the host file's path.
    pub files: BTreeMap<String, FileRecord>,
}

impl Default for Record {
    fn default() -> Self {
        Self {
            version: VERSION,
            files: BTreeMap::new(),
        }
    }
}

/// One host file adopt has written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileRecord {
    /// The file before adopt first wrote it, kept only while every change since was
    /// adopt's; then taking out the last entry can give those bytes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<Original>,
    /// The digest of the file as adopt last wrote it.
    pub after: String,
    pub entries: Vec<EntryRecord>,
}

/// What the file was before adopt first wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Original {
    /// There was no file: adopt created it.
    Absent,
    /// The digest of its bytes, which `NAME.bak` holds.
    Sha256(String),
}

/// One entry adopt wrote under `path` + `key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryRecord {
    pub path: Vec<String>,
    pub key: String,
    /// The entry as adopt wrote it.
    pub wrote: Value,
    /// What was under the key before adopt (replaced with `--force`); absent when
    /// there was nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Previous>,
    /// How many of `path`'s objects or tables, from the top, were there before;
    /// taking the entry out leaves those even when empty.
    pub path_existed: usize,
}

/// An entry that was under the key before adopt; wrapped so that a `null` entry
/// stays apart from no entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Previous {
    pub value: Value,
}

/// `sha256-<base64>` of some bytes.
pub fn digest(bytes: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes))
    )
}

fn path_in(home: &Path) -> PathBuf {
    home.join(FILE)
}

impl Record {
    /// The record in `home`; an empty one when there is none yet. A record that
    /// cannot be read is an error, never replaced.
    pub fn load(home: &Path) -> Result<Self, AdoptError> {
        let path = path_in(home);
        let failure = |why: String| AdoptError::Record {
            path: path.clone(),
            why,
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(error) => return Err(failure(error.to_string())),
        };
        let record: Self = serde_json::from_str(&text).map_err(|error| failure(error.to_string()))?;
        if record.version != VERSION {
            return Err(failure(format!(
                "version {} is not the {VERSION} this hcpx reads",
                record.version
            )));
        }
        Ok(record)
    }

    /// Writes the record (mode 0600: a previous entry may carry a person's
    /// settings). The caller holds the state lock.
    pub fn save(&self, home: &Path) -> Result<(), AdoptError> {
        state::ensure_home(home)?;
        let mut text = serde_json::to_string_pretty(self).map_err(|error| AdoptError::Record {
            path: path_in(home),
            why: error.to_string(),
        })?;
        text.push('\n');
        state::write_atomic(&path_in(home), text.as_bytes(), 0o600)?;
        Ok(())
    }

    /// What adopt wrote under `path` + `key` in `file`.
    pub fn entry(&self, file: &str, path: &[String], key: &str) -> Option<&EntryRecord> {
        self.files
            .get(file)?
            .entries
            .iter()
            .find(|entry| entry.path == path && entry.key == key)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_record_round_trips_in_its_documented_shape() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Record::load(dir.path()).unwrap(), Record::default());
        let mut record = Record::default();
        record.files.insert(
            "/h/.cursor/mcp.json".to_owned(),
            FileRecord {
                original: Some(Original::Sha256(digest(b"{}\n"))),
                after: digest(b"x"),
                entries: vec![EntryRecord {
                    path: vec!["mcpServers".to_owned()],
                    key: "hcp".to_owned(),
                    wrote: json!({ "command": "hcpx" }),
                    previous: Some(Previous { value: Value::Null }),
                    path_existed: 0,
                }],
            },
        );
        record.save(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({ "version": 1, "files": { "/h/.cursor/mcp.json": {
                "original": { "sha256": digest(b"{}\n") },
                "after": digest(b"x"),
                "entries": [{ "path": ["mcpServers"], "key": "hcp", "wrote": { "command": "hcpx" }, "previous": { "value": null }, "pathExisted": 0 }],
            } } })
        );
        assert_eq!(Record::load(dir.path()).unwrap(), record);
        std::fs::write(dir.path().join(FILE), "{").unwrap();
        assert!(matches!(Record::load(dir.path()), Err(AdoptError::Record { .. })));
        std::fs::write(dir.path().join(FILE), "{\"version\":2,\"files\":{}}").unwrap();
        assert!(matches!(Record::load(dir.path()), Err(AdoptError::Record { .. })));
    }
}
