//! `hcpx policy show` and `hcpx policy check PACK COMMAND`

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{find_pack, load_catalog, load_policies};
use crate::Reply;
use crate::context::{Context, Principal};
use crate::error::{Failure, Reason};
use crate::manifest::Effect;
use crate::next::Next;
use crate::policy::{self, Decision, Layer, Matcher, PolicyFile, Rule, RuleRef, ShownRule, Subject, Who};
use crate::render;
use crate::state::{self, StateError};

/// The pseudo-pack `hcp`: hcpx's own commands that go through the policy (see README.md).
pub(crate) const PSEUDO_PACK: &str = "hcp";
pub(crate) const PSEUDO_COMMANDS: [(&str, Effect); 3] = [
    ("install", Effect::Write),
    ("uninstall", Effect::Write),
    ("adopt", Effect::Write),
];

pub(crate) fn show(ctx: &Context) -> Result<Reply, Failure> {
    let policies = load_policies(ctx);
    // Every known command, so a project rule that loosens is judged where it matches.
    let catalog = load_catalog(ctx);
    let commands: Vec<(&str, &str, Effect)> = catalog
        .packs
        .iter()
        .flat_map(|pack| {
            pack.manifest
                .commands
                .iter()
                .map(|command| (pack.manifest.id.as_str(), command.name.as_str(), command.effect))
        })
        .chain(
            PSEUDO_COMMANDS
                .iter()
                .map(|(name, effect)| (PSEUDO_PACK, *name, *effect)),
        )
        .collect();
    let rules = policy::show(&policies, &commands);
    let user_path = ctx.user_policy_path();
    let data = Shown {
        user: policies.user.to_json(),
        user_path: &user_path,
        project: policies.project.to_json(),
        rules: &rules,
    };
    Ok(Reply::new(
        &data,
        render::policy_show_text(&policies, &rules, &user_path),
    ))
}

/// `policy show`'s data: both files and every rule in force.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    user: Value,
    user_path: &'a Path,
    project: Value,
    rules: &'a [ShownRule],
}

/// `policy check`'s data: the decision for this caller and the rule behind it.
#[derive(Serialize)]
struct Checked<'a> {
    pack: &'a str,
    command: &'a str,
    effect: Effect,
    principal: Principal,
    decision: Decision,
    rule: &'a RuleRef,
    meaning: &'static str,
}

/// `policy set`'s data.
#[derive(Serialize)]
struct Set<'a> {
    #[serde(rename = "match")]
    matcher: &'a str,
    decision: Decision,
    file: &'a Path,
}

/// `policy unset`'s data: the decision the rule had.
#[derive(Serialize)]
struct Unset<'a> {
    #[serde(rename = "match")]
    matcher: &'a str,
    removed: Decision,
    file: &'a Path,
}

/// A refusal's data: the commands there are, and the closest to what was named.
#[derive(Serialize)]
struct Commands<'a> {
    commands: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    suggestions: Option<&'a [&'a str]>,
}

pub(crate) fn check(ctx: &Context, pack_id: &str, command_name: &str) -> Result<Reply, Failure> {
    let catalog = &*load_catalog(ctx);
    let effect = if pack_id == PSEUDO_PACK {
        PSEUDO_COMMANDS
            .iter()
            .find(|(name, _)| *name == command_name)
            .map(|(_, effect)| *effect)
            .ok_or_else(|| {
                Failure::new(
                    Reason::UnknownCommand,
                    "hcp has the commands install, uninstall and adopt",
                )
                .next(Next::hcpx(["policy", "check", "hcp", "install"]))
            })?
    } else {
        // A catalog pack that is not installed yet has its decisions too.
        let pack = match catalog.available(pack_id) {
            Some(pack) => pack,
            None => find_pack(catalog, pack_id)?,
        };
        match pack.manifest.command(command_name) {
            Some(command) => command.effect,
            None => {
                let names: Vec<&str> = pack.manifest.commands.iter().map(|c| c.name.as_str()).collect();
                return Err(Failure::new(
                    Reason::UnknownCommand,
                    format!("the pack has no such command; its commands: {}", names.join(", ")),
                )
                .next(Next::hcpx(["skill", pack_id]))
                .data(Commands {
                    commands: &names,
                    suggestions: None,
                }));
            }
        }
    };
    let policies = load_policies(ctx);
    let subject = Subject {
        pack: pack_id,
        command: command_name,
        effect,
        caller: ctx.caller.as_deref(),
    };
    let evaluation = policy::evaluate(&subject, &policies);
    let data = Checked {
        pack: pack_id,
        command: command_name,
        effect,
        principal: ctx.principal,
        decision: evaluation.decision,
        rule: &evaluation.rule,
        meaning: render::meaning(evaluation.decision, ctx.principal),
    };
    let text = render::policy_check_text(pack_id, command_name, effect, ctx.principal, &evaluation);
    Ok(Reply::new(&data, text))
}

/// A rule that names a pack or command no known pack has: refused with the closest
/// known names, since a typo (`git.comit`) would be a rule that never matches.
fn unknown_target(ctx: &Context, matcher: &Matcher, decision: Decision) -> Option<Failure> {
    let (pack_id, command_name) = match matcher {
        Matcher::Command { pack, command } => (pack.as_str(), Some(command.as_str())),
        Matcher::Pack(pack) => (pack.as_str(), None),
        Matcher::Effect(_) => return None,
    };
    let catalog = &*load_catalog(ctx);
    let commands: Vec<&str> = if pack_id == PSEUDO_PACK {
        PSEUDO_COMMANDS.iter().map(|(name, _)| *name).collect()
    } else {
        // A rule may name a catalog pack before it is installed.
        match catalog.get_any(pack_id) {
            Ok(pack) => pack.manifest.commands.iter().map(|c| c.name.as_str()).collect(),
            Err(_) => {
                let ids: Vec<&str> = crate::suggest::closest(
                    pack_id,
                    catalog.packs.iter().map(|pack| pack.manifest.id.as_str()),
                );
                let with = |id: &str| match command_name {
                    Some(command) => format!("{id}.{command}"),
                    None => format!("{id}.*"),
                };
                let named = crate::error::shown_id(pack_id);
                let (message, next) = match ids.first() {
                    Some(best) => (
                        format!("no pack is named `{named}`; did you mean {}?", with(best)),
                        Next::hcpx([
                            "policy".to_owned(),
                            "set".to_owned(),
                            with(best),
                            decision.as_str().to_owned(),
                        ]),
                    ),
                    None => (format!("no pack is named `{named}`"), Next::hcpx(["search"])),
                };
                #[derive(Serialize)]
                struct Closest<'a> {
                    suggestions: &'a [&'a str],
                }
                return Some(
                    Failure::new(Reason::UnknownPack, message)
                        .details(vec![
                            "a rule for a pack not installed yet: add --force".to_owned(),
                        ])
                        .next(next)
                        .data(Closest { suggestions: &ids }),
                );
            }
        }
    };
    let command = command_name?;
    if commands.contains(&command) {
        return None;
    }
    let closest = crate::suggest::closest(command, commands.iter().copied());
    let (message, next) = match closest.first() {
        Some(best) => (
            format!("{pack_id} has no such command; did you mean {pack_id}.{best}?"),
            Next::hcpx([
                "policy".to_owned(),
                "set".to_owned(),
                format!("{pack_id}.{best}"),
                decision.as_str().to_owned(),
            ]),
        ),
        None => (
            format!(
                "{pack_id} has no such command; its commands: {}",
                commands.join(", ")
            ),
            Next::hcpx(["skill", pack_id]),
        ),
    };
    Some(
        Failure::new(Reason::UnknownCommand, message)
            .details(vec![
                "a rule for a command a later version adds: add --force".to_owned(),
            ])
            .next(next)
            .data(Commands {
                commands: &commands,
                suggestions: Some(&closest),
            }),
    )
}

pub(crate) fn set(
    ctx: &Context,
    matcher: &str,
    decision: &str,
    force: bool,
    argv: &[String],
) -> Result<Reply, Failure> {
    let matcher = Matcher::parse(matcher).map_err(|_| {
        Failure::new(
            Reason::InvalidArguments,
            "MATCH is pack.command, pack.* or *.effect (read, write, destructive)",
        )
        .next(Next::hcpx(["policy", "set", "git.commit", "deny"]))
    })?;
    let decision = Decision::parse(decision).ok_or_else(|| {
        Failure::new(
            Reason::InvalidArguments,
            "DECISION is allow, confirm, confirm-human or deny",
        )
        .next(Next::hcpx(["policy", "set", "git.commit", "deny"]))
    })?;
    if !force && let Some(failure) = unknown_target(ctx, &matcher, decision) {
        return Err(failure);
    }
    let text = matcher.to_string();
    let path = edit_user_policy(ctx, |file| {
        match file
            .rules
            .iter_mut()
            .find(|rule| rule.matcher.to_string() == text && rule.who == Who::Anyone)
        {
            Some(rule) => rule.decision = decision,
            None => file.rules.push(Rule {
                matcher,
                decision,
                who: Who::Anyone,
            }),
        }
        Ok(())
    })?
    .1;
    let warning = super::write_audit_line(
        ctx,
        argv,
        PSEUDO_PACK,
        "policy-set",
        crate::audit::Disposition::PolicySet,
        std::time::Instant::now(),
    );
    let data = Set {
        matcher: &text,
        decision,
        file: &path,
    };
    Ok(Reply::new(&data, render::policy_set_text(&text, decision, &path)).warn(warning))
}

/// Changes the user's policy under the state lock: loads it (an unparsable one is
/// never overwritten), lets `change` edit it, and writes it back unless `change`
/// refused. Returns what `change` returned and the file's path.
fn edit_user_policy<T>(
    ctx: &Context,
    change: impl FnOnce(&mut PolicyFile) -> Result<T, Failure>,
) -> Result<(T, PathBuf), Failure> {
    let path = ctx.user_policy_path();
    let _lock = crate::layout::lock(&ctx.home).map_err(EditError::Lock)?;
    let mut file = match policy::load_layer(Some(path.clone())) {
        Layer::Absent => PolicyFile::default(),
        Layer::Parsed { file, .. } => file,
        Layer::Unparsable { path, error } => return Err(EditError::Unparsable { path, error }.into()),
    };
    let changed = change(&mut file)?;
    let mut bytes = serde_json::to_vec_pretty(&file.to_json()).unwrap_or_default();
    bytes.push(b'\n');
    state::write_atomic(&path, &bytes, 0o600).map_err(|source| EditError::Write {
        path: path.clone(),
        source,
    })?;
    Ok((changed, path))
}

/// Why the user's policy was not changed; nothing of the change was written.
#[derive(Debug, thiserror::Error)]
enum EditError {
    #[error("the state lock: {0}")]
    Lock(StateError),
    /// The file is there and cannot be parsed: a person fixes it, hcpx never
    /// overwrites it.
    #[error(
        "the user policy {} cannot be parsed ({error}); fix it by hand first (docs/policy.md describes \
         the format), it is never overwritten",
        path.display()
    )]
    Unparsable { path: PathBuf, error: String },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: StateError },
}

/// A policy file hcpx cannot lock, parse or write is a file it needs (`io_error`).
impl From<EditError> for Failure {
    fn from(error: EditError) -> Self {
        let next = match &error {
            EditError::Lock(_) => Some(Next::hcpx(["doctor"])),
            EditError::Unparsable { .. } => Some(Next::hcpx(["policy", "show"])),
            EditError::Write { .. } => None,
        };
        let failure = Failure::new(Reason::Io, error.to_string());
        match next {
            Some(next) => failure.next(next),
            None => failure,
        }
    }
}

/// `hcpx policy unset MATCH`: takes the rule out of the user's policy; refused,
/// with the rules there are, when the user's policy has no such rule.
pub(crate) fn unset(ctx: &Context, matcher: &str, argv: &[String]) -> Result<Reply, Failure> {
    let matcher = Matcher::parse(matcher).map_err(|_| {
        Failure::new(
            Reason::InvalidArguments,
            "MATCH is pack.command, pack.* or *.effect, as `hcpx policy show` lists it",
        )
        .next(Next::hcpx(["policy", "show"]))
    })?;
    let text = matcher.to_string();
    let (removed, path) = edit_user_policy(ctx, |file| {
        let Some(index) = file
            .rules
            .iter()
            .position(|rule| rule.matcher.to_string() == text && rule.who == Who::Anyone)
        else {
            let rules: Vec<String> = file.rules.iter().map(|rule| rule.matcher.to_string()).collect();
            let closest: Vec<String> = crate::suggest::closest(&text, rules.iter().map(String::as_str))
                .into_iter()
                .map(str::to_owned)
                .collect();
            let message = match (rules.is_empty(), closest.first()) {
                (true, _) => "the user policy has no rules".to_owned(),
                (false, Some(best)) => format!("the user policy has no such rule; did you mean {best}?"),
                (false, None) => format!(
                    "the user policy has no such rule; its rules: {}",
                    rules.join(", ")
                ),
            };
            let next = match closest.first() {
                Some(best) => Next::hcpx(["policy", "unset", best.as_str()]),
                None => Next::hcpx(["policy", "show"]),
            };
            #[derive(Serialize)]
            struct Rules<'a> {
                rules: &'a [String],
                suggestions: &'a [String],
                file: PathBuf,
            }
            return Err(Failure::new(Reason::InvalidArguments, message)
                .next(next)
                .data(Rules {
                    rules: &rules,
                    suggestions: &closest,
                    file: ctx.user_policy_path(),
                }));
        };
        Ok(file.rules.remove(index))
    })?;
    let warning = super::write_audit_line(
        ctx,
        argv,
        PSEUDO_PACK,
        "policy-unset",
        crate::audit::Disposition::PolicyUnset,
        std::time::Instant::now(),
    );
    let data = Unset {
        matcher: &text,
        removed: removed.decision,
        file: &path,
    };
    Ok(Reply::new(&data, render::policy_unset_text(&text, removed.decision, &path)).warn(warning))
}
