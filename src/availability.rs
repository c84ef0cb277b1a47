//! The four availability flags (see README.md): `installed`, `runnable`, `bound`,
//! `permitted` and `ready`, each false flag with its reason and the command that
//! fixes it; and, for a pack that wraps a program of the machine, that program: where
//! it was found (under `bin[0]` or an alias), the variant the pack supports, what the
//! found one says it is, and how to get it on this system.

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::binding::{Identity, Resolved, Store};
use crate::catalog::{Origin, Pack};
use crate::context::env_vars;
use crate::next::Next;
use crate::policy::{self, Policies, RuleKind};
use crate::program::probe::{self, Probed};
use crate::program::{Os, check_bin_file, hints, is_executable, shebang_interpreter};
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
    /// The program of the machine the pack wraps; `None` for a pack with its own CLI.
    pub program: Option<ProgramReport>,
    /// A later version of the pack in this hcpx's catalog, when it was installed
    /// from there: `hcpx install ID` updates it.
    pub update: Option<String>,
}

/// A pack's program of the machine, as found here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ProgramReport {
    /// `bin[0]`.
    pub name: String,
    /// The other names it is looked for under (`program.aliases`).
    pub aliases: Vec<String>,
    /// Where it was found on PATH, under its name or an alias.
    pub path: Option<PathBuf>,
    /// The variant the pack supports (`program.variant`).
    pub variant: Option<String>,
    /// The line it printed for `program.versionArgs` that `versionPattern` matched, else
    /// its first line, when it was asked.
    pub version: Option<String>,
    /// How to install it on this system, best first (`program.install`).
    pub install: Vec<String>,
    pub homepage: Option<String>,
}

impl Availability {
    /// Records that the found program is not the variant the pack supports (or
    /// could not say): `runnable` and `ready` turn false.
    fn not_runnable(&mut self, reason: String, fix: String) {
        self.problems.push(Problem {
            flag: Flag::Runnable,
            reason,
            fix,
        });
        self.runnable = false;
        self.ready = false;
    }
}

/// The most characters of a program's own words a reason quotes.
const MAX_QUOTED: usize = 120;

/// A program's line, as a reason quotes it: short (a terminal shows it escaped).
fn quoted(line: &str) -> String {
    let mut shown: String = line.chars().take(MAX_QUOTED).collect();
    if line.chars().count() > MAX_QUOTED {
        shown.push('…');
    }
    shown
}

/// Asks the pack's program once what it is (`program.versionArgs`, under the
/// sandbox: [`probe::run`]) and records the answer in `report`: its first line as
/// `version`, and `runnable: false` when it does not match `program.versionPattern`
/// (another program of the same name: mikefarah's `yq` for a pack of kislyuk's), did
/// not answer, or could not be started. Only `availability` asks; exec and search do
/// not spend the run.
pub(crate) async fn check_variant(
    report: &mut Availability,
    pack: &Pack,
    caller: &probe::Caller<'_>,
    os: Os,
) {
    let Some(spec) = &pack.manifest.program else {
        return;
    };
    let Some(found) = report.program.as_ref().and_then(|program| program.path.clone()) else {
        return;
    };
    if spec.version_args.is_empty() {
        return;
    }
    let mut args: Vec<String> = pack.manifest.bin.iter().skip(1).cloned().collect();
    args.extend(spec.version_args.iter().cloned());
    let probed = probe::run(caller, &found, &args, &pack.manifest.sandbox.read).await;
    let shown = probed.version_line(spec.version_pattern.as_deref());
    if let (Some(program), Some(line)) = (report.program.as_mut(), shown) {
        program.version = Some(quoted(line));
    }
    let Some(pattern) = &spec.version_pattern else {
        return;
    };
    let asked = format!(
        "`{} {}`",
        pack.manifest.bin.first().map(String::as_str).unwrap_or_default(),
        spec.version_args.join(" ")
    );
    let found_text = found.display();
    let reason = match &probed {
        Probed::Answered { output, .. } if probe::matches_variant(pattern, output) => return,
        // The sandbox this machine cannot enforce is already a reason of its own.
        Probed::NotRun(_) if !report.runnable => return,
        Probed::Answered { .. } => {
            let said = probed
                .first_line()
                .map_or_else(|| "nothing".to_owned(), |line| format!("\"{}\"", quoted(line)));
            match &spec.variant {
                Some(variant) => {
                    format!("found {found_text}, but it is not {variant}: {asked} printed {said}")
                }
                None => {
                    format!("found {found_text}, but {asked} printed {said}, which does not match {pattern}")
                }
            }
        }
        Probed::TimedOut => format!(
            "found {found_text}, but {asked} did not answer within {} s, so its variant is unknown",
            probe::TIMEOUT.as_secs()
        ),
        Probed::NotRun(why) => format!("found {found_text}, but {asked} could not be run: {why}"),
    };
    let wanted = spec.variant.as_deref().unwrap_or("the program the pack supports");
    let fix = match hints::how_to_get(Some(spec), os) {
        Some(how) => format!("install {wanted} ({how}), ahead of {} on PATH", parent_of(&found)),
        None => format!("install {wanted}, ahead of {} on PATH", parent_of(&found)),
    };
    report.not_runnable(reason, fix);
}

fn parent_of(path: &Path) -> String {
    path.parent().unwrap_or(path).display().to_string()
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

pub(crate) fn cli_problem(
    pack: &Pack,
    env: &BTreeMap<String, String>,
    os: &dyn Fn() -> Os,
) -> Option<(String, Next)> {
    cli_problem_of(pack, env, None, os)
}

/// [`cli_problem`], given the CLI's bytes when the caller has already read them (an
/// exec that pinned them to their digest): the file is then not read again. `os` is
/// asked only when a program is missing, for how to get it.
pub(crate) fn cli_problem_of(
    pack: &Pack,
    env: &BTreeMap<String, String>,
    read: Option<&[u8]>,
    os: &dyn Fn() -> Os,
) -> Option<(String, Next)> {
    pack.manifest.bin.first()?;
    if let Some(file) = pack.manifest.bin_file() {
        let head: Vec<u8> = match (&pack.origin, read) {
            (Origin::Builtin { bin: Some(bytes) }, _) => head_of(bytes),
            (Origin::Builtin { bin: None }, _) => {
                return Some((format!("./{file} is missing"), reinstall(pack)));
            }
            (Origin::Catalog, _) => {
                return Some(("the pack is not installed".to_owned(), reinstall(pack)));
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
    match crate::program::resolve_pack_program(&pack.manifest, env.get(env_vars::PATH).map(String::as_str)) {
        Some(_) => None,
        None => Some((not_on_path(pack), how_to_get(pack, os()))),
    }
}

/// Why a pack's program is not found: its name, and the aliases looked for too.
pub(crate) fn not_on_path(pack: &Pack) -> String {
    let names = crate::program::names(&pack.manifest);
    match names.split_first() {
        Some((bin, [])) => format!("`{bin}` is not on PATH"),
        Some((bin, aliases)) => {
            let aliases: Vec<String> = aliases.iter().map(|alias| format!("`{alias}`")).collect();
            format!("`{bin}` is not on PATH, nor {}", aliases.join(" nor "))
        }
        None => "the pack names no program".to_owned(),
    }
}

/// How to get a pack's missing program on `os`: what its `program.install` and
/// `homepage` say, or a guess from its name when it declares neither.
pub(crate) fn how_to_get(pack: &Pack, os: Os) -> Next {
    let bin = pack.manifest.bin.first().map(String::as_str).unwrap_or_default();
    match hints::how_to_get(pack.manifest.program.as_ref(), os) {
        Some(how) => Next::advice(how),
        None => Next::advice(format!(
            "install `{bin}` (for example: apt-get install {bin}, or brew install {bin})"
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
    /// The OAuth caller, whom policy rules may name.
    pub caller: Option<&'a crate::policy::Caller>,
    pub bindings: Result<&'a Store, &'a str>,
    /// What a pack is now, to match against what its bindings were given to.
    pub identity: &'a dyn Fn(&Pack) -> Identity,
    pub machine: &'a Machine,
    pub mode: Mode,
    /// Why `$HCP_HOME` is readable past the filesystem layer ([`sandbox::home::exposure`]).
    pub exposed: Option<&'a str>,
    /// The system a missing program would be installed on, asked only when needed.
    pub os: &'a dyn Fn() -> Os,
}

/// The four flags for one pack (the policy is the same for both principals).
pub(crate) fn check(pack: &Pack, here: &Here<'_>) -> Availability {
    let (env, policies, bindings) = (here.env, here.policies, here.bindings);
    let mut problems = Vec::new();
    let id = &pack.manifest.id;
    if !pack.is_installed() {
        problems.push(Problem {
            flag: Flag::Installed,
            reason: "it is in the catalog of this hcpx, and not installed".to_owned(),
            fix: format!("hcpx install {id}"),
        });
    }
    if let Some((reason, fix)) = cli_problem(pack, env, here.os) {
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
    if let Err(evaluation) = policy::permits_any(id, commands, here.caller, policies) {
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
    let (installed, runnable, bound, permitted) = (
        !has(Flag::Installed),
        !has(Flag::Runnable),
        !has(Flag::Bound),
        !has(Flag::Permitted),
    );
    Availability {
        installed,
        runnable,
        bound,
        permitted,
        ready: installed && runnable && bound && permitted,
        problems,
        program: program_report(pack, env, here.os),
        update: None,
    }
}

/// The pack's program of the machine as found here; `None` for a pack with its own CLI.
fn program_report(pack: &Pack, env: &BTreeMap<String, String>, os: &dyn Fn() -> Os) -> Option<ProgramReport> {
    let name = pack.program_name()?;
    let spec = pack.manifest.program.as_ref();
    Some(ProgramReport {
        name: name.to_owned(),
        aliases: spec.map(|spec| spec.aliases.clone()).unwrap_or_default(),
        path: crate::program::resolve_pack_program(
            &pack.manifest,
            env.get(env_vars::PATH).map(String::as_str),
        ),
        variant: spec.and_then(|spec| spec.variant.clone()),
        version: None,
        install: spec.map(|spec| hints::ways(spec, os())).unwrap_or_default(),
        homepage: spec.and_then(|spec| spec.homepage.clone()),
    })
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
            caller: None,
            bindings: Ok(&store),
            identity: &|pack| Identity {
                source: format!("builtin:{}", pack.id()),
                integrity: None,
            },
            machine,
            mode,
            exposed: None,
            os: &|| Os::Debian,
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
