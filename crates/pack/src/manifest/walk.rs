//! The validator's walk: the problems found so far, by JSON path, and the readers of
//! JSON values that record a problem instead of failing.

use serde_json::{Map, Value};

use super::problem::Problem;

/// Collects problems while walking the manifest.
pub(super) struct Walk {
    pub(super) problems: Vec<Problem>,
}

impl Walk {
    pub(super) fn problem(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    pub(super) fn unknown_fields(&mut self, path: &str, object: &Map<String, Value>, known: &[&str]) {
        for key in object.keys() {
            if !known.contains(&key.as_str()) {
                self.problem(
                    &join(path, key),
                    format!("unknown field (known: {})", known.join(", ")),
                );
            }
        }
    }

    pub(super) fn string(&mut self, path: &str, value: Option<&Value>, required: bool) -> Option<String> {
        match value {
            None if required => {
                self.problem(path, "is required");
                None
            }
            None => None,
            Some(Value::String(text)) if required && text.trim().is_empty() => {
                self.problem(path, "must not be empty");
                None
            }
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => {
                self.problem(path, "must be a string");
                None
            }
        }
    }

    pub(super) fn bool(&mut self, path: &str, value: Option<&Value>, default: bool) -> bool {
        match value {
            None => default,
            Some(Value::Bool(flag)) => *flag,
            Some(_) => {
                self.problem(path, "must be true or false");
                default
            }
        }
    }

    pub(super) fn object<'v>(&mut self, path: &str, value: &'v Value) -> Option<&'v Map<String, Value>> {
        if let Value::Object(object) = value {
            Some(object)
        } else {
            self.problem(path, "must be an object");
            None
        }
    }

    pub(super) fn strings(&mut self, path: &str, value: Option<&Value>) -> Vec<String> {
        match value {
            None => Vec::new(),
            // The path of an item is made only for a problem.
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| match item {
                    Value::String(text) => Some(text.clone()),
                    _ => self.string(&at(path, index), Some(item), false),
                })
                .collect(),
            Some(_) => {
                self.problem(path, "must be an array of strings");
                Vec::new()
            }
        }
    }
}

/// `path.key`, or `key` at the top. Built by hand: a manifest's walk makes one for
/// nearly every field, and `format!` costs several times as much.
pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        return key.to_owned();
    }
    let mut joined = String::with_capacity(path.len() + 1 + key.len());
    joined.push_str(path);
    joined.push('.');
    joined.push_str(key);
    joined
}

/// `path[index]`.
pub(super) fn at(path: &str, index: usize) -> String {
    let mut joined = String::with_capacity(path.len() + 6);
    joined.push_str(path);
    joined.push('[');
    joined.push_str(&index.to_string());
    joined.push(']');
    joined
}
