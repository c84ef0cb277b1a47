//! `hcpx availability PACK`: the four flags, and what each command is granted.

use std::path::PathBuf;

use super::{flags, load_bindings, load_one, load_policies};
use crate::Reply;
use crate::availability::{Availability, Flag, Problem};
use crate::catalog::Pack;
use crate::context::Context;
use crate::error::Failure;
use crate::next::Next;
use crate::program::probe;
use crate::render;
use crate::sandbox::Grants;

#[derive(serde::Serialize)]
struct Report<'a> {
    id: &'a str,
    #[serde(flatten)]
    flags: &'a Availability,
    /// What each command is granted (none for a pack that is not installed properly).
    #[serde(skip_serializing_if = "Option::is_none")]
    grants: Option<&'a Granted>,
}

/// What a pack's commands are granted, as the sandbox derives it from the manifest:
/// each command's network and write paths (a `path` parameter's as `{name}`), and the
/// pack's cache folder, which every command of it writes.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Granted {
    pub commands: Vec<CommandGrants>,
    pub cache: Option<PathBuf>,
}

#[derive(Debug, serde::Serialize)]
pub(crate) struct CommandGrants {
    pub command: String,
    pub network: crate::manifest::Network,
    pub write: Vec<String>,
}

fn granted(ctx: &Context, pack: &Pack) -> Granted {
    let spec = &pack.manifest.sandbox;
    Granted {
        commands: pack
            .manifest
            .commands
            .iter()
            .map(|command| {
                let grants = Grants::declared(spec, command);
                CommandGrants {
                    command: command.name.clone(),
                    network: grants.network,
                    write: grants.writes,
                }
            })
            .collect(),
        cache: crate::pack_cache::folder(ctx, pack)
            .ok()
            .flatten()
            .map(|folder| folder.path()),
    }
}

pub(crate) async fn run(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    // Only this pack's files are read (or the index's ids, for the closest ones).
    let catalog = &load_one(ctx, id);
    // A broken install is a pack that is there but not installed properly: report
    // it rather than pretend the id is unknown.
    let mut grants = None;
    let report = match (catalog.broken(id), catalog.get(id)) {
        (Some(broken), Err(_)) => Availability {
            installed: false,
            runnable: false,
            bound: false,
            permitted: false,
            ready: false,
            problems: vec![Problem {
                flag: Flag::Installed,
                reason: format!(
                    "the installed manifest has {}",
                    crate::render::count(broken.problems.len(), "problem")
                ),
                fix: format!("hcpx pack check {}", broken.dir.display()),
            }],
            program: None,
            update: None,
        },
        _ => {
            // A catalog pack that is not installed is reported too: its flags say
            // what installing it would give.
            let pack = match catalog.available(id) {
                Some(pack) => pack,
                None => super::find_pack(catalog, id)?,
            };
            grants = Some(granted(ctx, pack));
            let mut report = flags(
                ctx,
                pack,
                &load_policies(ctx),
                &load_bindings(ctx),
                ctx.session.sandbox.machine(),
                crate::sandbox::home::exposure(&ctx.home).as_deref(),
            );
            let caller = probe::Caller {
                env: &ctx.env,
                home: &ctx.home,
                temp_dir: &ctx.temp_dir,
                sandbox: &ctx.session.sandbox,
                mode: ctx.sandbox_mode,
                cancel: &ctx.cancel,
            };
            crate::availability::check_variant(&mut report, pack, &caller, ctx.os()).await;
            let sources = super::lock_sources(ctx);
            report.update = pack
                .catalog_update(sources.get(id).map(String::as_str))
                .map(|version| version.to_string());
            report
        }
    };
    let next =
        (catalog.available(id).is_some() && catalog.get(id).is_err()).then(|| Next::hcpx(["install", id]));
    let mut reply = Reply::new(
        &Report {
            id,
            flags: &report,
            grants: grants.as_ref(),
        },
        render::availability_text(id, &report, grants.as_ref(), next.as_ref()),
    );
    reply.next = next;
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::program::Os;

    /// A pack whose program is missing, in a fresh HCP_HOME, and a context for it
    /// on `os`.
    fn context(home: &std::path::Path, os: Os) -> Context {
        let dir = home.join("packs/finder");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("hcp.json"),
            json!({
                "hcp": 1, "id": "finder", "version": "1.0.0", "description": "Find files",
                "bin": ["finder-hcpx-missing"],
                "program": {
                    "aliases": ["findfinder-hcpx-missing"],
                    "variant": "finder 2 or later",
                    "install": { "apt": "finder-tools", "brew": "finder", "pipx": "finder-py" },
                    "homepage": "https://example.org/finder"
                },
                "commands": { "list": { "summary": "List", "effect": "read", "argv": [] } }
            })
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: finder\ndescription: Finds files.\n---\n",
        )
        .unwrap();
        let env = [
            ("HCP_HOME".to_owned(), home.display().to_string()),
            ("PATH".to_owned(), "/nonexistent-hcpx".to_owned()),
        ];
        let mut ctx = Context::new(env, home.to_path_buf(), false).unwrap();
        ctx.os = Some(os);
        ctx
    }

    /// How to get a missing program follows the system the context names: apt on
    /// Debian, brew on macOS, the portable ways elsewhere; the homepage always.
    #[tokio::test]
    async fn how_to_get_a_missing_program_follows_the_system() {
        for (os, install, fix) in [
            (
                Os::Debian,
                json!(["sudo apt-get install finder-tools"]),
                "sudo apt-get install finder-tools (see https://example.org/finder)",
            ),
            (
                Os::Macos,
                json!(["brew install finder"]),
                "brew install finder (see https://example.org/finder)",
            ),
            (
                Os::Other,
                json!(["pipx install finder-py"]),
                "pipx install finder-py (see https://example.org/finder)",
            ),
        ] {
            let home = tempfile::tempdir().unwrap();
            let ctx = context(home.path(), os);
            let reply = run(&ctx, "finder").await.unwrap();
            let data = reply.data.unwrap();
            assert_eq!(
                (&data["runnable"], &data["problems"][0], &data["program"]),
                (
                    &json!(false),
                    &json!({
                        "flag": "runnable",
                        "reason": "`finder-hcpx-missing` is not on PATH, nor `findfinder-hcpx-missing`",
                        "fix": fix,
                    }),
                    &json!({
                        "name": "finder-hcpx-missing", "aliases": ["findfinder-hcpx-missing"], "path": null,
                        "variant": "finder 2 or later", "version": null, "install": install,
                        "homepage": "https://example.org/finder",
                    })
                ),
                "{os:?}"
            );
            assert!(
                reply.text.contains(&format!("    fix: {fix}\n")),
                "{os:?}: {}",
                reply.text
            );
            assert!(
                reply
                    .text
                    .contains("  program    finder-hcpx-missing: not found (supports finder 2 or later)\n"),
                "{}",
                reply.text
            );
        }
    }
}
