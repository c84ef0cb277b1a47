//! The typed model of a manifest, as the validator returns it: what a pack is, its
//! commands and their parameters, bindings and sandbox, and the checks a caller's
//! value must pass against its parameter.

use std::fmt;

use regex::Regex;
use serde::Serialize;

use super::DEFAULT_TIMEOUT_MS;
use crate::template::Element;

/// One manifest problem: `commands.plan.argv[2]: unknown parameter "frm"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

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
    pub pattern: Option<Regex>,
    pub pattern_source: Option<String>,
    /// `refuse`: a value in which this matches anywhere is refused (what a CLI
    /// would read as something the pack must not do, such as a file outside).
    pub refuse: Option<Regex>,
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
            && !pattern.is_match(value)
        {
            let source = self.pattern_source.as_deref().unwrap_or_default();
            return Err(format!("does not match the pattern {source}"));
        }
        if let Some(refuse) = &self.refuse
            && refuse.is_match(value)
        {
            let source = self.refuse_source.as_deref().unwrap_or_default();
            return Err(format!("contains what this parameter refuses ({source})"));
        }
        Ok(())
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
}

impl Command {
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|param| param.name == name)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BindingSpec {
    pub description: Option<String>,
    pub secret: bool,
    pub required: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSpec {
    pub network: bool,
    pub write: Vec<String>,
    /// Files and folders beyond the working directory and the system folders that
    /// every command of the pack may read: absolute, or `~/…` in the caller's home.
    pub read: Vec<String>,
    /// Unix socket paths the pack may connect to (absolute); no other unix socket
    /// opens, with or without the network.
    pub sockets: Vec<String>,
    pub timeout_ms: u64,
}

impl Default for SandboxSpec {
    fn default() -> Self {
        Self {
            network: false,
            write: Vec::new(),
            read: Vec::new(),
            sockets: Vec::new(),
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
}

impl Manifest {
    pub fn command(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|command| command.name == name)
    }

    /// The file inside the pack that `bin` names (`./transit` → `transit`), if any.
    pub fn bin_file(&self) -> Option<&str> {
        self.bin.first().and_then(|first| first.strip_prefix("./"))
    }
}
