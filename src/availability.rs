//! The four availability flags (see README.md): `installed`, `runnable`, `bound`,
//! `permitted` and `ready`, each false flag with its reason and the command that
//! fixes it.

use serde::Serialize;
use std::collections::BTreeMap;

use crate::binding::{Identity, Resolved, Store};
use crate::catalog::{Origin, Pack};
use crate::context::env_vars;
use crate::next::Next;
use crate::policy::{self, Policies, RuleKind};
use crate::program::{check_bin_file, is_executable, shebang_interpreter};
// Where `adopt` finds it; the lookup is the program module's.
pub(crate) use crate::program::resolve_program;
use crate::sandbox::{self, Machine, Mode};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Flag {
    Installed,
    Runnable,
    Bound,
    Permitted,
}

/// Why one flag is false, and what fixes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Problem {
    pub flag: Flag,
    pub reason: String,
    pub fix: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Availability {
    pub installed: bool,
    pub runnable: bool,
    pub bound: bool,
    pub permitted: bool,
    pub ready: bool,
    pub problems: Vec<Problem>,
}

/// Why the pack's CLI cannot run here, or `None` when it can.
/// The most of a CLI's first bytes its `#!` line is looked for in.
const HEAD: usize = 256;

fn head_of(bytes: &[u8]) -> Vec<u8> {
    bytes[..bytes.len().min(HEAD)].to_vec()
}

/// The first bytes of a file, reading no more of it.
fn read_head(path: &std::path::Path) -> Vec<u8> {
    use std::io::Read as _;
    let mut head = Vec::with_capacity(HEAD);
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(HEAD as u64).read_to_end(&mut head);
    }
    head
}

pub(crate) fn cli_problem(pack: &Pack, env: &BTreeMap<String, String>) -> Option<(String, Next)> {
    cli_problem_of(pack, env, None)
}

/// [`cli_problem`], given the CLI's bytes when the caller has already read them (an
/// exec that pinned them to their digest): the file is then not read again.
pub(crate) fn cli_problem_of(
    pack: &Pack,
    env: &BTreeMap<String, String>,
    read: Option<&[u8]>,
) -> Option<(String, Next)> {
    let bin = pack.manifest.bin.first()?;
    if let Some(file) = pack.manifest.bin_file() {
        let head: Vec<u8> = match (&pack.origin, read) {
            (Origin::Builtin { bin: Some(bytes) }, _) => head_of(bytes),
            (Origin::Builtin { bin: None }, _) => {
                return Some((format!("./{file} is missing"), reinstall(pack)));
            }
            (Origin::Installed { dir }, read) => {
                let path = dir.join(file);
                if let Some(problem) = check_bin_file(&path) {
                    return Some((problem, reinstall(pack)));
                }
                match read {
                    Some(bytes) => head_of(bytes),
                    None => read_head(&path),
                }
            }
        };
        if let Some(interpreter) = shebang_interpreter(&head)
            && !is_executable(&interpreter)
        {
            return Some((
                format!(
                    "./{file} runs with {}, which is not on this machine",
                    interpreter.display()
                ),
                Next::advice(format!(
                    "install {} or a pack built for this machine",
                    interpreter.display()
                )),
            ));
        }
        return None;
    }
    match resolve_program(bin, env.get(env_vars::PATH).map(String::as_str)) {
        Some(_) => None,
        None => Some((
            format!("`{bin}` is not on PATH"),
            Next::advice(format!(
                "install `{bin}` (for example: apt-get install {bin}, or brew install {bin})"
            )),
        )),
    }
}

fn reinstall(pack: &Pack) -> Next {
    Next::hcpx(["install", pack.manifest.id.as_str()])
}

/// What the caller's machine and settings are, for the flags.
pub(crate) struct Here<'a> {
    pub env: &'a BTreeMap<String, String>,
    pub policies: &'a Policies,
    pub bindings: Result<&'a Store, &'a str>,
    /// What a pack is now, to match against what its bindings were given to.
    pub identity: &'a dyn Fn(&Pack) -> Identity,
    pub machine: &'a Machine,
    pub mode: Mode,
    /// Why `$HCP_HOME` is readable past the filesystem layer ([`sandbox::home::exposure`]).
    pub exposed: Option<&'a str>,
}

/// The four flags for one pack (the policy is the same for both principals).
pub(crate) fn check(pack: &Pack, here: &Here<'_>) -> Availability {
    let (env, policies, bindings) = (here.env, here.policies, here.bindings);
    let mut problems = Vec::new();
    if let Some((reason, fix)) = cli_problem(pack, env) {
        problems.push(Problem {
            flag: Flag::Runnable,
            reason,
            fix: fix.to_string(),
        });
    }
    // What the pack's most demanding command needs, as the sandbox derives it.
    let grants = sandbox::Grants::for_pack(&pack.manifest);
    let layers = sandbox::layers(here.machine, grants.needs(here.exposed, None));
    let missing: Vec<&str> = sandbox::missing(&layers)
        .iter()
        .map(|layer| layer.layer)
        .collect();
    if !missing.is_empty() && here.mode == Mode::Strict {
        problems.push(Problem {
            flag: Flag::Runnable,
            reason: format!(
                "this machine cannot enforce the sandbox it needs: {}",
                missing.join(", ")
            ),
            fix: "hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort"
                .to_owned(),
        });
    }
    let id = &pack.manifest.id;
    // Computed only when a binding is stored for the pack: it reads its files.
    let current = match bindings {
        Ok(store) if store.has_any(id) => Some((here.identity)(pack)),
        _ => None,
    };
    for (key, spec) in pack.manifest.bindings.iter().filter(|(_, spec)| spec.required) {
        let resolved = match (bindings, &current) {
            (Ok(store), Some(current)) => Ok(store.resolve(id, key, env, current)),
            (Ok(_), None) => Ok(Resolved::Unset),
            (Err(error), _) => Err(error),
        };
        let (reason, fix) = match (resolved, &current) {
            (Ok(Resolved::Set(_)), _) => continue,
            (Ok(Resolved::HeldBack { bound_for }), Some(current)) => (
                Resolved::held_back_reason(bound_for.as_ref(), id, key, current),
                format!("a person who trusts this {id}: hcpx bind {id} {key} --keep"),
            ),
            (Err(error), _) => (error.to_owned(), format!("hcpx bind {id} {key}")),
            _ if spec.secret => (
                format!("required credential {key} is not bound"),
                format!("hcpx bind {id} {key}"),
            ),
            _ => (
                format!("required setting {key} is not bound"),
                format!("hcpx bind {id} {key}"),
            ),
        };
        problems.push(Problem {
            flag: Flag::Bound,
            reason,
            fix,
        });
    }
    let commands = pack
        .manifest
        .commands
        .iter()
        .map(|command| (command.name.as_str(), command.effect));
    if let Err(evaluation) = policy::permits_any(id, commands, policies) {
        problems.push(Problem {
            flag: Flag::Permitted,
            reason: format!("every command is denied by {}", evaluation.rule),
            fix: match evaluation.rule.kind {
                RuleKind::Unparsable { .. } => "fix the field named in the policy file (docs/policy.md describes the format), then run `hcpx policy show`".to_owned(),
                _ => format!("hcpx policy set {id}.* confirm"),
            },
        });
    }
    let has = |flag: Flag| problems.iter().any(|problem| problem.flag == flag);
    let (runnable, bound, permitted) = (!has(Flag::Runnable), !has(Flag::Bound), !has(Flag::Permitted));
    Availability {
        installed: true,
        runnable,
        bound,
        permitted,
        ready: runnable && bound && permitted,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    use crate::catalog::Catalog;
    use crate::policy::Layer;

    fn machine(enforced: bool) -> Machine {
        if enforced {
            Machine::all_enforced()
        } else {
            Machine::without_kernel_layers("not here")
        }
    }

    fn flags_for(id: &str, machine: &Machine, mode: Mode) -> Availability {
        let catalog = Catalog::load(Path::new("/nonexistent"));
        let env: BTreeMap<String, String> = [("PATH".to_owned(), "/usr/bin:/bin".to_owned())].into();
        let policies = Policies {
            user: Layer::Absent,
            project: Layer::Absent,
        };
        let store = Store::default();
        let here = Here {
            env: &env,
            policies: &policies,
            bindings: Ok(&store),
            identity: &|pack| Identity {
                source: format!("builtin:{}", pack.id()),
                integrity: None,
            },
            machine,
            mode,
            exposed: None,
        };
        check(catalog.get(id).unwrap(), &here)
    }

    #[test]
    fn a_missing_sandbox_layer_makes_a_pack_not_runnable_in_strict_mode() {
        let flags = flags_for("transit", &machine(false), Mode::Strict);
        assert!(!flags.runnable && !flags.ready);
        assert_eq!(flags.problems[0].flag, Flag::Runnable);
        assert_eq!(
            flags.problems[0].reason,
            "this machine cannot enforce the sandbox it needs: descriptors, containment, privileges, filesystem, process-isolation, network, sockets, syscall-filter"
        );
        assert!(flags_for("transit", &machine(false), Mode::BestEffort).runnable);
        assert!(flags_for("transit", &machine(true), Mode::Strict).ready);
    }
}
