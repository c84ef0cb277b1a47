//! Step 1 of exec: the pack and command exist; every parameter is declared and
//! valid; the pack CLI's arguments rendered.

use serde_json::json;

use super::Request;
use crate::catalog::{Catalog, Pack};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::invocation::{self, InvocationError, Values};
use crate::manifest::Command;
use crate::next::Next;
use crate::render;
use crate::workdir::OnDisk;

/// Step 1's result: the pack, its command, the caller's words split once, and the
/// pack CLI's arguments.
pub(super) struct Target<'c> {
    pub(super) pack: &'c Pack,
    pub(super) command: &'c Command,
    /// Every `KEY=VALUE` word as given, for the confirmation.
    pub(super) given: Vec<(&'c str, &'c str)>,
    /// The pack CLI's arguments, a file binding's path shown as the
    /// [`planned_file`] it will be (the file is written at spawn, see `bind.rs`).
    pub(super) args: Vec<String>,
    /// The checked values by parameter, defaults filled in: for rendering the
    /// arguments again with real paths, and what a command's `write` grants when it
    /// names a `path` parameter.
    pub(super) values: Values,
    json: bool,
}

impl Target<'_> {
    /// The pack CLI's arguments with `{NAME}` of each file binding rendered as
    /// `file(NAME)`; where that is `None`, rendering fails (nothing runs).
    pub(super) fn render(
        &self,
        file: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<String>, InvocationError> {
        let mut values = self.values.clone();
        for slot in &self.command.argv {
            if let crate::manifest::Slot::Element(element) = slot {
                for name in element.bindings() {
                    if let Some(path) = file(name) {
                        values.insert(name.to_owned(), vec![path]);
                    }
                }
            }
        }
        let mut args: Vec<String> = self.pack.manifest.bin.iter().skip(1).cloned().collect();
        let options: &[String] = if self.json { &self.command.json } else { &[] };
        args.extend(invocation::argv(self.command, &values, options)?);
        Ok(args)
    }
}

/// What `--dry-run` (and a confirmation) shows for a file binding's path: the file
/// is made only when the call runs, in a temporary folder that does not exist yet,
/// so the folder is shown as the variable the CLI finds it in, marked as not a
/// real path.
pub(super) fn planned_file(binding: &str) -> String {
    format!("[TMPDIR]/{}", crate::sandbox::binding_file_name(binding))
}

/// Step 1: the pack and command exist; every parameter is declared and valid.
pub(super) fn validate<'c>(
    catalog: &'c Catalog,
    ctx: &Context,
    request: &'c Request,
) -> Result<Target<'c>, Failure> {
    let pack = super::super::find_pack(catalog, &request.args.pack).map_err(|failure| {
        // A misspelt pack: the same call with the closest one, every other word kept.
        // A catalog pack that is not installed keeps its `hcpx install ID`.
        let id = request.args.pack.as_str();
        match (catalog.broken(id), catalog.closest(id).first()) {
            (None, Some(best)) if best != id => {
                let mut words = request.corrected(
                    &request.args.command,
                    &request.args.params,
                    request.args.yes,
                    request.args.dry_run,
                );
                words[1].clone_from(best);
                failure.next(Next::hcpx(words))
            }
            _ => failure,
        }
    })?;
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
    let fail = |error: InvocationError| invocation_failure(&error, request);
    let given = invocation::assignments(&request.args.params).map_err(fail)?;
    let values = invocation::parse_given(command, &given, &OnDisk::new(&ctx.cwd)).map_err(fail)?;
    let mut target = Target {
        pack,
        command,
        given,
        args: Vec::new(),
        values,
        json: request.json,
    };
    target.args = target.render(|name| Some(planned_file(name))).map_err(fail)?;
    Ok(target)
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
