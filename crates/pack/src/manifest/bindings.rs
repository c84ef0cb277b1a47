//! `bindings`: the credentials a pack takes, and how each reaches its CLI (`as`:
//! a variable, a file whose path the variable holds, or standard input).

use serde_json::Value;

use super::model::{BindingSpec, Delivery};
use super::walk::{Walk, join};
use super::{PASSED_ENV, TMPDIR};
use crate::template::is_binding_name;

pub(super) fn bindings(walk: &mut Walk, value: Option<&Value>) -> Vec<(String, BindingSpec)> {
    let Some(value) = value else { return Vec::new() };
    let Some(object) = walk.object("bindings", value) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, spec) in object {
        let path = format!("bindings.{key}");
        if !is_binding_name(key) {
            walk.problem(&path, "must be an environment variable name (^[A-Z_][A-Z0-9_]*$)");
        } else if reserved(key) {
            walk.problem(&path, "is set by the sandbox or the loader; choose another name");
        }
        let Some(spec) = walk.object(&path, spec) else {
            continue;
        };
        walk.unknown_fields(
            &path,
            spec,
            &["description", "secret", "required", "as", "format"],
        );
        let description = walk.string(&join(&path, "description"), spec.get("description"), false);
        let secret = walk.bool(&join(&path, "secret"), spec.get("secret"), true);
        let required = walk.bool(&join(&path, "required"), spec.get("required"), false);
        let format = walk.string(&join(&path, "format"), spec.get("format"), false);
        let delivery = match walk.string(&join(&path, "as"), spec.get("as"), false).as_deref() {
            None | Some("env") => Delivery::Env,
            Some("file") => Delivery::File { format: None },
            Some("stdin") => Delivery::Stdin,
            Some("header") => {
                walk.problem(
                    &join(&path, "as"),
                    "\"header\" needs hcpx's egress proxy (sandbox.network.allow), which this version does not \
                     have; deliver it as \"file\" (with a \"format\" such as \"Authorization: Bearer {value}\") or \"env\"",
                );
                Delivery::Env
            }
            Some(_) => {
                walk.problem(&join(&path, "as"), "must be env, file or stdin");
                Delivery::Env
            }
        };
        let delivery = match (delivery, format) {
            (Delivery::File { .. }, Some(format)) => {
                if !format.contains("{value}") {
                    walk.problem(
                        &join(&path, "format"),
                        "must contain {value}, which is replaced by the bound value (nothing else is replaced)",
                    );
                }
                Delivery::File { format: Some(format) }
            }
            (delivery, Some(_)) => {
                walk.problem(
                    &join(&path, "format"),
                    "is only for \"as\": \"file\" (the content of the file); an env or stdin binding carries the value as it is",
                );
                delivery
            }
            (delivery, None) => delivery,
        };
        out.push((
            key.clone(),
            BindingSpec {
                description,
                secret,
                required,
                delivery,
            },
        ));
    }
    out
}

/// Variables the sandbox or the dynamic loader owns: a binding or a `sandbox.env`
/// entry may set none of them.
pub(super) fn reserved(name: &str) -> bool {
    PASSED_ENV.contains(&name)
        || name == TMPDIR
        || name.starts_with("HCP_")
        || name.starts_with("LD_")
        || name.starts_with("DYLD_")
}
