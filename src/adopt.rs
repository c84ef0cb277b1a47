//! `adopt`: the host data files under `adopt/` (embedded), where each host keeps its
//! configuration, and in-place edits of those files. JSON and JSONC go through a
//! concrete syntax tree and TOML through `toml_edit`, so comments, order, trailing
//! commas and every other setting stay as they were; only hcpx's own entry is added,
//! changed or removed.
//!
//! hcpx's entry is recognised by [`record`]: adopt notes in `$HCP_HOME/adopted.json`
//! what it wrote under which key of which file, and what was there before. [`plan`]
//! never replaces an entry adopt did not write unless forced, and undoing puts back
//! what was there: the file's old bytes (from `NAME.bak`) when nothing but adopt
//! changed it, else the previous entry under the key.

pub mod record;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde::Deserialize;
use serde_json::Value;

static HOSTS_DIR: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/adopt");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Json,
    Jsonc,
    Toml,
}

/// One host, as its data file describes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Host {
    pub host: String,
    pub name: String,
    pub format: Format,
    pub servers_path: Vec<String>,
    pub key: String,
    pub entry: Value,
    /// The entry for a server reached at a URL (`{url}`), for hosts that take one.
    #[serde(default)]
    pub url_entry: Option<Value>,
    pub default_scope: String,
    /// scope -> OS (`linux`, `macos`, `windows` or `any`) -> path.
    pub scopes: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    pub native: Option<Native>,
}

/// Where a shell agent reads skills and instructions, and how to set its env.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Native {
    #[serde(default)]
    pub skills: BTreeMap<String, String>,
    #[serde(default)]
    pub instructions: BTreeMap<String, String>,
    #[serde(default)]
    pub agent_env: Option<AgentEnv>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentEnv {
    pub format: Format,
    pub path: BTreeMap<String, String>,
    pub env_path: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// The file is not valid `syntax`; `at` is where the parser stopped, when it says.
    #[error("not valid {syntax}: {source}")]
    Unparsable {
        syntax: Syntax,
        at: Option<Position>,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The last key of `path` appears `count` times in one JSON object.
    #[error("`{}` appears {count} times in the file; keep one", last(path))]
    Duplicate { path: Vec<String>, count: usize },
    /// The top of the JSON file is not an object.
    #[error("the file is not a JSON object")]
    NotAJsonObject,
    /// `path`, in a JSON file, holds something other than an object.
    #[error("`{}` in the file is not an object", last(path))]
    NotAnObject { path: Vec<String> },
    /// `path`, in a TOML file, holds something other than a table.
    #[error("`{}` is not a table", last(path))]
    NotATable { path: Vec<String> },
    /// The value to set under `key` has no TOML form (a null, say).
    #[error("the value has no TOML form")]
    NoTomlForm { key: String },
    /// The key holds an entry that adopt did not write, and replacing it was not forced.
    #[error("`{key}` holds an entry that hcpx did not write")]
    Foreign { key: String, entry: Found },
    /// A file adopt writes whole (the hcpx skill) is there, and adopt did not write it.
    #[error("a file that hcpx did not write is there")]
    ForeignFile,
    #[error("{path} cannot be read: {why}")]
    Record { path: PathBuf, why: String },
    #[error("{0} is a link that never ends in a file")]
    LinkLoop(PathBuf),
    #[error(transparent)]
    State(#[from] crate::state::StateError),
}

/// An entry as a host file holds it: its value, and its text as written there.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub value: Value,
    pub text: String,
}

/// Every host hcpx knows, by id.
pub fn hosts() -> BTreeMap<String, Host> {
    HOSTS_DIR
        .files()
        .filter_map(|file| serde_json::from_slice::<Host>(file.contents()).ok())
        .map(|host| (host.host.clone(), host))
        .collect()
}

/// This build's OS, as host files name it.
pub fn current_os() -> &'static str {
    if cfg!(target_os = "macos") {
        "macos"
    } else if cfg!(windows) {
        "windows"
    } else {
        "linux"
    }
}

/// Expands `~`, `{config}`, `{codex}` and `%APPDATA%` in a host path; relative
/// paths are under the working directory.
pub fn expand(path: &str, env: &BTreeMap<String, String>, cwd: &Path) -> Option<PathBuf> {
    let home = env.get("HOME").filter(|home| !home.is_empty());
    let config = env
        .get("XDG_CONFIG_HOME")
        .filter(|dir| dir.starts_with('/'))
        .cloned()
        .or_else(|| home.map(|h| format!("{h}/.config")));
    let codex = env
        .get("CODEX_HOME")
        .filter(|dir| !dir.is_empty())
        .cloned()
        .or_else(|| home.map(|h| format!("{h}/.codex")));
    let mut expanded = path.to_owned();
    if let Some(rest) = expanded.strip_prefix("~/") {
        expanded = format!("{}/{rest}", home?);
    }
    if expanded.contains("{config}") {
        expanded = expanded.replace("{config}", &config?);
    }
    if expanded.contains("{codex}") {
        expanded = expanded.replace("{codex}", &codex?);
    }
    if expanded.contains("%APPDATA%") {
        expanded = expanded.replace("%APPDATA%", env.get("APPDATA")?);
    }
    let expanded = PathBuf::from(expanded);
    Some(if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    })
}

/// The path of a scope's file on this OS.
pub fn scope_path(
    paths: &BTreeMap<String, String>,
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> Option<PathBuf> {
    let path = paths.get(current_os()).or_else(|| paths.get("any"))?;
    expand(path, env, cwd)
}

/// The host's entry with the command and, when given, the environment filled in.
pub fn entry(host: &Host, command: &str, env: Option<&BTreeMap<String, String>>) -> Value {
    fn fill(value: &Value, command: &str, env: Option<&BTreeMap<String, String>>) -> Option<Value> {
        match value {
            Value::String(text) if text == "{command}" => Some(Value::String(command.to_owned())),
            Value::String(text) if text == "{env}" => {
                env.map(|env| serde_json::to_value(env).unwrap_or_default())
            }
            Value::Array(items) => Some(Value::Array(
                items.iter().filter_map(|item| fill(item, command, env)).collect(),
            )),
            Value::Object(map) => Some(Value::Object(
                map.iter()
                    .filter_map(|(key, item)| fill(item, command, env).map(|item| (key.clone(), item)))
                    .collect(),
            )),
            other => Some(other.clone()),
        }
    }
    fill(&host.entry, command, env).unwrap_or(Value::Null)
}

/// The host's entry for a server at `url`, when the host takes URL entries.
pub fn url_entry(host: &Host, url: &str) -> Option<Value> {
    fn fill(value: &Value, url: &str) -> Value {
        match value {
            Value::String(text) if text == "{url}" => Value::String(url.to_owned()),
            Value::Array(items) => Value::Array(items.iter().map(|item| fill(item, url)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| (key.clone(), fill(item, url)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    host.url_entry.as_ref().map(|entry| fill(entry, url))
}

/// Why `url` cannot go into a host file, if it cannot: only `http://` and
/// `https://` URLs, and never one that carries a user or password (no secret goes
/// into a host file).
pub fn url_problem(url: &str) -> Option<&'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let Some(rest) = rest else {
        return Some("the URL must start with http:// or https://");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Some("the URL has no host");
    }
    if authority.contains('@') {
        return Some("the URL carries a user or password, and no secret goes into a host file");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("the URL contains spaces or control characters");
    }
    None
}

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

/// The syntax a host's file is parsed as (JSONC is JSON here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Syntax {
    Json,
    Toml,
}

impl std::fmt::Display for Syntax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Json => "JSON",
            Self::Toml => "TOML",
        })
    }
}

/// A 1-based line and column in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// The last key of a key path, as messages name it.
fn last(path: &[String]) -> &str {
    path.last().map_or("", String::as_str)
}

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
fn edit_json(
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
fn edit_toml(
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

/// The file's new text with the entry set (`Some`) or removed (`None`).
pub fn edit(
    format: Format,
    text: &str,
    path: &[String],
    key: &str,
    value: Option<&Value>,
) -> Result<String, AdoptError> {
    edit_keeping(format, text, path, key, value, 0)
}

/// [`edit`], where a removal keeps the first `keep` containers of the path even
/// when they are left empty.
fn edit_keeping(
    format: Format,
    text: &str,
    path: &[String],
    key: &str,
    value: Option<&Value>,
    keep: usize,
) -> Result<String, AdoptError> {
    match format {
        Format::Json | Format::Jsonc => edit_json(text, path, key, value, keep),
        Format::Toml => edit_toml(text, path, key, value, keep),
    }
}

/// How many containers of `path`, from the top, the file already has.
fn containers(format: Format, text: &str, path: &[String]) -> Result<usize, AdoptError> {
    match format {
        Format::Json | Format::Jsonc => {
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
        Format::Toml => {
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
    }
}

/// The entry under `key` in `path`, when the file has one.
pub fn find(format: Format, text: &str, path: &[String], key: &str) -> Result<Option<Found>, AdoptError> {
    match format {
        Format::Json | Format::Jsonc => find_json(text, path, key),
        Format::Toml => find_toml(text, path, key),
    }
}

fn find_json(text: &str, path: &[String], key: &str) -> Result<Option<Found>, AdoptError> {
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

fn find_toml(text: &str, path: &[String], key: &str) -> Result<Option<Found>, AdoptError> {
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

/// Where the bytes of a host file are: links followed to their end, which may not
/// exist yet. The folder is made canonical when it exists, so that one file has one
/// name in the record.
pub fn resolve(path: &Path) -> Result<PathBuf, AdoptError> {
    /// As many links as Linux follows before ELOOP.
    const MAX_LINKS: usize = 40;
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let Ok(target) = std::fs::read_link(&current) else {
            let canonical = current
                .parent()
                .and_then(|dir| dir.canonicalize().ok())
                .zip(current.file_name())
                .map(|(dir, name)| dir.join(name));
            return Ok(canonical.unwrap_or(current));
        };
        current = match current.parent() {
            Some(dir) => dir.join(target),
            None => target,
        };
    }
    Err(AdoptError::LinkLoop(path.to_path_buf()))
}

/// Whether a file is there and must not be written: its owner has no write
/// permission (which root would ignore), or this process may not write it.
pub fn read_only(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o200 == 0
            || rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_err()
    }
    #[cfg(not(unix))]
    {
        meta.permissions().readonly()
    }
}

/// One key adopt sets or takes out in one file.
pub struct KeyEdit<'a> {
    pub format: Format,
    pub path: &'a [String],
    pub key: &'a str,
    /// The entry to write; `None` takes adopt's entry out.
    pub value: Option<&'a Value>,
    /// Replace an entry adopt did not write.
    pub force: bool,
}

/// What a [`KeyEdit`] does to a file and to the record.
#[derive(Debug, PartialEq)]
pub struct Rewrite {
    /// The file's new text; `None` deletes it (adopt created it, and nothing else
    /// changed it since).
    pub new: Option<String>,
    /// The record once the edit is written.
    pub record: record::Record,
    /// `--remove` found an entry under the key that adopt did not write, and left it.
    pub kept_foreign: bool,
}

/// Plans `change` on `file` (its record name, links followed), whose text is `old`
/// (`None`: no file yet); `backup` is the text of its `NAME.bak`, when there is one.
pub fn plan(
    recorded: &record::Record,
    file: &str,
    old: Option<&str>,
    backup: Option<&str>,
    change: &KeyEdit<'_>,
) -> Result<Rewrite, AdoptError> {
    use record::{EntryRecord, FileRecord, Original, Previous, digest};
    let text = old.unwrap_or("");
    let found = find(change.format, text, change.path, change.key)?;
    let own = recorded
        .entry(file, change.path, change.key)
        .filter(|entry| found.as_ref().is_some_and(|found| found.value == entry.wrote));
    let unchanged = |kept_foreign| Rewrite {
        new: Some(text.to_owned()),
        record: recorded.clone(),
        kept_foreign,
    };
    let mut record = recorded.clone();
    let Some(value) = change.value else {
        // Take out adopt's own entry only, putting back what was there before.
        let Some(own) = own else {
            return Ok(unchanged(found.is_some()));
        };
        let previous = own.previous.as_ref().map(|previous| &previous.value);
        let mut new = Some(edit_keeping(
            change.format,
            text,
            change.path,
            change.key,
            previous,
            own.path_existed,
        )?);
        if let Some(file_record) = record.files.get_mut(file) {
            file_record
                .entries
                .retain(|entry| !(entry.path == change.path && entry.key == change.key));
            let only_adopt = digest(text.as_bytes()) == file_record.after;
            if file_record.entries.is_empty() {
                match (only_adopt, &file_record.original) {
                    (true, Some(Original::Absent)) => new = None,
                    (true, Some(Original::Sha256(sum)))
                        if backup.is_some_and(|backup| digest(backup.as_bytes()) == *sum) =>
                    {
                        new = backup.map(str::to_owned);
                    }
                    _ => {}
                }
                record.files.remove(file);
            } else {
                if !only_adopt {
                    file_record.original = None;
                }
                file_record.after = digest(new.as_deref().unwrap_or_default().as_bytes());
            }
        }
        return Ok(Rewrite {
            new,
            record,
            kept_foreign: false,
        });
    };
    if found.as_ref().is_some_and(|found| found.value == *value) {
        return Ok(unchanged(false));
    }
    let path_existed = match own {
        Some(own) => own.path_existed,
        None => containers(change.format, text, change.path)?,
    };
    let previous = match (own, found) {
        (Some(own), _) => own.previous.clone(),
        (None, Some(found)) if change.force => Some(Previous { value: found.value }),
        (None, Some(found)) => {
            return Err(AdoptError::Foreign {
                key: change.key.to_owned(),
                entry: found,
            });
        }
        (None, None) => None,
    };
    let new = edit(change.format, text, change.path, change.key, Some(value))?;
    let before = digest(text.as_bytes());
    if old.is_none() {
        // The file is gone: what adopt noted about it no longer holds, and a new
        // file holds nothing of a person's.
        record.files.remove(file);
    }
    let file_record = record.files.entry(file.to_owned()).or_insert_with(|| FileRecord {
        original: Some(match old {
            None => Original::Absent,
            Some(_) => Original::Sha256(before.clone()),
        }),
        after: before.clone(),
        entries: Vec::new(),
    });
    if file_record.after != before {
        // Someone else changed the file since adopt wrote it: its old bytes can no
        // longer simply come back.
        file_record.original = None;
    }
    file_record.after = digest(new.as_bytes());
    file_record
        .entries
        .retain(|entry| !(entry.path == change.path && entry.key == change.key));
    file_record.entries.push(EntryRecord {
        path: change.path.to_vec(),
        key: change.key.to_owned(),
        wrote: value.clone(),
        previous,
        path_existed,
    });
    Ok(Rewrite {
        new: Some(new),
        record,
        kept_foreign: false,
    })
}

/// Plans a file adopt writes whole (the hcpx skill of `--native`), `file` being its
/// record name: `ours` is what adopt writes, `old` the file now (`None`: none), and
/// `backup` its `NAME.bak`. A file there that adopt did not write is replaced only
/// when forced; `remove` takes out only adopt's own file (or one identical to it),
/// giving back the file that was there before when `NAME.bak` still holds it.
pub fn plan_file(
    recorded: &record::Record,
    file: &str,
    old: Option<&str>,
    backup: Option<&str>,
    ours: &str,
    remove: bool,
    force: bool,
) -> Result<Rewrite, AdoptError> {
    use record::{FileRecord, Original, digest};
    let own_record = recorded.files.get(file);
    let is_own =
        |text: &str| text == ours || own_record.is_some_and(|own| own.after == digest(text.as_bytes()));
    let mut record = recorded.clone();
    let unchanged = |record, kept_foreign| Rewrite {
        new: old.map(str::to_owned),
        record,
        kept_foreign,
    };
    if remove {
        let Some(old) = old else {
            record.files.remove(file);
            return Ok(unchanged(record, false));
        };
        if !is_own(old) {
            // A person's file, or adopt's since changed by someone: theirs now.
            record.files.remove(file);
            return Ok(unchanged(record, true));
        }
        let original = own_record.and_then(|own| own.original.clone());
        record.files.remove(file);
        let new = match (original, backup) {
            (Some(Original::Sha256(sum)), Some(backup)) if digest(backup.as_bytes()) == sum => {
                Some(backup.to_owned())
            }
            _ => None,
        };
        return Ok(Rewrite {
            new,
            record,
            kept_foreign: false,
        });
    }
    if old == Some(ours) {
        return Ok(unchanged(record, false));
    }
    let original = match (old, own_record) {
        (Some(old), Some(own)) if own.after == digest(old.as_bytes()) => own.original.clone(),
        (Some(_), _) if !force => return Err(AdoptError::ForeignFile),
        (Some(old), _) => Some(Original::Sha256(digest(old.as_bytes()))),
        (None, _) => Some(Original::Absent),
    };
    record.files.insert(
        file.to_owned(),
        FileRecord {
            original,
            after: digest(ours.as_bytes()),
            entries: Vec::new(),
        },
    );
    Ok(Rewrite {
        new: Some(ours.to_owned()),
        record,
        kept_foreign: false,
    })
}

/// The marks around hcpx's block in an instructions file.
pub const BLOCK_BEGIN: &str =
    "<!-- hcpx:begin (written by `hcpx adopt --native`; a second run replaces it) -->";
pub const BLOCK_END: &str = "<!-- hcpx:end -->";

/// Puts `block` between the marks, replacing an earlier one (`Some`), or takes the
/// marked block out (`None`).
pub fn edit_block(text: &str, block: Option<&str>) -> String {
    let found = text.find(BLOCK_BEGIN).and_then(|start| {
        text[start..]
            .find(BLOCK_END)
            .map(|end| (start, start + end + BLOCK_END.len()))
    });
    let marked = block.map(|body| format!("{BLOCK_BEGIN}\n{}\n{BLOCK_END}", body.trim_end()));
    match (found, marked) {
        (Some((start, end)), Some(marked)) => format!("{}{marked}{}", &text[..start], &text[end..]),
        (Some((start, end)), None) => {
            // Also the newline after the block and the blank line adopt put before it.
            let after = text[end..].strip_prefix('\n').unwrap_or(&text[end..]);
            let before = text[..start]
                .strip_suffix("\n\n")
                .map_or(&text[..start], |b| &text[..b.len() + 1]);
            format!("{before}{after}")
        }
        (None, Some(marked)) if text.trim().is_empty() => format!("{marked}\n"),
        (None, Some(marked)) => {
            let separator = if text.ends_with('\n') { "\n" } else { "\n\n" };
            format!("{text}{separator}{marked}\n")
        }
        (None, None) => text.to_owned(),
    }
}

/// A unified diff of two texts, for `adopt` without `--write`.
pub fn diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(segments: &[&str]) -> Vec<String> {
        segments.iter().map(|s| (*s).to_owned()).collect()
    }

    fn ours() -> Value {
        json!({ "command": "hcpx", "args": ["mcp"] })
    }

    fn key_edit<'a>(servers: &'a [String], value: Option<&'a Value>, force: bool) -> KeyEdit<'a> {
        KeyEdit {
            format: Format::Json,
            path: servers,
            key: "hcp",
            value,
            force,
        }
    }

    #[test]
    fn plan_refuses_a_foreign_entry_and_forcing_records_it() {
        use record::{EntryRecord, FileRecord, Original, Previous, Record, digest};
        let servers = path(&["mcpServers"]);
        let ours = ours();
        let original = "{\"mcpServers\": {\"hcp\": {\"command\": \"old\"}}}\n";
        let refused = plan(
            &Record::default(),
            "/f",
            Some(original),
            None,
            &key_edit(&servers, Some(&ours), false),
        );
        let Err(AdoptError::Foreign { key, entry }) = refused else {
            panic!("{refused:?}");
        };
        assert_eq!(key, "hcp");
        assert_eq!(
            entry,
            Found {
                value: json!({ "command": "old" }),
                text: "{\"command\": \"old\"}".to_owned()
            }
        );
        let forced = plan(
            &Record::default(),
            "/f",
            Some(original),
            None,
            &key_edit(&servers, Some(&ours), true),
        )
        .unwrap();
        let new = forced.new.clone().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&new).unwrap(),
            json!({ "mcpServers": { "hcp": ours } })
        );
        let mut expected = Record::default();
        expected.files.insert(
            "/f".to_owned(),
            FileRecord {
                original: Some(Original::Sha256(digest(original.as_bytes()))),
                after: digest(new.as_bytes()),
                entries: vec![EntryRecord {
                    path: servers.clone(),
                    key: "hcp".to_owned(),
                    wrote: ours.clone(),
                    previous: Some(Previous {
                        value: json!({ "command": "old" }),
                    }),
                    path_existed: 1,
                }],
            },
        );
        assert_eq!(
            forced,
            Rewrite {
                new: Some(new.clone()),
                record: expected.clone(),
                kept_foreign: false
            }
        );
        // Adopt's own now: writing it again changes nothing.
        assert_eq!(
            plan(
                &expected,
                "/f",
                Some(&new),
                None,
                &key_edit(&servers, Some(&ours), false)
            )
            .unwrap(),
            Rewrite {
                new: Some(new.clone()),
                record: expected.clone(),
                kept_foreign: false
            }
        );
        // Removing with the backup intact gives the old bytes back.
        assert_eq!(
            plan(
                &expected,
                "/f",
                Some(&new),
                Some(original),
                &key_edit(&servers, None, false)
            )
            .unwrap(),
            Rewrite {
                new: Some(original.to_owned()),
                record: Record::default(),
                kept_foreign: false
            }
        );
        // Without it (or with another), the previous entry goes back under the key.
        let restored = plan(
            &expected,
            "/f",
            Some(&new),
            Some("{}"),
            &key_edit(&servers, None, false),
        )
        .unwrap();
        assert_eq!(
            restored.new.as_deref(),
            Some("{\"mcpServers\": {\"hcp\": {\n      \"command\": \"old\"\n    }}}\n")
        );
        assert_eq!(restored.record, Record::default());
        // The person's entry is not adopt's: removing again leaves it and says so.
        let text = restored.new.unwrap_or_default();
        assert_eq!(
            plan(
                &Record::default(),
                "/f",
                Some(&text),
                None,
                &key_edit(&servers, None, false)
            )
            .unwrap(),
            Rewrite {
                new: Some(text.clone()),
                record: Record::default(),
                kept_foreign: true
            }
        );
    }

    #[test]
    fn plan_file_writes_only_over_its_own_and_gives_the_original_back() {
        use record::{FileRecord, Original, Record, digest};
        let file = "/h/skills/hcpx/SKILL.md";
        let (ours, theirs) = ("ours\n", "theirs\n");
        let empty = Record::default();
        // Nothing there: written, recorded as created.
        let made = plan_file(&empty, file, None, None, ours, false, false).unwrap();
        let created = FileRecord {
            original: Some(Original::Absent),
            after: digest(ours.as_bytes()),
            entries: Vec::new(),
        };
        assert_eq!(made.new.as_deref(), Some(ours));
        assert_eq!(made.record.files, [(file.to_owned(), created.clone())].into());
        // A person's file: refused, then forced with its digest kept.
        assert!(matches!(
            plan_file(&empty, file, Some(theirs), None, ours, false, false),
            Err(AdoptError::ForeignFile)
        ));
        let forced = plan_file(&empty, file, Some(theirs), None, ours, false, true).unwrap();
        let over = FileRecord {
            original: Some(Original::Sha256(digest(theirs.as_bytes()))),
            ..created.clone()
        };
        assert_eq!(forced.record.files, [(file.to_owned(), over)].into());
        // An older version adopt wrote is its own: replaced, the original kept.
        let older = Record {
            files: [(
                file.to_owned(),
                FileRecord {
                    after: digest(b"old ours\n"),
                    ..forced.record.files[file].clone()
                },
            )]
            .into(),
            ..Record::default()
        };
        let updated = plan_file(&older, file, Some("old ours\n"), None, ours, false, false).unwrap();
        assert_eq!(updated.record, forced.record);
        // Removing: the backup comes back only when it is the recorded original.
        let back = plan_file(&forced.record, file, Some(ours), Some(theirs), ours, true, false).unwrap();
        assert_eq!(
            (back.new.as_deref(), back.record.files.len(), back.kept_foreign),
            (Some(theirs), 0, false)
        );
        let gone = plan_file(
            &forced.record,
            file,
            Some(ours),
            Some("other\n"),
            ours,
            true,
            false,
        )
        .unwrap();
        assert_eq!((gone.new, gone.kept_foreign), (None, false));
        let gone = plan_file(&made.record, file, Some(ours), None, ours, true, false).unwrap();
        assert_eq!((gone.new, gone.record.files.len()), (None, 0));
        // Edited since: left, and no longer recorded.
        let kept = plan_file(&made.record, file, Some("edited\n"), None, ours, true, false).unwrap();
        assert_eq!(
            (kept.new.as_deref(), kept.record.files.len(), kept.kept_foreign),
            (Some("edited\n"), 0, true)
        );
    }

    #[test]
    fn plan_deletes_a_file_adopt_made_unless_someone_else_changed_it() {
        use record::{Original, Record};
        let servers = path(&["mcpServers"]);
        let ours = ours();
        let made = plan(
            &Record::default(),
            "/f",
            None,
            None,
            &key_edit(&servers, Some(&ours), false),
        )
        .unwrap();
        assert_eq!(made.record.files["/f"].original, Some(Original::Absent));
        let text = made.new.unwrap_or_default();
        let removed = plan(
            &made.record,
            "/f",
            Some(&text),
            None,
            &key_edit(&servers, None, false),
        )
        .unwrap();
        assert_eq!(removed.new, None, "deleted");
        // Deleted by a person and made again: adopt made it, again.
        let again = plan(
            &made.record,
            "/f",
            None,
            None,
            &key_edit(&servers, Some(&ours), false),
        )
        .unwrap();
        assert_eq!(again.record, made.record);
        // A second key in the file was changed by a person: only the entry goes.
        let edited = text.replacen('{', "{\"theme\": \"dark\",", 1);
        let removed = plan(
            &made.record,
            "/f",
            Some(&edited),
            None,
            &key_edit(&servers, None, false),
        )
        .unwrap();
        assert_eq!(removed.new.as_deref(), Some("{\"theme\": \"dark\"\n}\n"));
        assert_eq!(removed.record, Record::default());
    }

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
    fn every_host_file_parses_and_names_its_file() {
        let hosts = hosts();
        let ids: Vec<&str> = hosts.keys().map(String::as_str).collect();
        assert_eq!(
            ids,
            [
                "claude-code",
                "claude-desktop",
                "codex",
                "copilot-cli",
                "cursor",
                "gemini",
                "mcp",
                "opencode",
                "vscode",
                "windsurf",
                "zed"
            ]
        );
        let env: BTreeMap<String, String> = [("HOME".to_owned(), "/h".to_owned())].into();
        for host in hosts.values() {
            let paths = &host.scopes[&host.default_scope];
            assert!(
                scope_path(paths, &env, Path::new("/w")).is_some(),
                "{}",
                host.host
            );
        }
    }

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
    fn marked_blocks_are_replaced_not_repeated_and_removable() {
        let original = "# Project rules\n\nUse tabs.\n";
        let added = edit_block(original, Some("first"));
        assert!(added.starts_with(original) && added.contains("first"));
        let again = edit_block(&added, Some("second"));
        assert_eq!(again.matches(BLOCK_BEGIN).count(), 1);
        assert!(again.contains("second") && !again.contains("first"));
        assert_eq!(edit_block(&again, None), original);
        assert_eq!(
            edit_block("", Some("x")),
            format!("{BLOCK_BEGIN}\nx\n{BLOCK_END}\n")
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

    #[test]
    fn unparsable_files_are_errors() {
        let text = "{ \"a\": ";
        let error = edit(Format::Json, text, &path(&["x"]), "k", Some(&json!(1))).unwrap_err();
        let parser = CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).unwrap_err();
        assert_eq!(error.to_string(), format!("not valid JSON: {parser}"));
        assert!(
            matches!(
                error,
                AdoptError::Unparsable {
                    syntax: Syntax::Json,
                    at: Some(Position { line: 1, .. }),
                    ..
                }
            ),
            "{error:?}"
        );
        let text = "a = 1\n[x";
        let error = edit(Format::Toml, text, &path(&["x"]), "k", Some(&json!({}))).unwrap_err();
        let parser = text.parse::<toml_edit::DocumentMut>().unwrap_err();
        assert_eq!(error.to_string(), format!("not valid TOML: {parser}"));
        assert!(
            matches!(
                error,
                AdoptError::Unparsable {
                    syntax: Syntax::Toml,
                    at: Some(Position { line: 2, .. }),
                    ..
                }
            ),
            "{error:?}"
        );
        let error = edit(Format::Json, "[1]", &path(&["x"]), "k", Some(&json!(1))).unwrap_err();
        assert!(matches!(error, AdoptError::NotAJsonObject), "{error:?}");
        assert_eq!(error.to_string(), "the file is not a JSON object");
    }

    /// A wrong shape names the key path where it is, and reads as it always has.
    #[test]
    fn wrong_shapes_name_their_key_path() {
        let error = edit(
            Format::Json,
            r#"{"a": {"b": 1}}"#,
            &path(&["a", "b"]),
            "k",
            Some(&json!(1)),
        )
        .unwrap_err();
        assert!(
            matches!(&error, AdoptError::NotAnObject { path } if *path == ["a", "b"]),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "`b` in the file is not an object");
        let error = edit(Format::Toml, "a = 1\n", &path(&["a"]), "k", Some(&json!({}))).unwrap_err();
        assert!(
            matches!(&error, AdoptError::NotATable { path } if *path == ["a"]),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "`a` is not a table");
        let error = edit(Format::Toml, "", &path(&["a"]), "k", Some(&Value::Null)).unwrap_err();
        assert!(
            matches!(&error, AdoptError::NoTomlForm { key } if key == "k"),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "the value has no TOML form");
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

    #[test]
    fn entries_fill_command_and_env_only_when_set() {
        let hosts = hosts();
        let opencode = &hosts["opencode"];
        assert_eq!(
            entry(opencode, "/bin/hcpx", None),
            json!({ "type": "local", "command": ["/bin/hcpx", "mcp"], "enabled": true })
        );
        let env: BTreeMap<String, String> = [("HCP_HOME".to_owned(), "/h".to_owned())].into();
        assert_eq!(
            entry(&hosts["mcp"], "hcpx", Some(&env)),
            json!({ "command": "hcpx", "args": ["mcp"], "env": { "HCP_HOME": "/h" } })
        );
    }
}
