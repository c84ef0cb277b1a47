//! `hcpx exec PACK COMMAND [--dry-run] [--yes] [--timeout-ms N] -- KEY=VALUE...`
//!
//! The six steps of SPEC §4, in order, each able to refuse before anything is
//! spawned: validate, policy (with confirmation), binding, sandbox, spawn, result
//! (redacted, audited).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{find_pack, load_policies, to_json};
use crate::Reply;
use crate::audit;
use crate::availability::resolve_program;
use crate::binding::{Secret, Store};
use crate::catalog::{Catalog, Origin, Pack};
use crate::context::{Context, env_vars};
use crate::error::{EXIT_FAILED, Failure, Reason};
use crate::invocation::{self, InvocationError};
use crate::manifest::{Command, MAX_TIMEOUT_MS};
use crate::output::{RunInfo, StreamTruncation, Truncation};
use crate::policy::{self, Decision, Evaluation, Subject};
use crate::redact::Redactor;
use crate::runtime::{self, Ending};
use crate::sandbox::{self, ChildPlan, LayerReport, Mode};
use crate::state;

/// One exec request, as parsed.
#[derive(Debug, Clone)]
pub struct Request {
    pub pack: String,
    pub command: String,
    pub dry_run: bool,
    pub yes: bool,
    pub timeout_ms: Option<u64>,
    pub params: Vec<String>,
    pub json: bool,
    /// The hcpx argv, for the audit line.
    pub argv: Vec<String>,
}

fn invocation_failure(error: &InvocationError, pack: &str, command: &str) -> Failure {
    let reason = match error {
        InvocationError::NotAssignment { .. } => Reason::InvalidArguments,
        InvocationError::Unknown { .. } => Reason::UnknownParam,
        InvocationError::Missing { .. } => Reason::MissingParam,
        InvocationError::Repeated { .. } | InvocationError::Invalid { .. } => Reason::InvalidParam,
    };
    let mut failure = Failure::new(reason, error.to_string()).next(format!("hcpx skill {pack}"));
    if let InvocationError::Unknown { known } = error {
        failure = failure.data(json!({ "known": known, "command": command }));
    }
    failure
}

/// The child argv, env names and sandbox as they would be: the `--dry-run` plan.
struct Plan {
    program: PathBuf,
    args: Vec<String>,
    writes: Vec<PathBuf>,
    layers: Vec<LayerReport>,
    env_names: Vec<String>,
}

impl Plan {
    fn child(&self) -> Vec<String> {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect()
    }

    fn to_json(
        &self,
        request: &Request,
        pack: &Pack,
        command: &Command,
        evaluation: &Evaluation,
        ctx: &Context,
    ) -> Value {
        let sandbox = &pack.manifest.sandbox;
        json!({
            "pack": pack.manifest.id,
            "command": command.name,
            "effect": command.effect,
            "principal": ctx.principal,
            "decision": evaluation.decision,
            "rule": to_json(&evaluation.rule),
            "child": self.child(),
            "cwd": ctx.cwd,
            "env": self.env_names,
            "timeoutMs": timeout_ms(request, pack),
            "sandbox": {
                "mode": ctx.sandbox_mode,
                "network": sandbox.network,
                "write": sandbox.write,
                "layers": to_json(&self.layers),
            },
        })
    }
}

fn timeout_ms(request: &Request, pack: &Pack) -> u64 {
    request
        .timeout_ms
        .unwrap_or(pack.manifest.sandbox.timeout_ms)
        .min(MAX_TIMEOUT_MS)
}

/// A short FNV-1a digest, to name the folder a built-in CLI is written to.
fn digest(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// Where the pack's CLI is, or why it cannot be found.
fn locate_program(ctx: &Context, pack: &Pack) -> Result<PathBuf, Failure> {
    let manifest = &pack.manifest;
    let not_runnable = |message: String, next: String| Failure::new(Reason::NotRunnable, message).next(next);
    match (manifest.bin_file(), &pack.origin) {
        (Some(file), Origin::Installed { dir }) => Ok(dir.join(file)),
        (Some(file), Origin::Builtin { bin: Some(bytes) }) => Ok(ctx
            .home
            .join(".builtin")
            .join(format!(
                "{}-{}-{}",
                manifest.id,
                manifest.version,
                &digest(bytes)[..8]
            ))
            .join(file)),
        (Some(_), Origin::Builtin { bin: None }) => Err(not_runnable(
            "the built-in pack's CLI is missing from this build".into(),
            "hcpx doctor".into(),
        )),
        (None, _) => {
            let name = manifest.bin.first().map(String::as_str).unwrap_or_default();
            resolve_program(name, ctx.var(env_vars::PATH)).ok_or_else(|| {
                not_runnable(
                    format!("the pack's CLI `{name}` is not on PATH"),
                    format!("install `{name}`, then run hcpx availability {}", manifest.id),
                )
            })
        }
    }
}

/// Writes a built-in pack's CLI to `$HCP_HOME/.builtin/…` once, so it can run.
fn materialize(ctx: &Context, pack: &Pack, program: &Path) -> Result<(), Failure> {
    let Origin::Builtin { bin: Some(bytes) } = &pack.origin else {
        return Ok(());
    };
    if std::fs::read(program).is_ok_and(|existing| existing == *bytes) {
        return Ok(());
    }
    let failure = |error: String| {
        Failure::new(
            Reason::NotRunnable,
            format!("cannot write the built-in CLI to HCP_HOME: {error}"),
        )
        .next("hcpx doctor")
    };
    state::ensure_home(&ctx.home).map_err(|error| failure(error.to_string()))?;
    let dir = program.parent().unwrap_or(&ctx.home);
    std::fs::create_dir_all(dir).map_err(|error| failure(error.to_string()))?;
    let _lock = state::Lock::acquire(&ctx.home).map_err(|error| failure(error.to_string()))?;
    state::write_atomic(program, bytes, 0o755).map_err(|error| failure(error.to_string()))
}

fn plan(ctx: &Context, pack: &Pack, args: Vec<String>) -> Result<Plan, Failure> {
    let manifest = &pack.manifest;
    let program = locate_program(ctx, pack)?;
    let mut full_args: Vec<String> = manifest.bin.iter().skip(1).cloned().collect();
    full_args.extend(args);
    let machine = sandbox::probe();
    let layers = sandbox::layers(&machine, manifest.sandbox.network, &manifest.sandbox.write);
    let writes: Vec<PathBuf> = manifest
        .sandbox
        .write
        .iter()
        .map(|path| invocation::absolute_under(&ctx.cwd, path))
        .collect();
    let home = ctx.home.canonicalize().unwrap_or_else(|_| ctx.home.clone());
    for write in &writes {
        let write = write.canonicalize().unwrap_or_else(|_| write.clone());
        if home.starts_with(&write) || write.starts_with(&home) {
            return Err(Failure::new(
                Reason::NotRunnable,
                "the pack may write to the working directory, which holds HCP_HOME; hcpx never lets a pack write there",
            )
            .next("run it from another folder"));
        }
    }
    let mut env_names: Vec<String> = sandbox::PASSED_ENV
        .iter()
        .filter(|name| **name == "PATH" || ctx.var(name).is_some())
        .map(|name| (*name).to_owned())
        .collect();
    env_names.push("TMPDIR".to_owned());
    env_names.extend(manifest.bindings.iter().map(|(key, _)| key.clone()));
    env_names.sort();
    Ok(Plan {
        program,
        args: full_args,
        writes,
        layers,
        env_names,
    })
}

/// Step 3: the pack's bindings, every required one present.
fn bindings(ctx: &Context, pack: &Pack) -> Result<Vec<(String, Secret)>, Failure> {
    let id = &pack.manifest.id;
    if pack.manifest.bindings.is_empty() {
        return Ok(Vec::new());
    }
    let store = Store::load(&ctx.bindings_path()).map_err(|error| {
        Failure::new(
            Reason::Unbound,
            format!("the binding store cannot be used: {error}"),
        )
        .next("hcpx bindings")
    })?;
    let mut found = Vec::new();
    for (key, spec) in &pack.manifest.bindings {
        match store.resolve(id, key, &ctx.env) {
            Some(secret) => found.push((key.clone(), secret)),
            None if spec.required => {
                return Err(Failure::new(
                    Reason::Unbound,
                    format!("the pack needs {key}, which is not bound"),
                )
                .next(format!("a person runs: hcpx bind {id} {key}")));
            }
            None => {}
        }
    }
    Ok(found)
}

fn audit(
    ctx: &Context,
    request: &Request,
    decision: &str,
    exit_code: Option<i32>,
    duration: Duration,
    bytes: u64,
    redactor: &Redactor,
) -> String {
    let argv: Vec<String> = request.argv.iter().map(|arg| redactor.redact_str(arg)).collect();
    let entry = audit::Entry {
        ts: audit::now(),
        principal: ctx.principal,
        argv: &argv,
        pack: &request.pack,
        command: &request.command,
        decision,
        exit_code,
        duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        output_bytes: bytes,
    };
    match audit::append(&ctx.home, &entry) {
        Ok(()) => String::new(),
        Err(error) => format!("warning: the audit line was not written: {error}\n"),
    }
}

fn with_warning(failure: Failure, warning: &str) -> Failure {
    if warning.is_empty() {
        failure
    } else {
        failure.details(vec![warning.trim_end().to_owned()])
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

pub async fn run(ctx: &Context, request: Request) -> Result<Reply, Failure> {
    let started = Instant::now();
    // 1. validate
    let catalog = Catalog::load_one(&ctx.packs_dir(), &request.pack);
    let pack = find_pack(&catalog, &request.pack)?;
    let Some(command) = pack.manifest.command(&request.command) else {
        let names: Vec<&str> = pack.manifest.commands.iter().map(|c| c.name.as_str()).collect();
        return Err(Failure::new(
            Reason::UnknownCommand,
            format!("the pack has no such command; its commands: {}", names.join(", ")),
        )
        .next(format!("hcpx skill {}", request.pack))
        .data(json!({ "commands": names })));
    };
    let values = invocation::parse(command, &request.params, &ctx.cwd)
        .map_err(|error| invocation_failure(&error, &request.pack, &request.command))?;
    let mut args = invocation::render(command, &values);
    if request.json {
        args.extend(command.json.iter().cloned());
    }
    let nothing = Redactor::new(&[]);

    // 2. policy (the plan is built first only to show it; nothing is touched yet)
    let policies = load_policies(ctx);
    let subject = Subject {
        principal: ctx.principal,
        pack: &pack.manifest.id,
        command: &command.name,
        effect: command.effect,
    };
    let evaluation = match ctx.read_only.then(|| policy::read_only(command.effect)).flatten() {
        Some(denied) => denied,
        None => policy::evaluate(&subject, &policies),
    };
    let plan = plan(ctx, pack, args);
    let plan_json = match &plan {
        Ok(plan) => plan.to_json(&request, pack, command, &evaluation, ctx),
        Err(_) => json!({ "decision": evaluation.decision, "rule": to_json(&evaluation.rule) }),
    };
    if !request.dry_run
        && let Err(failure) = super::confirm(
            ctx,
            &super::Asked {
                what: format!("Run {} {}?", request.pack, request.command),
                yes: request.yes,
                retry: format!("hcpx exec {} {} --yes -- …", request.pack, request.command),
                by_hand: format!("hcpx exec {} {} -- …", request.pack, request.command),
            },
            &evaluation,
            &plan_json,
        )
        .await
    {
        let decision = match failure.reason {
            Reason::DeniedByPolicy => "denied",
            Reason::Declined => "declined",
            _ => "needs_confirmation",
        };
        let warning = audit(ctx, &request, decision, None, started.elapsed(), 0, &nothing);
        return Err(with_warning(failure, &warning));
    }
    if request.dry_run && evaluation.decision == Decision::Deny {
        return Err(
            Failure::new(Reason::DeniedByPolicy, format!("denied by {}", evaluation.rule))
                .next("hcpx policy show")
                .data(plan_json),
        );
    }

    // 3. binding
    let bound = match bindings(ctx, pack) {
        Ok(bound) => bound,
        Err(failure) => {
            let _ = audit(ctx, &request, "refused", None, started.elapsed(), 0, &nothing);
            return Err(failure);
        }
    };
    let redactor = Redactor::new(&bound);

    // 4. sandbox
    let plan = plan?;
    let missing: Vec<&LayerReport> = sandbox::missing(&plan.layers);
    if !missing.is_empty() && ctx.sandbox_mode == Mode::Strict {
        let names: Vec<&str> = missing.iter().map(|layer| layer.layer).collect();
        let _ = audit(ctx, &request, "refused", None, started.elapsed(), 0, &redactor);
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
        .next("hcpx doctor (or set HCP_SANDBOX=best-effort to run with the layers that are enforced)")
        .data(plan_json));
    }
    if request.dry_run {
        let text = format!(
            "decision: {} ({})\nchild:    {}\ncwd:      {}\nenv:      {}\nsandbox:  {}\n",
            evaluation.decision.as_str(),
            evaluation.rule,
            plan.child().join(" "),
            ctx.cwd.display(),
            plan.env_names.join(", "),
            plan.layers
                .iter()
                .map(|layer| format!("{}={}", layer.layer, if layer.enforced { "on" } else { "off" }))
                .collect::<Vec<_>>()
                .join(" ")
        );
        return Ok(Reply {
            data: Some(plan_json),
            text,
            ..Reply::default()
        });
    }
    materialize(ctx, pack, &plan.program)?;
    let tmpdir = tempfile::Builder::new()
        .prefix("hcpx-")
        .tempdir_in(&ctx.temp_dir)
        .map_err(|error| {
            Failure::new(
                Reason::NotRunnable,
                format!("cannot create the private temporary folder: {error}"),
            )
            .next("hcpx doctor")
        })?;
    let env = sandbox::child_env(&ctx.env, tmpdir.path(), &bound);
    let child_plan = ChildPlan {
        program: plan.program.clone(),
        args: plan.args.clone(),
        cwd: ctx.cwd.clone(),
        bindings: bound.clone(),
        writes: plan.writes.clone(),
        hide: Some(ctx.home.clone()),
        reads: match &pack.origin {
            Origin::Installed { dir } => vec![dir.clone()],
            Origin::Builtin { .. } => plan.program.parent().map(Path::to_path_buf).into_iter().collect(),
        },
        network: pack.manifest.sandbox.network,
    };
    let sandbox_failure = |error: String| {
        Failure::new(
            Reason::NotRunnable,
            "the sandbox could not be set up; nothing of the pack ran",
        )
        .details(vec![error])
        .next("hcpx doctor")
    };
    let spawn = match sandbox::transform(&child_plan, env, tmpdir.path(), &sandbox::probe()) {
        Ok(spawn) => spawn,
        Err(error) => {
            let _ = audit(ctx, &request, "refused", None, started.elapsed(), 0, &redactor);
            return Err(sandbox_failure(error));
        }
    };

    // 5. spawn (the layers are entered between fork and exec; a layer that fails
    // there fails the spawn, so the pack's CLI never runs without it)
    let timeout = Duration::from_millis(timeout_ms(&request, pack));
    let finished = match runtime::run(
        &spawn,
        timeout,
        runtime::MAX_OUTPUT,
        &ctx.cancel,
        ctx.progress.as_deref(),
    )
    .await
    {
        Ok(finished) => finished,
        Err(error) => {
            let _ = audit(ctx, &request, "refused", None, started.elapsed(), 0, &redactor);
            return Err(sandbox_failure(error.to_string()));
        }
    };
    drop(tmpdir);

    // 6. result: the capture moves through redaction into the envelope, uncopied.
    let stream = |kept: usize, total: u64| {
        (total > kept as u64).then_some(StreamTruncation {
            shown: kept as u64,
            total,
        })
    };
    let truncation = finished.truncated().then(|| Truncation {
        stdout: stream(finished.stdout.len(), finished.stdout_total),
        stderr: stream(finished.stderr.len(), finished.stderr_total),
    });
    let text = |bytes: Vec<u8>| {
        String::from_utf8(redactor.redact_owned(bytes))
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    };
    let (exit_code, ending) = (finished.exit_code, finished.ending);
    let (stdout_total, stderr_total) = (finished.stdout_total, finished.stderr_total);
    let run = RunInfo {
        child: plan.child(),
        exit_code,
        stdout: text(finished.stdout),
        stderr: text(finished.stderr),
        truncation,
    };
    let output_bytes = stdout_total + stderr_total;
    let warning = audit(
        ctx,
        &request,
        "ran",
        Some(exit_code),
        started.elapsed(),
        output_bytes,
        &redactor,
    );
    let timeout_text = timeout.as_millis();
    let failure = match ending {
        Ending::TimedOut => Some(
            Failure::new(
                Reason::Timeout,
                format!("the command did not finish within {timeout_text} ms and was stopped"),
            )
            .next(format!(
                "hcpx exec {} {} --timeout-ms N -- … (up to {MAX_TIMEOUT_MS})",
                request.pack, request.command
            )),
        ),
        Ending::Overflow => Some(
            Failure::new(
                Reason::TooLarge,
                "the output passed 8 MiB, so the command was stopped",
            )
            .exit_code(EXIT_FAILED)
            .next(format!("hcpx skill {}   (narrow the request)", request.pack)),
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
            .next(format!("hcpx skill {}", request.pack)),
        ),
        Ending::Exited => None,
    };
    if let Some(failure) = failure {
        return Err(with_warning(failure.run(run), &warning));
    }
    let data = if request.json && !command.json.is_empty() {
        match parse_json(run.stdout.as_bytes()) {
            Ok(value) => Some(value),
            Err(position) => {
                return Err(Failure::new(
                    Reason::Failed,
                    format!("the pack's output is not valid JSON ({position})"),
                )
                .next(format!(
                    "hcpx exec {} {} -- …   (without --json)",
                    request.pack, request.command
                ))
                .run(run));
            }
        }
    } else {
        None
    };
    Ok(Reply {
        text: String::new(),
        warnings: warning,
        data,
        run: Some(run),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_forms() {
        assert_eq!(parse_json(b"{\"a\":1}\n"), Ok(json!({ "a": 1 })));
        assert_eq!(parse_json(b"1\n2\n"), Ok(json!([1, 2])));
        assert_eq!(parse_json(b"{\"a\":"), Err("line 1, column 5".to_owned()));
        assert_eq!(parse_json(b""), Err("the output is empty".to_owned()));
    }

    #[test]
    fn digests_differ_by_content() {
        assert_ne!(digest(b"a"), digest(b"b"));
        assert_eq!(digest(b"a").len(), 16);
    }
}
