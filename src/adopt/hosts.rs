//! The hosts adopt knows, as data: one file per host under the repository's `adopt/`
//! folder, embedded in the binary. Each says where the host keeps its configuration
//! (per scope and OS), in which format, under which key path hcpx's entry goes and
//! what that entry is; this module reads them, expands their paths and fills in
//! their entries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
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
    /// scope -> OS (`linux`, `macos`, `windows` or `any`) -> the file, or the files
    /// the host reads in order of preference (the first that is there is edited; when
    /// none is, the first is made).
    pub scopes: BTreeMap<String, BTreeMap<String, Files>>,
    /// The host is started from a desktop, without the shell's PATH: its entry
    /// always names hcpx by its absolute path.
    #[serde(default)]
    pub gui: bool,
    /// scope -> what the host still needs from the person once its file is
    /// written (an approval, a trusted folder), in a sentence.
    #[serde(default)]
    pub then: BTreeMap<String, String>,
    #[serde(default)]
    pub native: Option<Native>,
}

/// One file, or several the host reads, in order of preference.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Files {
    One(String),
    FirstOf(Vec<String>),
}

impl Files {
    fn each(&self) -> &[String] {
        match self {
            Self::One(path) => std::slice::from_ref(path),
            Self::FirstOf(paths) => paths,
        }
    }
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

/// Every host hcpx knows, by id.
pub fn hosts() -> BTreeMap<String, Host> {
    HOSTS_DIR
        .files()
        .filter_map(|file| serde_json::from_slice::<Host>(file.contents()).ok())
        .map(|host| (host.host.clone(), host))
        .collect()
}

/// Up to three known host ids closest to `id`, best first: those `id` begins (`claude`
/// for `claude-code` and `claude-desktop`), else the nearest spellings.
pub fn closest<'a>(id: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let known: Vec<&str> = known.into_iter().collect();
    let wanted = id.to_lowercase();
    let prefixed: Vec<&str> = known
        .iter()
        .copied()
        .filter(|host| !wanted.is_empty() && host.starts_with(&wanted))
        .take(3)
        .collect();
    if prefixed.is_empty() {
        crate::suggest::closest(id, known)
    } else {
        prefixed
    }
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

/// The path of a scope's file on this OS: the first of its files that is there
/// (`exists` says), else the first.
pub fn scope_path(
    paths: &BTreeMap<String, Files>,
    env: &BTreeMap<String, String>,
    cwd: &Path,
    exists: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let files = paths.get(current_os()).or_else(|| paths.get("any"))?;
    let candidates: Vec<PathBuf> = files
        .each()
        .iter()
        .map(|path| expand(path, env, cwd))
        .collect::<Option<_>>()?;
    candidates
        .iter()
        .find(|path| exists(path))
        .or_else(|| candidates.first())
        .cloned()
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_closest_hosts_count_a_prefix() {
        let hosts = hosts();
        let known = || hosts.keys().map(String::as_str);
        assert_eq!(closest("claude", known()), ["claude-code", "claude-desktop"]);
        assert_eq!(closest("Claude", known()), ["claude-code", "claude-desktop"]);
        assert_eq!(closest("vs", known()), ["vscode"]);
        assert_eq!(closest("cursr", known()), ["cursor", "crush"]);
        assert_eq!(closest("claude-cod", known()), ["claude-code"]);
        assert!(closest("zzzzzz", known()).is_empty());
        assert!(closest("", known()).is_empty());
    }

    #[test]
    fn every_host_file_parses_and_names_its_file() {
        let hosts = hosts();
        let ids: Vec<&str> = hosts.keys().map(String::as_str).collect();
        assert_eq!(
            ids,
            [
                "amp",
                "antigravity",
                "claude-code",
                "claude-desktop",
                "cline",
                "codex",
                "copilot-cli",
                "crush",
                "cursor",
                "factory",
                "gemini",
                "kiro",
                "lm-studio",
                "mcp",
                "opencode",
                "qwen-code",
                "vscode",
                "windsurf",
                "zed"
            ]
        );
        let env: BTreeMap<String, String> = [("HOME".to_owned(), "/h".to_owned())].into();
        for host in hosts.values() {
            let paths = &host.scopes[&host.default_scope];
            assert!(
                scope_path(paths, &env, Path::new("/w"), |_| false).is_some(),
                "{}",
                host.host
            );
        }
    }

    /// A host that reads one of several files gets the first that is there edited,
    /// else the first made (opencode: `opencode.jsonc` when a project has one).
    #[test]
    fn the_first_file_there_is_the_one_edited() {
        let hosts = hosts();
        let paths = &hosts["opencode"].scopes["project"];
        let env: BTreeMap<String, String> = [("HOME".to_owned(), "/h".to_owned())].into();
        let pick = |there: &[&str]| {
            scope_path(paths, &env, Path::new("/w"), |path| {
                there.iter().any(|name| Path::new("/w").join(name) == path)
            })
        };
        assert_eq!(pick(&[]), Some(PathBuf::from("/w/opencode.json")));
        assert_eq!(
            pick(&["opencode.jsonc"]),
            Some(PathBuf::from("/w/opencode.jsonc"))
        );
        assert_eq!(
            pick(&["opencode.jsonc", "opencode.json"]),
            Some(PathBuf::from("/w/opencode.json"))
        );
        assert_eq!(
            pick(&[".opencode/opencode.jsonc"]),
            Some(PathBuf::from("/w/.opencode/opencode.jsonc"))
        );
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
