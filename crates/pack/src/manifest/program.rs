//! `program`: for a pack that wraps a program of the machine, the other names it
//! goes by, the variant the pack supports and how to tell it, and how to install it.

use serde_json::Value;

use super::model::{INSTALLERS, ProgramSpec};
use super::walk::{Walk, join};

const FIELDS: [&str; 6] = [
    "aliases",
    "variant",
    "versionArgs",
    "versionPattern",
    "install",
    "homepage",
];

pub(super) fn program(walk: &mut Walk, value: Option<&Value>, bin: &[String]) -> Option<ProgramSpec> {
    let value = value?;
    let object = walk.object("program", value)?;
    walk.unknown_fields("program", object, &FIELDS);
    if bin.first().is_some_and(|first| first.starts_with("./")) {
        walk.problem(
            "program",
            "is for a pack whose bin is a program of the machine; this pack carries its own CLI file",
        );
    }
    let aliases = walk.strings("program.aliases", object.get("aliases"));
    for (index, alias) in aliases.iter().enumerate() {
        if alias.is_empty() || alias.contains('/') || alias.starts_with('.') || alias.len() > 64 {
            walk.problem(
                &format!("program.aliases[{index}]"),
                "must be a program name found on PATH (no `/`, 1 to 64 bytes)",
            );
        }
    }
    let variant = walk.string("program.variant", object.get("variant"), false);
    let version_args = walk.strings("program.versionArgs", object.get("versionArgs"));
    let version_pattern = walk.string("program.versionPattern", object.get("versionPattern"), false);
    if let Some(pattern) = &version_pattern {
        // Its syntax only, as for parameter patterns: compiling it took about 25 µs of
        // every load of the pack (every CLI call of a catalog pack), and it is
        // compiled where it is used, by `availability` (a pattern too large to compile
        // then matches nothing, and says so).
        if regex_syntax::Parser::new().parse(pattern).is_err() {
            walk.problem("program.versionPattern", "is not a valid regular expression");
        }
        if version_args.is_empty() {
            walk.problem(
                "program.versionPattern",
                "needs versionArgs, the arguments that make the program print its version",
            );
        }
    }
    let mut install = Vec::new();
    if let Some(value) = object.get("install")
        && let Some(map) = walk.object("program.install", value)
    {
        let known: Vec<&str> = INSTALLERS.iter().map(|(name, _)| *name).collect();
        walk.unknown_fields("program.install", map, &known);
        for (manager, words) in map {
            let path = join("program.install", manager);
            if let Some(words) = walk.string(&path, Some(words), true) {
                if words.chars().any(char::is_control) || words.len() > 200 {
                    walk.problem(&path, "must be package names on one line (at most 200 bytes)");
                }
                install.push((manager.clone(), words));
            }
        }
    }
    let homepage = walk.string("program.homepage", object.get("homepage"), false);
    if let Some(url) = &homepage
        && !url.starts_with("https://")
    {
        walk.problem("program.homepage", "must be an https:// address");
    }
    Some(ProgramSpec {
        aliases,
        variant,
        version_args,
        version_pattern,
        install,
        homepage,
    })
}
