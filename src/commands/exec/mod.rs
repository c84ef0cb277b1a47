//! `hcpx exec PACK COMMAND [--dry-run] [--yes] [--timeout-ms N] -- KEY=VALUE...`
//!
//! The six steps (see README.md), in order, each in a file of its own that returns
//! what the next one needs or the refusal that stops the call before anything is
//! spawned: [`validate`] → [`decide`] → [`bind`] → [`confine`] (the sandbox
//! prepared, then the spawn) → [`report`]. One [`Audit`] records the call's decision
//! on every way out. The handler only orchestrates: the sandbox's rules come from
//! `sandbox::Grants`, the pinned CLI copy from `install`.

mod audit;
mod bind;
mod confine;
mod decide;
mod egress;
mod report;
mod validate;

use std::time::Duration;

use crate::Reply;
use crate::binding::Secret;
use crate::catalog::Pack;
use crate::context::Context;
use crate::error::Failure;
use crate::manifest::MAX_TIMEOUT_MS;
use crate::redact::Redactor;
use audit::Audit;

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
    pub(super) fn command_line(&self, yes: bool) -> Vec<String> {
        self.corrected(&self.args.command, &self.args.params, yes, false)
    }

    /// This call with another command or other parameters (a misspelling put
    /// right), every flag the caller gave kept.
    pub(super) fn corrected(
        &self,
        command: &str,
        params: &[String],
        yes: bool,
        dry_run: bool,
    ) -> Vec<String> {
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

    pub(super) fn timeout(&self, pack: &Pack) -> Duration {
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
    crate::mark("reported");
    let reply = audit.finish(result);
    crate::mark("audited");
    reply
}

async fn steps(ctx: &Context, request: &Request, audit: &mut Audit<'_>) -> Result<Reply, Failure> {
    crate::mark("dispatched");
    let catalog = super::load_one(ctx, &request.args.pack);
    crate::mark("loaded");
    let target = validate::validate(&catalog, ctx, request)?;
    crate::mark("validated");
    let mut bindings = bind::read_bindings(ctx, target.pack);
    crate::mark("bindings read");
    let mut plan = decide::decide(ctx, request, &target, &bindings, audit).await?;
    crate::mark("decided");
    let pinned = bindings.pinned.take();
    let every = std::mem::take(&mut bindings.every);
    let bound = bind::bind(target.pack, bindings)?;
    audit.redactor = Redactor::new(&[bound.as_slice(), every.as_slice()].concat());
    let program = confine::runnable(ctx, &target, &plan, pinned.as_ref())?;
    if request.args.dry_run {
        return Ok(report::dry_run(ctx, &plan));
    }
    crate::mark("bound, runnable");
    let (child, tmpdir, egress) = confine::confine(ctx, &target, &plan, program, pinned.as_ref(), &bound)?;
    // What ran: a file binding's real path where the plan showed where it would be.
    plan.args.clone_from(&child.args);
    crate::mark("confined");
    let finished = confine::spawn(ctx, request, &target, child).await;
    // The proxy ends with the call: what it refused is on the result and the log.
    let refusals = egress.map(|egress| egress.refusals()).unwrap_or_default();
    let unwritten = audit.refused_connections(&refusals);
    let warnings: Vec<crate::reply::Warning> = refusals
        .iter()
        .map(egress::warning)
        .chain(unwritten.map(crate::reply::Warning::AuditLine))
        .collect();
    let finished = finished.map_err(|failure| failure.warnings(warnings.clone()))?;
    crate::mark("run");
    drop(tmpdir);
    crate::mark("folder dropped");
    audit.ran(&finished);
    match report::report(request, &target, &plan, finished, &audit.redactor) {
        Ok(mut reply) => {
            reply.warnings.extend(warnings);
            Ok(reply)
        }
        Err(failure) => Err(failure.warnings(warnings)),
    }
}

/// Text hcpx writes that may hold a caller's value, with every bound value hidden.
pub(super) fn redact_text(text: &str, found: &[(String, Secret)]) -> String {
    if found.is_empty() {
        return text.to_owned();
    }
    String::from_utf8_lossy(&Redactor::new(found).redact_owned(text.as_bytes().to_vec())).into_owned()
}
