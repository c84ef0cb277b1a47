//! From the caller's `KEY=VALUE` words to the pack CLI's argv (see docs/packs.md):
//! every key a declared parameter, every value checked against its type, pattern and
//! length, `path` values kept inside the working directory (links included), then
//! the template filled in with one value per argv element, never split, never able to
//! become an option: a value that would open an argument before the template's `--`
//! (a positional one, or an option's value in its own element) may not start with `-`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::manifest::{Command, Param, ScalarType, Slot};
use crate::template::Piece;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvocationError {
    #[error("word {index} after -- is not KEY=VALUE")]
    NotAssignment { index: usize },
    /// `key` is the caller's word, kept for details and `data`: the message itself
    /// names only declared parameters.
    #[error("unknown parameter{}; this command takes: {}", closest.as_ref().map(|name| format!("; closest: {name}")).unwrap_or_default(), known.join(", "))]
    Unknown {
        key: String,
        closest: Option<String>,
        known: Vec<String>,
    },
    #[error("parameter `{name}` is given more than once but is not an array")]
    Repeated { name: String },
    #[error("parameter `{name}` is required")]
    Missing { name: String },
    #[error("parameter `{name}` {reason}")]
    Invalid { name: String, reason: String },
}

/// The caller's values by parameter name (several for an array).
pub type Values = BTreeMap<String, Vec<String>>;

/// The caller's `KEY=VALUE` words as `(key, value)`, split once at the first `=`:
/// what [`parse_given`] checks and what a confirmation shows.
pub fn assignments(words: &[String]) -> Result<Vec<(&str, &str)>, InvocationError> {
    words
        .iter()
        .enumerate()
        .map(|(index, word)| {
            word.split_once('=')
                .ok_or(InvocationError::NotAssignment { index: index + 1 })
        })
        .collect()
}

/// Parses and checks the `KEY=VALUE` words, then fills defaults.
pub fn parse(command: &Command, words: &[String], paths: &dyn PathCheck) -> Result<Values, InvocationError> {
    parse_given(command, &assignments(words)?, paths)
}

/// [`parse`] of words already split by [`assignments`].
pub fn parse_given(
    command: &Command,
    given: &[(&str, &str)],
    paths: &dyn PathCheck,
) -> Result<Values, InvocationError> {
    let mut values = Values::new();
    for &(key, value) in given {
        let Some(param) = command.param(key) else {
            let known: Vec<String> = command.params.iter().map(|param| param.name.clone()).collect();
            return Err(InvocationError::Unknown {
                key: key.to_owned(),
                closest: crate::suggest::closest(key, known.iter().map(String::as_str))
                    .first()
                    .map(|name| (*name).to_owned()),
                known,
            });
        };
        let slot = values.entry(param.name.clone()).or_default();
        if !param.array && !slot.is_empty() {
            return Err(InvocationError::Repeated {
                name: param.name.clone(),
            });
        }
        check(param, value, paths)?;
        slot.push(if param.ty == ScalarType::Path {
            anchored(value)
        } else {
            value.to_owned()
        });
    }
    for param in &command.params {
        if values.contains_key(&param.name) {
            continue;
        }
        if let Some(default) = &param.default {
            values.insert(param.name.clone(), default.clone());
        } else if param.required {
            return Err(InvocationError::Missing {
                name: param.name.clone(),
            });
        }
    }
    Ok(values)
}

/// A `path` value as the pack's CLI gets it: starting with `./` (or `../`), so no
/// CLI can read it as anything but a file here: not a URI (`file:/x` to SQLite), a
/// remote (`host:path` to git or rsync), an option, or `-` for stdin.
fn anchored(value: &str) -> String {
    if value == "." || value == ".." || value.starts_with("./") || value.starts_with("../") {
        value.to_owned()
    } else {
        format!("./{value}")
    }
}

fn check(param: &Param, value: &str, paths: &dyn PathCheck) -> Result<(), InvocationError> {
    let invalid = |reason: String| InvocationError::Invalid {
        name: param.name.clone(),
        reason,
    };
    param.check(value).map_err(invalid)?;
    if param.positional && value.starts_with('-') {
        return Err(invalid(
            "starts with `-`, which a positional value may not (it would read as an option)".into(),
        ));
    }
    if param.ty == ScalarType::Path {
        paths.check(value).map_err(invalid)?;
    }
    Ok(())
}

/// The on-disk half of the `path` rule, which this crate cannot do: the caller
/// checks a `path` value (already relative and never above the working directory)
/// against what is on disk, links included, once per value.
pub trait PathCheck {
    /// Why `relative` may not be given to the pack, if it may not.
    fn check(&self, relative: &str) -> Result<(), String>;
}

/// Only the lexical rule: for callers with no working directory to check against.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lexical;

impl PathCheck for Lexical {
    fn check(&self, _relative: &str) -> Result<(), String> {
        Ok(())
    }
}

/// The pack CLI's argv from the template: an element whose optional parameter is absent is dropped;
/// an element with an array parameter repeats once per value, and so does an option
/// with its value in the next element; a flag is its text when its boolean is true.
///
/// Fails closed: a value that would open an argument before the template's `--`
/// and starts with `-` is refused here, whatever the caller's checks did.
pub fn argv(command: &Command, values: &Values, options: &[String]) -> Result<Vec<String>, InvocationError> {
    let mut argv = Vec::new();
    let mut options = Some(options);
    let mut after_double_dash = false;
    for slot in &command.argv {
        match slot {
            Slot::Element(element) => {
                // Options (the command's `json` flags) go before the template's own
                // `--`, where the CLI still reads options; else at the end.
                if element.is_end_of_options() {
                    if let Some(options) = options.take() {
                        argv.extend(options.iter().cloned());
                    }
                    after_double_dash = true;
                }
                argv_element(command, element, values, after_double_dash, &mut argv)?;
            }
            Slot::Separated { option, param } => {
                for value in values.get(param).map(Vec::as_slice).unwrap_or_default() {
                    if value.starts_with('-') {
                        return Err(leading_dash(
                            param,
                            "an option's value given as a separate argument",
                        ));
                    }
                    argv.push(option.clone());
                    argv.push(value.clone());
                }
            }
            Slot::Flag { param, text } => {
                if values
                    .get(param)
                    .is_some_and(|list| list.iter().any(|value| value == "true"))
                {
                    argv.push(text.clone());
                }
            }
        }
    }
    if let Some(options) = options {
        argv.extend(options.iter().cloned());
    }
    Ok(argv)
}

fn leading_dash(name: &str, what: &str) -> InvocationError {
    InvocationError::Invalid {
        name: name.to_owned(),
        reason: format!("starts with `-`, which {what} may not (it would read as an option)"),
    }
}

fn argv_element(
    command: &Command,
    element: &crate::template::Element,
    values: &Values,
    after_double_dash: bool,
    argv: &mut Vec<String>,
) -> Result<(), InvocationError> {
    let names: Vec<&str> = element.params().map(|(name, _)| name).collect();
    if names
        .iter()
        .any(|name| values.get(*name).is_none_or(Vec::is_empty))
    {
        return Ok(());
    }
    let array = names
        .iter()
        .find(|name| command.param(name).is_some_and(|param| param.array))
        .copied();
    let repeats = array.and_then(|name| values.get(name)).map_or(1, Vec::len);
    for round in 0..repeats {
        let mut text = String::new();
        for piece in &element.pieces {
            match piece {
                Piece::Literal(literal) => text.push_str(literal),
                // A file binding's path, which exec puts in `values` under the
                // binding's (upper-case) name; without it the element cannot be
                // rendered, so nothing runs.
                Piece::Binding { name } => match values.get(name).and_then(|list| list.first()) {
                    Some(path) => text.push_str(path),
                    None => {
                        return Err(InvocationError::Invalid {
                            name: name.clone(),
                            reason: "is a file binding whose file was not prepared".to_owned(),
                        });
                    }
                },
                Piece::Param { name, .. } => {
                    let list = values.get(name).map(Vec::as_slice).unwrap_or_default();
                    let index = if Some(name.as_str()) == array { round } else { 0 };
                    text.push_str(list.get(index).map(String::as_str).unwrap_or_default());
                }
            }
        }
        // `-n{n}` with an empty value is `-n` alone: the CLI would take the next
        // argument as its value, the template's `--` included, and then read the
        // values after that `--` as options.
        let prefix = element.prefix();
        if !names.is_empty() && text == prefix && element.is_option_fused() && !prefix.starts_with("--") {
            let first = names.first().copied().unwrap_or_default();
            return Err(InvocationError::Invalid {
                name: first.to_owned(),
                reason: format!(
                    "is empty, which would leave `{prefix}` to take the next argument as its value"
                ),
            });
        }
        if !after_double_dash && element.starts_with_value() && text.starts_with('-') {
            let first = names.first().copied().unwrap_or_default();
            return Err(leading_dash(first, "a value that opens an argument"));
        }
        argv.push(text);
    }
    Ok(())
}

/// Absolute, lexically normalised form of a relative path under `cwd`.
pub fn absolute_under(cwd: &Path, relative: &str) -> PathBuf {
    let mut path = cwd.to_path_buf();
    for component in Path::new(relative).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::ParentDir => {
                path.pop();
            }
            _ => {}
        }
    }
    path
}

#[cfg(test)]
#[path = "invocation_tests.rs"]
mod tests;
