//! The resolved settings of one call: where state lives, who is calling, and the
//! caller's environment. `main.rs` builds it from the process; the MCP server builds
//! one per tool call. Nothing below reads process-wide state: it reads this.
//!
//! What outlives a call (the catalog cache, kept captures, the sandbox probe) is not
//! the call's: it is in the [`Session`] the call points to, one per process (a
//! terminal call's lives as long as the call; the MCP server's as long as it runs).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::layout;
use crate::policy::Policies;
pub use crate::policy::{Caller, Principal};
use crate::sandbox::Mode;

/// Environment variable names hcpx itself reads, in one place.
pub mod env_vars {
    /// The user's state folder (see README.md); default `~/.hcp`.
    pub const HCP_HOME: &str = "HCP_HOME";
    /// `1` makes the caller an agent (see docs/bindings.md).
    pub const HCP_AGENT: &str = "HCP_AGENT";
    /// The MCP result view size for stdout (see docs/mcp.md).
    pub const HCP_MCP_VIEW_BYTES: &str = "HCP_MCP_VIEW_BYTES";
    /// `best-effort` runs packs even when a needed sandbox layer is missing here.
    pub const HCP_SANDBOX: &str = "HCP_SANDBOX";
    /// Whether `hcpx exec` hands its call to a resident server (see docs/serve.md):
    /// `auto` (the default) when one is there and takes it, `off` never, `require`
    /// always (a call it would not take fails instead of running in the process).
    pub const HCP_RESIDENT: &str = "HCP_RESIDENT";
    pub const HOME: &str = "HOME";
    pub const PATH: &str = "PATH";
    /// The user's cache folder, which holds each pack's cache folder (see
    /// docs/sandbox.md); default `~/.cache` (`~/Library/Caches` on macOS).
    pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
}

/// A person's answer to a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    /// The person dismissed the question (MCP cancel).
    Cancelled,
    /// The question goes to the host's user in the result, and the call comes back
    /// with the answer (MCP 2026-07-28 `InputRequiredResult`).
    Later,
}

/// Someone who is certainly a person and can confirm: the terminal's user (never
/// when the caller is an agent, whose shell may drive the terminal) or the MCP
/// host's user through elicitation.
pub trait Human: Send + Sync {
    fn confirm<'a>(&'a self, question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;
}

/// Where `bind` reads a credential: the terminal without echo, or stdin.
pub trait SecretInput: Send + Sync {
    fn read_secret(&self, prompt: &str) -> Result<String, String>;
}

/// What a process keeps between the calls it serves: state that is not any one
/// call's. A terminal call gets a fresh one ([`Session::default`]); the MCP server
/// makes one with [`Session::server`] and every call it runs points to it.
#[derive(Debug, Default)]
pub struct Session {
    /// The catalog and index, kept between calls; `None`: each call reads them.
    pub catalog: Option<crate::cache::CatalogCache>,
    /// Full captures kept for `output ID` (only the MCP server's view keeps any: a
    /// terminal shows the whole output).
    pub captures: crate::captures::CaptureStore,
    /// The sandbox probe, cached Landlock layers and seccomp programs.
    pub sandbox: crate::sandbox::Cache,
    /// This machine's system, read once when first needed ([`Context::os`]).
    pub os: MachineOs,
    /// The proxy's certificate authority and the roots it verifies real servers
    /// with, made or read once when a call first needs them.
    pub egress: std::sync::OnceLock<Result<hcpx_egress::Tls, String>>,
}

/// This very binary's path, found the first time a command asks (most never do, and
/// finding it is a `/proc` lookup), with what `main` gives; none by default.
#[derive(Debug, Clone, Default)]
pub struct SelfExe {
    find: Option<fn() -> Option<PathBuf>>,
    found: std::sync::OnceLock<Option<PathBuf>>,
}

impl SelfExe {
    pub fn new(find: fn() -> Option<PathBuf>) -> Self {
        Self {
            find: Some(find),
            found: std::sync::OnceLock::new(),
        }
    }

    pub fn get(&self) -> Option<&std::path::Path> {
        self.found
            .get_or_init(|| self.find.and_then(|find| find()))
            .as_deref()
    }
}

/// This machine's system, for how to get a missing program: read from
/// `/etc/os-release` at most once per process, by the first call that needs it.
#[derive(Debug, Default)]
pub struct MachineOs(std::sync::OnceLock<crate::program::Os>);

impl Session {
    /// The proxy's authority and roots (see [`Session::egress`]), read or made the
    /// first time: the authority in `$HCP_HOME`, the roots the system's and those of
    /// the file `extra` names.
    pub(crate) fn egress(
        &self,
        home: &std::path::Path,
        extra: Option<&std::path::Path>,
    ) -> Result<hcpx_egress::Tls, String> {
        self.egress
            .get_or_init(|| {
                let authority = hcpx_egress::Authority::load_or_make(&crate::layout::egress(home))
                    .map_err(|error| format!("the proxy's certificate authority: {error}"))?;
                let upstream = hcpx_egress::Upstream::new(extra)
                    .map_err(|error| format!("the roots the proxy trusts: {error}"))?;
                Ok(hcpx_egress::Tls {
                    authority: std::sync::Arc::new(authority),
                    upstream: std::sync::Arc::new(upstream),
                })
            })
            .clone()
    }

    /// A long-lived server's: the catalog is cached between calls.
    pub fn server() -> Self {
        Self {
            catalog: Some(crate::cache::CatalogCache::default()),
            sandbox: crate::sandbox::Cache::prefetching(),
            ..Self::default()
        }
    }

    /// [`Session::server`], whose sandbox sees `machine` instead of probing this
    /// one (the benches' server without one layer or another).
    pub fn server_with_machine(machine: crate::sandbox::Machine) -> Self {
        Self {
            catalog: Some(crate::cache::CatalogCache::default()),
            sandbox: crate::sandbox::Cache::prefetching_with_machine(machine),
            ..Self::default()
        }
    }

    /// A session whose sandbox sees `machine` instead of probing this one (tests
    /// and benches of other kernels).
    pub fn with_machine(machine: crate::sandbox::Machine) -> Self {
        Self {
            sandbox: crate::sandbox::Cache::with_machine(machine),
            ..Self::default()
        }
    }
}

#[derive(Clone)]
pub struct Context {
    /// `$HCP_HOME`, absolute.
    pub home: PathBuf,
    /// The caller's working directory, absolute.
    pub cwd: PathBuf,
    pub principal: Principal,
    /// The OAuth caller (`hcpx mcp --oauth-issuer`): the access token's subject and
    /// groups, which policy rules may name, audit lines record and kept outputs
    /// belong to. `None` for every other caller.
    pub caller: Option<Arc<Caller>>,
    /// The caller's environment, for PATH lookups and `--from-env` bindings only.
    /// It never reaches a child as a whole.
    pub env: BTreeMap<String, String>,
    /// A person can answer a y/N prompt on this call's terminal.
    pub interactive: bool,
    /// Where private temporary folders are made.
    pub temp_dir: PathBuf,
    pub sandbox_mode: Mode,
    /// Fires when the caller goes away or is interrupted; running children die.
    pub cancel: CancellationToken,
    pub human: Option<Arc<dyn Human>>,
    pub secret_input: Option<Arc<dyn SecretInput>>,
    /// The caller confirmed this call in advance (MCP `confirm: true`): it counts
    /// as `--yes`, so it satisfies `confirm` and never `confirm-human`.
    pub confirmed: bool,
    /// Every command that is not a read is denied (`hcpx mcp --read-only`).
    pub read_only: bool,
    /// This very binary, for host configurations when `hcpx` is not on PATH.
    pub self_exe: SelfExe,
    /// What this process keeps between calls.
    pub session: Arc<Session>,
    /// Called about once a second while a child runs (MCP progress).
    pub progress: Option<Arc<dyn Fn(crate::runtime::Progress) + Send + Sync>>,
    /// The policy files as this call read them, when it read them before its
    /// command ran (the MCP tool, which seals confirmations with them): the command
    /// decides by the same ones instead of reading them again. `None`: read when
    /// needed.
    pub(crate) policies: Option<Arc<Policies>>,
    /// The system programs are installed on, for how to get a missing one; `None`:
    /// this machine's ([`Context::os`]). Set by tests of other systems.
    pub(crate) os: Option<crate::program::Os>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("home", &self.home)
            .field("cwd", &self.cwd)
            .field("principal", &self.principal)
            .field("caller", &self.caller)
            .field("interactive", &self.interactive)
            .field("sandbox_mode", &self.sandbox_mode)
            .field("human", &self.human.is_some())
            .finish_non_exhaustive()
    }
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
        let home = home_of(
            env.get(env_vars::HCP_HOME).map(String::as_str),
            env.get(env_vars::HOME).map(String::as_str),
            &cwd,
        )?;
        let principal = principal_of(env.get(env_vars::HCP_AGENT).map(String::as_str));
        let sandbox_mode = match env.get(env_vars::HCP_SANDBOX).map(String::as_str) {
            Some("best-effort") => Mode::BestEffort,
            _ => Mode::Strict,
        };
        let temp_dir = env
            .get("TMPDIR")
            .filter(|dir| dir.starts_with('/'))
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        Ok(Self {
            home,
            cwd,
            principal,
            caller: None,
            env,
            interactive,
            temp_dir,
            sandbox_mode,
            cancel: CancellationToken::new(),
            human: None,
            secret_input: None,
            confirmed: false,
            read_only: false,
            self_exe: SelfExe::default(),
            session: Arc::new(Session::default()),
            progress: None,
            policies: None,
            os: None,
        })
    }

    /// Where private temporary folders are made.
    #[must_use]
    pub fn with_temp_dir(mut self, temp_dir: PathBuf) -> Self {
        self.temp_dir = temp_dir;
        self
    }

    /// Who can confirm as a person, and where secrets are typed.
    #[must_use]
    pub fn with_people(
        mut self,
        human: Option<Arc<dyn Human>>,
        secret_input: Option<Arc<dyn SecretInput>>,
    ) -> Self {
        self.human = human;
        self.secret_input = secret_input;
        self
    }

    /// The same caller, as an agent (the MCP server's calls).
    #[must_use]
    pub fn as_agent(mut self) -> Self {
        self.principal = Principal::Agent;
        self.interactive = false;
        self.human = None;
        self.secret_input = None;
        self
    }

    /// The system a missing program would be installed on: the one set, else this
    /// machine's, from `/etc/os-release` (read once per process, and only by a call
    /// that says how to get a program).
    pub(crate) fn os(&self) -> crate::program::Os {
        self.os
            .unwrap_or_else(|| *self.session.os.0.get_or_init(this_machines_os))
    }

    /// The OAuth caller's subject, when the call has one.
    pub fn subject(&self) -> Option<&str> {
        self.caller.as_deref().map(|caller| caller.subject.as_str())
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    pub fn packs_dir(&self) -> PathBuf {
        layout::packs(&self.home)
    }

    pub fn user_policy_path(&self) -> PathBuf {
        layout::user_policy(&self.home)
    }

    pub fn bindings_path(&self) -> PathBuf {
        layout::bindings(&self.home)
    }

    /// `.hcp/policy.json` in the working directory or its nearest ancestor: the
    /// nearest one that exists in any form (a dangling link, a folder or a FIFO
    /// included), so that one which cannot be read denies instead of being skipped.
    pub fn project_policy_path(&self) -> Option<PathBuf> {
        self.cwd
            .ancestors()
            .map(layout::project_policy)
            .find(|path| match std::fs::symlink_metadata(path) {
                Ok(_) => true,
                Err(error) => !matches!(
                    error.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ),
            })
    }
}

/// This machine's system: macOS, or what `/etc/os-release` says.
fn this_machines_os() -> crate::program::Os {
    if cfg!(target_os = "macos") {
        return crate::program::Os::Macos;
    }
    std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .map_or(crate::program::Os::Other, |text| {
            crate::program::Os::from_os_release(&text)
        })
}

/// The caller `HCP_AGENT`'s value makes: an agent is anyone who says so at all, with
/// any value but empty, `0` or `false`.
pub fn principal_of(hcp_agent: Option<&str>) -> Principal {
    if hcp_agent.is_some_and(|value| {
        let value = value.trim();
        !(value.is_empty() || value == "0" || value.eq_ignore_ascii_case("false"))
    }) {
        Principal::Agent
    } else {
        Principal::Terminal
    }
}

/// `$HCP_HOME`, absolute, from the variables `HCP_HOME` and `HOME` and the working
/// folder.
pub(crate) fn home_of(
    hcp_home: Option<&str>,
    home: Option<&str>,
    cwd: &Path,
) -> Result<PathBuf, ContextError> {
    match hcp_home.filter(|value| !value.is_empty()) {
        Some(home) => Ok(absolute(cwd, Path::new(home))),
        None => {
            let user_home = home
                .filter(|value| !value.is_empty())
                .ok_or(ContextError::NoHome)?;
            Ok(absolute(cwd, Path::new(user_home)).join(layout::DEFAULT_HOME))
        }
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

    /// The path is looked for once, when first asked, and only then.
    #[test]
    fn self_exe_is_found_once_when_first_asked() {
        static ASKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        fn find() -> Option<PathBuf> {
            ASKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some(PathBuf::from("/opt/hcpx/bin/hcpx"))
        }
        let exe = SelfExe::new(find);
        assert_eq!(ASKED.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(exe.get(), Some(std::path::Path::new("/opt/hcpx/bin/hcpx")));
        assert_eq!(
            exe.clone().get(),
            Some(std::path::Path::new("/opt/hcpx/bin/hcpx"))
        );
        assert_eq!(ASKED.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(SelfExe::default().get(), None);
    }

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
    fn any_hcp_agent_but_empty_0_or_false_makes_an_agent() {
        let principal = |value: &str| {
            Context::new(env(&[("HOME", "/h"), ("HCP_AGENT", value)]), "/w".into(), true)
                .unwrap()
                .principal
        };
        for value in ["1", "true", "yes", " 1", "01", "TRUE", "agent"] {
            assert_eq!(principal(value), Principal::Agent, "{value:?}");
        }
        for value in ["", "0", "false", "FALSE", " 0 "] {
            assert_eq!(principal(value), Principal::Terminal, "{value:?}");
        }
        let ctx = Context::new(env(&[("HOME", "/h")]), "/w".into(), true).unwrap();
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
