//! One problem of a manifest, by JSON path: what the validator's walk collects and
//! the model's users read. A leaf: the model, its parts and the walk all name it.

use std::fmt;

use serde::Serialize;

/// One manifest problem: `commands.plan.argv[2]: unknown parameter "frm"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}
