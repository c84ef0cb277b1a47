//! `hcpx adopt`'s text: the plan with its diffs, the question, what was written.
//! Part of [`crate::render`], which re-exports it.

use std::fmt::Write as _;
use std::path::Path;

use crate::next::Next;

/// `hcpx adopt HOST` without `--write`: the diff of every file that would change
/// (`diffs`, none when nothing would) and the command that writes them.
pub(crate) fn adopt_plan_text(host: &str, diffs: &[String], next: &Next) -> String {
    if diffs.is_empty() {
        format!("{host}: nothing to change\n")
    } else {
        format!("{host}:\n{}next: {next}\n", diffs.concat())
    }
}

/// What `hcpx adopt HOST --write` asks a person to confirm.
pub(crate) fn adopt_question(host: &str, files: usize) -> String {
    format!("Change {files} file(s) for {host}?")
}

/// `hcpx adopt HOST --write` when every file already is as it would write it, and
/// what the host still needs from the person (`then`).
pub(crate) fn adopt_unchanged_text(host: &str, then: Option<&str>) -> String {
    let mut text = format!("{host}: already up to date; nothing written\n");
    still(&mut text, host, then);
    text
}

/// `hcpx adopt HOST --write`: the files written, or changed back with `--remove`,
/// then what the host still needs from the person (`then`).
pub(crate) fn adopt_written_text(host: &str, remove: bool, written: &[&Path], then: Option<&str>) -> String {
    let what = if remove { "removed hcpx from" } else { "wrote" };
    let mut text = format!("{host}: {what}:\n");
    for path in written {
        let _ = writeln!(text, "  {}", path.display());
    }
    still(&mut text, host, then);
    text
}

/// The line saying what the host still needs from the person, when it needs something.
fn still(text: &mut String, host: &str, then: Option<&str>) {
    if let Some(then) = then {
        let _ = writeln!(text, "{host} still needs you to: {then}");
    }
}
