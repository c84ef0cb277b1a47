//! A credential value on its way to a pack's CLI: the only places it is read are
//! the child's environment, a binding file, the child's standard input and the
//! redactor. `Debug` never shows it, and its bytes are overwritten when it is
//! dropped.

use std::fmt;

use serde::{Deserialize, Serialize};
use zeroize::Zeroize as _;

/// A credential value. `Debug` and `Display` never show it; dropping it zeroes
/// its memory (every clone is its own copy, zeroed with it).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The most bytes a bound value may hold (see docs/bindings.md): room for a
    /// PEM key, a kubeconfig or a service account's JSON, and no more than one pipe
    /// buffer, so a value written to a child's standard input never waits on it.
    pub const MAX_LEN: usize = 64 * 1024;

    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value itself, for the child's environment, standard input or binding
    /// file, and the redactor only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}
