//! The effective policy as `policy show` lists it: every default and rule with the
//! file it came from, and the project rules that try to loosen what the user layer
//! decides, which are not in force where they would.

use std::path::PathBuf;

use serde::Serialize;

use super::evaluate::evaluate_user;
use super::load::{Layer, Policies};
use super::rules::{Decision, EFFECTS, Matcher, Rule, Scope, Subject, Who, builtin_default, effect_slot};
use crate::manifest::Effect;

/// One line of `policy show`: a default or rule and where it came from.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ShownRule {
    #[serde(rename = "match")]
    pub matcher: String,
    pub decision: Decision,
    /// The OAuth subject a rule is for, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The OAuth group a rule is for, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub scope: Scope,
    pub file: Option<PathBuf>,
    /// A project rule that tries to loosen what the user layer decides, which the
    /// project cannot do: not in force where it is looser.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<Ignored>,
}

/// Why a project rule is not in force: the user layer (a rule, a default, or the
/// built-in default) decides more strictly where the rule matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Ignored {
    /// What the user layer decides there instead.
    pub user_decision: Decision,
    /// The user rule or default behind that decision.
    pub user_rule: String,
    /// The commands (`pack.command`) where it is ignored, when it is in force for
    /// others; empty when it is ignored wherever it matches.
    pub only_for: Vec<String>,
}

/// Whether a project rule loosens what the user layer decides for the commands it
/// matches. `commands` are the known `(pack, command, effect)`; a rule that matches
/// none of them is judged for every effect it could meet.
fn ignored(rule: &Rule, user: &Layer, commands: &[(&str, &str, Effect)]) -> Option<Ignored> {
    // A rule for a subject or group is judged against what the user layer decides
    // for that caller.
    let caller = rule.who.stand_in();
    let caller = caller.as_ref();
    let mut subjects: Vec<(String, String, Effect)> = commands
        .iter()
        .filter(|(pack, command, effect)| {
            rule.matcher.matches(&Subject {
                pack,
                command,
                effect: *effect,
                caller,
            })
        })
        .map(|(pack, command, effect)| ((*pack).to_owned(), (*command).to_owned(), *effect))
        .collect();
    let known = !subjects.is_empty();
    if !known {
        subjects = match &rule.matcher {
            Matcher::Command { pack, command } => EFFECTS
                .iter()
                .map(|effect| (pack.clone(), command.clone(), *effect))
                .collect(),
            Matcher::Pack(pack) => EFFECTS
                .iter()
                .map(|effect| (pack.clone(), String::new(), *effect))
                .collect(),
            Matcher::Effect(effect) => vec![(String::new(), String::new(), *effect)],
        };
    }
    let mut first = None;
    let mut looser = Vec::new();
    for (pack, command, effect) in &subjects {
        let subject = Subject {
            pack,
            command,
            effect: *effect,
            caller,
        };
        let user = evaluate_user(&subject, user);
        if rule.decision < user.decision {
            first.get_or_insert(user);
            looser.push(format!("{pack}.{command}"));
        }
    }
    let user = first?;
    let only_for = if looser.len() == subjects.len() || !known {
        Vec::new()
    } else {
        looser
    };
    Some(Ignored {
        user_decision: user.decision,
        user_rule: user.rule.to_string(),
        only_for,
    })
}

/// The effective policy, every entry with its source, for `policy show`; project
/// rules that try to loosen are marked [`Ignored`], judged for the known
/// `(pack, command, effect)` in `commands`.
pub(crate) fn show(policies: &Policies, commands: &[(&str, &str, Effect)]) -> Vec<ShownRule> {
    let mut shown = Vec::new();
    for effect in EFFECTS {
        let mut entry = ShownRule {
            matcher: format!("defaults.{}", effect.as_str()),
            decision: builtin_default(effect),
            subject: None,
            group: None,
            scope: Scope::Builtin,
            file: None,
            ignored: None,
        };
        if let Layer::Parsed { path, file } = &policies.user
            && let Some(decision) = file.defaults[effect_slot(effect)]
        {
            entry = ShownRule {
                decision,
                scope: Scope::User,
                file: Some(path.clone()),
                ..entry
            };
        }
        if let Layer::Parsed { path, file } = &policies.project
            && let Some(decision) = file.defaults[effect_slot(effect)]
            && decision > entry.decision
        {
            entry = ShownRule {
                decision,
                scope: Scope::Project,
                file: Some(path.clone()),
                ..entry
            };
        }
        shown.push(entry);
    }
    for (scope, layer) in [(Scope::User, &policies.user), (Scope::Project, &policies.project)] {
        if let Layer::Parsed { path, file } = layer {
            for rule in &file.rules {
                let (subject, group) = match &rule.who {
                    Who::Anyone => (None, None),
                    Who::Subject(subject) => (Some(subject.clone()), None),
                    Who::Group(group) => (None, Some(group.clone())),
                };
                shown.push(ShownRule {
                    matcher: rule.matcher.to_string(),
                    decision: rule.decision,
                    subject,
                    group,
                    scope,
                    file: Some(path.clone()),
                    ignored: (scope == Scope::Project)
                        .then(|| ignored(rule, &policies.user, commands))
                        .flatten(),
                });
            }
        }
    }
    shown
}
