//! Bound credentials (see docs/bindings.md), stored in `$HCP_HOME/bindings.json`:
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

pub(crate) use hcpx_process::Secret;

/// How one key is bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) enum Stored {
    Value(Secret),
    FromEnv(String),
}

/// Which pack a credential was given to: where it was installed from and what its
/// files were. A built-in pack is named by its source alone (`builtin:ID`): it is
/// part of this binary, which is what enforces bindings in the first place, so an
/// upgrade of hcpx keeps its bindings; an installed pack that overrides it has
/// another source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Identity {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.integrity {
            Some(integrity) => {
                let short: String = integrity.chars().take(19).collect();
                write!(f, "{} ({short}…)", self.source)
            }
            None => f.write_str(&self.source),
        }
    }
}

/// One stored binding: how the key is bound, and the pack it was bound for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Binding {
    #[serde(flatten)]
    pub bound: Stored,
    /// Absent in stores written before bindings recorded their pack; such a
    /// binding is held back until a person confirms it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<Identity>,
}

/// What a key resolves to for the pack installed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    Set(Secret),
    /// Not bound, or bound to an environment variable that is empty or unset.
    Unset,
    /// Bound for another pack (another source or other content) with this id, or
    /// before bindings recorded their pack: not passed until a person confirms.
    HeldBack {
        bound_for: Option<Identity>,
    },
}

impl Resolved {
    /// Why a held-back key is held back, for `pack` now installed as `current`.
    pub(crate) fn held_back_reason(
        bound_for: Option<&Identity>,
        pack: &str,
        key: &str,
        current: &Identity,
    ) -> String {
        match bound_for {
            Some(before) if before.source != current.source => format!(
                "{key} is held back: it was bound for {pack} from {}, and the {pack} installed now is from {}",
                before.source, current.source
            ),
            Some(_) => format!(
                "{key} is held back: it was bound for {pack} from {}, and its files have changed since",
                current.source
            ),
            None => format!(
                "{key} is held back: it was bound before hcpx recorded which pack a credential is for"
            ),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Store {
    pub version: u32,
    pub packs: BTreeMap<String, BTreeMap<String, Binding>>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum BindingError {
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
    pub(crate) fn load(path: &Path) -> Result<Self, BindingError> {
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

    pub(crate) fn get(&self, pack: &str, key: &str) -> Option<&Binding> {
        self.packs.get(pack)?.get(key)
    }

    /// Every value the store holds or names (`--from-env` variables set in `env`),
    /// for every pack, with its key: what redaction hides from any pack's output,
    /// whichever pack found it.
    pub(crate) fn every_value(&self, env: &BTreeMap<String, String>) -> Vec<(String, Secret)> {
        self.packs
            .values()
            .flat_map(|keys| keys.iter())
            .filter_map(|(key, binding)| match &binding.bound {
                Stored::Value(secret) => Some((key.clone(), secret.clone())),
                Stored::FromEnv(var) => env
                    .get(var)
                    .filter(|value| !value.is_empty())
                    .map(|value| (key.clone(), Secret::new(value.clone()))),
            })
            .collect()
    }

    /// Whether the pack has any stored binding (so its identity is worth computing).
    pub(crate) fn has_any(&self, pack: &str) -> bool {
        self.packs.get(pack).is_some_and(|keys| !keys.is_empty())
    }

    /// What a key resolves to now, for the pack installed as `current`: its value
    /// only when it was bound for that very pack.
    pub(crate) fn resolve(
        &self,
        pack: &str,
        key: &str,
        env: &BTreeMap<String, String>,
        current: &Identity,
    ) -> Resolved {
        let Some(binding) = self.get(pack, key) else {
            return Resolved::Unset;
        };
        if binding.pack.as_ref() != Some(current) {
            return Resolved::HeldBack {
                bound_for: binding.pack.clone(),
            };
        }
        match &binding.bound {
            Stored::Value(secret) => Resolved::Set(secret.clone()),
            Stored::FromEnv(var) => env
                .get(var)
                .filter(|value| !value.is_empty())
                .map_or(Resolved::Unset, |value| Resolved::Set(Secret::new(value.clone()))),
        }
    }

    /// Moves the pack's bindings that were given to `from` over to `to`: a person's
    /// update of a pack from the same place. Returns the keys moved.
    pub(crate) fn carry_over(&mut self, pack: &str, from: &Identity, to: &Identity) -> Vec<String> {
        let Some(keys) = self.packs.get_mut(pack) else {
            return Vec::new();
        };
        keys.iter_mut()
            .filter(|(_, binding)| binding.pack.as_ref() == Some(from))
            .map(|(key, binding)| {
                binding.pack = Some(to.clone());
                key.clone()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new("hunter22".into());
        assert_eq!(format!("{secret:?}"), "Secret(***)");
        let bound = Binding {
            bound: Stored::Value(secret),
            pack: None,
        };
        assert!(!format!("{bound:?}").contains("hunter22"));
    }

    fn identity(source: &str, integrity: Option<&str>) -> Identity {
        Identity {
            source: source.into(),
            integrity: integrity.map(Into::into),
        }
    }

    #[test]
    fn resolves_values_and_env_names_only_for_the_pack_they_were_bound_for() {
        let store: Store = serde_json::from_str(
            r#"{"version":1,"packs":{"p":{
                "A":{"value":"va","pack":{"source":"/src/p","integrity":"sha512-1"}},
                "B":{"fromEnv":"MY_B","pack":{"source":"/src/p","integrity":"sha512-1"}},
                "C":{"value":"vc"}}}}"#,
        )
        .unwrap();
        let here = identity("/src/p", Some("sha512-1"));
        let mut env = BTreeMap::new();
        assert_eq!(
            store.resolve("p", "A", &env, &here),
            Resolved::Set(Secret::new("va".into()))
        );
        assert_eq!(store.resolve("p", "B", &env, &here), Resolved::Unset);
        env.insert("MY_B".to_owned(), "vb".to_owned());
        assert_eq!(
            store.resolve("p", "B", &env, &here),
            Resolved::Set(Secret::new("vb".into()))
        );
        assert_eq!(store.resolve("q", "A", &env, &here), Resolved::Unset);
        let bound_for = Some(here.clone());
        for other in [
            identity("/elsewhere/p", Some("sha512-1")),
            identity("/src/p", Some("sha512-2")),
        ] {
            assert_eq!(
                store.resolve("p", "A", &env, &other),
                Resolved::HeldBack {
                    bound_for: bound_for.clone()
                }
            );
            assert_eq!(
                store.resolve("p", "B", &env, &other),
                Resolved::HeldBack {
                    bound_for: bound_for.clone()
                }
            );
        }
        assert_eq!(
            store.resolve("p", "C", &env, &here),
            Resolved::HeldBack { bound_for: None }
        );
    }

    #[test]
    fn every_value_of_every_pack_is_listed_for_redaction() {
        let mut store = Store::default();
        let id = identity("builtin:a", None);
        store.packs.entry("a".into()).or_default().insert(
            "A_KEY".into(),
            Binding {
                bound: Stored::Value(Secret::new("value-a".into())),
                pack: Some(id.clone()),
            },
        );
        store.packs.entry("b".into()).or_default().insert(
            "B_KEY".into(),
            Binding {
                bound: Stored::FromEnv("B_VAR".into()),
                pack: None,
            },
        );
        store.packs.entry("b".into()).or_default().insert(
            "C_KEY".into(),
            Binding {
                bound: Stored::FromEnv("UNSET".into()),
                pack: Some(id),
            },
        );
        let env: BTreeMap<String, String> = [("B_VAR".to_owned(), "value-b".to_owned())].into();
        let values: Vec<(String, String)> = store
            .every_value(&env)
            .into_iter()
            .map(|(key, secret)| (key, secret.expose().to_owned()))
            .collect();
        assert_eq!(
            values,
            [
                ("A_KEY".to_owned(), "value-a".to_owned()),
                ("B_KEY".to_owned(), "value-b".to_owned())
            ]
        );
    }

    #[test]
    fn carry_over_moves_only_what_was_bound_for_the_old_pack() {
        let old = identity("npm:rt@1.0.0", Some("sha512-1"));
        let other = identity("/src/rt", Some("sha512-9"));
        let new = identity("npm:rt@2.0.0", Some("sha512-2"));
        let mut store = Store::default();
        let keys = store.packs.entry("rt".into()).or_default();
        keys.insert(
            "A".into(),
            Binding {
                bound: Stored::FromEnv("A".into()),
                pack: Some(old.clone()),
            },
        );
        keys.insert(
            "B".into(),
            Binding {
                bound: Stored::FromEnv("B".into()),
                pack: Some(other.clone()),
            },
        );
        assert_eq!(store.carry_over("rt", &old, &new), vec!["A".to_owned()]);
        assert_eq!(store.packs["rt"]["A"].pack, Some(new));
        assert_eq!(store.packs["rt"]["B"].pack, Some(other));
    }

    #[test]
    fn stored_form_keeps_the_old_shape_and_adds_the_pack() {
        let binding = Binding {
            bound: Stored::FromEnv("VAR".into()),
            pack: Some(identity("builtin:git", None)),
        };
        assert_eq!(
            serde_json::to_value(&binding).unwrap(),
            serde_json::json!({"fromEnv": "VAR", "pack": {"source": "builtin:git"}})
        );
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
