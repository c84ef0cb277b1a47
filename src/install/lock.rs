//! The lock file, `$HCP_HOME/packs.lock.json`: what is installed, from where, with
//! which digest. Never overwritten when it cannot be parsed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::InstallError;
use crate::state;

/// One entry of `packs.lock.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Locked {
    pub id: String,
    pub version: String,
    pub source: String,
    pub integrity: String,
    pub installed_at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    pub version: u32,
    pub packs: BTreeMap<String, Locked>,
}

impl LockFile {
    pub fn load(path: &Path) -> Result<Self, InstallError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|error| InstallError::LockUnparsable {
                path: path.to_path_buf(),
                line: error.line(),
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self {
                version: 1,
                packs: BTreeMap::new(),
            }),
            Err(source) => Err(InstallError::Io {
                what: format!("cannot read {}", path.display()),
                source,
            }),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), InstallError> {
        let mut text = serde_json::to_vec_pretty(self).unwrap_or_default();
        text.push(b'\n');
        Ok(state::write_atomic(path, &text, 0o600)?)
    }
}
