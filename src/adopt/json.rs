//! JSON and JSONC edits of a host file through a concrete syntax tree: hcpx's entry
//! is set, found or taken out, and comments, order, trailing commas and every other
//! setting stay as they were.

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use super::{AdoptError, Found, Position, Syntax};

/// A JSON value as the syntax tree takes it.
fn to_input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(flag) => CstInputValue::Bool(*flag),
        Value::Number(number) => CstInputValue::Number(number.to_string()),
        Value::String(text) => CstInputValue::String(text.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_input).collect()),
        Value::Object(map) => CstInputValue::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), to_input(item)))
                .collect(),
        ),
    }
}

/// A JSON parse error, with where the parser stopped.
fn not_json(error: jsonc_parser::errors::ParseError) -> AdoptError {
    AdoptError::Unparsable {
        syntax: Syntax::Json,
        at: Some(Position {
            line: error.line_display(),
            column: error.column_display(),
        }),
        source: Box::new(error),
    }
}

/// The key path `parents` then `name`.
fn key_path(parents: &[String], name: &str) -> Vec<String> {
    parents.iter().cloned().chain([name.to_owned()]).collect()
}

/// Refuses a name that `object` holds more than once: the edit would reach the
/// first, while hosts read the last (as `JSON.parse` does).
fn once(object: &CstObject, parents: &[String], name: &str) -> Result<(), AdoptError> {
    let count = object
        .properties()
        .iter()
        .filter(|prop| {
            prop.name()
                .and_then(|found| found.decoded_value().ok())
                .is_some_and(|found| found == name)
        })
        .count();
    if count > 1 {
        return Err(AdoptError::Duplicate {
            path: key_path(parents, name),
            count,
        });
    }
    Ok(())
}

/// Sets (`Some`) or removes (`None`) `key` under `path` in JSON or JSONC text.
/// Containers on the path are created when needed, and dropped again when a
/// removal leaves them empty, except the first `keep` (they were there before).
pub(super) fn edit(
    text: &str,
    path: &[String],
    key: &str,
    value: Option<&Value>,
    keep: usize,
) -> Result<String, AdoptError> {
    let source = if text.trim().is_empty() { "{}\n" } else { text };
    let root = CstRootNode::parse(source, &jsonc_parser::ParseOptions::default()).map_err(not_json)?;
    let top = match root.value() {
        None => root.object_value_or_set(),
        Some(_) => root.object_value().ok_or(AdoptError::NotAJsonObject)?,
    };
    match value {
        Some(value) => {
            let mut container = top;
            for (depth, segment) in path.iter().enumerate() {
                once(&container, &path[..depth], segment)?;
                container =
                    container
                        .object_value_or_create(segment)
                        .ok_or_else(|| AdoptError::NotAnObject {
                            path: path[..=depth].to_vec(),
                        })?;
            }
            once(&container, path, key)?;
            match container.get(key) {
                Some(prop) if prop.value().and_then(|node| node.to_serde_value()).as_ref() == Some(value) => {
                    return Ok(text.to_owned());
                }
                Some(prop) => prop.set_value(to_input(value)),
                None => {
                    container.append(key, to_input(value));
                }
            }
        }
        None => {
            let mut chain: Vec<CstObject> = vec![top];
            for (depth, segment) in path.iter().enumerate() {
                let Some(object) = chain.last() else { break };
                once(object, &path[..depth], segment)?;
                let Some(next) = object.object_value(segment) else {
                    return Ok(text.to_owned());
                };
                chain.push(next);
            }
            let Some(last) = chain.last() else {
                return Ok(text.to_owned());
            };
            once(last, path, key)?;
            let Some(prop) = last.get(key) else {
                return Ok(text.to_owned());
            };
            prop.remove();
            // Drop the containers the entry left empty, innermost first.
            for (depth, segment) in path.iter().enumerate().rev() {
                if depth >= keep
                    && chain[depth + 1].properties().is_empty()
                    && let Some(prop) = chain[depth].get(segment)
                {
                    prop.remove();
                } else {
                    break;
                }
            }
        }
    }
    Ok(root.to_string())
}

/// How many objects of `path`, from the top, the JSON or JSONC text already has.
pub(super) fn containers(text: &str, path: &[String]) -> Result<usize, AdoptError> {
    if text.trim().is_empty() {
        return Ok(0);
    }
    let root = CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).map_err(not_json)?;
    let mut object = root.object_value();
    let mut depth = 0;
    for segment in path {
        object = object.and_then(|object| object.object_value(segment));
        if object.is_none() {
            break;
        }
        depth += 1;
    }
    Ok(depth)
}

/// The entry under `key` in `path` of JSON or JSONC text, when it has one.
pub(super) fn find(text: &str, path: &[String], key: &str) -> Result<Option<Found>, AdoptError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let root = CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).map_err(not_json)?;
    let Some(mut object) = root.object_value() else {
        return Ok(None);
    };
    for segment in path {
        let Some(next) = object.object_value(segment) else {
            return Ok(None);
        };
        object = next;
    }
    Ok(object.get(key).and_then(|prop| prop.value()).map(|node| Found {
        value: node.to_serde_value().unwrap_or(Value::Null),
        text: node.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::adopt::tests::path;
    use crate::adopt::{Format, edit};

    #[test]
    fn jsonc_keeps_comments_commas_and_order_and_round_trips() {
        let original = "{\n  // my servers\n  \"servers\": {\n    \"other\": { \"command\": \"x\" }, // keep\n  },\n  \"theme\": \"dark\",\n}\n";
        let value = json!({ "type": "stdio", "command": "hcpx", "args": ["mcp"] });
        let added = edit(Format::Jsonc, original, &path(&["servers"]), "hcpx", Some(&value)).unwrap();
        assert!(
            added.contains("// my servers")
                && added.contains("// keep")
                && added.contains("\"theme\": \"dark\"")
        );
        assert!(added.contains("\"hcpx\""), "{added}");
        assert_eq!(
            edit(Format::Jsonc, &added, &path(&["servers"]), "hcpx", Some(&value)).unwrap(),
            added,
            "idempotent"
        );
        assert_eq!(
            edit(Format::Jsonc, &added, &path(&["servers"]), "hcpx", None).unwrap(),
            original,
            "removal restores"
        );
    }

    #[test]
    fn json_containers_are_made_and_unmade() {
        let original = "{\n  \"theme\": \"dark\"\n}\n";
        let value = json!({ "command": "hcpx" });
        let added = edit(
            Format::Json,
            original,
            &path(&["mcpServers"]),
            "hcpx",
            Some(&value),
        )
        .unwrap();
        let parsed: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(parsed["mcpServers"]["hcpx"], value);
        assert_eq!(
            edit(Format::Json, &added, &path(&["mcpServers"]), "hcpx", None).unwrap(),
            original
        );
        let fresh = edit(Format::Json, "", &path(&["mcpServers"]), "hcp", Some(&value)).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&fresh).unwrap(),
            json!({ "mcpServers": { "hcp": value } })
        );
    }

    /// Found with the `adopt_edit` fuzz target's check that an added entry is the
    /// one hosts read: with a name given twice, the edit changed the first while
    /// hosts (like `JSON.parse`) read the last, and a removal left the other.
    #[test]
    fn a_name_given_twice_is_refused_not_half_edited() {
        for (text, name, at) in [
            (
                r#"{"mcpServers": {"hcpx": 1, "hcpx": 2}}"#,
                "hcpx",
                &["mcpServers", "hcpx"][..],
            ),
            (
                r#"{"mcpServers": {"hcpx": 1}, "mcpServers": {}}"#,
                "mcpServers",
                &["mcpServers"][..],
            ),
        ] {
            for value in [Some(json!({ "command": "hcpx" })), None] {
                let result = edit(Format::Json, text, &path(&["mcpServers"]), "hcpx", value.as_ref());
                let expected = format!("`{name}` appears 2 times in the file; keep one");
                assert!(
                    matches!(&result, Err(error @ AdoptError::Duplicate { path, count: 2 })
                        if *path == at && error.to_string() == expected),
                    "{text} {value:?}: {result:?}"
                );
            }
        }
    }
}
