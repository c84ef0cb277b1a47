//! `hcpx completions SHELL` and `hcpx man [COMMAND...]`: the shell completion script
//! and man pages, generated from the same clap tree that parses, so neither can
//! drift from what hcpx accepts. The bash, zsh and fish scripts also ask
//! `hcpx __complete` (`commands::complete`) for pack ids, command names and keys.

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
    let script = dynamic(shell, String::from_utf8_lossy(&script).into_owned());
    Reply::new(
        &Script {
            shell: shell.name(),
            script: &script,
        },
        script.clone(),
    )
}

/// For bash: the words hcpx alone knows (pack ids, command names, parameter keys,
/// binding names) come from `hcpx __complete`; where it refuses, clap's `_hcpx`.
/// The words are read from the line up to the cursor, since bash splits its own
/// words at `=` and `:`.
const BASH: &str = r#"
# Pack ids, command names, parameter keys and binding names come from hcpx itself
# (`hcpx __complete WORDS...`); everything else from `_hcpx` above.
_hcpx_dynamic() {
    local line="${COMP_LINE:0:COMP_POINT}" found
    local -a words
    read -ra words <<< "$line"
    if [[ -z $line || $line == *[[:space:]] ]]; then
        words+=("")
    fi
    if found=$("${words[0]}" __complete -- "${words[@]:1}" 2>/dev/null); then
        COMPREPLY=()
        if [[ -n $found ]]; then
            mapfile -t COMPREPLY <<< "$found"
        fi
        if [[ ${COMPREPLY[0]} == *= ]]; then
            compopt -o nospace 2>/dev/null
        fi
        return 0
    fi
    _hcpx "$@"
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _hcpx_dynamic -o nosort -o bashdefault -o default hcpx
else
    complete -F _hcpx_dynamic -o bashdefault -o default hcpx
fi
"#;

/// The same for zsh, called and registered instead of clap's `_hcpx` (also when
/// the file is autoloaded as `_hcpx`: the first call registers `_hcpx_dynamic`).
const ZSH: &str = r#"
# Pack ids, command names, parameter keys and binding names come from hcpx itself
# (`hcpx __complete WORDS...`); everything else from `_hcpx` above.
_hcpx_dynamic() {
    local found
    if found=$(${words[1]} __complete -- "${(@)words[2,CURRENT-1]}" "$PREFIX" 2>/dev/null); then
        local -a candidates
        candidates=(${(f)found})
        if [[ ${candidates[1]} == *= ]]; then
            compadd -S '' -a candidates
        else
            compadd -a candidates
        fi
        return 0
    fi
    _hcpx "$@"
}
"#;

/// The same for fish, beside clap's completions.
const FISH: &str = r#"
# Pack ids, command names, parameter keys and binding names come from hcpx itself.
function __fish_hcpx_dynamic
    set -l words (commandline -opc)
    $words[1] __complete -- $words[2..-1] (commandline -ct) 2>/dev/null
end
complete -c hcpx -n '__fish_hcpx_dynamic >/dev/null' -f -a '(__fish_hcpx_dynamic)'
"#;

/// clap's static script with hcpx's dynamic words added (bash, zsh, fish; elvish
/// and PowerShell get the static script alone).
fn dynamic(shell: CompletionShell, script: String) -> String {
    match shell {
        CompletionShell::Bash => {
            // clap's own registration goes: `_hcpx_dynamic` registers instead.
            let cut = script
                .rfind("\nif [[ \"${BASH_VERSINFO[0]}\"")
                .unwrap_or(script.len());
            format!("{}\n{BASH}", &script[..cut])
        }
        CompletionShell::Zsh => {
            let cut = script
                .rfind("\nif [ \"$funcstack[1]\" = \"_hcpx\" ]; then")
                .unwrap_or(script.len());
            format!(
                "{}\n{ZSH}\nif [ \"$funcstack[1]\" = \"_hcpx\" ]; then\n    compdef _hcpx_dynamic hcpx\n    _hcpx_dynamic \"$@\"\nelse\n    compdef _hcpx_dynamic hcpx\nfi\n",
                &script[..cut]
            )
        }
        CompletionShell::Fish => format!("{script}{FISH}"),
        CompletionShell::Elvish | CompletionShell::Powershell => script,
    }
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
