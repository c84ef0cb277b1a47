//! `hcpx adopt plugin`: hcpx as an Agent Plugins 1.0.0 folder (`hcpx-plugin/` under
//! the working directory, or `--dir DIR`), for hosts that load plugins: `plugin.json`,
//! `mcp.json` starting `hcpx mcp`, and `skills/` with the hcpx skill (and, with
//! `--pack-skills`, each installed pack's). Each file is adopt's like any other: made
//! through the record, never over a file hcpx did not write without `--force`, and
//! taken out again by `--remove`. Part of [`super`].
//!
//! The format's `command` is one token, a bare name or a path inside the plugin
//! (`./…`), never an absolute path; and a host that loads plugins may be a desktop
//! app, without the shell's PATH. So the plugin carries `bin/hcpx`, a short script
//! that starts this very binary by its path (the bare `hcpx` only when that path
//! cannot be told).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Change, Request, Site, launch, native, planned_change};
use crate::adopt::record::Record;
use crate::adopt::{self, Host};
use crate::catalog::Catalog;
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::reply::Warning;

/// The host id that asks for a plugin folder.
pub(super) const PLUGIN: &str = "plugin";

/// The folder written when `--dir` is not given, under the working directory.
const DEFAULT_DIR: &str = "hcpx-plugin";

/// The identifiers of the Agent Plugins 1.0.0 schemas, which every file names.
pub(crate) const PLUGIN_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
pub(crate) const MCP_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// The plugin folder as a host of adopt's: named, with no configuration file of
/// its own (its files are planned by [`changes`]).
pub(super) fn host() -> Host {
    Host {
        host: PLUGIN.to_owned(),
        name: "Agent Plugins folder".to_owned(),
        format: adopt::Format::Json,
        servers_path: Vec::new(),
        key: String::new(),
        entry: serde_json::Value::Null,
        url_entry: None,
        default_scope: "project".to_owned(),
        scopes: BTreeMap::new(),
        gui: false,
        then: BTreeMap::new(),
        native: None,
    }
}

/// The flags that mean nothing for a plugin folder, or only for one: a refusal
/// naming the first given.
pub(super) fn check_flags(request: &Request<'_>) -> Result<(), Failure> {
    let plugin = request.host == PLUGIN;
    let misplaced = if plugin {
        [
            (request.scope.is_some(), "--scope"),
            (request.native, "--native"),
            (request.url.is_some(), "--url"),
        ]
        .into_iter()
        .find(|(given, _)| *given)
        .map(|(_, flag)| format!("{flag} is for a host's configuration, not for `adopt plugin`"))
    } else {
        [
            (request.dir.is_some(), "--dir"),
            (request.pack_skills, "--pack-skills"),
        ]
        .into_iter()
        .find(|(given, _)| *given)
        .map(|(_, flag)| format!("{flag} is for `adopt plugin` only"))
    };
    match misplaced {
        Some(message) => Err(Failure::new(Reason::InvalidArguments, message)),
        None => Ok(()),
    }
}

/// `plugin.json`: what the plugin is.
#[derive(Serialize)]
struct Manifest<'a> {
    #[serde(rename = "$schema")]
    schema: &'a str,
    name: &'a str,
    version: &'a str,
    description: &'a str,
    license: &'a str,
    keywords: &'a [&'a str],
}

/// `mcp.json`: the one server, `hcp`.
#[derive(Serialize)]
struct McpFile<'a> {
    #[serde(rename = "$schema")]
    schema: &'a str,
    #[serde(rename = "mcpServers")]
    servers: BTreeMap<&'a str, Stdio<'a>>,
}

#[derive(Serialize)]
struct Stdio<'a> {
    r#type: &'a str,
    command: &'a str,
    args: [&'a str; 1],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<&'a str, String>,
}

/// A file of the plugin: where under its root, its text, and its mode.
struct PluginFile {
    relative: PathBuf,
    text: String,
    mode: Option<u32>,
}

/// The script that starts this binary from inside the plugin.
fn wrapper(command: &str) -> String {
    format!(
        "#!/bin/sh\n# Written by `hcpx adopt plugin`: starts this hcpx from the plugin.\nexec {} \"$@\"\n",
        shell_words::quote(command)
    )
}

/// Pretty JSON and a final newline.
fn json_text(value: &impl Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Whether `name` is a valid Agent Skills name: 1 to 64 lowercase letters, digits
/// and hyphens, no hyphen first, last or twice in a row.
fn skill_name_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The skills of the installed packs, as Agent Skills files (each name its pack's
/// id); a pack whose id or description the format cannot hold is left out with a
/// warning.
fn pack_skills(ctx: &Context, warnings: &mut Vec<Warning>) -> Vec<PluginFile> {
    let catalog = Catalog::load(&ctx.packs_dir());
    let mut files = Vec::new();
    for pack in catalog.packs.iter().filter(|pack| pack.is_installed()) {
        let id = pack.manifest.id.as_str();
        if id == "hcpx" || !skill_name_ok(id) || pack.skill.description.chars().count() > 1024 {
            warnings.push(Warning::SkillLeftOut { pack: id.to_owned() });
            continue;
        }
        // The description as a JSON string is a valid YAML scalar, whatever it holds.
        let description = serde_json::to_string(&pack.skill.description).unwrap_or_default();
        files.push(PluginFile {
            relative: Path::new("skills").join(id).join("SKILL.md"),
            text: format!(
                "---\nname: {id}\ndescription: {description}\n---\n\n{}",
                pack.skill.body
            ),
            mode: None,
        });
    }
    files
}

/// The plugin's files for this binary and home.
fn files(ctx: &Context, request: &Request<'_>, warnings: &mut Vec<Warning>) -> Vec<PluginFile> {
    // A host that loads plugins may be a desktop app, without the shell's PATH.
    let server = launch(ctx, true);
    let shell = launch(ctx, false);
    let mut files = Vec::new();
    let command = if server.command == "hcpx" {
        "hcpx"
    } else {
        files.push(PluginFile {
            relative: Path::new("bin").join("hcpx"),
            text: wrapper(&server.command),
            mode: Some(0o755),
        });
        "./bin/hcpx"
    };
    let env: BTreeMap<&str, String> = server
        .home
        .as_ref()
        .map(|home| ("HCP_HOME", home.display().to_string()))
        .into_iter()
        .collect();
    files.push(PluginFile {
        relative: PathBuf::from("plugin.json"),
        text: json_text(&Manifest {
            schema: PLUGIN_SCHEMA,
            name: "hcpx",
            version: env!("CARGO_PKG_VERSION"),
            description: env!("CARGO_PKG_DESCRIPTION"),
            license: env!("CARGO_PKG_LICENSE"),
            keywords: &["mcp", "cli", "sandbox", "policy", "skills"],
        }),
        mode: None,
    });
    files.push(PluginFile {
        relative: PathBuf::from("mcp.json"),
        text: json_text(&McpFile {
            schema: MCP_SCHEMA,
            servers: [(
                "hcp",
                Stdio {
                    r#type: "stdio",
                    command,
                    args: ["mcp"],
                    env,
                },
            )]
            .into(),
        }),
        mode: None,
    });
    files.push(PluginFile {
        relative: Path::new("skills").join("hcpx").join("SKILL.md"),
        text: native::skill(&shell),
        mode: None,
    });
    if request.pack_skills {
        files.extend(pack_skills(ctx, warnings));
    }
    files
}

/// The plugin folder: `--dir` (under the working directory when relative), else
/// `hcpx-plugin/` there.
pub(super) fn root(ctx: &Context, request: &Request<'_>) -> PathBuf {
    ctx.cwd.join(request.dir.unwrap_or(Path::new(DEFAULT_DIR)))
}

/// What `adopt plugin` changes, and the folders a `--remove` leaves empty (innermost
/// first), to be taken away when they are.
pub(super) fn changes(
    site: Site<'_>,
    record: &mut Record,
    warnings: &mut Vec<Warning>,
) -> Result<(Vec<Change>, Vec<PathBuf>), Failure> {
    let (ctx, request) = (site.ctx, site.request);
    let root = root(ctx, request);
    let mut changes = Vec::new();
    let mut dirs = Vec::new();
    let mut files = files(ctx, request, warnings);
    if request.remove {
        // Every file adopt wrote there goes, the packs' skills too without the flag.
        for name in record.files.keys() {
            let path = Path::new(name);
            if let Ok(relative) = path.strip_prefix(&root)
                && !files.iter().any(|file| file.relative == relative)
            {
                files.push(PluginFile {
                    relative: relative.to_path_buf(),
                    text: String::new(),
                    mode: None,
                });
            }
        }
    }
    for file in files {
        let path = root.join(&file.relative);
        if let Some(parent) = path.parent()
            && parent != root
            && !dirs.contains(&parent.to_path_buf())
        {
            dirs.push(parent.to_path_buf());
        }
        let mut change = planned_change(
            path,
            request,
            record,
            warnings,
            None,
            |record, name, old, backup| {
                adopt::plan_file(
                    record,
                    name,
                    old,
                    backup,
                    &file.text,
                    request.remove,
                    request.force,
                )
            },
        )?;
        change.mode = file.mode;
        changes.push(change);
    }
    // Innermost first: skills/hcpx before skills, then the plugin's own folder.
    dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    for dir in [root.join("skills"), root] {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    Ok((changes, dirs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_names_follow_the_agent_skills_rules() {
        for good in ["a", "jq", "git-log", "x1"] {
            assert!(skill_name_ok(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a.b", "a_b", &"a".repeat(65)] {
            assert!(!skill_name_ok(bad), "{bad}");
        }
    }

    #[test]
    fn the_wrapper_starts_this_binary_with_every_argument() {
        assert_eq!(
            wrapper("/opt/my tools/hcpx"),
            "#!/bin/sh\n# Written by `hcpx adopt plugin`: starts this hcpx from the plugin.\n\
             exec '/opt/my tools/hcpx' \"$@\"\n"
        );
    }
}
