//! The text of `hcpx pack check` and `pack new`. Part of [`crate::render`], which
//! re-exports it.

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
