//! The typed model of a manifest, as the validator returns it: what a pack is, its
//! commands and their parameters, bindings and sandbox, and the checks a caller's
//! value must pass against its parameter.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::DEFAULT_TIMEOUT_MS;
use crate::template::Element;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Read,
    Write,
    Destructive,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Destructive => "destructive",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            "destructive" => Some(Self::Destructive),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarType {
    String,
    Integer,
    Number,
    Boolean,
    Enum,
    Path,
}

impl ScalarType {
    pub(super) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            "enum" => Self::Enum,
            "path" => Self::Path,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Enum => "enum",
            Self::Path => "path",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub ty: ScalarType,
    /// `type: "array"`: the key may repeat; each value has type `ty`.
    pub array: bool,
    pub required: bool,
    pub positional: bool,
    pub values: Vec<String>,
    pub pattern: Option<Pattern>,
    pub pattern_source: Option<String>,
    /// `refuse`: a value in which this matches anywhere is refused (what a CLI
    /// would read as something the pack must not do, such as a file outside).
    pub refuse: Option<Pattern>,
    pub refuse_source: Option<String>,
    /// The default, already rendered to argv strings (one per array item).
    pub default: Option<Vec<String>>,
    pub description: Option<String>,
    pub max_length: usize,
    /// `"flag": "--utc"` on a boolean: the template's `{name}` element is this
    /// text when the value is `true`, and nothing when it is `false`.
    pub flag: Option<String>,
}

impl Param {
    /// `array of string`, `enum (a|b)`, `integer`, `boolean (true gives --utc)`: for
    /// references and errors.
    pub fn type_label(&self) -> String {
        let base = match self.ty {
            ScalarType::Enum => format!("enum ({})", self.values.join("|")),
            other => other.as_str().to_owned(),
        };
        if self.array {
            format!("array of {base}")
        } else if let Some(flag) = &self.flag {
            format!("{base} (true gives {flag})")
        } else {
            base
        }
    }

    /// Checks one caller value against the type, `values`, `pattern` and
    /// `maxLength`. The message never repeats the value.
    pub fn check(&self, value: &str) -> Result<(), String> {
        if value.len() > self.max_length {
            return Err(format!("is longer than {} bytes", self.max_length));
        }
        if value.contains('\0') {
            return Err("contains a NUL byte".to_owned());
        }
        match self.ty {
            ScalarType::String | ScalarType::Path => {}
            ScalarType::Integer => {
                if value.parse::<i64>().is_err() {
                    return Err("is not an integer".to_owned());
                }
            }
            ScalarType::Number => {
                let finite = value.parse::<f64>().is_ok_and(f64::is_finite);
                let plain = value.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
                if !finite || !plain {
                    return Err("is not a number".to_owned());
                }
            }
            ScalarType::Boolean => {
                if value != "true" && value != "false" {
                    return Err("is not `true` or `false`".to_owned());
                }
            }
            ScalarType::Enum => {
                if !self.values.iter().any(|allowed| allowed == value) {
                    return Err(format!("is not one of: {}", self.values.join(", ")));
                }
            }
        }
        if self.ty == ScalarType::Path {
            check_relative_path(value)?;
        }
        if let Some(pattern) = &self.pattern
            && !pattern.is_match(value)?
        {
            let source = self.pattern_source.as_deref().unwrap_or_default();
            return Err(format!("does not match the pattern {source}"));
        }
        if let Some(refuse) = &self.refuse
            && refuse.is_match(value)?
        {
            let source = self.refuse_source.as_deref().unwrap_or_default();
            return Err(format!("contains what this parameter refuses ({source})"));
        }
        Ok(())
    }
}

/// A parameter's regular expression: its syntax is checked when the manifest is
/// read, and it is compiled the first time a value is checked against it. Exec reads
/// the pack's manifest on every call, and compiling every pattern of every command
/// there (kubectl's bounded repetitions, `(,[a-z][a-z0-9.-]{0,252}){0,15}`) cost
/// 30 ms a call for one command's few values.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// `None` when `source` is not a regular expression.
    pub fn new(source: &str) -> Option<Self> {
        regex_syntax::Parser::new().parse(source).ok()?;
        Some(Self {
            source: source.to_owned(),
            compiled: OnceLock::new(),
        })
    }

    /// Whether `text` matches; an error when the expression, valid as it is, is
    /// too large to compile (nothing then passes it).
    pub fn is_match(&self, text: &str) -> Result<bool, String> {
        self.compiled
            .get_or_init(|| Regex::new(&self.source).ok())
            .as_ref()
            .map(|regex| regex.is_match(text))
            .ok_or_else(|| {
                "has a pattern too large for this hcpx to compile; the pack must simplify it".to_owned()
            })
    }
}

/// The lexical part of the `path` rule: relative, and never above the working
/// directory once `.` and `..` are resolved. Links are checked by exec, on disk.
pub fn check_relative_path(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("is an empty path".to_owned());
    }
    if value.starts_with('/') || value.starts_with('~') {
        return Err("is not a relative path inside the working directory".to_owned());
    }
    let mut depth: i64 = 0;
    for part in value.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return Err("leaves the working directory".to_owned());
                }
            }
            _ => depth += 1,
        }
    }
    Ok(())
}

/// One unit of a command's template, as the validator read it (see docs/packs.md).
#[derive(Debug, Clone)]
pub enum Slot {
    /// One argv element: literal text and value placeholders.
    Element(Element),
    /// An option and its value as two argv elements (`"--url", "{url}"`): both are
    /// left out when the parameter has no value, and repeated, in order, for each
    /// value of an array. A value that starts with `-` is refused.
    Separated { option: String, param: String },
    /// A boolean parameter's `flag` (`"{utc}"` with `"flag": "--utc"`): that text
    /// when the value is `true`, nothing when it is `false` or absent.
    Flag { param: String, text: String },
}

#[derive(Debug, Clone)]
pub struct Command {
    pub name: String,
    pub summary: String,
    pub description: Option<String>,
    pub effect: Effect,
    pub params: Vec<Param>,
    pub argv: Vec<Slot>,
    pub json: Vec<String>,
    /// `write`: replaces the pack's `sandbox.write` for this command (`None`: the
    /// pack's). A `read` command has none.
    pub write: Option<Vec<WriteItem>>,
    /// `network`: replaces the pack's `sandbox.network` for this command.
    pub network: Option<super::network::Network>,
    /// `okExitCodes`: the exit codes that mean success (default `[0]`).
    pub ok_exit_codes: Vec<i32>,
    /// `stdin`: the `as: "stdin"` binding written to this command's standard input.
    pub stdin: Option<String>,
}

/// One item of a command's `write`: a fixed path relative to the working directory,
/// or a `path` parameter (`"{into}"`), granting the folder the caller names (created
/// beneath the working directory at spawn when missing; nothing when absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum WriteItem {
    Path(String),
    Param(String),
}

impl Command {
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|param| param.name == name)
    }

    /// Whether `code` is one of the exit codes that mean success for this command.
    pub fn exit_ok(&self, code: i32) -> bool {
        self.ok_exit_codes.contains(&code)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BindingSpec {
    pub description: Option<String>,
    pub secret: bool,
    pub required: bool,
    /// `as` (and `format`): how the CLI receives the value.
    #[serde(rename = "as")]
    pub delivery: Delivery,
}

/// How a bound value reaches the pack's CLI (`bindings.NAME.as`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Delivery {
    /// The variable `NAME` holds the value (the default).
    Env,
    /// A 0600 file in the call's private temporary folder holds the value (or
    /// `format` with `{value}` replaced by it); the variable `NAME` holds its path,
    /// and `{NAME}` in an argv element renders that path.
    File { format: Option<String> },
    /// Written, with nothing added, to the standard input of the commands that name
    /// it in their `stdin`.
    Stdin,
    /// Never given to the CLI: hcpx's proxy sets the header `header` to `format`
    /// with `{value}` replaced, on HTTPS requests to `hosts` (which the allowlist
    /// names), replacing whatever the CLI sent in it.
    Header {
        header: String,
        format: String,
        hosts: Vec<super::network::Host>,
    },
}

impl Delivery {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Env => "env",
            Self::File { .. } => "file",
            Self::Stdin => "stdin",
            Self::Header { .. } => "header",
        }
    }
}

/// The value of a `sandbox.env` variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EnvValue {
    /// Fixed text.
    Fixed(String),
    /// `{cache}` or `{cache}/SUB`: a path in the pack's own persistent cache folder
    /// (the relative part after `{cache}/`, empty for the folder itself).
    Cache(String),
}

/// What a pack that wraps a program of the machine says about that program
/// (`program`): the other names it goes by, which variant the pack supports, how
/// to tell, and how to get it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgramSpec {
    /// Other names of the same program, tried in order after `bin[0]` (Debian's
    /// `fd` is `fdfind`).
    pub aliases: Vec<String>,
    /// Which variant of the program the pack supports, in words
    /// (`"kislyuk/yq, the jq wrapper (Debian's and PyPI's yq)"`).
    pub variant: Option<String>,
    /// Arguments that make the program print its version (`["--version"]`).
    pub version_args: Vec<String>,
    /// A pattern the output of `versionArgs` matches for the supported variant.
    pub version_pattern: Option<String>,
    /// How to install it, per package manager (`apt`, `brew`, ...): the words after
    /// that manager's install command.
    pub install: Vec<(String, String)>,
    pub homepage: Option<String>,
}

/// The package managers `program.install` may name, with the command that installs
/// with each (the package words follow it).
pub const INSTALLERS: [(&str, &str); 9] = [
    ("apt", "sudo apt-get install"),
    ("brew", "brew install"),
    ("dnf", "sudo dnf install"),
    ("pacman", "sudo pacman -S"),
    ("pip", "python3 -m pip install --user"),
    ("pipx", "pipx install"),
    ("npm", "npm install --global"),
    ("cargo", "cargo install"),
    ("go", "go install"),
];

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSpec {
    pub network: super::network::Network,
    pub write: Vec<String>,
    /// Files and folders beyond the working directory and the system folders that
    /// every command of the pack may read: absolute, or `~/…` in the caller's home.
    pub read: Vec<String>,
    /// Unix socket paths the pack may connect to (absolute); no other unix socket
    /// opens, with or without the network.
    pub sockets: Vec<String>,
    /// Variables set for every command: fixed text or paths under `{cache}`.
    pub env: Vec<(String, EnvValue)>,
    pub timeout_ms: u64,
}

impl Default for SandboxSpec {
    fn default() -> Self {
        Self {
            network: super::network::Network::Off,
            write: Vec::new(),
            read: Vec::new(),
            sockets: Vec::new(),
            env: Vec::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Manifest {
    pub id: String,
    pub version: semver::Version,
    pub description: String,
    pub keywords: Vec<String>,
    pub bin: Vec<String>,
    pub bindings: Vec<(String, BindingSpec)>,
    pub sandbox: SandboxSpec,
    pub commands: Vec<Command>,
    /// `program`: for a pack whose `bin` is a program of the machine.
    pub program: Option<ProgramSpec>,
}

impl Manifest {
    pub fn command(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|command| command.name == name)
    }

    pub fn binding(&self, name: &str) -> Option<&BindingSpec> {
        self.bindings
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, spec)| spec)
    }

    /// Whether any variable of `sandbox.env` lives in the pack's cache folder.
    pub fn uses_cache(&self) -> bool {
        self.sandbox
            .env
            .iter()
            .any(|(_, value)| matches!(value, EnvValue::Cache(_)))
    }

    /// The file inside the pack that `bin` names (`./transit` → `transit`), if any.
    pub fn bin_file(&self) -> Option<&str> {
        self.bin.first().and_then(|first| first.strip_prefix("./"))
    }
}

#[cfg(test)]
mod pattern_tests {
    use super::Pattern;

    #[test]
    fn a_pattern_is_compiled_at_its_first_check_only() {
        let pattern = Pattern::new("^(?:[a-z]{0,252}(,[a-z]{0,252}){0,15})$").unwrap();
        assert!(pattern.compiled.get().is_none());
        assert_eq!(pattern.is_match("ab,cd"), Ok(true));
        assert_eq!(pattern.is_match("AB"), Ok(false));
        assert!(pattern.compiled.get().is_some());
        assert!(Pattern::new("a)|(b").is_none());
    }

    #[test]
    fn a_pattern_too_large_to_compile_passes_nothing() {
        let pattern = Pattern::new("[a-z]{1000}{1000}").unwrap();
        assert_eq!(
            pattern.is_match("a"),
            Err("has a pattern too large for this hcpx to compile; the pack must simplify it".to_owned())
        );
    }
}
