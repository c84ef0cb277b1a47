//! `hcpx policy`'s text (`show`, `check`, `set`, `unset`) and the one rendering of a
//! policy file, which `doctor` shows too. Part of [`crate::render`], which re-exports it.

use std::fmt::Write as _;
use std::path::Path;

use crate::context::Principal;
use crate::manifest::Effect;
use crate::policy::{Decision, Evaluation, Layer, Policies, ShownRule};

/// Where a policy file is named: `doctor`'s status line, or `policy show`'s, which
/// says what an absent file would be.
pub(crate) enum LayerLine<'a> {
    /// `none`, `PATH (ok)`, `PATH UNPARSABLE: …`.
    Status,
    /// `none (ABSENT)`, `PATH`, `PATH is UNPARSABLE (…): …`.
    Source { absent: &'a str },
}

/// One policy file as a person reads it: the one rendering of a [`Layer`].
pub(crate) fn layer_text(layer: &Layer, line: &LayerLine<'_>) -> String {
    match (layer, line) {
        (Layer::Absent, LayerLine::Status) => "none".to_owned(),
        (Layer::Absent, LayerLine::Source { absent }) => format!("none ({absent})"),
        (Layer::Parsed { path, .. }, LayerLine::Status) => format!("{} (ok)", path.display()),
        (Layer::Parsed { path, .. }, LayerLine::Source { .. }) => path.display().to_string(),
        (Layer::Unparsable { path, error }, LayerLine::Status) => format!(
            "{} UNPARSABLE: {error}; every exec and install is denied",
            path.display()
        ),
        (Layer::Unparsable { path, error }, LayerLine::Source { .. }) => format!(
            "{} is UNPARSABLE ({error}): every exec and install is denied until it is fixed \
             (docs/policy.md describes the format)",
            path.display()
        ),
    }
}

/// `hcpx policy show`.
pub(crate) fn policy_show_text(policies: &Policies, rules: &[ShownRule], user_path: &Path) -> String {
    let mut text = String::new();
    let would_be = format!("would be {}", user_path.display());
    let _ = writeln!(
        text,
        "user policy:    {}",
        layer_text(&policies.user, &LayerLine::Source { absent: &would_be })
    );
    let _ = writeln!(
        text,
        "project policy: {}",
        layer_text(
            &policies.project,
            &LayerLine::Source {
                absent: "no .hcp/policy.json here or above"
            }
        )
    );
    let _ = writeln!(text);
    let label = |rule: &ShownRule| match (&rule.subject, &rule.group) {
        (Some(subject), _) => format!("{} (subject {subject})", rule.matcher),
        (_, Some(group)) => format!("{} (group {group})", rule.matcher),
        _ => rule.matcher.clone(),
    };
    let width = rules
        .iter()
        .map(|rule| label(rule).chars().count())
        .max()
        .unwrap_or(0);
    for rule in rules {
        let source = match (&rule.file, rule.scope) {
            (Some(file), _) => file.display().to_string(),
            (None, _) => "built-in".to_owned(),
        };
        let _ = writeln!(
            text,
            "{:width$}  {:<13}  {source}",
            label(rule),
            rule.decision.as_str()
        );
        if let Some(ignored) = &rule.ignored {
            let _ = writeln!(
                text,
                "{:width$}  IGNORED{}: looser than {} by the {}; the project can only tighten",
                "",
                if ignored.only_for.is_empty() {
                    String::new()
                } else {
                    format!(" for {}", ignored.only_for.join(", "))
                },
                ignored.user_decision.as_str(),
                ignored.user_rule,
            );
        }
    }
    let _ = writeln!(
        text,
        "\nThe most specific match wins (pack.command, pack.*, *.effect, defaults); the project can only tighten."
    );
    if rules
        .iter()
        .any(|rule| rule.subject.is_some() || rule.group.is_some())
    {
        let _ = writeln!(
            text,
            "Between rules of one match, a rule for the OAuth caller's subject wins over one for its group, \
             and that over one for anyone."
        );
    }
    text
}

/// What a decision means for this caller, in one line.
pub(crate) fn meaning(decision: Decision, principal: Principal) -> &'static str {
    match (decision, principal) {
        (Decision::Allow, _) => "runs without asking",
        (Decision::Confirm, Principal::Terminal) => "asks y/N at the terminal, or takes --yes",
        (Decision::Confirm, Principal::Agent) => "needs confirmation: --yes, or confirm: true over MCP",
        (Decision::ConfirmHuman, _) => {
            "only a person can confirm, at a terminal prompt or through the MCP host"
        }
        (Decision::Deny, _) => "refused",
    }
}

/// `hcpx policy check PACK COMMAND`: the decision for this caller and the rule behind it.
pub(crate) fn policy_check_text(
    pack: &str,
    command: &str,
    effect: Effect,
    principal: Principal,
    evaluation: &Evaluation,
) -> String {
    format!(
        "{pack}.{command} ({}) for {}: {} ({})\n  by {}\n",
        effect.as_str(),
        principal.as_str(),
        evaluation.decision.as_str(),
        meaning(evaluation.decision, principal),
        evaluation.rule
    )
}

/// `hcpx policy set MATCH DECISION`.
pub(crate) fn policy_set_text(matcher: &str, decision: Decision, file: &Path) -> String {
    format!("{matcher}: {} (in {})\n", decision.as_str(), file.display())
}

/// `hcpx policy unset MATCH`.
pub(crate) fn policy_unset_text(matcher: &str, was: Decision, file: &Path) -> String {
    format!(
        "{matcher}: removed (was {}, in {})\n",
        was.as_str(),
        file.display()
    )
}
