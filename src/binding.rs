//! Bound credentials (SPEC §6), stored in `$HCP_HOME/bindings.json`:
//!
//! ```json
//! {"version": 1, "packs": {"transit": {"TRANSIT_API_KEY": {"value": "…"}, "OTHER": {"fromEnv": "VAR"}}}}
//! ```
//!
//! A value bound with `--from-env` stores only the variable's name; the value is read
//! from the caller's environment at exec time. [`Secret`] never prints its value.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A credential value. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value itself, for the child's environment and the redactor only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How one key is bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Bound {
    Value(Secret),
    FromEnv(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Store {
    pub version: u32,
    pub packs: BTreeMap<String, BTreeMap<String, Bound>>,
}

#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    #[error("{path} cannot be parsed ({reason}); fix or remove it, then bind again")]
    Unparsable { path: PathBuf, reason: String },
    #[error("{path} cannot be read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Store {
    /// Reads the store; a missing file is an empty store. A file that cannot be
    /// parsed is an error, never silently replaced.
    pub fn load(path: &Path) -> Result<Self, BindingError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(BindingError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        // The reason names the position only: serde's text could quote a value.
        serde_json::from_str(&text).map_err(|error| BindingError::Unparsable {
            path: path.to_path_buf(),
            reason: format!("line {}, column {}", error.line(), error.column()),
        })
    }

    /// The value a key resolves to now, if any.
    pub fn resolve(&self, pack: &str, key: &str, env: &BTreeMap<String, String>) -> Option<Secret> {
        match self.packs.get(pack)?.get(key)? {
            Bound::Value(secret) => Some(secret.clone()),
            Bound::FromEnv(var) => env
                .get(var)
                .filter(|value| !value.is_empty())
                .map(|value| Secret(value.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new("hunter22".into());
        assert_eq!(format!("{secret:?}"), "Secret(***)");
        let bound = Bound::Value(secret);
        assert!(!format!("{bound:?}").contains("hunter22"));
    }

    #[test]
    fn resolves_values_and_env_names() {
        let store: Store = serde_json::from_str(
            r#"{"version":1,"packs":{"p":{"A":{"value":"va"},"B":{"fromEnv":"MY_B"}}}}"#,
        )
        .unwrap();
        let mut env = BTreeMap::new();
        assert_eq!(store.resolve("p", "A", &env).unwrap().expose(), "va");
        assert!(store.resolve("p", "B", &env).is_none());
        env.insert("MY_B".to_owned(), "vb".to_owned());
        assert_eq!(store.resolve("p", "B", &env).unwrap().expose(), "vb");
        assert!(store.resolve("q", "A", &env).is_none());
    }

    #[test]
    fn unparsable_store_is_an_error_without_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bindings.json");
        std::fs::write(
            &path,
            r#"{"version":1,"packs":{"p":{"A":{"value":"topsecret"}}},"#,
        )
        .unwrap();
        let error = Store::load(&path).unwrap_err().to_string();
        assert!(error.contains("cannot be parsed"), "{error}");
        assert!(!error.contains("topsecret"));
    }
}
