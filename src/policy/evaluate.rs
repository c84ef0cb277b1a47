//! The decision for one pack command, a pure function of who asks, the command, its
//! effect and the two policy files: the most specific match wins within a file (the
//! strictest among equally specific ones), across the files the stricter decision
//! wins, and a file that cannot be parsed denies everything. Each decision comes with
//! the rule that made it.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::RECOVERY;
use super::load::{Layer, Policies};
use super::rules::{
    Decision, Matcher, PolicyFile, Principal, Scope, Subject, Who, builtin_default, effect_slot,
};
use crate::manifest::Effect;

/// What kind of rule made a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RuleKind {
    /// `rules[index]` of a policy file, for `who`.
    Rule {
        matcher: Matcher,
        index: usize,
        who: Who,
    },
    /// The default for an effect: a file's `defaults.EFFECT`, or the built-in one.
    Default { effect: Effect },
    /// The file cannot be parsed, and so denies everything: why.
    Unparsable { error: String },
    /// `hcpx mcp --read-only` denies every command that is not a read.
    ReadOnly,
    /// The access commands: a person at a terminal may, an agent never.
    Access { principal: Principal },
}

/// The rule behind a decision: which file (`scope` and `file`) and which rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleRef {
    pub scope: Scope,
    pub file: Option<PathBuf>,
    pub kind: RuleKind,
}

impl RuleRef {
    /// What the rule is called in results (`match`): `git.*`, `defaults.write`, or
    /// the name of a built-in kind (`unparsable`, `read-only`, `access.agent`).
    pub(crate) fn matcher(&self) -> String {
        match &self.kind {
            RuleKind::Rule { matcher, .. } => matcher.to_string(),
            RuleKind::Default { effect } => format!("defaults.{}", effect.as_str()),
            RuleKind::Unparsable { .. } => "unparsable".to_owned(),
            RuleKind::ReadOnly => "read-only".to_owned(),
            RuleKind::Access { principal } => format!("access.{}", principal.as_str()),
        }
    }

    /// Its index in the file's `rules`, when it is a rule.
    pub(crate) fn index(&self) -> Option<usize> {
        match self.kind {
            RuleKind::Rule { index, .. } => Some(index),
            _ => None,
        }
    }

    /// The OAuth subject or group the rule names, when it names one.
    pub(crate) fn who(&self) -> Option<&Who> {
        match &self.kind {
            RuleKind::Rule { who, .. } if *who != Who::Anyone => Some(who),
            _ => None,
        }
    }

    /// Why the file cannot be parsed, when it cannot.
    pub(crate) fn error(&self) -> Option<&str> {
        match &self.kind {
            RuleKind::Unparsable { error } => Some(error),
            _ => None,
        }
    }
}

impl Serialize for RuleRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            scope: Scope,
            #[serde(rename = "match")]
            matcher: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            subject: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            group: Option<&'a str>,
            file: Option<&'a Path>,
            index: Option<usize>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a str>,
        }
        let (subject, group) = match self.who() {
            Some(Who::Subject(subject)) => (Some(subject.as_str()), None),
            Some(Who::Group(group)) => (None, Some(group.as_str())),
            _ => (None, None),
        };
        Wire {
            scope: self.scope,
            matcher: self.matcher(),
            subject,
            group,
            file: self.file.as_deref(),
            index: self.index(),
            error: self.error(),
        }
        .serialize(serializer)
    }
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_ref().map(|path| path.display().to_string());
        let matcher = self.matcher();
        match (self.scope, &self.kind, file) {
            (Scope::Builtin, _, _) => write!(f, "built-in default `{matcher}`"),
            (_, RuleKind::Unparsable { error }, Some(file)) => {
                write!(f, "unparsable policy file {file} ({error})")
            }
            (_, RuleKind::Rule { index, who, .. }, Some(file)) if *who != Who::Anyone => {
                write!(f, "rule `{matcher}` for {who} (rules[{index}]) in {file}")
            }
            (_, RuleKind::Rule { index, .. }, Some(file)) => {
                write!(f, "rule `{matcher}` (rules[{index}]) in {file}")
            }
            (_, _, Some(file)) => write!(f, "`{matcher}` in {file}"),
            (_, _, None) => write!(f, "`{matcher}`"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Evaluation {
    pub decision: Decision,
    pub rule: RuleRef,
}

impl Evaluation {
    /// What a `deny` says: the rule behind it, and for a file that cannot be used,
    /// which field is wrong and how to get out of it (it denies everything).
    pub(crate) fn denial(&self) -> String {
        match self.rule.kind {
            RuleKind::Unparsable { .. } => format!("denied by {}; {RECOVERY}", self.rule),
            _ => format!("denied by {}", self.rule),
        }
    }
}

/// The decision of one layer: the most specific matching rule, else the file's own
/// default for the effect. Specific is first the `match` (`pack.command` over
/// `pack.*` over `*.effect`), then whom the rule names (a subject over a group over
/// anyone); the strictest among equally specific ones.
fn evaluate_file(file: &PolicyFile, path: &Path, scope: Scope, subject: &Subject<'_>) -> Option<Evaluation> {
    let best = file
        .rules
        .iter()
        .enumerate()
        .filter(|(_, rule)| rule.applies(subject))
        .max_by(|(ia, a), (ib, b)| {
            (a.matcher.specificity(), a.who.specificity(), a.decision)
                .cmp(&(b.matcher.specificity(), b.who.specificity(), b.decision))
                .then(ib.cmp(ia))
        });
    if let Some((index, rule)) = best {
        return Some(Evaluation {
            decision: rule.decision,
            rule: RuleRef {
                scope,
                file: Some(path.to_path_buf()),
                kind: RuleKind::Rule {
                    matcher: rule.matcher.clone(),
                    index,
                    who: rule.who.clone(),
                },
            },
        });
    }
    file.defaults[effect_slot(subject.effect)].map(|decision| Evaluation {
        decision,
        rule: RuleRef {
            scope,
            file: Some(path.to_path_buf()),
            kind: RuleKind::Default {
                effect: subject.effect,
            },
        },
    })
}

fn unparsable(scope: Scope, path: &Path, error: &str) -> Evaluation {
    Evaluation {
        decision: Decision::Deny,
        rule: RuleRef {
            scope,
            file: Some(path.to_path_buf()),
            kind: RuleKind::Unparsable {
                error: error.to_owned(),
            },
        },
    }
}

/// The user layer's decision alone: its most specific rule, else its default, else
/// the built-in default; an unparsable user file denies.
pub(super) fn evaluate_user(subject: &Subject<'_>, user: &Layer) -> Evaluation {
    let user = match user {
        Layer::Unparsable { path, error } => return unparsable(Scope::User, path, error),
        Layer::Parsed { path, file } => evaluate_file(file, path, Scope::User, subject),
        Layer::Absent => None,
    };
    user.unwrap_or_else(|| Evaluation {
        decision: builtin_default(subject.effect),
        rule: RuleRef {
            scope: Scope::Builtin,
            file: None,
            kind: RuleKind::Default {
                effect: subject.effect,
            },
        },
    })
}

/// The decision for running one pack command. The same for both principals: what
/// differs is who may satisfy `confirm` and `confirm-human`, which exec enforces.
pub(crate) fn evaluate(subject: &Subject<'_>, policies: &Policies) -> Evaluation {
    let user = evaluate_user(subject, &policies.user);
    if matches!(user.rule.kind, RuleKind::Unparsable { .. }) {
        return user;
    }
    let project = match &policies.project {
        Layer::Unparsable { path, error } => return unparsable(Scope::Project, path, error),
        Layer::Parsed { path, file } => evaluate_file(file, path, Scope::Project, subject),
        Layer::Absent => None,
    };
    // The project can only tighten: it wins only when strictly stricter.
    match project {
        Some(project) if project.decision > user.decision => project,
        _ => user,
    }
}

/// `hcpx mcp --read-only`: every command that is not a read is denied.
pub(crate) fn read_only(effect: Effect) -> Option<Evaluation> {
    (effect != Effect::Read).then_some(Evaluation {
        decision: Decision::Deny,
        rule: RuleRef {
            scope: Scope::Builtin,
            file: None,
            kind: RuleKind::ReadOnly,
        },
    })
}

/// The access commands (`policy set`, `bind`, `unbind`): a person at a terminal may;
/// an agent never widens its own access, whatever any file says.
pub(crate) fn access(principal: Principal) -> Evaluation {
    let decision = match principal {
        Principal::Terminal => Decision::Allow,
        Principal::Agent => Decision::Deny,
    };
    Evaluation {
        decision,
        rule: RuleRef {
            scope: Scope::Builtin,
            file: None,
            kind: RuleKind::Access { principal },
        },
    }
}

/// Whether at least one of these commands may run (the `permitted`
/// availability flag): anything short of `deny` can be run, after confirmation.
pub(crate) fn permits_any<'a>(
    pack: &str,
    commands: impl IntoIterator<Item = (&'a str, Effect)>,
    caller: Option<&super::rules::Caller>,
    policies: &Policies,
) -> Result<(), Box<Evaluation>> {
    let mut last = None;
    for (command, effect) in commands {
        let evaluation = evaluate(
            &Subject {
                pack,
                command,
                effect,
                caller,
            },
            policies,
        );
        if evaluation.decision != Decision::Deny {
            return Ok(());
        }
        last = Some(evaluation);
    }
    Err(Box::new(last.unwrap_or_else(|| access(Principal::Agent))))
}
