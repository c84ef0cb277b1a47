//! How to get a missing program on this system, from what a pack declares in
//! `program.install` and `program.homepage`: the system's own package manager first
//! (`sudo apt-get install ripgrep` on Debian and Ubuntu, `brew install ripgrep` on
//! macOS), else the ways that work anywhere (pip, pipx, npm, cargo, go), and the
//! homepage. Which system this is comes from the caller's [`crate::Context`]
//! ([`Os`]), never from a file read here.

use serde::Serialize;

use crate::manifest::{INSTALLERS, ProgramSpec};

/// The system a program would be installed on, as far as its package manager goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Os {
    /// Debian, Ubuntu and their derivatives: apt.
    Debian,
    /// Fedora, RHEL and their kin: dnf.
    Fedora,
    /// Arch and its derivatives: pacman.
    Arch,
    /// macOS: Homebrew.
    Macos,
    /// Any other: only the ways that work anywhere.
    Other,
}

/// The package managers that belong to one system; the others (pip, pipx, npm,
/// cargo, go) work on any.
const SYSTEM_MANAGERS: [&str; 4] = ["apt", "dnf", "pacman", "brew"];

impl Os {
    /// The system `/etc/os-release` describes (its `ID` and `ID_LIKE`); `Other` for
    /// one this does not know.
    pub(crate) fn from_os_release(text: &str) -> Self {
        let mut names: Vec<String> = Vec::new();
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if matches!(key.trim(), "ID" | "ID_LIKE") {
                let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
                names.extend(value.split_whitespace().map(str::to_ascii_lowercase));
            }
        }
        let is = |known: &[&str]| names.iter().any(|name| known.contains(&name.as_str()));
        if is(&["debian", "ubuntu"]) {
            Self::Debian
        } else if is(&["fedora", "rhel", "centos"]) {
            Self::Fedora
        } else if is(&["arch"]) {
            Self::Arch
        } else {
            Self::Other
        }
    }

    /// This system's package manager, as `program.install` names it.
    fn manager(self) -> Option<&'static str> {
        match self {
            Self::Debian => Some("apt"),
            Self::Fedora => Some("dnf"),
            Self::Arch => Some("pacman"),
            Self::Macos => Some("brew"),
            Self::Other => None,
        }
    }
}

/// The command line one package manager installs `words` with.
fn command(manager: &str, words: &str) -> Option<String> {
    INSTALLERS
        .iter()
        .find(|(name, _)| *name == manager)
        .map(|(_, install)| format!("{install} {words}"))
}

/// The ways to install the program on `os`, as command lines, best first: this
/// system's package manager when declared, else every way that works anywhere, in
/// the order [`INSTALLERS`] lists them. Another system's manager is never offered.
pub(crate) fn ways(spec: &ProgramSpec, os: Os) -> Vec<String> {
    let declared = |manager: &str| {
        spec.install
            .iter()
            .find(|(name, _)| name == manager)
            .and_then(|(name, words)| command(name, words))
    };
    if let Some(own) = os.manager().and_then(declared) {
        return vec![own];
    }
    INSTALLERS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !SYSTEM_MANAGERS.contains(name))
        .filter_map(declared)
        .collect()
}

/// How to get the program `name` on `os`, in one line for a person (the fix of
/// `availability`, exec's `next`): the [`ways`], then the homepage; `None` when the
/// pack declares neither.
pub(crate) fn how_to_get(spec: Option<&ProgramSpec>, os: Os) -> Option<String> {
    let spec = spec?;
    let ways = ways(spec, os);
    let homepage = spec.homepage.as_deref();
    match (ways.as_slice(), homepage) {
        ([], None) => None,
        ([], Some(homepage)) => Some(format!("see {homepage}")),
        (ways, None) => Some(ways.join(", or ")),
        (ways, Some(homepage)) => Some(format!("{} (see {homepage})", ways.join(", or "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(install: &[(&str, &str)], homepage: Option<&str>) -> ProgramSpec {
        ProgramSpec {
            install: install
                .iter()
                .map(|(manager, words)| ((*manager).to_owned(), (*words).to_owned()))
                .collect(),
            homepage: homepage.map(str::to_owned),
            ..ProgramSpec::default()
        }
    }

    #[test]
    fn os_release_names_the_system() {
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n";
        assert_eq!(Os::from_os_release(debian), Os::Debian);
        let mint = "NAME=\"Linux Mint\"\nID=linuxmint\nID_LIKE=\"ubuntu debian\"\n";
        assert_eq!(Os::from_os_release(mint), Os::Debian);
        assert_eq!(Os::from_os_release("ID=ubuntu\n"), Os::Debian);
        assert_eq!(
            Os::from_os_release("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n"),
            Os::Fedora
        );
        assert_eq!(Os::from_os_release("ID=manjaro\nID_LIKE=arch\n"), Os::Arch);
        assert_eq!(Os::from_os_release("ID=alpine\n"), Os::Other);
        assert_eq!(Os::from_os_release(""), Os::Other);
    }

    /// The system's own way when it is declared; else the ways that work anywhere,
    /// never another system's manager; and the homepage.
    #[test]
    fn how_to_get_it_on_each_system() {
        let rg = spec(
            &[("apt", "ripgrep"), ("brew", "ripgrep"), ("cargo", "ripgrep")],
            Some("https://github.com/BurntSushi/ripgrep"),
        );
        let cases = [
            (
                Os::Debian,
                "sudo apt-get install ripgrep (see https://github.com/BurntSushi/ripgrep)",
            ),
            (
                Os::Macos,
                "brew install ripgrep (see https://github.com/BurntSushi/ripgrep)",
            ),
            (
                Os::Fedora,
                "cargo install ripgrep (see https://github.com/BurntSushi/ripgrep)",
            ),
            (
                Os::Other,
                "cargo install ripgrep (see https://github.com/BurntSushi/ripgrep)",
            ),
        ];
        for (os, expected) in cases {
            assert_eq!(how_to_get(Some(&rg), os).as_deref(), Some(expected), "{os:?}");
        }
        let ruff = spec(&[("pipx", "ruff"), ("pip", "ruff"), ("brew", "ruff")], None);
        assert_eq!(ways(&ruff, Os::Macos), ["brew install ruff"]);
        assert_eq!(
            ways(&ruff, Os::Debian),
            ["python3 -m pip install --user ruff", "pipx install ruff"]
        );
        assert_eq!(
            how_to_get(Some(&ruff), Os::Debian).as_deref(),
            Some("python3 -m pip install --user ruff, or pipx install ruff")
        );
        let only_home = spec(&[("brew", "x")], Some("https://example.org/x"));
        assert_eq!(
            how_to_get(Some(&only_home), Os::Debian).as_deref(),
            Some("see https://example.org/x")
        );
        assert_eq!(how_to_get(Some(&spec(&[], None)), Os::Debian), None);
        assert_eq!(how_to_get(None, Os::Macos), None);
    }
}
