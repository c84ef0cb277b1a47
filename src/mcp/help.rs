//! `hcp://help`: how to call the `hcp` tool, and every command of the tree, generated
//! from the clap definitions so it can never drift from what the server accepts.

use std::fmt::Write as _;

use clap::CommandFactory as _;

use crate::cli::Cli;

/// Whether an MCP caller, always an agent, is refused this command: the server
/// itself (`mcp`), and what the dispatcher keeps for people.
fn refused(path: &str) -> bool {
    path == "mcp" || crate::dispatch::FOR_PEOPLE_ONLY.contains(&path)
}

fn usage(command: &clap::Command, path: &str) -> String {
    let mut words = vec![path.to_owned()];
    for arg in command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && arg.get_id() != "help")
    {
        let name = arg.get_value_names().and_then(|names| names.first()).map_or_else(
            || arg.get_id().as_str().to_uppercase().replace('_', "-"),
            ToString::to_string,
        );
        let word = match (arg.get_long(), arg.is_positional()) {
            (_, true) if name == "KEY=VALUE" => "[--] KEY=VALUE...".to_owned(),
            (_, true) if arg.is_required_set() => name,
            (_, true) => format!("[{name}...]"),
            (Some(long), false) if arg.get_action().takes_values() => format!("[--{long} {name}]"),
            (Some(long), false) => format!("[--{long}]"),
            (None, false) => continue,
        };
        words.push(word);
    }
    words.join(" ")
}

fn walk(command: &clap::Command, path: &str, out: &mut String) {
    for sub in command.get_subcommands() {
        let here = if path.is_empty() {
            sub.get_name().to_owned()
        } else {
            format!("{path} {}", sub.get_name())
        };
        if sub.has_subcommands() {
            walk(sub, &here, out);
            continue;
        }
        let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
        let refused = if refused(&here) {
            " **Refused over MCP.**"
        } else {
            ""
        };
        let _ = writeln!(out, "- `{}`: {about}{refused}", usage(sub, &here));
    }
}

/// The help page.
pub(super) fn markdown(read_only: bool) -> String {
    let mut out = String::from(
        "# hcp: how to call it\n\n\
         One tool, `hcp`. Its input is `{\"argv\": [...]}`, the words of an hcpx command line, one per item \
         (a value with spaces stays one item), or `{\"args\": \"...\"}`, one string split like a POSIX shell \
         would, with every shell metacharacter refused. Add `\"confirm\": true` only when the user agreed to a \
         command that answered `needs_confirmation`. `--json` is implied: the result's `structuredContent` is \
         the envelope (`ok`, `argv`, `child`, `spawned`, `exitCode`, `stdout`, `stderr`, `data`, \
         `outputTruncated`, `truncation`, `outputId`, `durationMs`, `error {code, reason, message}`, `next`, and `warnings` when something went wrong without failing the call, such as output that is not JSON).\n\n\
         ## A first session\n\n\
         1. `{\"argv\": [\"search\", \"plan a journey\"]}`: packs that fit, with whether each is ready.\n\
         2. `{\"argv\": [\"skill\", \"transit\"]}`: the pack's guide and every command's parameters.\n\
         3. `{\"argv\": [\"exec\", \"transit\", \"plan\", \"--\", \"from=Westgate\", \"to=North Park\", \"at=08:00\"]}`: run it (`at` makes the answer the same at any hour).\n\n\
         ## Rules\n\n\
         - Parameters are `KEY=VALUE` words after the command, one per word; repeat a key for a list. A `--` \
         before them is optional, and needed when a word starts with `-`.\n\
         - The policy decides: `allow` runs; `confirm` needs `confirm: true` (or the host asks the user); \
         `confirm-human` only the user can give, through the host; `deny` never runs.\n\
         - Credentials are bound by the user with `hcpx bind` at a terminal; you never see them. An `unbound` \
         refusal means asking the user to bind. A credential is tied to the pack it was bound for: installing \
         another pack under that id (or an update you install) holds it back until the user runs \
         `hcpx bind PACK KEY --keep`.\n\
         - Long output shows its head and tail; page the rest with `[\"output\", ID, \"--offset\", \"N\"]` \
         or read `hcp://output/ID`.\n\n\
         ## Commands\n\n",
    );
    if read_only {
        out.insert_str(
            0,
            "> This server is read-only: every command that is not a read is denied.\n\n",
        );
    }
    walk(&Cli::command(), "", &mut out);
    out.push_str(
        "\n## Resources\n\n- `hcp://catalog`: every pack with its availability flags, catalog packs not installed yet included (`\"installed\": false`; `install ID` turns one on) (JSON).\n\
         - `hcp://skill/{pack_id}`: a pack's SKILL.md and command reference.\n\
         - `hcp://output/{id}`: the full output of a truncated result.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_every_command_and_marks_the_refused_ones() {
        let help = super::markdown(false);
        for command in [
            "`search [QUERY...]",
            "`skill PACK`",
            "`exec PACK COMMAND",
            "`output ID",
            "`policy check PACK COMMAND`",
        ] {
            assert!(help.contains(command), "{command} missing:\n{help}");
        }
        assert!(help.contains("[--timeout-ms N] [--] KEY=VALUE..."), "{help}");
        assert!(
            help.contains("`bind PACK KEY [--from-env VAR] [--keep]`: Store a credential"),
            "{help}"
        );
        assert!(
            help.contains("`search [QUERY...] [--limit LIMIT] [--all] [--registry]`"),
            "{help}"
        );
        assert!(help.contains("`policy set MATCH DECISION [--force]`"), "{help}");
        assert!(help.contains("`policy unset MATCH`"), "{help}");
        assert!(
            help.lines()
                .filter(|line| line.contains("**Refused over MCP.**"))
                .count()
                == 5,
            "{help}"
        );
    }
}
