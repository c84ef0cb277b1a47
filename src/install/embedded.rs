//! Installing a pack compiled into the binary: a built-in (recorded `builtin:git`) or
//! a catalog pack (`catalog:rg`), its files written from memory, with no network;
//! and what of an id stays once its installed pack is removed.

use super::files::Files;
use crate::catalog::{builtin_files, catalog_files};

/// Which of the binary's packs an id is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelved {
    /// A built-in pack: it runs again once the installed one is removed.
    Builtin,
    /// A catalog pack: there to install again.
    Catalog,
    /// Neither.
    Nothing,
}

impl Shelved {
    pub fn of(id: &str) -> Self {
        if builtin_files(id).is_some() {
            Self::Builtin
        } else if catalog_files(id).is_some() {
            Self::Catalog
        } else {
            Self::Nothing
        }
    }

    /// The source an install of the binary's own pack records (`builtin:git`,
    /// `catalog:rg`); `None` for an id the binary does not have.
    pub fn source(self, id: &str) -> Option<String> {
        match self {
            Self::Builtin => Some(format!("builtin:{id}")),
            Self::Catalog => Some(format!("catalog:{id}")),
            Self::Nothing => None,
        }
    }
}

/// The files of the built-in or catalog pack `id`, from the binary, and the source
/// an install of them records.
pub fn embedded(id: &str) -> Option<(Files, String)> {
    let files = builtin_files(id).or_else(|| catalog_files(id))?;
    let recorded = Shelved::of(id).source(id)?;
    let files = files
        .into_iter()
        .map(|(name, bytes)| (name, bytes.to_vec()))
        .collect();
    Some((files, recorded))
}
