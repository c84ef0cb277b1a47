//! One short run of a program of the machine, to hear what it says about itself
//! (`rg --version`, `rg --help`): for `availability`, which tells the variant a pack
//! supports from another program of the same name, and for `pack new --bin`, which
//! drafts a pack from it. It runs as a pack's read command does: through the runtime
//! (the only place that spawns), under the whole sandbox, with no network, no
//! write grant but its private temporary folder (its working directory too), none of
//! the pack's bindings, a few seconds at most and a small capture.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::context::env_vars;
use crate::runtime::{self, Ending};
use crate::sandbox::{self, Cache, ChildPlan, Grants, Mode, Site};

/// Long enough for an interpreter's start (a Python CLI answers `--version` in about
/// a second on a slow machine), short enough that `availability` stays quick.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);
/// A version line or a help page's head is all that is read.
const MAX_CAPTURE: usize = 64 * 1024;

/// What the probe needs of the caller: its environment and the sandbox of its
/// process (taken from the [`crate::Context`] by the handler).
pub(crate) struct Caller<'a> {
    pub env: &'a BTreeMap<String, String>,
    /// `$HCP_HOME`, which the program may not read.
    pub home: &'a Path,
    pub temp_dir: &'a Path,
    pub sandbox: &'a Cache,
    pub mode: Mode,
    pub cancel: &'a CancellationToken,
}

/// What the program said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probed {
    /// It ran and exited: its exit code, and its stdout then its stderr as text.
    Answered { exit_code: i32, output: String },
    /// It did not exit within [`TIMEOUT`] (or the caller went away).
    TimedOut,
    /// It could not be run here: why.
    NotRun(String),
}

impl Probed {
    /// Whether it exited 0.
    pub(crate) fn succeeded(&self) -> bool {
        matches!(self, Self::Answered { exit_code: 0, .. })
    }

    /// Its first line that is not blank, trimmed, when it answered.
    pub(crate) fn first_line(&self) -> Option<&str> {
        match self {
            Self::Answered { output, .. } => output.lines().map(str::trim).find(|line| !line.is_empty()),
            _ => None,
        }
    }

    /// The line that says which version it is, trimmed: the one where `pattern` (a
    /// pack's `versionPattern`) matched, as ShellCheck prints its version on its
    /// second line; else the first line.
    pub(crate) fn version_line(&self, pattern: Option<&str>) -> Option<&str> {
        let Self::Answered { output, .. } = self else {
            return None;
        };
        let found = pattern
            .and_then(|pattern| regex::Regex::new(pattern).ok())
            .and_then(|pattern| pattern.find(output));
        match found {
            Some(found) => {
                let start = output[..found.start()]
                    .rfind('\n')
                    .map_or(0, |newline| newline + 1);
                let end = output[found.start()..]
                    .find('\n')
                    .map_or(output.len(), |newline| found.start() + newline);
                Some(output[start..end].trim()).filter(|line| !line.is_empty())
            }
            None => self.first_line(),
        }
    }
}

/// Runs `program args...` once under the sandbox (see the module documentation);
/// `reads` are the pack's declared reads, if any.
pub(crate) async fn run(caller: &Caller<'_>, program: &Path, args: &[String], reads: &[String]) -> Probed {
    let tmpdir = match caller.sandbox.private_temp(caller.temp_dir) {
        Ok(dir) => dir,
        Err(error) => return Probed::NotRun(format!("cannot create a temporary folder: {error}")),
    };
    let grants = Grants {
        network: crate::manifest::Network::Off,
        writes: Vec::new(),
        made: Vec::new(),
        sockets: Vec::new(),
        declared_reads: reads.to_vec(),
        env: Vec::new(),
        cache: None,
    };
    let home = caller.sandbox.home_view(caller.home);
    let path_var = caller.env.get(env_vars::PATH).map(String::as_str);
    let site = Site {
        home: &home,
        user_home: caller.env.get(env_vars::HOME).map(Path::new),
        cwd: tmpdir.path(),
        pack_dir: None,
        program: Some(program),
        path_var,
        caches: None,
    };
    let assessed = sandbox::assess(&grants, &site, caller.sandbox.machine());
    let missing = sandbox::missing(&assessed.layers);
    if !missing.is_empty() && caller.mode == Mode::Strict {
        let names: Vec<&str> = missing.iter().map(|layer| layer.layer).collect();
        return Probed::NotRun(format!(
            "this machine cannot enforce the sandbox it would run in: {}",
            names.join(", ")
        ));
    }
    let reads = match assessed.reads {
        Ok(reads) => reads,
        Err(error) => return Probed::NotRun(error.to_string()),
    };
    let plan = ChildPlan {
        program: PathBuf::from(program),
        args: args.to_vec(),
        cwd: tmpdir.path().to_path_buf(),
        env: sandbox::child_env(caller.env, tmpdir.path(), &[]),
        tmpdir: tmpdir.path().to_path_buf(),
        writes: Vec::new(),
        home,
        reads,
        network: sandbox::ChildNetwork::Off,
        sockets: Vec::new(),
        made: Vec::new(),
        cache: None,
        stdin: None,
    };
    let spawn = match sandbox::transform(plan, caller.sandbox) {
        Ok(spawn) => spawn,
        Err(error) => return Probed::NotRun(error.to_string()),
    };
    let finished = match runtime::run_child(spawn, TIMEOUT, MAX_CAPTURE, caller.cancel, None).await {
        Ok(finished) => finished,
        Err(error) => return Probed::NotRun(error.to_string()),
    };
    drop(tmpdir);
    match finished.ending {
        Ending::TimedOut | Ending::Cancelled => Probed::TimedOut,
        Ending::Exited | Ending::Overflow => {
            let mut output = String::from_utf8_lossy(&finished.stdout).into_owned();
            if !finished.stderr.is_empty() {
                if !output.is_empty() && !output.ends_with('\n') {
                    output.push('\n');
                }
                output.push_str(&String::from_utf8_lossy(&finished.stderr));
            }
            Probed::Answered {
                exit_code: finished.exit_code,
                output,
            }
        }
    }
}

/// Whether `output` is the supported variant's, by the pack's `versionPattern`: a
/// pattern that does not compile (the validator refuses those) matches nothing.
pub(crate) fn matches_variant(pattern: &str, output: &str) -> bool {
    regex::Regex::new(pattern).is_ok_and(|pattern| pattern.is_match(output))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_and_the_variant_pattern() {
        let answered = Probed::Answered {
            exit_code: 0,
            output: "\n  yq 3.1.0  \nmore\n".to_owned(),
        };
        assert_eq!(answered.first_line(), Some("yq 3.1.0"));
        assert!(answered.succeeded());
        assert_eq!(Probed::TimedOut.first_line(), None);
        assert!(matches_variant("^yq 3", "yq 3.1.0\n"));
        assert!(!matches_variant(
            "^yq 3",
            "yq (https://github.com/mikefarah/yq/) version v4.44.3\n"
        ));
        assert!(!matches_variant("(", "("));
    }

    #[test]
    fn the_version_line_is_the_one_the_pattern_matched() {
        let shellcheck = Probed::Answered {
            exit_code: 0,
            output: "ShellCheck - shell script analysis tool\nversion: 0.9.0\nlicense: GPLv3\n".to_owned(),
        };
        assert_eq!(
            shellcheck.version_line(Some("version: 0\\.([7-9]|[1-9][0-9])\\.")),
            Some("version: 0.9.0")
        );
        // No pattern, one that does not match or does not compile: the first line.
        for pattern in [None, Some("^yq "), Some("(")] {
            assert_eq!(
                shellcheck.version_line(pattern),
                Some("ShellCheck - shell script analysis tool"),
                "{pattern:?}"
            );
        }
        let last = Probed::Answered {
            exit_code: 0,
            output: "tool\nv2".to_owned(),
        };
        assert_eq!(last.version_line(Some("^v2$|v2")), Some("v2"));
        assert_eq!(Probed::TimedOut.version_line(Some("x")), None);
    }

    /// The probe runs the program under the sandbox: it answers, its temporary
    /// folder is its working directory, and it gets no network.
    #[tokio::test]
    async fn a_probe_runs_under_the_sandbox() {
        let machine = crate::sandbox::probe();
        if !machine.landlock.enforced {
            return;
        }
        let cache = Cache::with_machine(machine);
        let home = tempfile::tempdir().unwrap();
        let env: BTreeMap<String, String> = [("PATH".to_owned(), "/usr/bin:/bin".to_owned())].into();
        let cancel = CancellationToken::new();
        let caller = Caller {
            env: &env,
            home: home.path(),
            temp_dir: Path::new("/tmp"),
            sandbox: &cache,
            mode: Mode::BestEffort,
            cancel: &cancel,
        };
        let args = [
            "-c".to_owned(),
            "pwd; echo $TMPDIR; echo err >&2; exit 3".to_owned(),
        ];
        let Probed::Answered { exit_code, output } = run(&caller, Path::new("/bin/sh"), &args, &[]).await
        else {
            panic!("did not answer")
        };
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!((exit_code, lines.len()), (3, 3), "{output}");
        assert_eq!(
            lines[0], lines[1],
            "the working directory is the temporary folder"
        );
        assert_eq!(lines[2], "err");
        let home_read = [
            "-c".to_owned(),
            format!("ls {} && echo read", home.path().display()),
        ];
        let probed = run(&caller, Path::new("/bin/sh"), &home_read, &[]).await;
        assert!(
            !matches!(&probed, Probed::Answered { output, .. } if output.contains("read")),
            "{probed:?}"
        );
    }
}
