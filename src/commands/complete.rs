//! `hcpx __complete WORD...`: what the shell completion scripts ask for the words
//! only hcpx knows (pack ids, a pack's command names, a command's parameter keys,
//! a pack's binding names), given the words of the command line after `hcpx` up to
//! the cursor, the last being the word being completed. Everything else (command
//! names, flags, files) is clap's static completion, which the scripts fall back on
//! when this refuses.

use serde::Serialize;

use crate::Reply;
use crate::catalog::{Catalog, Origin};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::manifest::Manifest;

/// `__complete`'s data: the candidates, each a whole word (`rev=` for a key).
#[derive(Serialize)]
struct Candidates<'a> {
    candidates: &'a [String],
}

/// Which pack ids a slot takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Packs {
    /// The packs that run: built in or installed (`exec`, `skill`, `bind`).
    Running,
    /// Only the installed ones (`uninstall`).
    Installed,
    /// Those that run and the catalog's that are not installed yet, which
    /// `availability` and `policy check` take too.
    Known,
    /// The catalog's, installed or not (`install`, which turns one on or updates it).
    Catalog,
}

/// What the word being completed is, where hcpx knows the answer.
#[derive(Debug, PartialEq, Eq)]
enum Slot<'a> {
    /// A pack id, of these packs (and `hcp`, the pseudo-pack, for `policy check`).
    Pack { packs: Packs, with_hcp: bool },
    /// A command of this pack (`hcp` is the pseudo-pack of `policy check`).
    Command(&'a str),
    /// A `KEY=` of this pack's command, minus the keys already given once.
    Param {
        pack: &'a str,
        command: &'a str,
        given: Vec<&'a str>,
    },
    /// A binding name of this pack.
    Binding(&'a str),
}

/// `exec`'s flags that take a value in the next word.
const EXEC_VALUE_FLAGS: [&str; 1] = ["--timeout-ms"];

/// Which slot the last word of `words` fills, or `None` where the static completion
/// applies (a subcommand, a flag, a value after `=`, a word hcpx does not complete).
fn slot(words: &[String]) -> Option<Slot<'_>> {
    let (current, before) = words.split_last()?;
    if current.starts_with('-') || current.contains('=') || current.contains(':') {
        return None;
    }
    let mut positional: Vec<&str> = Vec::new();
    let mut after_dashes = false;
    let mut takes_value = false;
    for word in before {
        if takes_value {
            takes_value = false;
        } else if after_dashes {
            positional.push(word);
        } else if word == "--" {
            after_dashes = true;
        } else if word.starts_with('-') {
            takes_value = EXEC_VALUE_FLAGS.contains(&word.as_str());
        } else {
            positional.push(word);
        }
    }
    if takes_value {
        return None;
    }
    let (subcommand, rest) = positional.split_first()?;
    let pack = |packs| Slot::Pack {
        packs,
        with_hcp: false,
    };
    match (*subcommand, rest) {
        ("skill" | "exec" | "bind" | "unbind", []) => Some(pack(Packs::Running)),
        ("availability", []) => Some(pack(Packs::Known)),
        ("uninstall", []) => Some(pack(Packs::Installed)),
        // A source may also be a folder or `npm:NAME`: a word that reads as a path is
        // left to the shell's file completion.
        ("install", []) if !current.is_empty() && !current.contains('/') && !current.starts_with('.') => {
            Some(pack(Packs::Catalog))
        }
        ("exec", [pack]) => Some(Slot::Command(pack)),
        ("exec", [pack, command, params @ ..]) => Some(Slot::Param {
            pack,
            command,
            given: params
                .iter()
                .filter_map(|word| word.split_once('='))
                .map(|(key, _)| key)
                .collect(),
        }),
        ("bind" | "unbind", [pack]) => Some(Slot::Binding(pack)),
        ("policy", ["check"]) => Some(Slot::Pack {
            packs: Packs::Known,
            with_hcp: true,
        }),
        ("policy", ["check", pack]) => Some(Slot::Command(pack)),
        _ => None,
    }
}

/// The candidates for `words` that start with the word being completed, or `None`
/// where hcpx completes nothing. `ids` lists the ids of those packs; `manifest`
/// reads one pack.
fn candidates(
    words: &[String],
    ids: impl FnOnce(Packs) -> Vec<String>,
    manifest: impl FnOnce(&str) -> Option<Manifest>,
) -> Option<Vec<String>> {
    let current = words.last()?.as_str();
    let slot = slot(words)?;
    let catalog_only = matches!(
        slot,
        Slot::Pack {
            packs: Packs::Catalog,
            ..
        }
    );
    let names: Vec<String> = match slot {
        Slot::Pack { packs, with_hcp } => {
            let mut ids = ids(packs);
            if with_hcp {
                ids.push(super::policy::PSEUDO_PACK.to_owned());
            }
            ids.sort();
            ids.dedup();
            ids
        }
        Slot::Command(super::policy::PSEUDO_PACK) => super::policy::PSEUDO_COMMANDS
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect(),
        Slot::Command(pack) => manifest(pack)?
            .commands
            .into_iter()
            .map(|command| command.name)
            .collect(),
        Slot::Param { pack, command, given } => manifest(pack)?
            .command(command)?
            .params
            .iter()
            .filter(|param| param.array || !given.contains(&param.name.as_str()))
            .map(|param| format!("{}=", param.name))
            .collect(),
        Slot::Binding(pack) => manifest(pack)?
            .bindings
            .into_iter()
            .map(|(name, _)| name)
            .collect(),
    };
    let found: Vec<String> = names
        .into_iter()
        .filter(|name| name.starts_with(current))
        .collect();
    // `install`'s word may still be a folder's name: the shell's own completion
    // takes over when no catalog id starts with it.
    if catalog_only && found.is_empty() {
        return None;
    }
    Some(found)
}

/// The ids of `packs`, from `catalog` (the packs there are) and the catalog this
/// binary ships.
fn ids_of(catalog: &Catalog, packs: Packs) -> Vec<String> {
    let running = catalog.packs.iter();
    match packs {
        Packs::Running => running.map(|pack| pack.id().to_owned()).collect(),
        Packs::Installed => running
            .filter(|pack| matches!(pack.origin, Origin::Installed { .. }))
            .map(|pack| pack.id().to_owned())
            .collect(),
        Packs::Known => running
            .chain(&catalog.available)
            .map(|pack| pack.id().to_owned())
            .collect(),
        Packs::Catalog => crate::catalog::catalog_packs()
            .0
            .iter()
            .map(|pack| pack.id().to_owned())
            .collect(),
    }
}

/// The name the scripts call it by. It is no subcommand of the clap tree, so that no
/// help, man page or static completion lists it.
const NAME: &str = "__complete";

/// The words to complete when `argv` is a `__complete` call (`hcpx [--json]
/// __complete [--] WORD...`), else `None`.
pub(crate) fn request(argv: &[String]) -> Option<&[String]> {
    let start = argv.iter().position(|word| word != "--json")?;
    let (name, words) = argv[start..].split_first()?;
    if name != NAME {
        return None;
    }
    Some(match words.split_first() {
        Some((dashes, rest)) if dashes == "--" => rest,
        _ => words,
    })
}

/// `hcpx __complete WORD...`: one candidate a line; refused (exit 2, nothing on
/// stdout) where the shell's static completion applies instead. A pack's commands
/// and keys read only that pack's files.
pub(crate) fn complete(ctx: &Context, words: &[String]) -> Result<Reply, Failure> {
    let found = candidates(
        words,
        |packs| ids_of(&super::load_catalog(ctx), packs),
        |id| {
            super::load_one(ctx, id)
                .get(id)
                .ok()
                .map(|pack| Manifest::clone(&pack.manifest))
        },
    );
    let Some(found) = found else {
        return Err(Failure::new(
            Reason::InvalidArguments,
            "hcpx completes nothing here; the completion script's static words apply",
        ));
    };
    let text: String = found.iter().map(|name| format!("{name}\n")).collect();
    Ok(Reply::new(&Candidates { candidates: &found }, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        let mut words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if line.ends_with(' ') || line.is_empty() {
            words.push(String::new());
        }
        words
    }

    fn complete(line: &str) -> Option<Vec<String>> {
        let catalog = Catalog::load(std::path::Path::new("/nonexistent/hcpx-packs"));
        candidates(
            &words(line),
            |packs| ids_of(&catalog, packs),
            |id| catalog.get(id).ok().map(|pack| Manifest::clone(&pack.manifest)),
        )
    }

    fn all(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|name| (*name).to_owned()).collect())
    }

    #[test]
    fn completes_packs_commands_and_keys() {
        let packs = ["git", "jq", "sqlite", "transit"];
        assert_eq!(complete("exec "), all(&packs));
        assert_eq!(complete("--json exec --dry-run "), all(&packs));
        assert_eq!(complete("exec tr"), all(&["transit"]));
        assert_eq!(complete("skill "), all(&packs));
        // availability also takes the catalog's packs that are not installed.
        assert_eq!(complete("availability s"), all(&["shellcheck", "sqlite"]));
        assert_eq!(
            complete("exec git "),
            all(&[
                "status",
                "log",
                "diff",
                "show",
                "branches",
                "add",
                "commit",
                "reset-hard"
            ])
        );
        assert_eq!(complete("exec git --yes --timeout-ms 5 l"), all(&["log"]));
        assert_eq!(complete("exec git log -- "), all(&["n=", "rev=", "path="]));
        assert_eq!(complete("exec git log "), all(&["n=", "rev=", "path="]));
        assert_eq!(complete("exec git log -- n=3 "), all(&["rev=", "path="]));
        assert_eq!(complete("exec git log -- n=3 r"), all(&["rev="]));
        let checked = complete("policy check ").unwrap();
        for id in ["git", "hcp", "jq", "sqlite", "transit", "rg", "kubectl"] {
            assert!(checked.contains(&id.to_owned()), "{id}: {checked:?}");
        }
        assert_eq!(complete("policy check tr"), all(&["transit"]));
        assert_eq!(
            complete("policy check hcp "),
            all(&["install", "uninstall", "adopt"])
        );
        assert_eq!(complete("policy check transit p"), all(&["plan"]));
        // No built-in pack is installed, so none can be uninstalled.
        assert_eq!(complete("uninstall "), all(&[]));
    }

    /// `install` offers the catalog's ids once a word is typed; a word that no
    /// catalog id starts with, or that reads as a path, is the shell's to complete
    /// (a folder), as is the empty word.
    #[test]
    fn install_completes_catalog_ids_and_leaves_folders_to_the_shell() {
        assert_eq!(complete("install r"), all(&["redis-cli", "rg", "ruff"]));
        assert_eq!(complete("install --yes kub"), all(&["kubectl"]));
        for line in [
            "install ",
            "install weath",
            "install ./r",
            "install packs/r",
            "install npm:r",
        ] {
            assert_eq!(complete(line), None, "{line:?}");
        }
        // Not a second source: one word only.
        assert_eq!(complete("install rg r"), None);
    }

    #[test]
    fn leaves_the_rest_to_the_static_completion() {
        for line in [
            "",
            "ex",
            "exec --",
            "exec git log --dry",
            "exec git log n=",
            "exec git --timeout-ms ",
            "search ",
            "install ",
            "pack check ",
            "skill transit ",
        ] {
            assert_eq!(complete(line), None, "{line:?}");
        }
        // An unknown pack or command has nothing to offer.
        assert_eq!(complete("exec nope "), None);
        assert_eq!(complete("exec git nope "), None);
    }
}
