//! `hcpx exec PACK COMMAND [--dry-run] [--yes] [--timeout-ms N] -- KEY=VALUE...`
//!
//! The six steps (see README.md), in order, each a function that returns what the next
//! one needs or the refusal that stops the call before anything is spawned:
//! [`validate`] → [`decide`] → [`bind`] → [`confine`] → [`spawn`] → [`report`].
//! One [`Audit`] records the call's decision on every way out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{find_pack, load_policies, to_json};
use crate::Reply;
use crate::audit;
use crate::binding::{Resolved, Secret, Store};
use crate::catalog::{self, Catalog, Origin, Pack, ProgramError};
use crate::child::{RunInfo, StreamTruncation, Truncation};
use crate::context::{Context, env_vars};
use crate::error::{EXIT_FAILED, Failure, Reason};
use crate::install;
use crate::invocation::{self, InvocationError};
use crate::manifest::{Command, Effect, MAX_TIMEOUT_MS};
use crate::next::Next;
use crate::policy::{self, Decision, Evaluation, Subject};
use crate::redact::Redactor;
use crate::render::{self, PlanText, Question};
use crate::runtime::{self, Ending, Finished};
use crate::sandbox::reads::ReadsError;
use crate::sandbox::{self, ChildPlan, HomeView, LayerReport, Mode, Needs, Reads};

/// One exec request, as parsed.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub args: crate::cli::ExecArgs,
    pub json: bool,
    /// The hcpx argv, for the audit line.
    pub argv: Vec<String>,
}

impl Request {
    /// This very call as a command line, with or without `--yes`: what `next`
    /// suggests, with the caller's own values (the words after `hcpx`).
    fn command_line(&self, yes: bool) -> Vec<String> {
        self.corrected(&self.args.command, &self.args.params, yes, false)
    }

    /// This call with another command or other parameters (a misspelling put
    /// right), every flag the caller gave kept.
    fn corrected(&self, command: &str, params: &[String], yes: bool, dry_run: bool) -> Vec<String> {
        let mut words = vec!["exec", self.args.pack.as_str(), command];
        if dry_run {
            words.push("--dry-run");
        }
        if yes {
            words.push("--yes");
        }
        let timeout = self.args.timeout_ms.map(|ms| ms.to_string());
        if let Some(ms) = &timeout {
            words.extend(["--timeout-ms", ms.as_str()]);
        }
        if !params.is_empty() {
            words.push("--");
            words.extend(params.iter().map(String::as_str));
        }
        words.into_iter().map(str::to_owned).collect()
    }

    fn timeout(&self, pack: &Pack) -> Duration {
        Duration::from_millis(
            self.args
                .timeout_ms
                .unwrap_or(pack.manifest.sandbox.timeout_ms)
                .min(MAX_TIMEOUT_MS),
        )
    }
}

pub(crate) async fn run(ctx: &Context, request: Request) -> Result<Reply, Failure> {
    let mut audit = Audit::new(ctx, &request);
    let result = steps(ctx, &request, &mut audit).await;
    audit.finish(result)
}

async fn steps(ctx: &Context, request: &Request, audit: &mut Audit<'_>) -> Result<Reply, Failure> {
    let catalog = super::load_one(ctx, &request.args.pack);
    let target = validate(&catalog, ctx, request)?;
    let mut bindings = read_bindings(ctx, target.pack);
    let plan = decide(ctx, request, &target, &bindings, audit).await?;
    let pinned = bindings.pinned.take();
    let every = std::mem::take(&mut bindings.every);
    let bound = bind(target.pack, bindings)?;
    audit.redactor = Redactor::new(&[bound.as_slice(), every.as_slice()].concat());
    let program = runnable(ctx, &target, &plan)?;
    if request.args.dry_run {
        return Ok(dry_run(ctx, &plan));
    }
    let (child, tmpdir) = confine(ctx, &target, &plan, program, pinned.as_ref(), &bound)?;
    let finished = spawn(ctx, request, &target, child).await?;
    drop(tmpdir);
    audit.ran(&finished);
    report(request, &target, &plan, finished, &audit.redactor)
}

/// Step 5: the pack's CLI runs under its limits, until it ends or is stopped.
async fn spawn(
    ctx: &Context,
    request: &Request,
    target: &Target<'_>,
    child: sandbox::Spawn,
) -> Result<Finished, Failure> {
    runtime::run_child(
        child,
        request.timeout(target.pack),
        runtime::MAX_OUTPUT,
        &ctx.cancel,
        ctx.progress.as_deref(),
    )
    .await
    .map_err(|error| {
        Failure::new(
            Reason::NotRunnable,
            "the pack's CLI could not be started; nothing of it ran",
        )
        .details(vec![error.to_string()])
        .data(json!({ "details": [error.to_string()] }))
        .next(Next::hcpx(["availability", request.args.pack.as_str()]))
    })
}

/// Text hcpx writes that may hold a caller's value, with every bound value hidden.
fn redact_text(text: &str, found: &[(String, Secret)]) -> String {
    if found.is_empty() {
        return text.to_owned();
    }
    String::from_utf8_lossy(&Redactor::new(found).redact_owned(text.as_bytes().to_vec())).into_owned()
}

/// Step 1's result: the pack, its command and the pack CLI's arguments.
struct Target<'c> {
    pack: &'c Pack,
    command: &'c Command,
    args: Vec<String>,
}

/// Step 1: the pack and command exist; every parameter is declared and valid.
fn validate<'c>(catalog: &'c Catalog, ctx: &Context, request: &Request) -> Result<Target<'c>, Failure> {
    let pack = find_pack(catalog, &request.args.pack)?;
    let Some(command) = pack.manifest.command(&request.args.command) else {
        let names: Vec<&str> = pack.manifest.commands.iter().map(|c| c.name.as_str()).collect();
        let closest = crate::suggest::closest(&request.args.command, names.iter().copied());
        let (message, next) = match closest.first() {
            Some(best) => (
                format!(
                    "the pack has no such command; closest: {best}; its commands: {}",
                    names.join(", ")
                ),
                Next::hcpx(request.corrected(
                    best,
                    &request.args.params,
                    request.args.yes,
                    request.args.dry_run,
                )),
            ),
            None => (
                format!("the pack has no such command; its commands: {}", names.join(", ")),
                Next::hcpx(["skill", request.args.pack.as_str()]),
            ),
        };
        return Err(Failure::new(Reason::UnknownCommand, message)
            .next(next)
            .data(json!({ "commands": names, "suggestions": closest })));
    };
    let values = invocation::parse(
        command,
        &request.args.params,
        &crate::workdir::OnDisk::new(&ctx.cwd),
    )
    .map_err(|error| invocation_failure(&error, request))?;
    let mut args: Vec<String> = pack.manifest.bin.iter().skip(1).cloned().collect();
    let options: &[String] = if request.json { &command.json } else { &[] };
    args.extend(
        invocation::render(command, &values, options).map_err(|error| invocation_failure(&error, request))?,
    );
    Ok(Target { pack, command, args })
}

/// The most characters of a caller's key a refusal's details show.
const MAX_KEY_SHOWN: usize = 64;

fn invocation_failure(error: &InvocationError, request: &Request) -> Failure {
    let reason = match error {
        InvocationError::NotAssignment { .. } => Reason::InvalidArguments,
        InvocationError::Unknown { .. } => Reason::UnknownParam,
        InvocationError::Missing { .. } => Reason::MissingParam,
        InvocationError::Repeated { .. } | InvocationError::Invalid { .. } => Reason::InvalidParam,
    };
    let mut failure =
        Failure::new(reason, error.to_string()).next(Next::hcpx(["skill", request.args.pack.as_str()]));
    if let InvocationError::Unknown { key, closest, known } = error {
        // The caller's key, named for a person (escaped and bounded: it is their
        // text, never the message's), and the call with the closest key instead.
        let mut shown: String = key.chars().take(MAX_KEY_SHOWN).map(render::printable).collect();
        if key.chars().count() > MAX_KEY_SHOWN {
            shown.push('…');
        }
        let details = vec![match closest {
            Some(best) => format!("unknown key: `{shown}`; did you mean `{best}`?"),
            None => format!("unknown key: `{shown}`"),
        }];
        if let Some(best) = closest {
            let prefix = format!("{key}=");
            let params: Vec<String> = request
                .args
                .params
                .iter()
                .map(|word| match word.strip_prefix(&prefix) {
                    Some(value) => format!("{best}={value}"),
                    None => word.clone(),
                })
                .collect();
            failure = failure.next(Next::hcpx(request.corrected(
                &request.args.command,
                &params,
                request.args.yes,
                request.args.dry_run,
            )));
        }
        failure = failure.details(details).data(json!({
            "key": key, "closest": closest, "known": known, "command": request.args.command,
        }));
    }
    failure
}

/// The decision and what would run: the `--dry-run` plan, also shown with a
/// confirmation or a refusal.
struct Plan {
    evaluation: Evaluation,
    program: Result<PathBuf, ProgramError>,
    args: Vec<String>,
    /// Write grants: the manifest's, for commands that are not reads.
    writes: Vec<String>,
    /// `$HCP_HOME` and every path of it.
    home: HomeView,
    /// The read allowlist beyond the system folders, or why it cannot be granted.
    reads: Result<Reads, ReadsError>,
    /// The same as paths, for people and `--dry-run`.
    read: Vec<PathBuf>,
    layers: Vec<LayerReport>,
    env_names: Vec<String>,
    /// What a person confirms: the command, its effect, the folder, every parameter.
    summary: String,
    json: Value,
}

impl Plan {
    fn child(&self) -> Vec<String> {
        let program = match &self.program {
            Ok(program) => program.display().to_string(),
            Err(_) => String::new(),
        };
        std::iter::once(program)
            .chain(self.args.iter().cloned())
            .collect()
    }
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
    // A read needs no write grant, so it runs in any folder, `$HOME` included.
    let writes = if command.effect == Effect::Read {
        Vec::new()
    } else {
        manifest.sandbox.write.clone()
    };
    let home = ctx.session.sandbox.home_view(&ctx.home);
    let reads = match &program {
        Ok(program) => sandbox::reads::reads(&sandbox::reads::Request {
            home: &home,
            user_home: ctx.var(env_vars::HOME).map(Path::new),
            cwd: &ctx.cwd,
            pack_dir: match &target.pack.origin {
                Origin::Installed { dir } => Some(dir.as_path()),
                Origin::Builtin { .. } => None,
            },
            program,
            path_var: ctx.var(env_vars::PATH),
            declared: &manifest.sandbox.read,
        }),
        Err(_) => Ok(Reads::default()),
    };
    let exposed = sandbox::home::exposure(home.real());
    let layers = sandbox::layers(
        ctx.session.sandbox.machine(),
        Needs {
            network: manifest.sandbox.network,
            writes: &writes,
            sockets: &manifest.sandbox.sockets,
            exposed: exposed.as_deref(),
        },
    );
    let read: Vec<PathBuf> = match &reads {
        Ok(reads) => reads
            .outside
            .iter()
            .cloned()
            .chain(reads.pack.iter().map(|relative| home.real().join(relative)))
            .collect(),
        Err(_) => Vec::new(),
    };
    let mut env_names: Vec<String> = sandbox::PASSED_ENV
        .iter()
        .filter(|name| **name == "PATH" || ctx.var(name).is_some())
        .map(|name| (*name).to_owned())
        .collect();
    env_names.push("TMPDIR".to_owned());
    // Only the bindings this call would pass: an unbound or held-back one is not.
    env_names.extend(bindings.found.iter().map(|(key, _)| key.clone()));
    env_names.sort();
    let summary = summary(ctx, request, target, &bindings.found);
    let mut plan = Plan {
        evaluation,
        program,
        args: target.args.clone(),
        writes,
        home,
        reads,
        read,
        layers,
        env_names,
        summary,
        json: Value::Null,
    };
    plan.json = json!({
        "pack": manifest.id,
        "command": command.name,
        "effect": command.effect,
        "principal": ctx.principal,
        "decision": plan.evaluation.decision,
        "rule": to_json(&plan.evaluation.rule),
        "child": plan.child(),
        "cwd": ctx.cwd,
        "env": plan.env_names,
        "summary": plan.summary,
        "timeoutMs": u64::try_from(request.timeout(target.pack).as_millis()).unwrap_or(u64::MAX),
        "sandbox": {
            "mode": ctx.sandbox_mode,
            "network": manifest.sandbox.network,
            "sockets": manifest.sandbox.sockets,
            "write": plan.writes,
            "read": plan.read,
            "layers": to_json(&plan.layers),
        },
    });
    plan
}

/// What a person is asked to confirm (see [`render::exec_question`]), every
/// parameter as the caller gave it, with the values of the pack's bindings hidden.
fn summary(ctx: &Context, request: &Request, target: &Target<'_>, bound: &[(String, Secret)]) -> String {
    let redactor = Redactor::new(bound);
    let params: Vec<(&str, String)> = request
        .args
        .params
        .iter()
        .map(|word| {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            (key, redactor.redact_str(value))
        })
        .collect();
    render::exec_question(&Question {
        pack: &request.args.pack,
        command: &request.args.command,
        effect: target.command.effect,
        cwd: &ctx.cwd,
        params: &params,
    })
}

/// Step 2: the policy's decision for this caller, confirmed when it asks for it.
async fn decide(
    ctx: &Context,
    request: &Request,
    target: &Target<'_>,
    bindings: &Bindings,
    audit: &mut Audit<'_>,
) -> Result<Plan, Failure> {
    let policies = load_policies(ctx);
    let subject = Subject {
        pack: &target.pack.manifest.id,
        command: &target.command.name,
        effect: target.command.effect,
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
            return Err(super::denied(&plan.evaluation, &plan.json));
        }
        return Ok(plan);
    }
    let asked = super::Asked {
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
    if let Err(failure) = super::confirm(ctx, &asked, &plan.evaluation, &plan.json).await {
        audit.decision = Some(crate::audit::Decision::of_unconfirmed(failure.reason));
        return Err(failure);
    }
    // From here on, a call that does not run was refused.
    audit.decision = Some(crate::audit::Decision::Refused);
    Ok(plan)
}

/// The pack's bound values, read once: step 3 checks them, and the confirmation
/// shown in step 2 hides them.
/// The bytes of an installed pack's CLI whose digest matched its bindings, and the
/// content-named copy under `$HCP_HOME/.installed/` it runs from: an install that
/// replaces the pack while the call starts cannot put other code in front of the
/// credentials.
struct Pinned {
    program: PathBuf,
    bytes: Vec<u8>,
}

struct Bindings {
    found: Vec<(String, Secret)>,
    pinned: Option<Pinned>,
    /// Keys bound for another pack with this id: (key, why), for a person to release.
    held_back: Vec<(String, String)>,
    /// Why the store cannot be used, when the pack has bindings and it cannot.
    unusable: Option<String>,
    /// Every value bound for any pack: redacted from this call's output too, so no
    /// pack prints another's credential, wherever it found it.
    every: Vec<(String, Secret)>,
}

fn read_bindings(ctx: &Context, pack: &Pack) -> Bindings {
    let manifest = &pack.manifest;
    let mut bindings = Bindings {
        found: Vec::new(),
        pinned: None,
        held_back: Vec::new(),
        unusable: None,
        every: Vec::new(),
    };
    let store = match Store::load(&ctx.bindings_path()) {
        Ok(store) => store,
        Err(error) => {
            if !manifest.bindings.is_empty() {
                bindings.unusable = Some(error.to_string());
            }
            return bindings;
        }
    };
    bindings.every = store.every_value(&ctx.env);
    if manifest.bindings.is_empty() || !store.has_any(&manifest.id) {
        return bindings;
    }
    let (current, files) = install::identity_and_files(&ctx.home, pack);
    for (key, _) in &manifest.bindings {
        match store.resolve(&manifest.id, key, &ctx.env, &current) {
            Resolved::Set(secret) => bindings.found.push((key.clone(), secret)),
            Resolved::Unset => {}
            Resolved::HeldBack { bound_for } => bindings.held_back.push((
                key.clone(),
                Resolved::held_back_reason(bound_for.as_ref(), &manifest.id, key, &current),
            )),
        }
    }
    if !bindings.found.is_empty()
        && let (Some(mut files), Some(bin), Some(integrity)) =
            (files, manifest.bin_file(), &current.integrity)
        && let Some(bytes) = files.remove(bin)
    {
        let tag: String = integrity
            .trim_start_matches("sha512-")
            .chars()
            .take(22)
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        bindings.pinned = Some(Pinned {
            program: ctx
                .home
                .join(".installed")
                .join(format!("{}-{tag}", manifest.id))
                .join(bin),
            bytes,
        });
    }
    bindings
}

/// Step 3: the pack's bindings, every required one present and bound for this
/// very pack.
fn bind(pack: &Pack, bindings: Bindings) -> Result<Vec<(String, Secret)>, Failure> {
    if let Some(error) = bindings.unusable {
        return Err(Failure::new(
            Reason::Unbound,
            format!("the binding store cannot be used: {error}"),
        )
        .next(Next::hcpx(["bindings"])));
    }
    let id = &pack.manifest.id;
    for (key, _) in pack.manifest.bindings.iter().filter(|(_, spec)| spec.required) {
        if let Some((_, why)) = bindings.held_back.iter().find(|(held, _)| held == key) {
            return Err(Failure::new(Reason::Unbound, why.clone())
                .data(json!({ "heldBack": [key] }))
                .next(Next::advice(format!(
                    "a person who trusts this {id} runs: hcpx bind {id} {key} --keep   (or binds a new value: hcpx bind {id} {key})"
                ))));
        }
        if !bindings.found.iter().any(|(found, _)| found == key) {
            return Err(Failure::new(
                Reason::Unbound,
                format!("the pack needs {key}, which is not bound"),
            )
            .next(Next::advice(format!("a person runs: hcpx bind {id} {key}"))));
        }
    }
    Ok(bindings.found)
}

fn program_failure(error: &ProgramError, pack: &Pack) -> Failure {
    let next = match error {
        ProgramError::NotOnPath { name } => Next::advice(format!(
            "install `{name}`, then run hcpx availability {}",
            pack.manifest.id
        )),
        ProgramError::MissingBuiltin | ProgramError::Materialize(_) => Next::hcpx(["doctor"]),
    };
    Failure::new(Reason::NotRunnable, error.to_string()).next(next)
}

fn sandbox_failure(error: String) -> Failure {
    Failure::new(
        Reason::NotRunnable,
        "the sandbox could not be set up; nothing of the pack ran",
    )
    .data(json!({ "details": [error] }))
    .details(vec![error])
    .next(Next::hcpx(["doctor"]))
}

/// Step 4, first half (also for `--dry-run`): the pack's CLI is found, and the
/// sandbox it needs can be enforced here (in strict mode).
fn runnable<'p>(ctx: &Context, target: &Target<'_>, plan: &'p Plan) -> Result<&'p PathBuf, Failure> {
    let program = plan
        .program
        .as_ref()
        .map_err(|error| program_failure(error, target.pack))?;
    // The same answer availability gives: a CLI whose `#!` interpreter is missing,
    // or whose file is not a runnable regular file, is refused here.
    if let Some((problem, fix)) = crate::availability::cli_problem(target.pack, &ctx.env) {
        return Err(Failure::new(Reason::NotRunnable, problem).next(fix));
    }
    if let Err(error) = &plan.reads {
        let next = match (error, &target.pack.origin) {
            (ReadsError::CwdInHome { .. }, _) => Next::advice("run it from a folder outside HCP_HOME"),
            (ReadsError::Declared { .. }, Origin::Installed { dir }) => Next::advice(format!(
                "a person removes that read from the pack's manifest; hcpx pack check {} shows it",
                shell_words::quote(&dir.display().to_string())
            )),
            (ReadsError::Declared { .. }, Origin::Builtin { .. }) => Next::hcpx(["doctor"]),
        };
        return Err(Failure::new(Reason::NotRunnable, error.to_string()).next(next));
    }
    let missing: Vec<&LayerReport> = sandbox::missing(&plan.layers);
    if !missing.is_empty() && ctx.sandbox_mode == Mode::Strict {
        let names: Vec<&str> = missing.iter().map(|layer| layer.layer).collect();
        return Err(Failure::new(
            Reason::NotRunnable,
            format!(
                "this machine cannot enforce what the pack needs: {}",
                names.join(", ")
            ),
        )
        .details(
            missing
                .iter()
                .map(|layer| format!("{}: {}", layer.layer, layer.detail))
                .collect(),
        )
        .next(Next::advice(
            "hcpx doctor; to run with only the layers enforced here, a person sets HCP_SANDBOX=best-effort",
        ))
        .data(plan.json.clone()));
    }
    if !ctx.session.sandbox.machine().landlock.enforced {
        // Without Landlock nothing else keeps a write grant away from HCP_HOME (any
        // path of it: the same check as for declared reads).
        for write in &plan.writes {
            if plan
                .home
                .conflict(&invocation::absolute_under(&ctx.cwd, write))
                .is_some()
            {
                return Err(Failure::new(
                    Reason::NotRunnable,
                    "the pack may write to a folder that holds HCP_HOME, and without Landlock nothing stops it there",
                )
                .next(Next::advice("run it from another folder")));
            }
        }
    }
    Ok(program)
}

/// Step 4: the sandbox: the child's CLI on disk, a private temporary folder, the
/// cleared environment and the layers, prepared.
fn confine(
    ctx: &Context,
    target: &Target<'_>,
    plan: &Plan,
    program: &Path,
    pinned: Option<&Pinned>,
    bound: &[(String, Secret)],
) -> Result<(sandbox::Spawn, tempfile::TempDir), Failure> {
    match pinned {
        Some(pinned) => catalog::write_program(&ctx.home, &pinned.program, &pinned.bytes),
        None => target.pack.materialize(&ctx.home, program),
    }
    .map_err(|error| program_failure(&error, target.pack))?;
    let tmpdir = ctx.session.sandbox.private_temp(&ctx.temp_dir).map_err(|error| {
        Failure::new(
            Reason::NotRunnable,
            format!("cannot create the private temporary folder: {error}"),
        )
        .next(Next::hcpx(["doctor"]))
    })?;
    let child_plan = ChildPlan {
        program: program.to_path_buf(),
        args: plan.args.clone(),
        cwd: ctx.cwd.clone(),
        env: sandbox::child_env(&ctx.env, tmpdir.path(), bound),
        tmpdir: tmpdir.path().to_path_buf(),
        writes: plan.writes.clone(),
        home: plan.home.clone(),
        reads: plan.reads.clone().unwrap_or_default(),
        network: target.pack.manifest.sandbox.network,
        sockets: target
            .pack
            .manifest
            .sandbox
            .sockets
            .iter()
            .map(PathBuf::from)
            .collect(),
    };
    let spawn = sandbox::transform(child_plan, &ctx.session.sandbox).map_err(|error| match error {
        sandbox::SandboxError::WriteOutside { .. } => Failure::new(Reason::NotRunnable, error.to_string())
            .next(Next::advice(
                "remove the link, or run the pack where its write path is a folder of the working directory",
            )),
        error => sandbox_failure(error.to_string()),
    })?;
    Ok((spawn, tmpdir))
}

fn dry_run(ctx: &Context, plan: &Plan) -> Reply {
    let child = plan.child();
    let text = render::plan_text(&PlanText {
        decision: plan.evaluation.decision.as_str(),
        rule: plan.evaluation.rule.to_string(),
        child: &child,
        cwd: &ctx.cwd,
        env: &plan.env_names,
        reads: &plan.read,
        layers: &plan.layers,
    });
    Reply {
        data: Some(plan.json.clone()),
        text,
        ..Reply::default()
    }
}

/// Parses JSON output: one value as itself, a stream of values as an array.
fn parse_json(stdout: &[u8]) -> Result<Value, String> {
    let mut values = Vec::new();
    for value in serde_json::Deserializer::from_slice(stdout).into_iter::<Value>() {
        values.push(value.map_err(|error| format!("line {}, column {}", error.line(), error.column()))?);
    }
    match values.len() {
        0 => Err("the output is empty".to_owned()),
        1 => Ok(values.remove(0)),
        _ => Ok(Value::Array(values)),
    }
}

/// Step 6: the capture moves through redaction into the envelope, uncopied; how
/// the child ended decides the result.
fn report(
    request: &Request,
    target: &Target<'_>,
    plan: &Plan,
    finished: Finished,
    redactor: &Redactor,
) -> Result<Reply, Failure> {
    let Finished {
        ending,
        exit_code,
        mut stdout,
        mut stderr,
        stdout_total,
        stderr_total,
        ..
    } = finished;
    // A stream cut at the capture limit may end with the first bytes of a secret,
    // which no redaction can recognise: its tail goes too.
    for (bytes, total) in [(&mut stdout, stdout_total), (&mut stderr, stderr_total)] {
        if total > bytes.len() as u64 {
            let end = redactor.safe_end(bytes);
            bytes.truncate(end);
        }
    }
    let stream = |kept: usize, total: u64| {
        (total > kept as u64).then_some(StreamTruncation {
            shown: kept as u64,
            total,
        })
    };
    let cut_stdout = stream(stdout.len(), stdout_total);
    let cut_stderr = stream(stderr.len(), stderr_total);
    let truncation = (cut_stdout.is_some() || cut_stderr.is_some()).then_some(Truncation {
        stdout: cut_stdout,
        stderr: cut_stderr,
    });
    let text = |bytes: Vec<u8>| {
        String::from_utf8(redactor.redact_owned(bytes))
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    };
    let run = RunInfo {
        child: plan.child(),
        exit_code,
        stdout: text(stdout),
        stderr: text(stderr),
        truncation,
    };
    let (pack, command) = (&request.args.pack, &request.args.command);
    let failure = match ending {
        Ending::TimedOut => Some(
            Failure::new(
                Reason::Timeout,
                format!(
                    "the command did not finish within {} ms and was stopped",
                    request.timeout(target.pack).as_millis()
                ),
            )
            .next(Next::advice(format!(
                "hcpx exec {pack} {command} --timeout-ms N -- … (up to {MAX_TIMEOUT_MS})"
            ))),
        ),
        Ending::Overflow => Some(
            Failure::new(
                Reason::TooLarge,
                "the output passed 8 MiB, so the command was stopped",
            )
            .exit_code(EXIT_FAILED)
            .next(Next::hcpx(["skill", pack.as_str()]).note("narrow the request")),
        ),
        Ending::Cancelled => Some(Failure::new(
            Reason::Failed,
            "interrupted; the command was stopped",
        )),
        Ending::Exited if exit_code != 0 => Some(
            Failure::new(
                Reason::Failed,
                format!("the pack's CLI failed with exit code {exit_code}"),
            )
            .next(Next::hcpx(["skill", pack.as_str()])),
        ),
        Ending::Exited => None,
    };
    if let Some(failure) = failure {
        return Err(failure.with_run(run));
    }
    // The child's exit code says whether the command worked; output that is not
    // JSON only leaves `data` empty (a write that printed nothing succeeded, and
    // must not be retried as if it had failed).
    let mut warnings = Vec::new();
    let data = if request.json && !target.command.json.is_empty() {
        match parse_json(run.stdout.as_bytes()) {
            Ok(mut value) => {
                // Decoded strings are where an escaped secret would stand plain.
                redactor.redact_value(&mut value);
                Some(value)
            }
            Err(why) => {
                warnings.push(crate::reply::Warning::NotJson(why));
                None
            }
        }
    } else {
        None
    };
    Ok(Reply {
        text: String::new(),
        warnings,
        data,
        run: Some(run),
        ..Reply::default()
    })
}

/// The call's audit line (see README.md): written once, on every way out of [`steps`]
/// after the policy step, with the decision the steps set; argv redacted with the
/// call's bindings. A line that cannot be written becomes a warning on the result.
struct Audit<'a> {
    ctx: &'a Context,
    request: &'a Request,
    started: Instant,
    /// `None` until the policy step has decided: nothing is recorded.
    decision: Option<crate::audit::Decision>,
    exit_code: Option<i32>,
    output_bytes: u64,
    redactor: Redactor,
}

impl<'a> Audit<'a> {
    fn new(ctx: &'a Context, request: &'a Request) -> Self {
        Self {
            ctx,
            request,
            started: Instant::now(),
            decision: None,
            exit_code: None,
            output_bytes: 0,
            redactor: Redactor::new(&[]),
        }
    }

    fn ran(&mut self, finished: &Finished) {
        self.decision = Some(crate::audit::Decision::Ran);
        self.exit_code = Some(finished.exit_code);
        self.output_bytes = finished.stdout_total + finished.stderr_total;
    }

    fn finish(self, result: Result<Reply, Failure>) -> Result<Reply, Failure> {
        let Some(decision) = self.decision.filter(|_| !self.request.args.dry_run) else {
            return result;
        };
        let argv: Vec<String> = self
            .request
            .argv
            .iter()
            .map(|arg| self.redactor.redact_str(arg))
            .collect();
        let entry = audit::Entry {
            ts: audit::now(),
            principal: self.ctx.principal,
            argv: &argv,
            pack: &self.request.args.pack,
            command: &self.request.args.command,
            decision,
            exit_code: self.exit_code,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            output_bytes: self.output_bytes,
        };
        let Err(error) = audit::append(&self.ctx.home, &entry) else {
            return result;
        };
        let warning = render::warning(format_args!("the audit line was not written: {error}"));
        match result {
            Ok(mut reply) => {
                reply
                    .warnings
                    .push(crate::reply::Warning::AuditLine(error.to_string()));
                Ok(reply)
            }
            Err(failure) => {
                let mut details = failure.details.clone();
                details.push(warning);
                Err(failure.details(details))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_show_characters_that_could_fake_lines_escaped() {
        let shown: String = "a\nb\u{202e}c€\t".chars().map(render::printable).collect();
        assert_eq!(shown, "a\\nb\\u{202e}c€\\t");
    }

    #[test]
    fn json_output_forms() {
        assert_eq!(parse_json(b"{\"a\":1}\n"), Ok(json!({ "a": 1 })));
        assert_eq!(parse_json(b"1\n2\n"), Ok(json!([1, 2])));
        assert_eq!(parse_json(b"{\"a\":"), Err("line 1, column 5".to_owned()));
        assert_eq!(parse_json(b""), Err("the output is empty".to_owned()));
    }
}
