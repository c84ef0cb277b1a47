//! The audit line of one exec call.

use std::time::Instant;

use super::Request;
use crate::Reply;
use crate::audit;
use crate::context::Context;
use crate::error::Failure;
use crate::redact::Redactor;
use crate::render;
use crate::runtime::Finished;

/// The call's audit line (see README.md): written once, on every way out of `steps`
/// after the policy step, with the decision the steps set; argv redacted with the
/// call's bindings. A line that cannot be written becomes a warning on the result.
pub(super) struct Audit<'a> {
    pub(super) ctx: &'a Context,
    pub(super) request: &'a Request,
    pub(super) started: Instant,
    /// `None` until the policy step has decided: nothing is recorded.
    pub(super) decision: Option<crate::audit::Disposition>,
    pub(super) exit_code: Option<i32>,
    pub(super) output_bytes: u64,
    pub(super) redactor: Redactor,
}

impl<'a> Audit<'a> {
    pub(super) fn new(ctx: &'a Context, request: &'a Request) -> Self {
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

    /// One line per connection hcpx's proxy refused the call, beside the call's own;
    /// a line that cannot be written becomes a warning on the result.
    pub(super) fn refused_connections(&self, refusals: &[hcpx_egress::Refusal]) -> Option<String> {
        let argv = self.argv();
        let mut failed = None;
        for refusal in refusals {
            let entry = audit::Entry {
                ts: audit::now(),
                principal: self.ctx.principal,
                subject: self.ctx.subject(),
                argv: &argv,
                pack: &self.request.args.pack,
                command: &self.request.args.command,
                decision: audit::Disposition::ConnectionRefused,
                exit_code: None,
                duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                output_bytes: 0,
                connection: Some(audit::Connection {
                    host: &refusal.host,
                    port: refusal.port,
                    why: &refusal.why,
                }),
            };
            if let Err(error) = audit::append(&self.ctx.home, &entry) {
                failed = Some(error.to_string());
            }
        }
        failed
    }

    /// The call's argv, every bound value hidden.
    fn argv(&self) -> Vec<String> {
        self.request
            .argv
            .iter()
            .map(|arg| self.redactor.redact_str(arg))
            .collect()
    }

    pub(super) fn ran(&mut self, finished: &Finished) {
        self.decision = Some(crate::audit::Disposition::Ran);
        self.exit_code = Some(finished.exit_code);
        self.output_bytes = finished.stdout_total + finished.stderr_total;
    }

    pub(super) fn finish(self, result: Result<Reply, Failure>) -> Result<Reply, Failure> {
        let Some(decision) = self.decision.filter(|_| !self.request.args.dry_run) else {
            return result;
        };
        let argv = self.argv();
        let entry = audit::Entry {
            ts: audit::now(),
            principal: self.ctx.principal,
            subject: self.ctx.subject(),
            argv: &argv,
            pack: &self.request.args.pack,
            command: &self.request.args.command,
            decision,
            exit_code: self.exit_code,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            output_bytes: self.output_bytes,
            connection: None,
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
