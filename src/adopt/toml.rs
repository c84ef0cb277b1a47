//! TOML edits of a host file through `toml_edit`: hcpx's entry (or a plain value such
//! as `HCP_AGENT`) is set, found or taken out, and comments, order and every other
//! setting stay as they were.

use serde_json::Value;

use super::{AdoptError, Found, Position, Syntax};

/// A TOML parse error, with the line and column where the parser stopped.
fn not_toml(text: &str, error: toml_edit::TomlError) -> AdoptError {
    let at = error.span().and_then(|span| {
        let before = text.get(..span.start)?;
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        Some(Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        })
    });
    AdoptError::Unparsable {
        syntax: Syntax::Toml,
        at,
        source: Box::new(error),
    }
}

/// A JSON value as TOML: `None` for a null, which TOML has no form for, and for an
/// object that holds one (an array drops its nulls).
fn toml_value(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Bool(flag) => toml_edit::Value::from(*flag),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => toml_edit::Value::from(integer),
            None => toml_edit::Value::from(number.as_f64()?),
        },
        Value::String(text) => toml_edit::Value::from(text.as_str()),
        Value::Array(items) => toml_edit::Value::Array(items.iter().filter_map(toml_value).collect()),
        Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, item) in map {
                table.insert(key, toml_value(item)?);
            }
            toml_edit::Value::InlineTable(table)
        }
        Value::Null => return None,
    })
}

/// Removes `key` under `path`; the tables on the path that this removal leaves
/// empty go too (adopt made them), except the first `keep`. Returns whether the key
/// was there.
fn remove_toml(table: &mut toml_edit::Table, path: &[String], key: &str, keep: usize) -> bool {
    let Some((head, rest)) = path.split_first() else {
        return table.remove(key).is_some();
    };
    let Some(child) = table.get_mut(head).and_then(toml_edit::Item::as_table_mut) else {
        return false;
    };
    let removed = remove_toml(child, rest, key, keep.saturating_sub(1));
    let prune = removed && keep == 0 && child.is_empty();
    if prune {
        table.remove(head);
    }
    removed
}

/// Sets or removes `[path.key]` in TOML text; a removal keeps the first `keep`
/// tables of the path.
pub(super) fn edit(
    text: &str,
    path: &[String],
    key: &str,
    value: Option<&Value>,
    keep: usize,
) -> Result<String, AdoptError> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|error| not_toml(text, error))?;
    match value {
        Some(value) => {
            let mut table = doc.as_table_mut();
            for (depth, segment) in path.iter().enumerate() {
                let item = table.entry(segment).or_insert_with(|| {
                    let mut implicit = toml_edit::Table::new();
                    implicit.set_implicit(true);
                    toml_edit::Item::Table(implicit)
                });
                table = item.as_table_mut().ok_or_else(|| AdoptError::NotATable {
                    path: path[..=depth].to_vec(),
                })?;
            }
            let Value::Object(fields) = value else {
                // A plain value, such as `HCP_AGENT = "1"`.
                let item = toml_value(value).ok_or_else(|| AdoptError::NoTomlForm { key: key.to_owned() })?;
                let same = table
                    .get(key)
                    .and_then(toml_edit::Item::as_value)
                    .map(|v| v.to_string().trim().to_owned())
                    == Some(item.to_string().trim().to_owned());
                if same {
                    return Ok(text.to_owned());
                }
                table.insert(key, toml_edit::Item::Value(item));
                return Ok(doc.to_string());
            };
            let mut entry = toml_edit::Table::new();
            for (field, item) in fields {
                if let Some(item) = toml_value(item) {
                    entry.insert(field, toml_edit::Item::Value(item));
                }
            }
            let same = table
                .get(key)
                .and_then(toml_edit::Item::as_table)
                .is_some_and(|existing| {
                    existing.len() == entry.len()
                        && entry.iter().all(|(field, item)| {
                            existing
                                .get(field)
                                .and_then(toml_edit::Item::as_value)
                                .map(|v| v.to_string().trim().to_owned())
                                == item.as_value().map(|v| v.to_string().trim().to_owned())
                        })
                });
            if same {
                return Ok(text.to_owned());
            }
            table.insert(key, toml_edit::Item::Table(entry));
        }
        None => {
            if !remove_toml(doc.as_table_mut(), path, key, keep) {
                return Ok(text.to_owned());
            }
        }
    }
    Ok(doc.to_string())
}

/// How many tables of `path`, from the top, the TOML text already has.
pub(super) fn containers(text: &str, path: &[String]) -> Result<usize, AdoptError> {
    let doc: toml_edit::DocumentMut = text.parse().map_err(|error| not_toml(text, error))?;
    let mut table: Option<&dyn toml_edit::TableLike> = Some(doc.as_table());
    let mut depth = 0;
    for segment in path {
        table = table
            .and_then(|table| table.get(segment))
            .and_then(toml_edit::Item::as_table_like);
        if table.is_none() {
            break;
        }
        depth += 1;
    }
    Ok(depth)
}

/// The entry under `key` in `path` of TOML text, when it has one.
pub(super) fn find(text: &str, path: &[String], key: &str) -> Result<Option<Found>, AdoptError> {
    let doc: toml_edit::DocumentMut = text.parse().map_err(|error| not_toml(text, error))?;
    let mut table: &dyn toml_edit::TableLike = doc.as_table();
    for segment in path {
        let Some(next) = table.get(segment).and_then(toml_edit::Item::as_table_like) else {
            return Ok(None);
        };
        table = next;
    }
    let Some(item) = table.get(key).filter(|item| !item.is_none()) else {
        return Ok(None);
    };
    // The entry's text: the entry alone in a document, under its tables' names.
    let mut alone = toml_edit::DocumentMut::new();
    let mut parent = alone.as_table_mut();
    for segment in path {
        let mut implicit = toml_edit::Table::new();
        implicit.set_implicit(true);
        parent.insert(segment, toml_edit::Item::Table(implicit));
        let Some(next) = parent.get_mut(segment).and_then(toml_edit::Item::as_table_mut) else {
            return Ok(None);
        };
        parent = next;
    }
    let mut shown = item.clone();
    if let Some(shown_table) = shown.as_table_mut() {
        shown_table.decor_mut().clear();
    }
    parent.insert(key, shown);
    Ok(Some(Found {
        value: toml_json(item),
        text: alone.to_string(),
    }))
}

/// A TOML item as a JSON value (dates as their text).
fn toml_json(item: &toml_edit::Item) -> Value {
    fn value(item: &toml_edit::Value) -> Value {
        match item {
            toml_edit::Value::String(text) => Value::String(text.value().clone()),
            toml_edit::Value::Integer(integer) => Value::from(*integer.value()),
            toml_edit::Value::Float(float) => {
                serde_json::Number::from_f64(*float.value()).map_or(Value::Null, Value::Number)
            }
            toml_edit::Value::Boolean(flag) => Value::Bool(*flag.value()),
            toml_edit::Value::Datetime(date) => Value::String(date.value().to_string()),
            toml_edit::Value::Array(items) => Value::Array(items.iter().map(value).collect()),
            toml_edit::Value::InlineTable(table) => Value::Object(
                table
                    .iter()
                    .map(|(key, item)| (key.to_owned(), value(item)))
                    .collect(),
            ),
        }
    }
    fn table(table: &toml_edit::Table) -> Value {
        Value::Object(
            table
                .iter()
                .map(|(key, item)| (key.to_owned(), toml_json(item)))
                .collect(),
        )
    }
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(item) => value(item),
        toml_edit::Item::Table(item) => table(item),
        toml_edit::Item::ArrayOfTables(tables) => Value::Array(tables.iter().map(table).collect()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::adopt::tests::path;
    use crate::adopt::{Format, Found, edit, find};

    #[test]
    fn find_shows_toml_entries_as_the_file_has_them() {
        let text = "model = \"o4\"\n\n# mine\n[mcp_servers.hcp]\ncommand = \"old\" # keep\nargs = [1, 2.5]\n";
        assert_eq!(
            find(Format::Toml, text, &path(&["mcp_servers"]), "hcp").unwrap(),
            Some(Found {
                value: json!({ "command": "old", "args": [1, 2.5] }),
                text: "[mcp_servers.hcp]\ncommand = \"old\" # keep\nargs = [1, 2.5]\n".to_owned(),
            })
        );
        assert_eq!(
            find(Format::Toml, text, &path(&["mcp_servers"]), "other").unwrap(),
            None
        );
    }

    #[test]
    fn toml_keeps_everything_else() {
        let original = "# Codex\nmodel = \"o4\"\n\n[mcp_servers.other]\ncommand = \"x\" # keep\n";
        let value = json!({ "command": "hcpx", "args": ["mcp"], "env": { "HCP_HOME": "/h" } });
        let added = edit(
            Format::Toml,
            original,
            &path(&["mcp_servers"]),
            "hcpx",
            Some(&value),
        )
        .unwrap();
        assert!(added.starts_with(original), "{added}");
        assert!(
            added.contains(
                "[mcp_servers.hcpx]\ncommand = \"hcpx\"\nargs = [\"mcp\"]\nenv = { HCP_HOME = \"/h\" }\n"
            ),
            "{added}"
        );
        assert_eq!(
            edit(
                Format::Toml,
                &added,
                &path(&["mcp_servers"]),
                "hcpx",
                Some(&value)
            )
            .unwrap(),
            added
        );
        assert_eq!(
            edit(Format::Toml, &added, &path(&["mcp_servers"]), "hcpx", None).unwrap(),
            original
        );
        let fresh = edit(Format::Toml, "", &path(&["mcp_servers"]), "hcpx", Some(&value)).unwrap();
        assert_eq!(
            edit(Format::Toml, &fresh, &path(&["mcp_servers"]), "hcpx", None).unwrap(),
            ""
        );
    }

    #[test]
    fn toml_plain_values_in_nested_tables() {
        let original = "model = \"o4\"\n";
        let added = edit(
            Format::Toml,
            original,
            &path(&["shell_environment_policy", "set"]),
            "HCP_AGENT",
            Some(&json!("1")),
        )
        .unwrap();
        assert_eq!(
            added,
            "model = \"o4\"\n\n[shell_environment_policy.set]\nHCP_AGENT = \"1\"\n"
        );
        assert_eq!(
            edit(
                Format::Toml,
                &added,
                &path(&["shell_environment_policy", "set"]),
                "HCP_AGENT",
                Some(&json!("1"))
            )
            .unwrap(),
            added
        );
        assert_eq!(
            edit(
                Format::Toml,
                &added,
                &path(&["shell_environment_policy", "set"]),
                "HCP_AGENT",
                None
            )
            .unwrap(),
            original
        );
    }
}
