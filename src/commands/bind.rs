//! `hcpx bind PACK KEY [--from-env VAR]`, `hcpx unbind PACK KEY` and `hcpx bindings`.
//! `bind` and `unbind` are access commands: an agent never gets them.

use serde::Serialize;

use super::{find_pack, load_catalog};
use crate::Reply;
use crate::audit::Disposition;
use crate::binding::{Binding, BindingError, Identity, Resolved, Secret, Store, Stored};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::install;
use crate::next::Next;
use crate::render::{self, BindingRow};
use crate::state::{self, StateError};

/// Why the binding store could not be changed; nothing of the change was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpdateError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Store(#[from] BindingError),
    #[error(transparent)]
    Serialize(#[from] serde_json::Error),
}

impl From<UpdateError> for Failure {
    fn from(error: UpdateError) -> Self {
        Failure::io("the binding store cannot be changed", error).next(Next::hcpx(["doctor"]))
    }
}

/// Loads, changes and writes the store under the lock. An unparsable store is
/// never overwritten.
pub(crate) fn update(ctx: &Context, change: impl FnOnce(&mut Store) -> bool) -> Result<bool, Failure> {
    Ok(write_store(ctx, change)?)
}

fn write_store(ctx: &Context, change: impl FnOnce(&mut Store) -> bool) -> Result<bool, UpdateError> {
    let _lock = crate::layout::lock(&ctx.home)?;
    let path = ctx.bindings_path();
    let mut store = Store::load(&path)?;
    store.version = 1;
    let changed = change(&mut store);
    if changed {
        let text = serde_json::to_vec_pretty(&store)?;
        state::write_atomic(&path, &text, 0o600)?;
    }
    Ok(changed)
}

/// `bind`'s data.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BoundData<'a> {
    pack: &'a str,
    key: &'a str,
    set: bool,
    from_env: Option<&'a str>,
}

/// `bind --keep`'s data.
#[derive(Serialize)]
struct KeptData<'a> {
    pack: &'a str,
    key: &'a str,
    kept: bool,
    changed: bool,
    #[serde(rename = "for")]
    for_pack: &'a Identity,
}

/// `unbind`'s data.
#[derive(Serialize)]
struct UnboundData<'a> {
    pack: &'a str,
    key: &'a str,
    removed: bool,
}

/// `bindings`' data.
#[derive(Serialize)]
struct ListData<'a> {
    bindings: &'a [BindingRow],
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) fn bind(
    ctx: &Context,
    pack_id: &str,
    key: &str,
    how: How<'_>,
    argv: &[String],
) -> Result<Reply, Failure> {
    let catalog = &*load_catalog(ctx);
    let pack = find_pack(catalog, pack_id)?;
    let declared: Vec<&str> = pack
        .manifest
        .bindings
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    if !declared.contains(&key) {
        let message = if declared.is_empty() {
            "the pack declares no bindings".to_owned()
        } else {
            format!(
                "the pack declares no binding by that name; it declares: {}",
                declared.join(", ")
            )
        };
        return Err(Failure::new(Reason::UnknownParam, message).next(Next::hcpx(["skill", pack_id])));
    }
    let identity = install::identity(&ctx.home, pack);
    let from_env = match how {
        How::Keep => return keep(ctx, pack_id, key, identity, argv),
        How::FromEnv(var) => Some(var),
        How::Value => None,
    };
    let bound = match from_env {
        Some(var) if is_env_name(var) => Stored::FromEnv(var.to_owned()),
        Some(_) => {
            return Err(Failure::new(
                Reason::InvalidArguments,
                "--from-env takes an environment variable name",
            )
            .next(Next::hcpx(["bind", pack_id, key, "--from-env", "MY_VARIABLE"])));
        }
        None => {
            let input = ctx.secret_input.as_ref().ok_or_else(|| {
                Failure::new(
                    Reason::InvalidArguments,
                    "no value to bind: run at a terminal, or pipe the value on stdin",
                )
                .next(Next::advice(format!(
                    "printf %s \"$VALUE\" | hcpx bind {pack_id} {key}"
                )))
            })?;
            let value = input
                .read_secret(&render::secret_prompt(pack_id, key))
                .map_err(|error| Failure::io("the value cannot be read", error))?;
            if value.is_empty() {
                return Err(
                    Failure::new(Reason::InvalidArguments, "the value is empty; nothing was bound").next(
                        Next::advice(format!("printf %s \"$VALUE\" | hcpx bind {pack_id} {key}")),
                    ),
                );
            }
            let value = Secret::new(value);
            if value.len() > Secret::MAX_LEN {
                return Err(Failure::new(
                    Reason::InvalidArguments,
                    format!(
                        "the value is {} bytes; a binding holds at most {} (64 KiB); nothing was bound",
                        value.len(),
                        Secret::MAX_LEN
                    ),
                )
                .next(Next::advice(format!(
                    "printf %s \"$VALUE\" | hcpx bind {pack_id} {key}   (a value of at most 64 KiB)"
                ))));
            }
            Stored::Value(value)
        }
    };
    update(ctx, |store| {
        store.packs.entry(pack_id.to_owned()).or_default().insert(
            key.to_owned(),
            Binding {
                bound,
                pack: Some(identity),
            },
        );
        true
    })?;
    let data = BoundData {
        pack: pack_id,
        key,
        set: true,
        from_env,
    };
    Ok(
        Reply::new(&data, render::bind_text(pack_id, key, from_env)).warn(audited(
            ctx,
            argv,
            pack_id,
            Disposition::Bind,
            true,
        )),
    )
}

/// How `bind` gets what it stores.
#[derive(Debug, Clone, Copy)]
pub(crate) enum How<'a> {
    /// A value read from the terminal or stdin.
    Value,
    /// The name of an environment variable.
    FromEnv(&'a str),
    /// Nothing new: the stored binding is confirmed for the pack installed now.
    Keep,
}

/// `bind PACK KEY --keep`: a person confirms that a binding held back (given to
/// another pack with this id) may reach the pack installed now.
fn keep(
    ctx: &Context,
    pack_id: &str,
    key: &str,
    identity: Identity,
    argv: &[String],
) -> Result<Reply, Failure> {
    let mut before = None;
    update(ctx, |store| {
        match store.packs.get_mut(pack_id).and_then(|keys| keys.get_mut(key)) {
            Some(binding) if binding.pack.as_ref() != Some(&identity) => {
                before = Some(binding.pack.replace(identity.clone()));
                true
            }
            Some(_) => {
                before = Some(Some(identity.clone()));
                false
            }
            None => false,
        }
    })?;
    let Some(before) = before else {
        return Err(Failure::new(
            Reason::Unbound,
            format!("nothing to keep: {pack_id} {key} is not bound"),
        )
        .next(Next::hcpx(["bind", pack_id, key])));
    };
    let changed = before.as_ref() != Some(&identity);
    let data = KeptData {
        pack: pack_id,
        key,
        kept: true,
        changed,
        for_pack: &identity,
    };
    let text = render::keep_text(pack_id, key, changed.then_some((&identity, before.as_ref())));
    Ok(Reply::new(&data, text).warn(audited(ctx, argv, pack_id, Disposition::Bind, changed)))
}

pub(crate) fn unbind(ctx: &Context, pack_id: &str, key: &str, argv: &[String]) -> Result<Reply, Failure> {
    let removed = update(ctx, |store| {
        let removed = store
            .packs
            .get_mut(pack_id)
            .and_then(|keys| keys.remove(key))
            .is_some();
        if store
            .packs
            .get(pack_id)
            .is_some_and(std::collections::BTreeMap::is_empty)
        {
            store.packs.remove(pack_id);
        }
        removed
    })?;
    let data = UnboundData {
        pack: pack_id,
        key,
        removed,
    };
    Ok(
        Reply::new(&data, render::unbind_text(pack_id, key, removed)).warn(audited(
            ctx,
            argv,
            pack_id,
            Disposition::Unbind,
            removed,
        )),
    )
}

/// One row of `hcpx bindings`, from what the store holds for `pack` and `key`.
fn binding_row(pack: &str, key: &str, stored: Option<&Binding>) -> BindingRow {
    BindingRow {
        pack: pack.to_owned(),
        key: key.to_owned(),
        declared: false,
        required: false,
        set: stored.is_some(),
        source: stored.map(|binding| match binding.bound {
            Stored::Value(_) => "value",
            Stored::FromEnv(_) => "env",
        }),
        delivery: None,
        variable: match stored.map(|binding| &binding.bound) {
            Some(Stored::FromEnv(var)) => Some(var.clone()),
            _ => None,
        },
        held_back: None,
    }
}

pub(crate) fn list(ctx: &Context) -> Result<Reply, Failure> {
    let catalog = &*load_catalog(ctx);
    let store = Store::load(&ctx.bindings_path())?;
    let mut rows = Vec::new();
    for pack in &catalog.packs {
        let id = pack.id();
        let current = store.has_any(id).then(|| install::identity(&ctx.home, pack));
        for (key, spec) in &pack.manifest.bindings {
            let mut row = binding_row(id, key, store.get(id, key));
            row.declared = true;
            row.required = spec.required;
            row.delivery = Some(spec.delivery.as_str());
            row.set = false;
            if let Some(current) = &current {
                match store.resolve(id, key, &ctx.env, current) {
                    Resolved::Set(_) => row.set = true,
                    Resolved::Unset => {}
                    Resolved::HeldBack { bound_for } => {
                        row.held_back =
                            Some(Resolved::held_back_reason(bound_for.as_ref(), id, key, current));
                    }
                }
            }
            rows.push(row);
        }
    }
    for (pack, keys) in &store.packs {
        for (key, binding) in keys {
            if !rows.iter().any(|row| &row.pack == pack && &row.key == key) {
                rows.push(binding_row(pack, key, Some(binding)));
            }
        }
    }
    Ok(Reply::new(
        &ListData { bindings: &rows },
        render::bindings_text(&rows),
    ))
}

/// The audit line of a bind or unbind that changed the store (`changed`); what
/// changed nothing is not recorded. Returns the warning when the line was not written.
fn audited(
    ctx: &Context,
    argv: &[String],
    pack_id: &str,
    decision: Disposition,
    changed: bool,
) -> Option<crate::reply::Warning> {
    if !changed {
        return None;
    }
    let command = if decision == Disposition::Unbind {
        "unbind"
    } else {
        "bind"
    };
    super::write_audit_line(ctx, argv, pack_id, command, decision, std::time::Instant::now())
}
