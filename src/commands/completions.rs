//! `hcpx completions SHELL` and `hcpx man [COMMAND...]`: the shell completion script
//! and man pages, generated from the same clap tree that parses, so neither can
//! drift from what hcpx accepts.

use clap::CommandFactory as _;
use serde::Serialize;

use crate::Reply;
use crate::cli::{Cli, CompletionShell};
use crate::error::{Failure, Reason};
use crate::next::Next;

/// `completions`' data.
#[derive(Serialize)]
struct Script<'a> {
    shell: &'a str,
    script: &'a str,
}

/// `man`'s data.
#[derive(Serialize)]
struct Page<'a> {
    name: &'a str,
    man: &'a str,
}

/// The completion script for `shell`, on stdout for a person to save or `source`.
pub(crate) fn completions(shell: CompletionShell) -> Reply {
    let mut command = Cli::command();
    let mut script = Vec::new();
    let generator = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
        CompletionShell::Elvish => clap_complete::Shell::Elvish,
        CompletionShell::Powershell => clap_complete::Shell::PowerShell,
    };
    clap_complete::generate(generator, &mut command, "hcpx", &mut script);
    let script = String::from_utf8_lossy(&script).into_owned();
    Reply::new(
        &Script {
            shell: shell.name(),
            script: &script,
        },
        script.clone(),
    )
}

/// The man page (roff) of hcpx, or of one of its commands (`hcpx man policy set`
/// is the page `hcpx-policy-set`).
pub(crate) fn man(path: &[String]) -> Result<Reply, Failure> {
    let mut command = Cli::command();
    command.build();
    let mut name = "hcpx".to_owned();
    for word in path {
        let names: Vec<&str> = command.get_subcommands().map(clap::Command::get_name).collect();
        let Some(sub) = command.find_subcommand(word).cloned() else {
            let closest = crate::suggest::closest(word, names.iter().copied());
            let message = match closest.first() {
                Some(best) => format!("no such command; closest: {best}"),
                None => format!("no such command; there are: {}", names.join(", ")),
            };
            let next = match closest.first() {
                Some(best) => {
                    let mut fixed: Vec<&str> = vec!["man"];
                    fixed.extend(path.iter().map(String::as_str).take_while(|w| w != word));
                    fixed.push(best);
                    Next::hcpx(fixed)
                }
                None => Next::hcpx(["man"]),
            };
            return Err(Failure::new(Reason::UnknownCommand, message).next(next));
        };
        name = format!("{name}-{}", sub.get_name());
        command = sub;
    }
    let mut page = Vec::new();
    // Rendering into memory cannot fail.
    let _ = clap_mangen::Man::new(command)
        .title(name.clone())
        .render(&mut page);
    let page = String::from_utf8_lossy(&page).into_owned();
    Ok(Reply::new(
        &Page {
            name: &name,
            man: &page,
        },
        page.clone(),
    ))
}
