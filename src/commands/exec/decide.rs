//! Step 2 of exec: the policy's decision for this caller, and the plan of what would
//! run (the `--dry-run` plan, also shown with a confirmation or a refusal),
//! confirmed when the decision asks for it.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::bind::Bindings;
use super::validate::Target;
use super::{Audit, Request, redact_text};
use crate::binding::Secret;
use crate::catalog::{Origin, ProgramError};
use crate::commands::{load_policies, to_json};
use crate::context::{Context, env_vars};
use crate::error::Failure;
use crate::manifest::Effect;
use crate::next::Next;
use crate::pack_cache::CacheError;
use crate::policy::{self, Decision, Evaluation, Principal, Subject};
use crate::redact::Redactor;
use crate::render::{self, Question};
use crate::sandbox::{self, Assessment, Grants, HomeView, LayerReport, Mode, Site};

/// The decision and what would run: the `--dry-run` plan, also shown with a
/// confirmation or a refusal.
pub(super) struct Plan {
    pub(super) evaluation: Evaluation,
    pub(super) program: Result<PathBuf, ProgramError>,
    pub(super) args: Vec<String>,
    /// What the command is granted, from its manifest.
    pub(super) grants: Grants,
    /// `$HCP_HOME` and every path of it.
    pub(super) home: HomeView,
    /// The grants assessed for this call on this machine.
    pub(super) sandbox: Assessment,
    /// Why the pack's cache folder cannot be placed, when it keeps one.
    pub(super) cache_error: Option<CacheError>,
    pub(super) env_names: Vec<String>,
    /// The binding written to the CLI's standard input, when the command names one
    /// and it is bound.
    pub(super) stdin: Option<String>,
    /// What a person confirms: the command, its effect, the folder, every parameter.
    pub(super) summary: String,
    /// What the plan's data says of the call beyond the above.
    head: Head,
}

/// A confirmation or a refusal carries the plan as its data.
impl Serialize for Plan {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(serializer)
    }
}

/// The call as the plan's data names it.
struct Head {
    pack: String,
    command: String,
    effect: Effect,
    principal: Principal,
    cwd: PathBuf,
    timeout_ms: u64,
    mode: Mode,
}

impl Plan {
    /// The plan as `data` (see [`PlanData`]): made only when a dry run, a
    /// confirmation or a refusal shows it, not for every call that runs.
    pub(super) fn json(&self) -> Value {
        let head = &self.head;
        to_json(&PlanData {
            pack: &head.pack,
            command: &head.command,
            effect: head.effect,
            principal: head.principal,
            decision: self.evaluation.decision,
            rule: to_json(&self.evaluation.rule),
            child: self.child(),
            cwd: &head.cwd,
            env: &self.env_names,
            stdin: self.stdin.as_deref(),
            summary: &self.summary,
            timeout_ms: head.timeout_ms,
            sandbox: SandboxData {
                mode: head.mode,
                network: self.grants.network.clone(),
                sockets: &self.grants.sockets,
                write: &self.grants.writes,
                cache: self.grants.cache.as_ref().map(sandbox::CacheFolder::path),
                read: &self.sandbox.read,
                layers: &self.sandbox.layers,
            },
        })
    }

    pub(super) fn child(&self) -> Vec<String> {
        let program = match &self.program {
            Ok(program) => program.display().to_string(),
            Err(_) => String::new(),
        };
        std::iter::once(program)
            .chain(self.args.iter().cloned())
            .collect()
    }
}

/// The plan as `--dry-run`, a confirmation and a refusal carry it in `data` (see
/// docs/mcp.md).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanData<'a> {
    pack: &'a str,
    command: &'a str,
    effect: Effect,
    principal: Principal,
    decision: Decision,
    rule: Value,
    child: Vec<String>,
    cwd: &'a Path,
    env: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    stdin: Option<&'a str>,
    summary: &'a str,
    timeout_ms: u64,
    sandbox: SandboxData<'a>,
}

/// The plan's sandbox: the mode, the command's grants (its cache folder among
/// them), its read allowlist, its layers.
#[derive(Serialize)]
struct SandboxData<'a> {
    mode: Mode,
    network: crate::manifest::Network,
    sockets: &'a [String],
    write: &'a [String],
    cache: Option<PathBuf>,
    read: &'a [PathBuf],
    layers: &'a [LayerReport],
}

fn plan(
    ctx: &Context,
    request: &Request,
    target: &Target<'_>,
    bindings: &Bindings,
    evaluation: Evaluation,
) -> Plan {
    let manifest = &target.pack.manifest;
    let command = target.command;
    let program = match &bindings.pinned {
        Some(pinned) => Ok(pinned.program.clone()),
        None => target.pack.program(&ctx.home, ctx.var(env_vars::PATH)),
    };
    crate::mark("program found");
    let mut grants = Grants::for_command(&manifest.sandbox, command, &target.values);
    let cache_error = match crate::pack_cache::folder(ctx, target.pack) {
        Ok(Some(folder)) => {
            grants = grants.with_cache(folder);
            None
        }
        Ok(None) => None,
        Err(error) => Some(error),
    };
    let caches = crate::pack_cache::root(ctx);
    crate::mark("pack cache");
    let home = ctx.session.sandbox.home_view(&ctx.home);
    crate::mark("home view");
    let _ = ctx.session.sandbox.machine();
    crate::mark("probed");
    let site = Site {
        home: &home,
        user_home: ctx.var(env_vars::HOME).map(Path::new),
        cwd: &ctx.cwd,
        pack_dir: match &target.pack.origin {
            Origin::Installed { dir } => Some(dir.as_path()),
            Origin::Builtin { .. } | Origin::Catalog => None,
        },
        program: program.as_deref().ok(),
        path_var: ctx.var(env_vars::PATH),
        caches: caches.as_deref(),
    };
    let assessed = sandbox::assess(&grants, &site, ctx.session.sandbox.machine());
    crate::mark("assessed");
    // Only the bindings this call would pass: an unbound or held-back one is not,
    // nor one delivered on stdin, which no variable holds; and the pack's
    // `sandbox.env`.
    let on_stdin = |key: &str| {
        manifest
            .binding(key)
            .is_some_and(|spec| spec.delivery == crate::manifest::Delivery::Stdin)
    };
    let env_names = sandbox::env_names(
        &ctx.env,
        bindings
            .found
            .iter()
            .map(|(key, _)| key.as_str())
            .filter(|key| !on_stdin(key))
            .chain(grants.env_names()),
    );
    let stdin = command
        .stdin
        .clone()
        .filter(|name| bindings.found.iter().any(|(key, _)| key == name));
    let summary = summary(ctx, target, &bindings.found);
    let head = Head {
        pack: manifest.id.clone(),
        command: command.name.clone(),
        effect: command.effect,
        principal: ctx.principal,
        cwd: ctx.cwd.clone(),
        timeout_ms: u64::try_from(request.timeout(target.pack).as_millis()).unwrap_or(u64::MAX),
        mode: ctx.sandbox_mode,
    };
    Plan {
        evaluation,
        program,
        args: target.args.clone(),
        grants,
        home,
        sandbox: assessed,
        cache_error,
        env_names,
        stdin,
        summary,
        head,
    }
}

/// What a person is asked to confirm (see [`render::exec_question`]), every
/// parameter as the caller gave it, with the values of the pack's bindings hidden.
fn summary(ctx: &Context, target: &Target<'_>, bound: &[(String, Secret)]) -> String {
    let redactor = Redactor::new(bound);
    let params: Vec<(&str, String)> = target
        .given
        .iter()
        .map(|&(key, value)| (key, redactor.redact_str(value)))
        .collect();
    render::exec_question(&Question {
        pack: &target.pack.manifest.id,
        command: &target.command.name,
        effect: target.command.effect,
        cwd: &ctx.cwd,
        params: &params,
    })
}

/// Step 2: the policy's decision for this caller, confirmed when it asks for it.
pub(super) async fn decide(
    ctx: &Context,
    request: &Request,
    target: &Target<'_>,
    bindings: &Bindings,
    audit: &mut Audit<'_>,
) -> Result<Plan, Failure> {
    let policies = load_policies(ctx);
    crate::mark("policies read");
    let subject = Subject {
        pack: &target.pack.manifest.id,
        command: &target.command.name,
        effect: target.command.effect,
        caller: ctx.caller.as_deref(),
    };
    let evaluation = match ctx
        .read_only
        .then(|| policy::read_only(target.command.effect))
        .flatten()
    {
        Some(denied) => denied,
        None => policy::evaluate(&subject, &policies),
    };
    let plan = plan(ctx, request, target, bindings, evaluation);
    if request.args.dry_run {
        if plan.evaluation.decision == Decision::Deny {
            return Err(crate::commands::denied(&plan.evaluation, &plan.json()));
        }
        return Ok(plan);
    }
    let asked = crate::commands::Asked {
        what: plan.summary.clone(),
        yes: request.args.yes,
        retry: Next::hcpx(
            request
                .command_line(true)
                .iter()
                .map(|word| redact_text(word, &bindings.found)),
        ),
        by_hand: Next::hcpx(
            request
                .command_line(false)
                .iter()
                .map(|word| redact_text(word, &bindings.found)),
        ),
    };
    if let Err(failure) = crate::commands::confirm(ctx, &asked, &plan.evaluation, &plan).await {
        audit.decision = Some(crate::audit::Disposition::of_unconfirmed(failure.reason));
        return Err(failure);
    }
    // From here on, a call that does not run was refused.
    audit.decision = Some(crate::audit::Disposition::Refused);
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::manifest::Effect;
    use crate::render::{self, Question};

    /// A value that holds a line break, a bidirectional override or a tab would let a
    /// caller draw a fake line into the question a person confirms: the whole
    /// question shows them escaped, on the value's one line.
    #[test]
    fn prompts_show_characters_that_could_fake_lines_escaped() {
        let question = render::exec_question(&Question {
            pack: "transit",
            command: "plan",
            effect: Effect::Write,
            cwd: Path::new("/work"),
            params: &[
                ("to", "B\n  from=nowhere".to_owned()),
                ("note", "a\u{202e}c€\t".to_owned()),
            ],
        });
        assert_eq!(
            question,
            "Run transit plan (write) in /work?\n  to=B\\n  from=nowhere\n  note=a\\u{202e}c€\\t"
        );
    }
}
