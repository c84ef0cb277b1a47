//! The diff adopt shows without `--write`: a unified diff of a host file now and as
//! adopt would write it.

use std::path::Path;

/// A unified diff of two texts, for `adopt` without `--write`.
pub fn diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string()
}
