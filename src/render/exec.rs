//! `hcpx exec`'s text: the `--dry-run` plan and what a person is asked to confirm.
//! Part of [`crate::render`], which re-exports it.

use std::fmt::Write as _;
use std::path::Path;

use super::printable;
use crate::manifest::Effect;
use crate::policy::Decision;
use crate::sandbox::LayerReport;

/// The `--dry-run` plan as a person reads it.
pub(crate) struct PlanText<'a> {
    pub decision: &'a str,
    pub rule: String,
    pub child: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [String],
    /// The binding written to its standard input, if any.
    pub stdin: Option<&'a str>,
    /// What it reads beyond the system folders.
    pub reads: &'a [std::path::PathBuf],
    /// The pack's cache folder, when it keeps one.
    pub cache: Option<&'a Path>,
    pub layers: &'a [LayerReport],
}

/// Renders the plan: the decision and the rule behind it, the exact child argv
/// (quoted as a shell would need it), the working directory, the names of the
/// environment variables, and every sandbox layer with whether it is on here.
pub(crate) fn plan_text(plan: &PlanText<'_>) -> String {
    let child: Vec<std::borrow::Cow<'_, str>> =
        plan.child.iter().map(|arg| shell_words::quote(arg)).collect();
    let reads: Vec<String> = std::iter::once("the system folders".to_owned())
        .chain(plan.reads.iter().map(|path| path.display().to_string()))
        .collect();
    let mut text = format!(
        "decision: {} ({})\nchild:    {}\ncwd:      {}\nenv:      {}\nreads:    {}\n",
        plan.decision,
        plan.rule,
        child.join(" "),
        plan.cwd.display(),
        plan.env.join(", "),
        reads.join(", "),
    );
    if let Some(cache) = plan.cache {
        let _ = writeln!(text, "cache:    {}", cache.display());
    }
    if let Some(name) = plan.stdin {
        let _ = writeln!(text, "stdin:    the bound value of {name}, nothing added");
    }
    text.push_str("sandbox:\n");
    for layer in plan.layers {
        let state = match (layer.enforced, layer.needed) {
            (true, _) => "on",
            (false, true) => "MISSING",
            (false, false) => "off",
        };
        let _ = writeln!(text, "  {:<18} {state:<8} {}", layer.layer, layer.detail);
    }
    text
}

/// What a person reads when a command succeeded with an exit code other than 0, one
/// of its `okExitCodes`.
pub(crate) fn exit_note(code: i32) -> String {
    format!("exit {code}, which this command counts as success")
}

/// What `hcpx exec` asks a person to confirm.
pub(crate) struct Question<'a> {
    pub pack: &'a str,
    pub command: &'a str,
    pub effect: Effect,
    pub cwd: &'a Path,
    /// Each parameter's key and value, the values of the pack's bindings hidden.
    pub params: &'a [(&'a str, String)],
}

/// The longest parameter value a confirmation shows whole.
const SHOWN_VALUE: usize = 120;

/// `Run PACK COMMAND (EFFECT) in CWD?`, then each parameter as `key=value` on a
/// line of its own. Long values are shortened with their size; control characters
/// are shown escaped (a value cannot draw lines of its own).
pub(crate) fn exec_question(question: &Question<'_>) -> String {
    let mut text = format!(
        "Run {} {} ({}) in {}?",
        question.pack,
        question.command,
        question.effect.as_str(),
        question.cwd.display()
    );
    for (key, value) in question.params {
        let shown: String = value.chars().take(SHOWN_VALUE).map(printable).collect();
        let shown = if value.chars().count() > SHOWN_VALUE {
            format!("{shown}… ({} bytes)", value.len())
        } else {
            shown
        };
        let _ = write!(text, "\n  {key}={shown}");
    }
    text
}

/// The question a person answers: `what`'s first line with the decision, then
/// what will run, line by line.
pub(crate) fn confirm_prompt(what: &str, decision: Decision) -> String {
    match what.split_once('\n') {
        Some((first, rest)) => format!("{first} ({})\n{rest}", decision.as_str()),
        None => format!("{what} ({})", decision.as_str()),
    }
}
