//! Step 6 of exec: the capture moves through redaction into the envelope, uncopied;
//! how the child ended decides the result. And the `--dry-run` reply.

use serde_json::Value;

use super::Request;
use super::decide::Plan;
use super::validate::Target;
use crate::Reply;
use crate::child::{RunInfo, StreamTruncation, Truncation};
use crate::context::Context;
use crate::error::{EXIT_FAILED, Failure, Reason};
use crate::manifest::MAX_TIMEOUT_MS;
use crate::next::Next;
use crate::redact::Redactor;
use crate::render::{self, PlanText};
use crate::runtime::{Ending, Finished, MAX_OUTPUT_MIB};

pub(super) fn dry_run(ctx: &Context, plan: &Plan) -> Reply {
    let child = plan.child();
    let text = render::plan_text(&PlanText {
        decision: plan.evaluation.decision.as_str(),
        rule: plan.evaluation.rule.to_string(),
        child: &child,
        cwd: &ctx.cwd,
        env: &plan.env_names,
        stdin: plan.stdin.as_deref(),
        reads: &plan.sandbox.read,
        cache: plan
            .grants
            .cache
            .as_ref()
            .map(crate::sandbox::CacheFolder::path)
            .as_deref(),
        layers: &plan.sandbox.layers,
    });
    Reply {
        data: Some(plan.json()),
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
pub(super) fn report(
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
                format!("the output passed {MAX_OUTPUT_MIB} MiB, so the command was stopped"),
            )
            .exit_code(EXIT_FAILED)
            .next(Next::hcpx(["skill", pack.as_str()]).note("narrow the request")),
        ),
        Ending::Cancelled => Some(Failure::new(
            Reason::Failed,
            "interrupted; the command was stopped",
        )),
        // The command's `okExitCodes` say which codes mean success (`[0]` unless it
        // says otherwise); a call hcpx stopped above never succeeds, whatever they say.
        Ending::Exited if !target.command.exit_ok(exit_code) => Some(
            Failure::new(
                Reason::Failed,
                format!("the pack's CLI failed with exit code {exit_code}"),
            )
            .next(Next::hcpx(["skill", pack.as_str()])),
        ),
        Ending::Exited => None,
    };
    // The child's exit code says whether the command worked; output that is not
    // JSON only leaves `data` empty (a write that printed nothing succeeded, and
    // must not be retried as if it had failed).
    let mut warnings = Vec::new();
    // A child that ran to its end keeps its parsed answer also when it failed: a
    // failing `go test -json` or `cargo check --message-format=json` says what
    // failed exactly there. A call hcpx stopped has no whole answer to parse.
    let data = if request.json && !target.command.json.is_empty() && ending == Ending::Exited {
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
    if let Some(failure) = failure {
        let failure = match data {
            Some(data) => failure.data(data),
            None => failure,
        };
        return Err(failure.with_run(run));
    }
    // A success with another code than 0 says so to a person, who would otherwise
    // take the silence of `rg` finding nothing for an answer of its own.
    let note = (exit_code != 0).then(|| render::exit_note(exit_code));
    Ok(Reply {
        text: String::new(),
        note,
        warnings,
        data,
        run: Some(run),
        ..Reply::default()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_output_forms() {
        assert_eq!(parse_json(b"{\"a\":1}\n"), Ok(json!({ "a": 1 })));
        assert_eq!(parse_json(b"1\n2\n"), Ok(json!([1, 2])));
        assert_eq!(parse_json(b"{\"a\":"), Err("line 1, column 5".to_owned()));
        assert_eq!(parse_json(b""), Err("the output is empty".to_owned()));
    }
}
