//! The content-named copies of installed packs' CLIs that bound calls run from
//! (`$HCP_HOME/.installed/ID-TAG/FILE`): their names, and their pruning once the
//! pack they were made from is replaced or removed.

use std::path::{Path, PathBuf};

use crate::layout;

/// The most characters of a pack's digest a copy's name carries.
const TAG: usize = 22;

/// Where a bound call runs `file`, the CLI of the installed pack `id` whose files
/// have this `integrity` (`sha512-…`): a copy named after the content, written once
/// ([`crate::catalog::write_program`]), so that an install replacing the pack while
/// the call starts cannot put other code in front of the credentials. The tag is
/// the digest's first letters and digits (others become `_`): it never holds a `-`,
/// which [`prune`] relies on.
pub fn pinned_copy(home: &Path, id: &str, integrity: &str, file: &str) -> PathBuf {
    let tag: String = integrity
        .trim_start_matches("sha512-")
        .chars()
        .take(TAG)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    layout::installed_copies(home)
        .join(format!("{id}-{tag}"))
        .join(file)
}

/// Removes the copies a bound call ran this pack's CLI from ([`pinned_copy`]): once
/// the pack is replaced or removed they can never match its bindings again. Only
/// names whose id part is exactly `id` go (the tag holds no `-`), so pack `a` never
/// takes `a-b`'s copies. The caller holds the state lock. A call that is starting
/// from a copy as it goes fails to spawn and runs nothing.
pub(super) fn prune(home: &Path, id: &str) {
    let Ok(entries) = std::fs::read_dir(layout::installed_copies(home)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name
            .to_str()
            .and_then(|name| name.rsplit_once('-'))
            .is_some_and(|(pack, _)| pack == id)
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_named_by_content_and_pruned_by_exact_id() {
        let home = tempfile::tempdir().unwrap();
        let integrity = "sha512-ab+/cd==";
        let copy = pinned_copy(home.path(), "a", integrity, "cli");
        assert_eq!(copy, layout::installed_copies(home.path()).join("a-ab__cd__/cli"));
        let long = format!("sha512-{}", "x".repeat(80));
        let name = pinned_copy(home.path(), "a-b", &long, "cli");
        assert_eq!(
            name.parent().unwrap().file_name().unwrap(),
            format!("a-b-{}", "x".repeat(TAG)).as_str()
        );
        for path in [&copy, &name] {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "#!/bin/sh\n").unwrap();
        }
        prune(home.path(), "a");
        assert!(!copy.exists());
        assert!(name.exists(), "a-b's copy is not a's");
        prune(home.path(), "a-b");
        assert!(!name.exists());
    }
}
