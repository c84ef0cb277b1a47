//! `hcpx availability PACK`

use super::{flags, load_bindings, load_one, load_policies};
use crate::Reply;
use crate::availability::{Availability, Flag, Problem};
use crate::catalog::CatalogError;
use crate::context::Context;
use crate::error::Failure;
use crate::render;

#[derive(serde::Serialize)]
struct Report<'a> {
    id: &'a str,
    #[serde(flatten)]
    flags: &'a Availability,
}

pub(crate) fn run(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    // Only this pack's files are read (or the index's ids, for the closest ones).
    let catalog = &load_one(ctx, id);
    // A broken install is a pack that is there but not installed properly: report
    // it rather than pretend the id is unknown.
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
        &Report { id, flags: &report },
        render::availability_text(id, &report),
    ))
}
