//! The text of `hcpx pack check` and `pack new`. Part of [`crate::render`], which
//! re-exports it.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::program::probe::Probed;

/// What `pack new --bin` took from the program.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Drafted {
    /// The pack's one command: `help` or `version`.
    pub command: &'static str,
    /// The description came from the program's `--help` (else a placeholder).
    pub description_from_help: bool,
    /// `--version` answered, so the manifest has `program.versionArgs`.
    pub version_args: bool,
    /// What `--version` first printed.
    pub version: Option<String>,
}

/// `hcpx pack check DIR` of a valid pack, and its notes.
pub(crate) fn pack_check_text(id: &str, version: &str, commands: &[&str], notes: &[String]) -> String {
    let mut text = format!(
        "ok: {id} {version} is a valid pack ({}: {})\n",
        super::count(commands.len(), "command"),
        commands.join(", ")
    );
    for note in notes {
        text.push_str(&format!("note: {}\n", super::inert_line(note)));
    }
    text
}

/// `hcpx pack new ID`: the files written and the next step.
pub(crate) fn pack_new_text(id: &str, files: &[&str]) -> String {
    format!(
        "created {id}/ with {}\nnext: edit them, then run hcpx pack check {id}\n",
        files.join(", ")
    )
}

/// `hcpx pack new ID --bin PROGRAM`: what was drafted from the program, what it did
/// not say, and the next step.
pub(crate) fn pack_new_bin_text(id: &str, program: &Path, drafted: &Drafted, help: &Probed) -> String {
    let mut text = format!(
        "created {id}/ with hcp.json, SKILL.md, around {}\n",
        program.display()
    );
    match &drafted.version {
        Some(version) => {
            let _ = writeln!(
                text,
                "  version:     {} (program.versionArgs: --version)",
                super::inert_line(version)
            );
        }
        None => text.push_str("  version:     --version did not answer; no program.versionArgs\n"),
    }
    let said = if drafted.description_from_help {
        "from --help"
    } else {
        "a placeholder: --help said nothing usable"
    };
    let _ = writeln!(text, "  description: {said}");
    let _ = writeln!(text, "  command:     {} (read)", drafted.command);
    if let Probed::NotRun(why) = help {
        let _ = writeln!(
            text,
            "  note: the program was not asked: {}",
            super::inert_line(why)
        );
    }
    let _ = writeln!(
        text,
        "next: edit them (SKILL.md says what), then run hcpx pack check {id}"
    );
    text
}
