//! `hcpx doctor`: where state lives, which packs load, which policy files are in
//! force, what this machine enforces, and the packs' cache folders.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{load_bindings, load_catalog, load_policies};
use crate::Reply;
use crate::catalog::{BrokenPack, Origin};
use crate::context::{Context, Principal};
use crate::error::Failure;
use crate::pack_cache::{self, Listed};
use crate::render::{self, Doctor};
use crate::sandbox::{LayerReport, Mode};

/// What `doctor` found, as data.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Found<'a> {
    home: &'a Path,
    home_exists: bool,
    home_paths: &'a [PathBuf],
    principal: Principal,
    packs: Packs<'a>,
    policy: PolicyFiles,
    sandbox: Sandbox<'a>,
    bindings: BindingStore<'a>,
    caches: Caches<'a>,
    resident: Resident,
}

/// The resident server (`hcpx serve`) of this `HCP_HOME`: its socket, and whether it
/// runs now.
#[derive(Serialize)]
struct Resident {
    socket: PathBuf,
    running: bool,
}

/// The folder of the packs' cache folders, and each folder in it.
#[derive(Serialize)]
struct Caches<'a> {
    root: Option<&'a Path>,
    folders: &'a [Listed],
}

#[derive(Serialize)]
struct Packs<'a> {
    builtin: usize,
    installed: usize,
    broken: &'a [BrokenPack],
}

#[derive(Serialize)]
struct PolicyFiles {
    user: Value,
    project: Value,
}

#[derive(Serialize)]
struct Sandbox<'a> {
    mode: Mode,
    layers: &'a [LayerReport],
}

/// Whether the binding store can be read.
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
enum BindingStore<'a> {
    Ok,
    Unparsable { error: &'a str },
}

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
    let mut layers = crate::sandbox::layers(
        ctx.session.sandbox.machine(),
        crate::sandbox::Needs {
            network: &crate::manifest::Network::Off,
            writes: &[],
            sockets: &[],
            exposed: exposed.as_deref(),
            cache: None,
        },
    );
    // What packs with `network.allow` need on top: their namespace, tried here for
    // real (settings can allow what a container's filter forbids).
    let egress = ctx.session.sandbox.egress_tried();
    layers.push(crate::sandbox::LayerReport {
        layer: "egress",
        enforced: egress.enforced,
        needed: false,
        detail: format!("for packs with network.allow: {}", egress.detail),
    });
    let view = ctx.session.sandbox.home_view(&ctx.home);
    let caches_root = pack_cache::root(ctx);
    let caches = pack_cache::list(ctx, &catalog.packs);
    let resident = Resident {
        socket: crate::layout::resident_socket(&ctx.home),
        running: crate::resident::running(&ctx.home),
    };
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
        caches_root: caches_root.as_deref(),
        caches: &caches,
        resident: resident.running.then_some(resident.socket.as_path()),
    });
    let data = Found {
        home: &ctx.home,
        home_exists: ctx.home.is_dir(),
        home_paths: &view.aliases,
        principal: ctx.principal,
        packs: Packs {
            builtin,
            installed,
            broken: &catalog.broken,
        },
        policy: PolicyFiles {
            user: policies.user.to_json(),
            project: policies.project.to_json(),
        },
        sandbox: Sandbox {
            mode: ctx.sandbox_mode,
            layers: &layers,
        },
        bindings: match &bindings {
            Ok(_) => BindingStore::Ok,
            Err(error) => BindingStore::Unparsable { error },
        },
        caches: Caches {
            root: caches_root.as_deref(),
            folders: &caches,
        },
        resident,
    };
    Ok(Reply::new(&data, text))
}
