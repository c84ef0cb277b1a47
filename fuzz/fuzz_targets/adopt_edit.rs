//! The in-place edits of host configuration files, `adopt::edit`, on arbitrary
//! file text. The first byte picks the host (and whether an `env` is written, or
//! the `--native` `HCP_AGENT` setting); the rest is the file. An edit may refuse,
//! but never panic; when it succeeds the file still parses in its format and holds
//! the entry at the servers path, a second run changes nothing, and taking the
//! entry out again leaves a file that parses and no longer holds it.

#![no_main]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use hcpx::adopt::{self, Format};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

struct Case {
    format: Format,
    path: Vec<String>,
    key: String,
    value: Value,
}

static CASES: LazyLock<Vec<Case>> = LazyLock::new(|| {
    let env: BTreeMap<String, String> = [("HCP_HOME".to_owned(), "/home/u/.hcp".to_owned())].into();
    let mut cases = Vec::new();
    for host in adopt::hosts().values() {
        for env in [None, Some(&env)] {
            cases.push(Case {
                format: host.format,
                path: host.servers_path.clone(),
                key: host.key.clone(),
                value: adopt::entry(host, "/usr/local/bin/hcpx", env),
            });
        }
        if let Some(agent_env) = host.native.as_ref().and_then(|native| native.agent_env.as_ref()) {
            cases.push(Case {
                format: agent_env.format,
                path: agent_env.env_path.clone(),
                key: "HCP_AGENT".to_owned(),
                value: Value::String("1".to_owned()),
            });
        }
    }
    cases
});

fuzz_target!(|data: &[u8]| {
    let Some((choice, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let case = &CASES[usize::from(*choice) % CASES.len()];
    let edit =
        |text: &str, value: Option<&Value>| adopt::edit(case.format, text, &case.path, &case.key, value);
    let strict = case.format == Format::Json && serde_json::from_str::<Value>(text).is_ok();

    // Taking out an entry that may not be there: a file that parsed still parses.
    if let Ok(removed) = edit(text, None)
        && parse(case.format, text, false).is_some()
    {
        assert!(
            parse(case.format, &removed, false).is_some(),
            "removal broke the file"
        );
    }

    let Ok(added) = edit(text, Some(&case.value)) else {
        return;
    };
    if parse(case.format, text, false).is_none() {
        // Syntax the checker cannot turn into values (`1e999`, which JSON.parse
        // reads as Infinity): the edits must still leave valid syntax.
        assert!(syntax(case.format, &added), "the edited file parses");
        let removed = edit(&added, None).expect("removal after adding");
        assert!(syntax(case.format, &removed), "the file parses after removal");
        return;
    }
    let tree = parse(case.format, &added, false).expect("the edited file parses");
    assert_eq!(
        lookup(&tree, &case.path, &case.key),
        Some(&case.value),
        "entry not in place"
    );
    if strict {
        parse(case.format, &added, true).expect("a JSON file stays JSON");
    }
    assert_eq!(
        edit(&added, Some(&case.value)).expect("second run"),
        added,
        "second run changed the file"
    );

    let removed = edit(&added, None).expect("removal after adding");
    let tree = parse(case.format, &removed, false).expect("the file parses after removal");
    assert_eq!(lookup(&tree, &case.path, &case.key), None, "entry still there");
});

/// The file as a JSON value: JSONC as hosts read it (or strict JSON), TOML
/// through `toml_edit`. An empty JSON file counts as an empty object.
fn parse(format: Format, text: &str, strict: bool) -> Option<Value> {
    match format {
        Format::Json | Format::Jsonc if text.trim().is_empty() => Some(Value::Object(Default::default())),
        Format::Json | Format::Jsonc if strict => serde_json::from_str(text).ok(),
        Format::Json | Format::Jsonc => {
            jsonc_parser::parse_to_serde_value(text, &jsonc_parser::ParseOptions::default()).ok()
        }
        Format::Toml => {
            let doc: toml_edit::DocumentMut = text.parse().ok()?;
            Some(table(doc.as_table()))
        }
    }
}

/// Whether the text is valid syntax, values unread.
fn syntax(format: Format, text: &str) -> bool {
    match format {
        Format::Json | Format::Jsonc => {
            text.trim().is_empty()
                || jsonc_parser::parse_to_ast(
                    text,
                    &jsonc_parser::CollectOptions::default(),
                    &jsonc_parser::ParseOptions::default(),
                )
                .is_ok()
        }
        Format::Toml => text.parse::<toml_edit::DocumentMut>().is_ok(),
    }
}

fn lookup<'v>(tree: &'v Value, path: &[String], key: &str) -> Option<&'v Value> {
    path.iter()
        .try_fold(tree, |node, segment| node.get(segment))?
        .get(key)
}

fn table(table: &toml_edit::Table) -> Value {
    Value::Object(
        table
            .iter()
            .filter_map(|(key, item)| Some((key.to_owned(), toml_item(item)?)))
            .collect(),
    )
}

fn toml_item(item: &toml_edit::Item) -> Option<Value> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(value) => Some(toml_value(value)),
        toml_edit::Item::Table(inner) => Some(table(inner)),
        toml_edit::Item::ArrayOfTables(array) => Some(Value::Array(array.iter().map(table).collect())),
    }
}

fn toml_value(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(text) => Value::String(text.value().clone()),
        toml_edit::Value::Integer(number) => Value::from(*number.value()),
        toml_edit::Value::Float(number) => Value::from(*number.value()),
        toml_edit::Value::Boolean(flag) => Value::Bool(*flag.value()),
        toml_edit::Value::Datetime(datetime) => Value::String(datetime.value().to_string()),
        toml_edit::Value::Array(items) => Value::Array(items.iter().map(toml_value).collect()),
        toml_edit::Value::InlineTable(inline) => Value::Object(
            inline
                .iter()
                .map(|(key, item)| (key.to_owned(), toml_value(item)))
                .collect(),
        ),
    }
}
