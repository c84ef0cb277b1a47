//! Step 3 of exec: the pack's bindings, read once (the confirmation shown in step 2
//! hides them), every required one present and bound for this very pack; and, in
//! step 4, how each reaches the CLI (see docs/bindings.md): a variable, a 0600 file
//! in the call's temporary folder, or the command's standard input.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::validate::Target;
use crate::binding::{Resolved, Secret, Store};
use crate::catalog::Pack;
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::install;
use crate::manifest::Delivery;
use crate::next::Next;
use crate::sandbox;

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

/// How the call's bindings reach the pack's CLI (`as` in the manifest), once its
/// private temporary folder is there: the variables, the standard input, and the
/// CLI's arguments with each file binding's real path.
pub(super) struct Delivered {
    /// Each env binding's value, and each file binding's path, under its name.
    pub(super) env: Vec<(String, Secret)>,
    /// The binding the command names in its `stdin`, when it is bound.
    pub(super) stdin: Option<Secret>,
    pub(super) args: Vec<String>,
    /// Each header binding, for the proxy: the pack's CLI never gets it.
    pub(super) headers: Vec<super::egress::HeaderValue>,
    /// Whether a file binding's file was written in the call's folder.
    pub(super) wrote_files: bool,
}

/// Step 4, for the bindings: env bindings become variables; a file binding's
/// value (or its `format` with `{value}` replaced) becomes a 0600 file in
/// `tmpdir`, which goes with the call, its path in the variable and in `{NAME}` of
/// the arguments; the command's `stdin` binding is kept for the runtime to write.
/// A stdin binding reaches no variable, and no command but those that name it.
pub(super) fn deliver(
    target: &Target<'_>,
    tmpdir: &Path,
    bound: &[(String, Secret)],
) -> Result<Delivered, Failure> {
    let mut env = Vec::new();
    let mut stdin = None;
    let mut files: Vec<(&str, String)> = Vec::new();
    let mut headers = Vec::new();
    for (key, secret) in bound {
        let Some(spec) = target.pack.manifest.binding(key) else {
            continue;
        };
        let reaches_this_command = match &spec.delivery {
            Delivery::Env => false,
            Delivery::File { .. } => true,
            Delivery::Stdin => target.command.stdin.as_deref() == Some(key.as_str()),
            Delivery::Header { .. } => false,
        };
        if reaches_this_command && secret.len() > Secret::MAX_LEN {
            return Err(too_long(&target.pack.manifest.id, key, secret));
        }
        match &spec.delivery {
            Delivery::Env => env.push((key.clone(), secret.clone())),
            Delivery::File { format } => {
                let content = match format {
                    Some(format) => filled(format, secret),
                    None => secret.clone(),
                };
                let path = sandbox::binding_file(tmpdir, key, &content).map_err(|error| {
                    Failure::new(
                        Reason::NotRunnable,
                        format!(
                            "cannot write the file of binding {key} in the call's temporary folder: {error}"
                        ),
                    )
                    .next(Next::hcpx(["doctor"]))
                })?;
                let path = path.display().to_string();
                env.push((key.clone(), Secret::new(path.clone())));
                files.push((key, path));
            }
            Delivery::Stdin => {
                if target.command.stdin.as_deref() == Some(key.as_str()) {
                    stdin = Some(secret.clone());
                }
            }
            Delivery::Header {
                header,
                format,
                hosts,
            } => headers.push(super::egress::HeaderValue {
                value: header_value(key, format, secret)?,
                header: header.clone(),
                hosts: hosts.clone(),
            }),
        }
    }
    let args = target
        .render(|name| {
            files
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, path)| path.clone())
        })
        .map_err(|error| Failure::new(Reason::NotRunnable, error.to_string()))?;
    Ok(Delivered {
        env,
        stdin,
        args,
        headers,
        wrote_files: !files.is_empty(),
    })
}

/// A value read from a variable at each exec is bounded by nothing but the kernel:
/// one written to a file or a pipe holds no more than a stored one may.
fn too_long(id: &str, key: &str, secret: &Secret) -> Failure {
    Failure::new(
        Reason::Unbound,
        format!(
            "{key} is {} bytes, more than the {} a binding delivered as a file or on stdin may hold",
            secret.len(),
            Secret::MAX_LEN
        ),
    )
    .next(Next::advice(format!(
        "a person binds a shorter value: hcpx bind {id} {key}"
    )))
}

/// A file binding's `format` with every `{value}` replaced by the value, and
/// nothing else replaced; made at its full size at once, so no smaller copy of the
/// value is left behind in freed memory (the [`Secret`] zeroes this one).
/// A header binding's value with its format filled in: one line of text, as no
/// header may carry a line break or another control character.
fn header_value(key: &str, format: &str, secret: &Secret) -> Result<Secret, Failure> {
    if secret.expose().chars().any(char::is_control) {
        return Err(Failure::new(
            Reason::Unbound,
            format!("the value bound to {key} holds a line break or another control character, which no HTTP header may carry"),
        )
        .next(Next::advice(format!("a person binds {key} again, without it"))));
    }
    Ok(filled(format, secret))
}

fn filled(format: &str, value: &Secret) -> Secret {
    let pieces: Vec<&str> = format.split("{value}").collect();
    let size = format.len() + (pieces.len() - 1) * value.len();
    let mut text = String::with_capacity(size);
    for (index, piece) in pieces.iter().enumerate() {
        if index > 0 {
            text.push_str(value.expose());
        }
        text.push_str(piece);
    }
    Secret::new(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_replaces_value_and_nothing_else() {
        let value = Secret::new("t{value}k".into());
        assert_eq!(
            filled("Authorization: Bearer {value}\n{API_TOKEN} {value}", &value).expose(),
            "Authorization: Bearer t{value}k\n{API_TOKEN} t{value}k"
        );
        assert_eq!(filled("{value}", &value).expose(), "t{value}k");
    }
}
