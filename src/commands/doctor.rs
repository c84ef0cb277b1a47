//! `hcpx doctor`: where state lives, which packs load, which policy files are in
//! force, and what this machine enforces.

use serde_json::json;

use super::{load_bindings, load_catalog, load_policies};
use crate::Reply;
use crate::catalog::Origin;
use crate::context::Context;
use crate::error::Failure;
use crate::render::{self, Doctor};

pub(crate) fn run(ctx: &Context) -> Result<Reply, Failure> {
    let catalog = &*load_catalog(ctx);
    let builtin = catalog
        .packs
        .iter()
        .filter(|pack| matches!(pack.origin, Origin::Builtin { .. }))
        .count();
    let installed = catalog.packs.len() - builtin;
    let policies = load_policies(ctx);
    let bindings = load_bindings(ctx);
    // A pack with no network and no write paths needs every layer there is.
    let exposed = crate::sandbox::home::exposure(&ctx.home);
    let layers = crate::sandbox::layers(
        ctx.session.sandbox.machine(),
        crate::sandbox::Needs {
            network: false,
            writes: &[],
            sockets: &[],
            exposed: exposed.as_deref(),
        },
    );
    let view = ctx.session.sandbox.home_view(&ctx.home);
    let text = render::doctor_text(&Doctor {
        home: &ctx.home,
        home_exists: ctx.home.is_dir(),
        home_paths: &view.aliases,
        principal: ctx.principal,
        builtin,
        installed,
        broken: &catalog.broken,
        policies: &policies,
        mode: ctx.sandbox_mode,
        layers: &layers,
        bindings_error: bindings.as_ref().err().map(String::as_str),
    });
    Ok(Reply {
        text,
        data: Some(json!({
            "home": ctx.home,
            "homeExists": ctx.home.is_dir(),
            "homePaths": view.aliases,
            "principal": ctx.principal,
            "packs": { "builtin": builtin, "installed": installed, "broken": catalog.broken },
            "policy": { "user": policies.user.to_json(), "project": policies.project.to_json() },
            "sandbox": { "mode": ctx.sandbox_mode, "layers": super::to_json(&layers) },
            "bindings": match &bindings { Ok(_) => json!({ "status": "ok" }), Err(error) => json!({ "status": "unparsable", "error": error }) },
        })),
        ..Reply::default()
    })
}
