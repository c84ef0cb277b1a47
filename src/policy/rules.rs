//! What a policy says: who is calling, the four decisions and the built-in default
//! for each effect, what a rule matches, and a policy file, parsed strictly (an
//! unknown field or value is an error, since a rule silently ignored could leave
//! something open) and written back.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::error::{PolicyError, key_path};
use crate::manifest::Effect;
use crate::template::{is_name, is_pack_id};

/// Who is calling (see docs/bindings.md). Agents never widen their own access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Principal {
    Terminal,
    Agent,
}

impl Principal {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Terminal => "terminal",
            Self::Agent => "agent",
        }
    }
}

/// From weakest to strictest; `Ord` follows, so combining is `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Decision {
    Allow,
    Confirm,
    ConfirmHuman,
    Deny,
}

impl Decision {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Confirm => "confirm",
            Self::ConfirmHuman => "confirm-human",
            Self::Deny => "deny",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "allow" => Self::Allow,
            "confirm" => Self::Confirm,
            "confirm-human" => Self::ConfirmHuman,
            "deny" => Self::Deny,
            _ => return None,
        })
    }
}

/// The built-in defaults (see docs/policy.md).
pub(crate) fn builtin_default(effect: Effect) -> Decision {
    match effect {
        Effect::Read => Decision::Allow,
        Effect::Write => Decision::Confirm,
        Effect::Destructive => Decision::ConfirmHuman,
    }
}

/// Who an OAuth caller is (`hcpx mcp --oauth-issuer`): the access token's subject
/// and groups, which rules can name (see docs/policy.md). Other callers have none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The token's `sub`.
    pub subject: String,
    /// The groups its groups claim lists.
    pub groups: Vec<String>,
}

/// What is being decided: a pack command, for a caller with or without a
/// [`Caller`] identity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub pack: &'a str,
    pub command: &'a str,
    pub effect: Effect,
    pub caller: Option<&'a Caller>,
}

/// Whom a rule applies to: anyone, or only the OAuth caller with that subject, or
/// in that group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Who {
    #[default]
    Anyone,
    Subject(String),
    Group(String),
}

impl Who {
    /// Among rules whose `match` is equally specific: 2 for a subject, 1 for a
    /// group, 0 for anyone.
    pub(super) fn specificity(&self) -> u8 {
        match self {
            Self::Anyone => 0,
            Self::Group(_) => 1,
            Self::Subject(_) => 2,
        }
    }

    /// Whether a rule for `self` applies to `caller`.
    pub(super) fn applies(&self, caller: Option<&Caller>) -> bool {
        match (self, caller) {
            (Self::Anyone, _) => true,
            (Self::Subject(subject), Some(caller)) => *subject == caller.subject,
            (Self::Group(group), Some(caller)) => caller.groups.iter().any(|own| own == group),
            (_, None) => false,
        }
    }

    /// A caller this rule applies to, and only through its own name: for judging
    /// a rule against the user layer (`policy show`).
    pub(super) fn stand_in(&self) -> Option<Caller> {
        match self {
            Self::Anyone => None,
            Self::Subject(subject) => Some(Caller {
                subject: subject.clone(),
                groups: Vec::new(),
            }),
            Self::Group(group) => Some(Caller {
                subject: String::new(),
                groups: vec![group.clone()],
            }),
        }
    }
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anyone => f.write_str("anyone"),
            Self::Subject(subject) => write!(f, "subject {subject}"),
            Self::Group(group) => write!(f, "group {group}"),
        }
    }
}

/// What a rule's `match` names, from most to least specific.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Matcher {
    Command { pack: String, command: String },
    Pack(String),
    Effect(Effect),
}

impl Matcher {
    /// `pack.command`, `pack.*` or `*.effect`. Pack ids may hold dots; command names
    /// never do, so the split is at the last dot.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let Some((pack, rest)) = text.rsplit_once('.') else {
            return Err(format!(
                "match \"{text}\" must be pack.command, pack.* or *.effect"
            ));
        };
        match (pack, rest) {
            ("*", effect) => Effect::parse(effect)
                .map(Self::Effect)
                .ok_or_else(|| format!("match \"{text}\": after `*.` comes read, write or destructive")),
            (pack, "*") if is_pack_id(pack) => Ok(Self::Pack(pack.to_owned())),
            (pack, command) if is_pack_id(pack) && is_name(command) => Ok(Self::Command {
                pack: pack.to_owned(),
                command: command.to_owned(),
            }),
            _ => Err(format!(
                "match \"{text}\" must be pack.command, pack.* or *.effect"
            )),
        }
    }

    /// 3 for `pack.command`, 2 for `pack.*`, 1 for `*.effect`.
    pub(super) fn specificity(&self) -> u8 {
        match self {
            Self::Command { .. } => 3,
            Self::Pack(_) => 2,
            Self::Effect(_) => 1,
        }
    }

    pub(super) fn matches(&self, subject: &Subject<'_>) -> bool {
        match self {
            Self::Command { pack, command } => pack == subject.pack && command == subject.command,
            Self::Pack(pack) => pack == subject.pack,
            Self::Effect(effect) => *effect == subject.effect,
        }
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { pack, command } => write!(f, "{pack}.{command}"),
            Self::Pack(pack) => write!(f, "{pack}.*"),
            Self::Effect(effect) => write!(f, "*.{}", effect.as_str()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub matcher: Matcher,
    pub decision: Decision,
    /// `subject` or `group`: the rule applies only to that OAuth caller.
    pub who: Who,
}

impl Rule {
    /// Whether the rule decides for `subject`: its `match` and its caller.
    pub(super) fn applies(&self, subject: &Subject<'_>) -> bool {
        self.matcher.matches(subject) && self.who.applies(subject.caller)
    }
}

/// A parsed policy file. `defaults` holds only what the file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PolicyFile {
    pub defaults: [Option<Decision>; 3],
    pub rules: Vec<Rule>,
}

pub(super) fn effect_slot(effect: Effect) -> usize {
    match effect {
        Effect::Read => 0,
        Effect::Write => 1,
        Effect::Destructive => 2,
    }
}

pub(super) const EFFECTS: [Effect; 3] = [Effect::Read, Effect::Write, Effect::Destructive];

/// What the format takes at each place, as a refusal names it.
const DECISIONS: &str = "one of allow, confirm, confirm-human, deny";
const MATCH: &str = "a string pack.command, pack.* or *.effect (effect: read, write or destructive)";
const EFFECT_MATCH: &str = "*.read, *.write or *.destructive";
const RULE: &str = r#"an object such as {"match": "git.push", "decision": "deny"}"#;
const RULE_KEYS: &str = "only match, decision, and subject or group";
const NAME: &str = "a string: an OAuth subject or group, not empty";

impl PolicyFile {
    /// Parses a policy file strictly: any unknown field or value is an error, since a
    /// rule that is silently ignored could leave something open. The error names the
    /// first bad field by its JSON path, what it holds and what is taken there.
    pub(crate) fn parse(text: &str) -> Result<Self, PolicyError> {
        let value: Value =
            serde_json::from_str(text).map_err(|error| PolicyError::Syntax(error.to_string()))?;
        let Value::Object(root) = value else {
            return Err(PolicyError::wrong(
                "",
                &value,
                "an object with `defaults`, `rules` or both",
            ));
        };
        let mut file = Self::default();
        for (key, value) in &root {
            match key.as_str() {
                "defaults" => {
                    let Value::Object(defaults) = value else {
                        return Err(PolicyError::wrong(
                            "defaults",
                            value,
                            r#"an object such as {"write": "confirm"}"#,
                        ));
                    };
                    for (effect, decision) in defaults {
                        let at = key_path("defaults", effect);
                        let effect = Effect::parse(effect)
                            .ok_or_else(|| PolicyError::unknown(&at, "only read, write and destructive"))?;
                        file.defaults[effect_slot(effect)] = Some(parse_decision(decision, &at)?);
                    }
                }
                "rules" => {
                    let Value::Array(rules) = value else {
                        return Err(PolicyError::wrong(
                            "rules",
                            value,
                            r#"an array of rules such as {"match": "git.push", "decision": "deny"}"#,
                        ));
                    };
                    for (index, rule) in rules.iter().enumerate() {
                        file.rules.push(parse_rule(rule, &format!("rules[{index}]"))?);
                    }
                }
                other => {
                    return Err(PolicyError::unknown(
                        key_path("", other),
                        "only defaults and rules",
                    ));
                }
            }
        }
        Ok(file)
    }

    /// Serializes back to the format (see docs/policy.md).
    pub(crate) fn to_json(&self) -> Value {
        let mut defaults = serde_json::Map::new();
        for effect in EFFECTS {
            if let Some(decision) = self.defaults[effect_slot(effect)] {
                defaults.insert(
                    effect.as_str().to_owned(),
                    Value::String(decision.as_str().to_owned()),
                );
            }
        }
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|rule| {
                let mut shown = serde_json::json!({ "match": rule.matcher.to_string(), "decision": rule.decision.as_str() });
                match &rule.who {
                    Who::Anyone => {}
                    Who::Subject(subject) => shown["subject"] = Value::String(subject.clone()),
                    Who::Group(group) => shown["group"] = Value::String(group.clone()),
                }
                shown
            })
            .collect();
        serde_json::json!({ "defaults": defaults, "rules": rules })
    }
}

fn parse_decision(value: &Value, at: &str) -> Result<Decision, PolicyError> {
    value
        .as_str()
        .and_then(Decision::parse)
        .ok_or_else(|| PolicyError::wrong(at, value, DECISIONS))
}

/// `rules[N]`, whose JSON path is `at`.
fn parse_rule(value: &Value, at: &str) -> Result<Rule, PolicyError> {
    let Value::Object(rule) = value else {
        return Err(PolicyError::wrong(at, value, RULE));
    };
    if let Some(key) = rule
        .keys()
        .find(|key| !["match", "decision", "subject", "group"].contains(&key.as_str()))
    {
        return Err(PolicyError::unknown(key_path(at, key), RULE_KEYS));
    }
    let matcher = match rule.get("match") {
        None => return Err(PolicyError::field(format!("{at}.match"), "missing", MATCH)),
        Some(Value::String(text)) => Matcher::parse(text).map_err(|_| {
            let expected = if text.starts_with("*.") {
                EFFECT_MATCH
            } else {
                MATCH
            };
            PolicyError::wrong(format!("{at}.match"), &Value::String(text.clone()), expected)
        })?,
        Some(other) => return Err(PolicyError::wrong(format!("{at}.match"), other, MATCH)),
    };
    let decision = match rule.get("decision") {
        None => return Err(PolicyError::field(format!("{at}.decision"), "missing", DECISIONS)),
        Some(decision) => parse_decision(decision, &format!("{at}.decision"))?,
    };
    let name = |key: &str| match rule.get(key) {
        None => Ok(None),
        Some(Value::String(name)) if !name.is_empty() => Ok(Some(name.clone())),
        Some(other) => Err(PolicyError::wrong(format!("{at}.{key}"), other, NAME)),
    };
    let who = match (name("subject")?, name("group")?) {
        (None, None) => Who::Anyone,
        (Some(subject), None) => Who::Subject(subject),
        (None, Some(group)) => Who::Group(group),
        (Some(_), Some(_)) => {
            return Err(PolicyError::field(
                format!("{at}.group"),
                "beside a subject",
                "a subject or a group, not both: write two rules",
            ));
        }
    };
    Ok(Rule {
        matcher,
        decision,
        who,
    })
}

/// Which file a layer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Scope {
    Builtin,
    User,
    Project,
}
