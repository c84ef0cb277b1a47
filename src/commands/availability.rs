//! `hcpx availability PACK`: the four flags, and what each command is granted.

use std::path::PathBuf;

use super::{flags, load_bindings, load_one, load_policies};
use crate::Reply;
use crate::availability::{Availability, Flag, Problem};
use crate::catalog::{CatalogError, Pack};
use crate::context::Context;
use crate::error::Failure;
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
    pub network: bool,
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

pub(crate) fn run(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    // Only this pack's files are read (or the index's ids, for the closest ones).
    let catalog = &load_one(ctx, id);
    // A broken install is a pack that is there but not installed properly: report
    // it rather than pretend the id is unknown.
    let mut grants = None;
    let report = match (catalog.broken(id), catalog.get(id)) {
        (Some(broken), Err(CatalogError::Unknown { .. })) => Availability {
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
        },
        _ => {
            let pack = super::find_pack(catalog, id)?;
            grants = Some(granted(ctx, pack));
            flags(
                ctx,
                pack,
                &load_policies(ctx),
                &load_bindings(ctx),
                ctx.session.sandbox.machine(),
                crate::sandbox::home::exposure(&ctx.home).as_deref(),
            )
        }
    };
    Ok(Reply::new(
        &Report {
            id,
            flags: &report,
            grants: grants.as_ref(),
        },
        render::availability_text(id, &report, grants.as_ref()),
    ))
}
