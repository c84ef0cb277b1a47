//! The policy engine (see README.md): a pure function from who is calling, which command,
//! its effect, the user's policy and the project's policy to a [`Decision`] and the
//! rule that made it. The most specific match wins within a file; across the two
//! files the stricter decision wins; a file that cannot be parsed denies everything.
//! Reading the files is [`load`]'s job; [`evaluate`] does no I/O.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

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

/// The built-in defaults (see README.md).
pub(crate) fn builtin_default(effect: Effect) -> Decision {
    match effect {
        Effect::Read => Decision::Allow,
        Effect::Write => Decision::Confirm,
        Effect::Destructive => Decision::ConfirmHuman,
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
    fn specificity(&self) -> u8 {
        match self {
            Self::Command { .. } => 3,
            Self::Pack(_) => 2,
            Self::Effect(_) => 1,
        }
    }

    fn matches(&self, subject: &Subject<'_>) -> bool {
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
}

/// A parsed policy file. `defaults` holds only what the file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PolicyFile {
    pub defaults: [Option<Decision>; 3],
    pub rules: Vec<Rule>,
}

fn effect_slot(effect: Effect) -> usize {
    match effect {
        Effect::Read => 0,
        Effect::Write => 1,
        Effect::Destructive => 2,
    }
}

const EFFECTS: [Effect; 3] = [Effect::Read, Effect::Write, Effect::Destructive];

impl PolicyFile {
    /// Parses a policy file strictly: any unknown field or value is an error, since a
    /// rule that is silently ignored could leave something open.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|error| format!("not valid JSON: {error}"))?;
        let Value::Object(root) = value else {
            return Err("must be a JSON object".to_owned());
        };
        let mut file = Self::default();
        for (key, value) in &root {
            match key.as_str() {
                "defaults" => {
                    let Value::Object(defaults) = value else {
                        return Err("defaults must be an object".to_owned());
                    };
                    for (effect, decision) in defaults {
                        let effect = Effect::parse(effect).ok_or_else(|| {
                            format!("defaults.{effect}: not an effect (read, write, destructive)")
                        })?;
                        file.defaults[effect_slot(effect)] = Some(parse_decision(decision, "defaults")?);
                    }
                }
                "rules" => {
                    let Value::Array(rules) = value else {
                        return Err("rules must be an array".to_owned());
                    };
                    for (index, rule) in rules.iter().enumerate() {
                        file.rules
                            .push(parse_rule(rule).map_err(|error| format!("rules[{index}]: {error}"))?);
                    }
                }
                other => return Err(format!("unknown field \"{other}\" (known: defaults, rules)")),
            }
        }
        Ok(file)
    }

    /// Serializes back to the format (see README.md).
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
            .map(|rule| serde_json::json!({ "match": rule.matcher.to_string(), "decision": rule.decision.as_str() }))
            .collect();
        serde_json::json!({ "defaults": defaults, "rules": rules })
    }
}

fn parse_decision(value: &Value, context: &str) -> Result<Decision, String> {
    value
        .as_str()
        .and_then(Decision::parse)
        .ok_or_else(|| format!("{context}: decision must be allow, confirm, confirm-human or deny"))
}

fn parse_rule(value: &Value) -> Result<Rule, String> {
    let Value::Object(rule) = value else {
        return Err("must be an object with match and decision".to_owned());
    };
    if let Some(key) = rule.keys().find(|key| *key != "match" && *key != "decision") {
        return Err(format!("unknown field \"{key}\" (known: match, decision)"));
    }
    let matcher = rule
        .get("match")
        .and_then(Value::as_str)
        .ok_or("match is required")?;
    let decision = rule.get("decision").ok_or("decision is required")?;
    Ok(Rule {
        matcher: Matcher::parse(matcher)?,
        decision: parse_decision(decision, "decision")?,
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

/// One policy file as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Layer {
    Absent,
    Parsed { path: PathBuf, file: PolicyFile },
    Unparsable { path: PathBuf, error: String },
}

impl Layer {
    /// The layer as `doctor` and `policy show` report it in their data: its status,
    /// its path, and why it cannot be parsed.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Self::Absent => serde_json::json!({ "status": "absent" }),
            Self::Parsed { path, .. } => serde_json::json!({ "status": "parsed", "path": path }),
            Self::Unparsable { path, error } => {
                serde_json::json!({ "status": "unparsable", "path": path, "error": error })
            }
        }
    }
}

/// The user's and the project's policy, as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policies {
    pub user: Layer,
    pub project: Layer,
}

/// Largest policy file read; a larger one denies.
const MAX_POLICY: u64 = 1024 * 1024;

/// Reads one policy file. A missing file is [`Layer::Absent`]; anything else that
/// goes wrong is [`Layer::Unparsable`], which denies: a dangling link, a folder, a
/// FIFO or a device (opened without blocking, so a FIFO cannot hang the call), a
/// file that cannot be read or is too large.
pub(crate) fn load_layer(path: Option<PathBuf>) -> Layer {
    let Some(path) = path else { return Layer::Absent };
    match read_policy(&path) {
        Ok(None) => Layer::Absent,
        Err(error) => Layer::Unparsable { path, error },
        Ok(Some(text)) => match PolicyFile::parse(&text) {
            Ok(file) => Layer::Parsed { path, file },
            Err(error) => Layer::Unparsable { path, error },
        },
    }
}

/// The file's text; `None` when nothing at all is at that path.
fn read_policy(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read as _;
    match std::fs::symlink_metadata(path) {
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(error) => return Err(format!("cannot be read: {error}")),
        Ok(_) => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = options.open(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => "is a link to nothing; fix or remove it".to_owned(),
        _ => format!("cannot be read: {error}"),
    })?;
    let meta = file
        .metadata()
        .map_err(|error| format!("cannot be read: {error}"))?;
    if !meta.is_file() {
        return Err(
            "is not a regular file (a folder, FIFO or device); a policy must be a regular file".to_owned(),
        );
    }
    if meta.len() > MAX_POLICY {
        return Err("is larger than 1 MiB".to_owned());
    }
    let mut text = String::new();
    file.take(MAX_POLICY + 1)
        .read_to_string(&mut text)
        .map_err(|error| format!("cannot be read: {error}"))?;
    Ok(Some(text))
}

pub(crate) fn load(user: PathBuf, project: Option<PathBuf>) -> Policies {
    Policies {
        user: load_layer(Some(user)),
        project: load_layer(project),
    }
}

/// What is being decided.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub pack: &'a str,
    pub command: &'a str,
    pub effect: Effect,
}

/// The rule behind a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RuleRef {
    pub scope: Scope,
    /// `git.*`, `defaults.write`, or `unparsable`.
    #[serde(rename = "match")]
    pub matcher: String,
    pub file: Option<PathBuf>,
    /// Index in the file's `rules`, when it was a rule.
    pub index: Option<usize>,
    /// Why, for an unparsable file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_ref().map(|path| path.display().to_string());
        match (self.scope, &self.error, self.index, file) {
            (Scope::Builtin, _, _, _) => write!(f, "built-in default `{}`", self.matcher),
            (_, Some(error), _, Some(file)) => write!(f, "unparsable policy file {file} ({error})"),
            (_, _, Some(index), Some(file)) => {
                write!(f, "rule `{}` (rules[{index}]) in {file}", self.matcher)
            }
            (_, _, _, Some(file)) => write!(f, "`{}` in {file}", self.matcher),
            (_, _, _, None) => write!(f, "`{}`", self.matcher),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Evaluation {
    pub decision: Decision,
    pub rule: RuleRef,
}

/// The decision of one layer: the most specific matching rule (the strictest among
/// equally specific ones), else the file's own default for the effect.
fn evaluate_file(file: &PolicyFile, path: &Path, scope: Scope, subject: &Subject<'_>) -> Option<Evaluation> {
    let best = file
        .rules
        .iter()
        .enumerate()
        .filter(|(_, rule)| rule.matcher.matches(subject))
        .max_by(|(ia, a), (ib, b)| {
            (a.matcher.specificity(), a.decision)
                .cmp(&(b.matcher.specificity(), b.decision))
                .then(ib.cmp(ia))
        });
    if let Some((index, rule)) = best {
        return Some(Evaluation {
            decision: rule.decision,
            rule: RuleRef {
                scope,
                matcher: rule.matcher.to_string(),
                file: Some(path.to_path_buf()),
                index: Some(index),
                error: None,
            },
        });
    }
    file.defaults[effect_slot(subject.effect)].map(|decision| Evaluation {
        decision,
        rule: RuleRef {
            scope,
            matcher: format!("defaults.{}", subject.effect.as_str()),
            file: Some(path.to_path_buf()),
            index: None,
            error: None,
        },
    })
}

fn unparsable(scope: Scope, path: &Path, error: &str) -> Evaluation {
    Evaluation {
        decision: Decision::Deny,
        rule: RuleRef {
            scope,
            matcher: "unparsable".to_owned(),
            file: Some(path.to_path_buf()),
            index: None,
            error: Some(error.to_owned()),
        },
    }
}

/// The user layer's decision alone: its most specific rule, else its default, else
/// the built-in default; an unparsable user file denies.
fn evaluate_user(subject: &Subject<'_>, user: &Layer) -> Evaluation {
    let user = match user {
        Layer::Unparsable { path, error } => return unparsable(Scope::User, path, error),
        Layer::Parsed { path, file } => evaluate_file(file, path, Scope::User, subject),
        Layer::Absent => None,
    };
    user.unwrap_or_else(|| Evaluation {
        decision: builtin_default(subject.effect),
        rule: RuleRef {
            scope: Scope::Builtin,
            matcher: format!("defaults.{}", subject.effect.as_str()),
            file: None,
            index: None,
            error: None,
        },
    })
}

/// The decision for running one pack command. The same for both principals: what
/// differs is who may satisfy `confirm` and `confirm-human`, which exec enforces.
pub(crate) fn evaluate(subject: &Subject<'_>, policies: &Policies) -> Evaluation {
    let user = evaluate_user(subject, &policies.user);
    if user.rule.error.is_some() {
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

/// The rule's `match` for what a read-only server denies.
pub(crate) const READ_ONLY: &str = "read-only";

/// `hcpx mcp --read-only`: every command that is not a read is denied.
pub(crate) fn read_only(effect: Effect) -> Option<Evaluation> {
    (effect != Effect::Read).then(|| Evaluation {
        decision: Decision::Deny,
        rule: RuleRef {
            scope: Scope::Builtin,
            matcher: READ_ONLY.to_owned(),
            file: None,
            index: None,
            error: None,
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
            matcher: format!("access.{}", principal.as_str()),
            file: None,
            index: None,
            error: None,
        },
    }
}

/// Whether at least one of these commands may run (the `permitted`
/// availability flag): anything short of `deny` can be run, after confirmation.
pub(crate) fn permits_any<'a>(
    pack: &str,
    commands: impl IntoIterator<Item = (&'a str, Effect)>,
    policies: &Policies,
) -> Result<(), Evaluation> {
    let mut last = None;
    for (command, effect) in commands {
        let evaluation = evaluate(
            &Subject {
                pack,
                command,
                effect,
            },
            policies,
        );
        if evaluation.decision != Decision::Deny {
            return Ok(());
        }
        last = Some(evaluation);
    }
    Err(last.unwrap_or_else(|| access(Principal::Agent)))
}

/// One line of `policy show`: a default or rule and where it came from.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ShownRule {
    #[serde(rename = "match")]
    pub matcher: String,
    pub decision: Decision,
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
    let mut subjects: Vec<(String, String, Effect)> = commands
        .iter()
        .filter(|(pack, command, effect)| {
            rule.matcher.matches(&Subject {
                pack,
                command,
                effect: *effect,
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
                shown.push(ShownRule {
                    matcher: rule.matcher.to_string(),
                    decision: rule.decision,
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

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
