//! Step 3 of exec: the pack's bindings, read once (the confirmation shown in step 2
//! hides them), every required one present and bound for this very pack.

use std::path::PathBuf;

use serde_json::json;

use crate::binding::{Resolved, Secret, Store};
use crate::catalog::Pack;
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::install;
use crate::next::Next;

/// The pack's bound values, read once: step 3 checks them, and the confirmation
/// shown in step 2 hides them.
/// The bytes of an installed pack's CLI whose digest matched its bindings, and the
/// content-named copy under `$HCP_HOME/.installed/` it runs from: an install that
/// replaces the pack while the call starts cannot put other code in front of the
/// credentials.
pub(super) struct Pinned {
    pub(super) program: PathBuf,
    pub(super) bytes: Vec<u8>,
}

pub(super) struct Bindings {
    pub(super) found: Vec<(String, Secret)>,
    pub(super) pinned: Option<Pinned>,
    /// Keys bound for another pack with this id: (key, why), for a person to release.
    pub(super) held_back: Vec<(String, String)>,
    /// Why the store cannot be used, when the pack has bindings and it cannot.
    pub(super) unusable: Option<String>,
    /// Every value bound for any pack: redacted from this call's output too, so no
    /// pack prints another's credential, wherever it found it.
    pub(super) every: Vec<(String, Secret)>,
}

pub(super) fn read_bindings(ctx: &Context, pack: &Pack) -> Bindings {
    let manifest = &pack.manifest;
    let mut bindings = Bindings {
        found: Vec::new(),
        pinned: None,
        held_back: Vec::new(),
        unusable: None,
        every: Vec::new(),
    };
    let store = match Store::load(&ctx.bindings_path()) {
        Ok(store) => store,
        Err(error) => {
            if !manifest.bindings.is_empty() {
                bindings.unusable = Some(error.to_string());
            }
            return bindings;
        }
    };
    bindings.every = store.every_value(&ctx.env);
    if manifest.bindings.is_empty() || !store.has_any(&manifest.id) {
        return bindings;
    }
    let (current, files) = install::identity_and_files(&ctx.home, pack);
    for (key, _) in &manifest.bindings {
        match store.resolve(&manifest.id, key, &ctx.env, &current) {
            Resolved::Set(secret) => bindings.found.push((key.clone(), secret)),
            Resolved::Unset => {}
            Resolved::HeldBack { bound_for } => bindings.held_back.push((
                key.clone(),
                Resolved::held_back_reason(bound_for.as_ref(), &manifest.id, key, &current),
            )),
        }
    }
    if !bindings.found.is_empty()
        && let (Some(mut files), Some(bin), Some(integrity)) =
            (files, manifest.bin_file(), &current.integrity)
        && let Some(bytes) = files.remove(bin)
    {
        bindings.pinned = Some(Pinned {
            program: install::pinned_copy(&ctx.home, &manifest.id, integrity, bin),
            bytes,
        });
    }
    bindings
}

/// Step 3: the pack's bindings, every required one present and bound for this
/// very pack.
pub(super) fn bind(pack: &Pack, bindings: Bindings) -> Result<Vec<(String, Secret)>, Failure> {
    if let Some(error) = bindings.unusable {
        return Err(Failure::new(
            Reason::Unbound,
            format!("the binding store cannot be used: {error}"),
        )
        .next(Next::hcpx(["bindings"])));
    }
    let id = &pack.manifest.id;
    for (key, _) in pack.manifest.bindings.iter().filter(|(_, spec)| spec.required) {
        if let Some((_, why)) = bindings.held_back.iter().find(|(held, _)| held == key) {
            return Err(Failure::new(Reason::Unbound, why.clone())
                .data(json!({ "heldBack": [key] }))
                .next(Next::advice(format!(
                    "a person who trusts this {id} runs: hcpx bind {id} {key} --keep   (or binds a new value: hcpx bind {id} {key})"
                ))));
        }
        if !bindings.found.iter().any(|(found, _)| found == key) {
            return Err(Failure::new(
                Reason::Unbound,
                format!("the pack needs {key}, which is not bound"),
            )
            .next(Next::advice(format!("a person runs: hcpx bind {id} {key}"))));
        }
    }
    Ok(bindings.found)
}
