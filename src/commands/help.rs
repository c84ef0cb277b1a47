//! `hcpx help [COMMAND...]`, `--help` and `-h` as data: clap's help text, and the
//! command it is about with its summary, usage, arguments and subcommands (the whole
//! tree below it, each with its summary), so that `hcpx help --json` is the command
//! tree a program can read.

use std::borrow::Cow;

use clap::CommandFactory as _;
use serde::Serialize;

use crate::Reply;
use crate::cli::Cli;

/// One command of the tree.
#[derive(Serialize)]
struct Node {
    /// Its words after `hcpx` (`policy set`); empty for hcpx itself.
    name: String,
    summary: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    commands: Vec<Node>,
}

/// One argument or option of the command asked about.
#[derive(Serialize)]
struct Argument {
    /// `PACK`, `--dry-run`, `--timeout-ms N`.
    name: String,
    help: String,
    required: bool,
}

/// The help's data.
#[derive(Serialize)]
struct Help<'a> {
    /// clap's text, as a person reads it.
    help: &'a str,
    /// The command asked about, as `Node::name`.
    command: String,
    summary: String,
    usage: String,
    arguments: Vec<Argument>,
    /// Its subcommands, each with theirs.
    commands: Vec<Node>,
}

/// `argv` as clap should parse it: `hcpx help` takes no options, so a `--json`
/// given with it is dropped for parsing (the envelope still follows it).
pub(crate) fn parseable(argv: &[String]) -> Cow<'_, [String]> {
    if crate::cli::first_word(argv) == Some("help") {
        Cow::Owned(argv.iter().filter(|word| *word != "--json").cloned().collect())
    } else {
        Cow::Borrowed(argv)
    }
}

fn summary(command: &clap::Command) -> String {
    command.get_about().map(ToString::to_string).unwrap_or_default()
}

/// `command`'s subcommands, shown ones only, each with the tree below it.
fn nodes(command: &clap::Command, path: &str) -> Vec<Node> {
    command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| {
            let name = if path.is_empty() {
                sub.get_name().to_owned()
            } else {
                format!("{path} {}", sub.get_name())
            };
            Node {
                summary: summary(sub),
                commands: nodes(sub, &name),
                name,
            }
        })
        .collect()
}

fn arguments(command: &clap::Command) -> Vec<Argument> {
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version"))
        .map(|arg| {
            let value = arg
                .get_value_names()
                .and_then(|names| names.first())
                .map_or_else(|| arg.get_id().as_str().to_uppercase(), ToString::to_string);
            let name = match arg.get_long() {
                Some(long) if arg.get_action().takes_values() => format!("--{long} {value}"),
                Some(long) => format!("--{long}"),
                None => value,
            };
            Argument {
                name,
                help: arg.get_help().map(ToString::to_string).unwrap_or_default(),
                required: arg.is_required_set(),
            }
        })
        .collect()
}

/// The help `argv` asked for (`help exec`, `exec --help`, `policy` alone), with
/// clap's `text`: the command named by its words, as far as they name one.
pub(crate) fn help(argv: &[String], text: &str) -> Reply {
    let mut command = Cli::command();
    let mut path: Vec<String> = Vec::new();
    let mut words = argv.iter().filter(|word| !word.starts_with('-')).peekable();
    words.next_if(|word| *word == "help");
    for word in words {
        let Some(sub) = command
            .find_subcommand(word)
            .filter(|sub| !sub.is_hide_set())
            .cloned()
        else {
            break;
        };
        path.push(sub.get_name().to_owned());
        command = sub;
    }
    let name = path.join(" ");
    let usage = command
        .clone()
        .bin_name(if name.is_empty() {
            "hcpx".to_owned()
        } else {
            format!("hcpx {name}")
        })
        .render_usage()
        .to_string()
        .trim_start_matches("Usage: ")
        .to_owned();
    let data = Help {
        help: text,
        summary: summary(&command),
        usage,
        arguments: arguments(&command),
        commands: nodes(&command, &name),
        command: name,
    };
    Reply::new(&data, text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn json_is_dropped_only_for_help_itself() {
        assert_eq!(parseable(&words("help --json")).as_ref(), words("help"));
        assert_eq!(
            parseable(&words("--json help exec --json")).as_ref(),
            words("help exec")
        );
        assert_eq!(
            parseable(&words("exec --json help")).as_ref(),
            words("exec --json help")
        );
        assert_eq!(parseable(&words("--json")).as_ref(), words("--json"));
    }

    #[test]
    fn the_help_names_the_command_its_words_name() {
        let data = |line: &str| help(&words(line), "text").data.unwrap();
        assert_eq!(data("help policy set --json")["command"], "policy set");
        assert_eq!(data("policy check --help")["command"], "policy check");
        assert_eq!(data("exec transit --help")["command"], "exec");
        assert_eq!(data("--help")["command"], "");
        assert_eq!(data("help")["commands"][0]["name"], "search");
        assert_eq!(data("help pack")["commands"][1]["name"], "pack new");
    }
}
