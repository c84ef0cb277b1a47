//! `hcpx doctor`: where state lives, which packs load, which policy files are in
//! force, and what this machine enforces.

use std::fmt::Write as _;

use serde_json::json;

use super::{load_bindings, load_catalog, load_policies};
use crate::Reply;
use crate::catalog::Origin;
use crate::context::Context;
use crate::error::Failure;
use crate::policy::Layer;

fn layer_status(layer: &Layer) -> (String, serde_json::Value) {
    match layer {
        Layer::Absent => ("none".to_owned(), json!({ "status": "absent" })),
        Layer::Parsed { path, .. } => (
            format!("{} (ok)", path.display()),
            json!({ "status": "parsed", "path": path }),
        ),
        Layer::Unparsable { path, error } => (
            format!(
                "{} UNPARSABLE: {error}; every exec and install is denied",
                path.display()
            ),
            json!({ "status": "unparsable", "path": path, "error": error }),
        ),
    }
}

pub(crate) fn run(ctx: &Context) -> Result<Reply, Failure> {
    let loaded = load_catalog(ctx);
    let catalog = &loaded.catalog;
    let builtin = catalog
        .packs
        .iter()
        .filter(|pack| matches!(pack.origin, Origin::Builtin { .. }))
        .count();
    let installed = catalog.packs.len() - builtin;
    let policies = load_policies(ctx);
    let (user_text, user_json) = layer_status(&policies.user);
    let (project_text, project_json) = layer_status(&policies.project);
    let bindings = load_bindings(ctx);
    // A pack with no network and no write paths needs every layer there is.
    let layers = crate::sandbox::layers(
        ctx.session.sandbox.machine(),
        crate::sandbox::Needs {
            network: false,
            writes: &[],
            confined_reads: false,
        },
    );
    let mut text = String::new();
    let _ = writeln!(
        text,
        "HCP_HOME   {}{}",
        ctx.home.display(),
        if ctx.home.is_dir() {
            ""
        } else {
            " (not created yet)"
        }
    );
    let _ = writeln!(text, "caller     {}", ctx.principal.as_str());
    let _ = writeln!(
        text,
        "packs      {builtin} built in, {installed} installed, {} broken",
        catalog.broken.len()
    );
    for broken in &catalog.broken {
        let _ = writeln!(
            text,
            "  broken: {} ({} problems): hcpx pack check {}",
            broken.id,
            broken.problems.len(),
            broken.dir.display()
        );
    }
    let _ = writeln!(
        text,
        "policy     user: {user_text}\n           project: {project_text}"
    );
    let mode = match ctx.sandbox_mode {
        crate::sandbox::Mode::Strict => "strict (a pack whose needed layer is missing does not run)",
        crate::sandbox::Mode::BestEffort => {
            "best-effort (HCP_SANDBOX): packs run with the layers enforced here"
        }
    };
    let _ = writeln!(text, "sandbox    mode {mode}");
    for layer in &layers {
        let state = if layer.enforced {
            "enforced"
        } else {
            "NOT enforced"
        };
        let _ = writeln!(text, "  {:<18} {state:<12} {}", layer.layer, layer.detail);
    }
    let _ = writeln!(
        text,
        "bindings   {}",
        match &bindings {
            Ok(_) => "ok".to_owned(),
            Err(error) => error.clone(),
        }
    );
    Ok(Reply {
        text,
        data: Some(json!({
            "home": ctx.home,
            "homeExists": ctx.home.is_dir(),
            "principal": ctx.principal,
            "packs": { "builtin": builtin, "installed": installed, "broken": catalog.broken },
            "policy": { "user": user_json, "project": project_json },
            "sandbox": { "mode": ctx.sandbox_mode, "layers": super::to_json(&layers) },
            "bindings": match &bindings { Ok(_) => json!({ "status": "ok" }), Err(error) => json!({ "status": "unparsable", "error": error }) },
        })),
        ..Reply::default()
    })
}
