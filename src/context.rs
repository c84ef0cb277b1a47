//! The resolved settings of one call: where state lives, who is calling, and the
//! caller's environment. `main.rs` builds it from the process; the MCP server builds
//! one per tool call. Nothing below reads process-wide state: it reads this.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Environment variable names hcpx itself reads, in one place.
pub mod env_vars {
    /// The user's state folder (SPEC §1); default `~/.hcp`.
    pub const HCP_HOME: &str = "HCP_HOME";
    /// `1` makes the caller an agent (SPEC §4).
    pub const HCP_AGENT: &str = "HCP_AGENT";
    /// The MCP result view size for stdout (SPEC §8).
    pub const HCP_MCP_VIEW_BYTES: &str = "HCP_MCP_VIEW_BYTES";
    pub const HOME: &str = "HOME";
    pub const PATH: &str = "PATH";
}

/// Who is calling (SPEC §4). Agents never widen their own access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Principal {
    Terminal,
    Agent,
}

impl Principal {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Terminal => "terminal",
            Self::Agent => "agent",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Context {
    /// `$HCP_HOME`, absolute.
    pub home: PathBuf,
    /// The caller's working directory, absolute.
    pub cwd: PathBuf,
    pub principal: Principal,
    /// The caller's environment, for PATH lookups and `--from-env` bindings only.
    /// It never reaches a child as a whole.
    pub env: BTreeMap<String, String>,
    /// A person can answer a y/N prompt on this call's terminal.
    pub interactive: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("neither HCP_HOME nor HOME is set, so hcpx does not know where its state lives; set HCP_HOME")]
    NoHome,
}

impl Context {
    /// Resolves a context from an environment snapshot and a working directory.
    pub fn new(
        env: impl IntoIterator<Item = (String, String)>,
        cwd: PathBuf,
        interactive: bool,
    ) -> Result<Self, ContextError> {
        let env: BTreeMap<String, String> = env.into_iter().collect();
        let home = match env.get(env_vars::HCP_HOME).filter(|value| !value.is_empty()) {
            Some(home) => absolute(&cwd, Path::new(home)),
            None => {
                let user_home = env
                    .get(env_vars::HOME)
                    .filter(|value| !value.is_empty())
                    .ok_or(ContextError::NoHome)?;
                absolute(&cwd, Path::new(user_home)).join(".hcp")
            }
        };
        let principal = if env.get(env_vars::HCP_AGENT).is_some_and(|value| value == "1") {
            Principal::Agent
        } else {
            Principal::Terminal
        };
        Ok(Self {
            home,
            cwd,
            principal,
            env,
            interactive,
        })
    }

    /// The same caller, as an agent (the MCP server's calls).
    #[must_use]
    pub fn as_agent(mut self) -> Self {
        self.principal = Principal::Agent;
        self.interactive = false;
        self
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    pub fn packs_dir(&self) -> PathBuf {
        self.home.join("packs")
    }

    pub fn user_policy_path(&self) -> PathBuf {
        self.home.join("policy.json")
    }

    pub fn bindings_path(&self) -> PathBuf {
        self.home.join("bindings.json")
    }

    /// `.hcp/policy.json` in the working directory or its nearest ancestor.
    pub fn project_policy_path(&self) -> Option<PathBuf> {
        self.cwd
            .ancestors()
            .map(|dir| dir.join(".hcp").join("policy.json"))
            .find(|path| path.is_file())
    }
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn home_defaults_to_dot_hcp() {
        let ctx = Context::new(env(&[("HOME", "/home/a")]), "/w".into(), false).unwrap();
        assert_eq!(ctx.home, PathBuf::from("/home/a/.hcp"));
        assert_eq!(ctx.principal, Principal::Terminal);
    }

    #[test]
    fn hcp_home_wins_and_is_made_absolute() {
        let ctx = Context::new(
            env(&[("HOME", "/home/a"), ("HCP_HOME", "state")]),
            "/w".into(),
            false,
        )
        .unwrap();
        assert_eq!(ctx.home, PathBuf::from("/w/state"));
    }

    #[test]
    fn hcp_agent_1_makes_an_agent() {
        let ctx = Context::new(env(&[("HOME", "/h"), ("HCP_AGENT", "1")]), "/w".into(), true).unwrap();
        assert_eq!(ctx.principal, Principal::Agent);
        let ctx = Context::new(env(&[("HOME", "/h"), ("HCP_AGENT", "0")]), "/w".into(), true).unwrap();
        assert_eq!(ctx.principal, Principal::Terminal);
    }

    #[test]
    fn no_home_is_an_error() {
        assert!(matches!(
            Context::new(env(&[]), "/w".into(), false),
            Err(ContextError::NoHome)
        ));
    }
}
