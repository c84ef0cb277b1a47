//! Where a placeholder may stand in a command's template (see docs/packs.md): the
//! argv template read into slots, and the refusal of a placement where a caller's
//! value could be read as an option.

use std::collections::BTreeSet;

use serde_json::Value;

use super::model::*;
use super::walk::{Walk, join};
use crate::template::Element;

pub(super) fn template(
    walk: &mut Walk,
    command_path: &str,
    value: Option<&Value>,
    params: &[Param],
    declared: &BTreeSet<String>,
) -> Vec<Slot> {
    let path = join(command_path, "argv");
    if value.is_none() {
        walk.problem(&path, "is required (the arguments after bin; may be [])");
        return Vec::new();
    }
    let raw = walk.strings(&path, value);
    let mut slots = Vec::new();
    let mut used = BTreeSet::new();
    let mut after_double_dash = false;
    // The previous element when it is an option (`--url`, `-H`) before any `--`,
    // so that a lone placeholder here is that option's value.
    let mut option_before: Option<String> = None;
    for (index, text) in raw.iter().enumerate() {
        // Made only for a problem.
        let element_path = || super::walk::at(&path, index);
        let element = match Element::parse(text) {
            Ok(element) => element,
            Err(error) => {
                walk.problem(&element_path(), error.to_string());
                option_before = None;
                continue;
            }
        };
        let follows_option = std::mem::replace(
            &mut option_before,
            (!after_double_dash && element.is_option_literal()).then(|| element.prefix().to_owned()),
        );
        // A boolean's flag: `{utc}` alone in its element renders the fixed text.
        let flag = element
            .lone_param()
            .and_then(|(name, _)| params.iter().find(|param| param.name == name))
            .and_then(|param| param.flag.as_ref().map(|text| (param, text)));
        // An option's value in the element after it: one placeholder, alone, of a
        // parameter that is not positional (a positional one stays an operand).
        let separated = element
            .lone_param()
            .filter(|_| follows_option.is_some())
            .and_then(|(name, _)| params.iter().find(|param| param.name == name))
            .filter(|param| !param.positional && param.flag.is_none());
        let mut arrays = 0;
        for (name, optional) in element.params() {
            let Some(param) = params.iter().find(|param| param.name == name) else {
                // A declared parameter that failed its own checks is reported there.
                if !declared.contains(name) {
                    walk.problem(&element_path(), format!("unknown parameter \"{name}\""));
                }
                continue;
            };
            used.insert(name.to_owned());
            if param.array {
                arrays += 1;
            }
            if optional && param.required {
                walk.problem(
                    &element_path(),
                    format!("\"{name}\" is required, so write {{{name}}} without `?`"),
                );
            }
            let needs_mark = !param.required && param.default.is_none() && !param.array;
            if !optional && needs_mark {
                walk.problem(
                    &element_path(),
                    format!("\"{name}\" is optional, so write {{{name}?}} (the element is dropped when it is absent)"),
                );
            }
            if param.flag.is_some() && flag.is_none() {
                walk.problem(
                    &element_path(),
                    format!("\"{name}\" is a flag, so {{{name}}} must be the whole element"),
                );
                continue;
            }
            let safe = after_double_dash
                || param.positional
                || element.is_option_fused()
                || separated.is_some()
                || flag.is_some();
            if !safe {
                walk.problem(&element_path(), unsafe_placement(param, needs_mark));
            }
        }
        if arrays > 1 {
            walk.problem(
                &element_path(),
                "an element may repeat for at most one array parameter",
            );
        }
        if element.is_end_of_options() {
            after_double_dash = true;
        }
        match (flag, separated) {
            (Some((param, text)), _) => slots.push(Slot::Flag {
                param: param.name.clone(),
                text: text.clone(),
            }),
            (None, Some(param)) => {
                // The option's own element, pushed as a literal one step ago, now
                // travels with its value.
                slots.pop();
                slots.push(Slot::Separated {
                    option: follows_option.unwrap_or_default(),
                    param: param.name.clone(),
                });
                // `--url {url} {x}`: `{x}` is not `--url`'s value.
                option_before = None;
            }
            (None, None) => slots.push(Slot::Element(element)),
        }
    }
    for param in params {
        if !used.contains(&param.name) {
            walk.problem(
                &format!("{command_path}.params.{}", param.name),
                "is declared but never used in argv",
            );
        }
    }
    slots
}

/// The problem for a placeholder that stands where a value could be read as an
/// option, with the forms real CLIs accept: the option and its value as two
/// elements, an on/off flag for a boolean, after `--`, or positional.
fn unsafe_placement(param: &Param, needs_mark: bool) -> String {
    let name = &param.name;
    let mark = if needs_mark { "?" } else { "" };
    let flag = if param.ty == ScalarType::Boolean && !param.array {
        format!("be an on/off flag (declare \"flag\": \"--{name}\"), ")
    } else {
        String::new()
    };
    format!(
        "\"{name}\" must {flag}follow its option as the next element (\"--{name}\", \"{{{name}{mark}}}\"), \
         be placed after a \"--\" element, or be declared \"positional\": true"
    )
}
