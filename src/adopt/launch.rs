//! How a host starts hcpx: the command adopt writes (this very binary: `hcpx` when
//! the `hcpx` on PATH is this file, else its absolute path; always the absolute path
//! for a host started from a desktop, which does not get the shell's PATH), the
//! `HCP_HOME` it pins, and the same two as one shell command for the text an agent
//! reads (the skill, the instructions block).

use std::path::{Path, PathBuf};

/// The command and home a host's entry, skill and instructions all use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// What goes in the entry's `command`: `hcpx` or an absolute path.
    pub command: String,
    /// `HCP_HOME`, when the caller set one: the entry pins it.
    pub home: Option<PathBuf>,
    /// The `hcpx` found on PATH when it is another file than this binary (an older
    /// install, say): the host would have started it, so adopt writes this binary's
    /// path and says so.
    pub other_on_path: Option<PathBuf>,
}

impl Launch {
    /// Works out the command from this binary (`this`, `None` when it cannot be
    /// told), the `hcpx` that PATH finds (`on_path`) and whether the host is started
    /// from a desktop (`gui`).
    pub fn new(this: Option<&Path>, on_path: Option<&Path>, gui: bool, home: Option<PathBuf>) -> Self {
        let Some(this) = this else {
            // Nothing better is known than the name.
            return Self {
                command: "hcpx".to_owned(),
                home,
                other_on_path: None,
            };
        };
        let same = on_path.is_some_and(|found| same_file(found, this));
        Self {
            command: if same && !gui {
                "hcpx".to_owned()
            } else {
                this.display().to_string()
            },
            home,
            other_on_path: on_path.filter(|_| !same).map(Path::to_path_buf),
        }
    }

    /// The command as a shell runs it, `HCP_HOME=…` before it when pinned, each word
    /// quoted when it needs to be: what an agent with a shell types.
    pub fn shell(&self) -> String {
        let command = shell_words::quote(&self.command).into_owned();
        match &self.home {
            None => command,
            Some(home) => format!(
                "HCP_HOME={} {command}",
                shell_words::quote(&home.display().to_string())
            ),
        }
    }

    /// Whether an agent's shell can type plain `hcpx` and reach the same binary
    /// and home as the host's entry.
    pub fn is_plain(&self) -> bool {
        self.command == "hcpx" && self.home.is_none()
    }

    /// `text` (a skill or instructions in Markdown) with each command shown in code,
    /// `` `hcpx …` ``, written as [`Self::shell`] runs it.
    pub fn in_text(&self, text: &str) -> String {
        if self.is_plain() {
            return text.to_owned();
        }
        text.replace("`hcpx ", &format!("`{} ", self.shell()))
    }
}

/// Whether two paths are one file: the same path once links are followed, or the
/// same device and inode (a hard link).
fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(a), std::fs::canonicalize(b))
        && a == b
    {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(a), Ok(b)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return a.dev() == b.dev() && a.ino() == b.ino();
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_binary_is_named_only_when_path_finds_this_very_file() {
        let dir = tempfile::tempdir().unwrap();
        let this = dir.path().join("hcpx");
        std::fs::write(&this, "x").unwrap();
        let link = dir.path().join("bin-hcpx");
        std::os::unix::fs::symlink(&this, &link).unwrap();
        let hard = dir.path().join("hard-hcpx");
        std::fs::hard_link(&this, &hard).unwrap();
        let other = dir.path().join("old-hcpx");
        std::fs::write(&other, "x").unwrap();
        let shown = this.display().to_string();
        for found in [&this, &link, &hard] {
            let launch = Launch::new(Some(&this), Some(found), false, None);
            assert_eq!(
                (launch.command.as_str(), launch.other_on_path),
                ("hcpx", None),
                "{}",
                found.display()
            );
            // A desktop app does not get the shell's PATH: the path, always.
            assert_eq!(Launch::new(Some(&this), Some(found), true, None).command, shown);
        }
        let launch = Launch::new(Some(&this), Some(&other), false, None);
        assert_eq!(launch.command, shown);
        assert_eq!(launch.other_on_path, Some(other));
        let launch = Launch::new(Some(&this), None, false, None);
        assert_eq!((launch.command, launch.other_on_path), (shown, None));
        assert_eq!(Launch::new(None, None, true, None).command, "hcpx");
    }

    #[test]
    fn text_for_a_shell_uses_the_same_command_and_home() {
        let launch = Launch {
            command: "/opt/my tools/hcpx".to_owned(),
            home: Some(PathBuf::from("/h/it's")),
            other_on_path: None,
        };
        assert_eq!(launch.shell(), r#"HCP_HOME='/h/it'\''s' '/opt/my tools/hcpx'"#);
        assert_eq!(
            launch.in_text("Run `hcpx search WORDS`, then `hcpx skill PACK`; hcpx is safe."),
            format!(
                "Run `{0} search WORDS`, then `{0} skill PACK`; hcpx is safe.",
                launch.shell()
            )
        );
        let plain = Launch::new(None, None, false, None);
        assert!(plain.is_plain());
        assert_eq!(plain.in_text("`hcpx search`"), "`hcpx search`");
    }
}
