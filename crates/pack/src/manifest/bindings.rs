//! `bindings`: the credentials a pack takes, and how each reaches its CLI (`as`:
//! a variable, a file whose path the variable holds, standard input, or a header
//! that hcpx's proxy adds on the way out).

use serde_json::Value;

use super::model::{BindingSpec, Delivery};
use super::network::Host;
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
            &[
                "description",
                "secret",
                "required",
                "as",
                "format",
                "header",
                "hosts",
            ],
        );
        let description = walk.string(&join(&path, "description"), spec.get("description"), false);
        let secret = walk.bool(&join(&path, "secret"), spec.get("secret"), true);
        let required = walk.bool(&join(&path, "required"), spec.get("required"), false);
        let format = walk.string(&join(&path, "format"), spec.get("format"), false);
        let delivery = match walk.string(&join(&path, "as"), spec.get("as"), false).as_deref() {
            None | Some("env") => Delivery::Env,
            Some("file") => Delivery::File { format: None },
            Some("stdin") => Delivery::Stdin,
            Some("header") => header(walk, &path, spec),
            Some(_) => {
                walk.problem(&join(&path, "as"), "must be env, file, stdin or header");
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
            (delivery @ Delivery::Header { .. }, _) => delivery,
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

/// An `as: "header"` binding's `header`, `format` (default `{value}`) and `hosts`.
fn header(walk: &mut Walk, path: &str, spec: &serde_json::Map<String, Value>) -> Delivery {
    let header_path = join(path, "header");
    let header = walk
        .string(&header_path, spec.get("header"), true)
        .unwrap_or_default();
    let token = |byte: u8| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte);
    if !header.is_empty() && !header.bytes().all(token) {
        walk.problem(
            &header_path,
            "must be an HTTP header name, such as Authorization or X-Api-Key",
        );
    } else if HOP_BY_HOP.iter().any(|name| name.eq_ignore_ascii_case(&header)) {
        walk.problem(
            &header_path,
            "is a header of the connection, not of the request; name the one the API reads",
        );
    }
    let format_path = join(path, "format");
    let format = walk
        .string(&format_path, spec.get("format"), false)
        .unwrap_or_else(|| "{value}".to_owned());
    if !format.contains("{value}") {
        walk.problem(
            &format_path,
            "must contain {value}, which is replaced by the bound value (nothing else is replaced)",
        );
    } else if format.bytes().any(|byte| byte.is_ascii_control()) {
        walk.problem(
            &format_path,
            "must not hold control characters (a header value is one line)",
        );
    }
    let hosts_path = join(path, "hosts");
    if spec.get("hosts").is_none() {
        walk.problem(
            &hosts_path,
            "is required: the hosts whose requests get the header",
        );
    }
    let mut hosts = Vec::new();
    let texts = walk.strings(&hosts_path, spec.get("hosts"));
    if spec.get("hosts").is_some() && texts.is_empty() {
        walk.problem(
            &hosts_path,
            "is empty: name the hosts whose requests get the header",
        );
    }
    for (index, text) in texts.iter().enumerate() {
        match Host::parse(text) {
            Ok(host) => hosts.push(host),
            Err(message) => walk.problem(&format!("{hosts_path}[{index}]"), message),
        }
    }
    Delivery::Header {
        header,
        format,
        hosts,
    }
}

/// Headers of the connection, which a proxy drops or owns.
const HOP_BY_HOP: [&str; 9] = [
    "Connection",
    "Keep-Alive",
    "Proxy-Authenticate",
    "Proxy-Authorization",
    "Proxy-Connection",
    "TE",
    "Trailer",
    "Transfer-Encoding",
    "Upgrade",
];

/// Variables the sandbox or the dynamic loader owns: a binding or a `sandbox.env`
/// entry may set none of them.
pub(super) fn reserved(name: &str) -> bool {
    PASSED_ENV.contains(&name)
        || name == TMPDIR
        || name.starts_with("HCP_")
        || name.starts_with("LD_")
        || name.starts_with("DYLD_")
}
