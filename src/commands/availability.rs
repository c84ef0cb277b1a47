//! `hcpx availability PACK`

use super::{flags, load_bindings, load_catalog, load_policies, to_json};
use crate::Reply;
use crate::availability::{Availability, Flag, Problem};
use crate::catalog::CatalogError;
use crate::context::Context;
use crate::error::Failure;
use crate::output;

#[derive(serde::Serialize)]
struct Report<'a> {
    id: &'a str,
    #[serde(flatten)]
    flags: &'a Availability,
}

pub fn run(ctx: &Context, id: &str) -> Result<Reply, Failure> {
    let loaded = load_catalog(ctx);
    let catalog = &loaded.catalog;
    let report = match catalog.get(id) {
        Ok(pack) => {
            let bindings = load_bindings(ctx);
            flags(
                ctx,
                pack,
                &load_policies(ctx),
                &bindings,
                &crate::sandbox::probe(),
            )
        }
        // A broken install is a pack that is there but not installed properly:
        // report it rather than pretend the id is unknown.
        Err(CatalogError::Unknown { .. }) if catalog.broken(id).is_some() => {
            let broken = catalog
                .broken(id)
                .map(|b| (b.problems.len(), b.dir.display().to_string()))
                .unwrap_or_default();
            Availability {
                installed: false,
                runnable: false,
                bound: false,
                permitted: false,
                ready: false,
                problems: vec![Problem {
                    flag: Flag::Installed,
                    reason: format!("the installed manifest has {} problems", broken.0),
                    fix: format!("hcpx pack check {}", broken.1),
                }],
            }
        }
        Err(CatalogError::Unknown { .. }) => return super::find_pack(catalog, id).map(|_| Reply::default()),
    };
    let data = to_json(&Report { id, flags: &report });
    Ok(Reply {
        text: output::availability_text(id, &report),
        data: Some(data),
        ..Reply::default()
    })
}
