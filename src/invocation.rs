//! From the caller's `KEY=VALUE` words to the pack CLI's argv (see docs/packs.md):
//! every key a declared parameter, every value checked against its type, pattern and
//! length, `path` values kept inside the working directory (links included), then
//! the template rendered with one value per argv element, never split, never able to
//! become an option.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::manifest::{Command, Param, ScalarType};
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

/// Parses and checks the `KEY=VALUE` words, then fills defaults.
pub fn parse(command: &Command, words: &[String], cwd: &Path) -> Result<Values, InvocationError> {
    let mut values = Values::new();
    for (index, word) in words.iter().enumerate() {
        let Some((key, value)) = word.split_once('=') else {
            return Err(InvocationError::NotAssignment { index: index + 1 });
        };
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
        check(param, value, cwd)?;
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

fn check(param: &Param, value: &str, cwd: &Path) -> Result<(), InvocationError> {
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
        check_path_on_disk(value, cwd).map_err(invalid)?;
    }
    Ok(())
}

/// The on-disk half of the `path` rule: the deepest existing ancestor of the path,
/// with every link resolved, must still be inside the working directory.
pub fn check_path_on_disk(value: &str, cwd: &Path) -> Result<(), String> {
    crate::manifest::check_relative_path(value)?;
    let root = cwd
        .canonicalize()
        .map_err(|_| "cannot be checked: the working directory is unreadable".to_owned())?;
    let mut path = cwd.to_path_buf();
    for component in Path::new(value).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::ParentDir => {
                path.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err("is not a relative path inside the working directory".into());
            }
        }
        // Resolve what exists so far: a link here could point anywhere.
        if let Ok(real) = path.canonicalize() {
            if !real.starts_with(&root) {
                return Err("leaves the working directory through a link".into());
            }
            path = real;
        } else if std::fs::symlink_metadata(&path).is_ok() {
            return Err("is a link that cannot be resolved".into());
        }
    }
    if !path.starts_with(&root) {
        return Err("leaves the working directory".into());
    }
    Ok(())
}

/// Renders the template: an element whose optional parameter is absent is dropped;
/// an element with an array parameter repeats once per value.
pub fn render(command: &Command, values: &Values, options: &[String]) -> Vec<String> {
    let mut argv = Vec::new();
    let mut options = Some(options);
    for element in &command.argv {
        // Options (the command's `json` flags) go before the template's own `--`,
        // where the CLI still reads options; else at the end.
        if matches!(element.pieces.as_slice(), [Piece::Literal(literal)] if literal == "--")
            && let Some(options) = options.take()
        {
            argv.extend(options.iter().cloned());
        }
        let names: Vec<&str> = element.params().map(|(name, _)| name).collect();
        if names
            .iter()
            .any(|name| values.get(*name).is_none_or(Vec::is_empty))
        {
            continue;
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
                    Piece::Param { name, .. } => {
                        let list = values.get(name).map(Vec::as_slice).unwrap_or_default();
                        let index = if Some(name.as_str()) == array { round } else { 0 };
                        text.push_str(list.get(index).map(String::as_str).unwrap_or_default());
                    }
                }
            }
            argv.push(text);
        }
    }
    if let Some(options) = options {
        argv.extend(options.iter().cloned());
    }
    argv
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
mod tests {
    use super::*;
    use crate::manifest;

    fn command() -> Command {
        let manifest = manifest::parse(
            &serde_json::json!({
                "hcp": 1, "id": "t", "version": "1.0.0", "description": "d", "bin": ["t"],
                "commands": { "c": {
                    "summary": "s", "effect": "read",
                    "params": {
                        "to": { "required": true },
                        "at": { "pattern": "[0-9]+" },
                        "n": { "type": "integer", "default": 5 },
                        "word": { "positional": true },
                        "file": { "type": "path" },
                        "tags": { "type": "array" }
                    },
                    "argv": ["c", "--to={to}", "--at={at?}", "-n{n}", "{word?}", "--", "{file?}", "{tags}"]
                }}
            })
            .to_string(),
        )
        .unwrap();
        manifest.commands.into_iter().next().unwrap()
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    fn render_words(list: &[&str]) -> Result<Vec<String>, InvocationError> {
        let command = command();
        let values = parse(&command, &words(list), &std::env::temp_dir())?;
        Ok(render(&command, &values, &[]))
    }

    #[test]
    fn renders_one_value_per_element_with_defaults_and_arrays() {
        assert_eq!(
            render_words(&["to=North Park", "tags=a b", "tags=--c"]).unwrap(),
            ["c", "--to=North Park", "-n5", "--", "a b", "--c"]
        );
        assert_eq!(
            render_words(&["to=x", "at=12", "word=w", "file=a/b"]).unwrap(),
            ["c", "--to=x", "--at=12", "-n5", "w", "--", "./a/b"]
        );
    }

    /// A path reaches the CLI as a file here, whatever else its text could mean.
    #[test]
    fn paths_are_anchored_to_the_working_directory() {
        for (given, passed) in [
            ("file:/etc/x.db", "./file:/etc/x.db"),
            ("host:repo", "./host:repo"),
            ("-", "./-"),
            ("a/b", "./a/b"),
            ("./a", "./a"),
            (".", "."),
        ] {
            let words = render_words(&["to=x", &format!("file={given}")]).unwrap();
            assert_eq!(words.last().map(String::as_str), Some(passed), "{given}");
        }
    }

    #[test]
    fn values_that_look_like_options_stay_values() {
        // Fused: the CLI reads `--to=--upload-pack=evil` as the value of --to.
        assert_eq!(
            render_words(&["to=--upload-pack=evil"]).unwrap()[1],
            "--to=--upload-pack=evil"
        );
        // Positional: refused outright.
        assert!(matches!(
            render_words(&["to=x", "word=-rf"]),
            Err(InvocationError::Invalid { name, .. }) if name == "word"
        ));
    }

    #[test]
    fn refusals() {
        assert_eq!(
            render_words(&["to"]),
            Err(InvocationError::NotAssignment { index: 1 })
        );
        assert_eq!(
            render_words(&["to=x", "frm=y"]),
            Err(InvocationError::Unknown {
                key: "frm".into(),
                closest: None,
                known: words(&["to", "at", "n", "word", "file", "tags"])
            })
        );
        assert_eq!(
            render_words(&["to=x", "wrod=y"]),
            Err(InvocationError::Unknown {
                key: "wrod".into(),
                closest: Some("word".into()),
                known: words(&["to", "at", "n", "word", "file", "tags"])
            })
        );
        assert_eq!(
            render_words(&["to=x", "to=y"]),
            Err(InvocationError::Repeated { name: "to".into() })
        );
        assert_eq!(
            render_words(&[]),
            Err(InvocationError::Missing { name: "to".into() })
        );
        assert!(matches!(
            render_words(&["to=x", "at=noon"]),
            Err(InvocationError::Invalid { .. })
        ));
        assert!(matches!(
            render_words(&["to=x", "n=five"]),
            Err(InvocationError::Invalid { .. })
        ));
        assert!(matches!(
            render_words(&["to=x", "file=../etc"]),
            Err(InvocationError::Invalid { .. })
        ));
    }

    #[test]
    fn messages_never_repeat_values() {
        let error = render_words(&["to=x", "at=SECRET"]).unwrap_err().to_string();
        assert!(!error.contains("SECRET"), "{error}");
        let error = render_words(&["SECRET=1"]).unwrap_err().to_string();
        assert!(!error.contains("SECRET"), "{error}");
    }

    #[test]
    fn links_out_of_the_working_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join("inside")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", cwd.join("out")).unwrap();
            std::os::unix::fs::symlink(cwd.join("inside"), cwd.join("ok")).unwrap();
        }
        assert_eq!(check_path_on_disk("inside/new-file", &cwd), Ok(()));
        assert_eq!(check_path_on_disk("ok/x", &cwd), Ok(()));
        assert_eq!(
            check_path_on_disk("out/passwd", &cwd),
            Err("leaves the working directory through a link".into())
        );
        assert_eq!(
            check_path_on_disk("out", &cwd),
            Err("leaves the working directory through a link".into())
        );
        assert_eq!(
            check_path_on_disk("inside/../../x", &cwd),
            Err("leaves the working directory".into())
        );
    }

    /// A command's `json` flags are options: they go before the template's `--`,
    /// never after it, where the CLI would read them as operands.
    #[test]
    fn options_go_before_the_templates_double_dash() {
        let command = crate::manifest::parse(
            r#"{"hcp":1,"id":"g","version":"1.0.0","description":"d","bin":["g"],
            "commands":{"c":{"summary":"s","effect":"read","params":{"p":{"type":"path","required":true}},
            "argv":["grep","-n","--","{p}"],"json":["--json"]},
            "d":{"summary":"s","effect":"read","argv":["list"],"json":["--json"]}}}"#,
        )
        .unwrap();
        let json = vec!["--json".to_owned()];
        let values = parse(command.command("c").unwrap(), &["p=x".to_owned()], Path::new("/")).unwrap();
        assert_eq!(
            render(command.command("c").unwrap(), &values, &json),
            ["grep", "-n", "--json", "--", "./x"]
        );
        let values = Values::new();
        assert_eq!(
            render(command.command("d").unwrap(), &values, &json),
            ["list", "--json"]
        );
    }
}
