//! What one command changes of the pack's sandbox and result: its own `write`
//! grants (fixed paths or a `path` parameter), `network`, the exit codes that mean
//! success, and the binding written to its standard input.

use serde_json::{Map, Value};

use super::model::{BindingSpec, Delivery, Effect, Param, ScalarType, Slot, WriteItem};
use super::network::Network;
use super::walk::{Walk, join};
use crate::template::{Element, Piece};

pub(super) struct CommandSandbox {
    pub(super) write: Option<Vec<WriteItem>>,
    pub(super) network: Option<Network>,
    pub(super) ok_exit_codes: Vec<i32>,
    pub(super) stdin: Option<String>,
}

pub(super) fn command_sandbox(
    walk: &mut Walk,
    path: &str,
    object: &Map<String, Value>,
    effect: Option<Effect>,
    params: &[Param],
    bindings: &[(String, BindingSpec)],
) -> CommandSandbox {
    let write = object.get("write").map(|value| {
        let write_path = join(path, "write");
        if effect == Some(Effect::Read) {
            walk.problem(
                &write_path,
                "a read command writes nothing (only its temporary folder); make the command write or \
                 destructive, or drop write",
            );
        }
        let items = walk.strings(&write_path, Some(value));
        items
            .iter()
            .enumerate()
            .filter_map(|(index, text)| write_item(walk, &format!("{write_path}[{index}]"), text, params))
            .collect()
    });
    let network = object
        .get("network")
        .map(|value| super::network::network(walk, &join(path, "network"), Some(value)));
    let ok_exit_codes = match object.get("okExitCodes") {
        None => vec![0],
        Some(value) => exit_codes(walk, &join(path, "okExitCodes"), value),
    };
    let stdin = walk.string(&join(path, "stdin"), object.get("stdin"), false);
    if let Some(name) = &stdin {
        match bindings.iter().find(|(key, _)| key == name) {
            Some((_, spec)) if spec.delivery == Delivery::Stdin => {}
            Some(_) => walk.problem(
                &join(path, "stdin"),
                format!("\"{name}\" is not delivered on stdin; declare \"as\": \"stdin\" on the binding"),
            ),
            None => walk.problem(&join(path, "stdin"), format!("unknown binding \"{name}\"")),
        }
    }
    CommandSandbox {
        write,
        network,
        ok_exit_codes,
        stdin,
    }
}

fn write_item(walk: &mut Walk, path: &str, text: &str, params: &[Param]) -> Option<WriteItem> {
    if !text.contains('{') && !text.contains('}') {
        if let Err(message) = super::model::check_relative_path(text) {
            walk.problem(path, format!("{message} (write paths are relative)"));
            return None;
        }
        return Some(WriteItem::Path(text.to_owned()));
    }
    let named = Element::parse(text)
        .ok()
        .and_then(|element| match element.pieces.as_slice() {
            [
                Piece::Param {
                    name,
                    optional: false,
                },
            ] => Some(name.clone()),
            _ => None,
        });
    let Some(name) = named else {
        walk.problem(
            path,
            "must be a relative path or one path parameter alone, such as \"{into}\"",
        );
        return None;
    };
    match params.iter().find(|param| param.name == name) {
        Some(param) if param.ty == ScalarType::Path => Some(WriteItem::Param(name)),
        Some(_) => {
            walk.problem(path, format!("\"{name}\" must be a parameter of type path"));
            None
        }
        None => {
            walk.problem(path, format!("unknown parameter \"{name}\""));
            None
        }
    }
}

fn exit_codes(walk: &mut Walk, path: &str, value: &Value) -> Vec<i32> {
    let message = "must be a list of exit codes from 0 to 255, each once, such as [0, 1]";
    let Value::Array(items) = value else {
        walk.problem(path, message);
        return vec![0];
    };
    let mut codes = Vec::new();
    for item in items {
        match item.as_u64().and_then(|code| i32::try_from(code).ok()) {
            Some(code) if code <= 255 && !codes.contains(&code) => codes.push(code),
            _ => {
                walk.problem(path, message);
                return vec![0];
            }
        }
    }
    if codes.is_empty() {
        walk.problem(path, message);
        return vec![0];
    }
    codes
}

/// The `{NAME}` placeholders of a command's argv: each must name a binding
/// delivered as a file, and a required one, so the file is always there.
pub(super) fn binding_placeholders(
    walk: &mut Walk,
    command_path: &str,
    argv: &[Slot],
    bindings: &[(String, BindingSpec)],
) {
    for (index, slot) in argv.iter().enumerate() {
        let Slot::Element(element) = slot else { continue };
        for name in element.bindings() {
            let element_path = || super::walk::at(&super::walk::join(command_path, "argv"), index);
            match bindings.iter().find(|(key, _)| key == name) {
                None => walk.problem(&element_path(), format!("unknown binding \"{name}\"")),
                Some((_, spec)) => match &spec.delivery {
                    Delivery::File { .. } if spec.required => {}
                    Delivery::File { .. } => walk.problem(
                        &element_path(),
                        format!(
                            "\"{name}\" is not required, so its file may not exist when the command runs; \
                             declare \"required\": true on the binding"
                        ),
                    ),
                    _ => walk.problem(
                        &element_path(),
                        format!(
                            "\"{name}\" is delivered as {}: a value in argv can be read by any process of the \
                             machine (ps, /proc), so only a file binding's path may appear here. Declare \"as\": \
                             \"file\" on the binding (with a \"format\" if the CLI wants more than the value), and \
                             {{{name}}} renders the file's path",
                            spec.delivery.as_str()
                        ),
                    ),
                },
            }
        }
    }
}
