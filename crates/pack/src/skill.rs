//! `SKILL.md` in the Agent Skills format: YAML front matter with `name` (equal to the
//! pack id) and `description` (at most 1,024 characters), then Markdown. Text in, no
//! I/O. The body is the pack author's words; hcpx shows it and never obeys it.

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

use crate::manifest::{MAX_DESCRIPTION, Problem};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDoc {
    pub name: String,
    pub description: String,
    /// The whole file, front matter included, exactly as the author wrote it.
    pub text: String,
    /// The Markdown after the front matter.
    pub body: String,
}

fn problem(message: impl Into<String>) -> Problem {
    Problem {
        path: "SKILL.md".to_owned(),
        message: message.into(),
    }
}

/// Splits `---\n…\n---\n` front matter from the body.
fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

pub fn parse(text: &str, expected_id: &str) -> Result<SkillDoc, Vec<Problem>> {
    let Some((front, body)) = split(text) else {
        return Err(vec![problem(
            "must start with YAML front matter between two `---` lines",
        )]);
    };
    let docs = YamlLoader::load_from_str(front)
        .map_err(|error| vec![problem(format!("front matter is not valid YAML: {error}"))])?;
    let Some(Yaml::Hash(map)) = docs.first() else {
        return Err(vec![problem(
            "front matter must be a YAML mapping with name and description",
        )]);
    };
    let mut problems = Vec::new();
    let field = |key: &str| {
        map.get(&Yaml::String(key.to_owned()))
            .and_then(Yaml::as_str)
            .map(str::to_owned)
    };
    let name = field("name");
    match &name {
        None => problems.push(problem("front matter needs `name`, equal to the pack id")),
        Some(name) if name != expected_id => {
            problems.push(problem(format!(
                "front matter `name` is \"{name}\", but the pack id is \"{expected_id}\""
            )));
        }
        Some(_) => {}
    }
    let description = field("description");
    match &description {
        None => problems.push(problem(
            "front matter needs `description`: what the pack does and when to use it",
        )),
        Some(text) if text.trim().is_empty() => problems.push(problem("front matter `description` is empty")),
        Some(text) if text.chars().count() > MAX_DESCRIPTION => problems.push(problem(format!(
            "front matter `description` has {} characters; at most {MAX_DESCRIPTION}",
            text.chars().count()
        ))),
        Some(_) => {}
    }
    match (name, description) {
        (Some(name), Some(description)) if problems.is_empty() => Ok(SkillDoc {
            name,
            description: description.trim().to_owned(),
            text: text.to_owned(),
            body: body.to_owned(),
        }),
        _ => Err(problems),
    }
}

/// The front matter of a `SKILL.md` as a JSON object, every field the author wrote
/// as YAML reads it (what the MCP skills extension serves as a skill's
/// `frontmatter`): `None` when there is no front matter, it is not a mapping, or it
/// holds what JSON cannot say the same way (a key that is not a scalar, a number
/// that is not finite, an unresolved alias).
pub fn front_matter_json(text: &str) -> Option<Map<String, Value>> {
    let (front, _) = split(text)?;
    let docs = YamlLoader::load_from_str(front).ok()?;
    match to_json(docs.first()?)? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn to_json(yaml: &Yaml) -> Option<Value> {
    Some(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(value) => Value::Bool(*value),
        Yaml::Integer(value) => Value::Number((*value).into()),
        Yaml::Real(text) => Value::Number(Number::from_f64(yaml.as_f64().or_else(|| text.parse().ok())?)?),
        Yaml::String(text) => Value::String(text.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect::<Option<_>>()?),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(key, value)| Some((key_text(key)?, to_json(value)?)))
                .collect::<Option<_>>()?,
        ),
        Yaml::Alias(_) | Yaml::BadValue => return None,
    })
}

/// A mapping key as JSON writes it: strings as they are, other scalars as YAML
/// spelled them.
fn key_text(key: &Yaml) -> Option<String> {
    match key {
        Yaml::String(text) | Yaml::Real(text) => Some(text.clone()),
        Yaml::Integer(value) => Some(value.to_string()),
        Yaml::Boolean(value) => Some(value.to_string()),
        Yaml::Null => Some("null".to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_front_matter_and_body() {
        let doc = parse(
            "---\nname: demo\ndescription: >\n  Does a thing.\n  Use it when.\n---\n# Demo\n",
            "demo",
        )
        .unwrap();
        assert_eq!(doc.name, "demo");
        assert_eq!(doc.description, "Does a thing. Use it when.");
        assert_eq!(doc.body, "# Demo\n");
    }

    #[test]
    fn refuses_missing_front_matter() {
        let problems = parse("# Demo\n", "demo").unwrap_err();
        assert_eq!(
            problems[0].to_string(),
            "SKILL.md: must start with YAML front matter between two `---` lines"
        );
    }

    #[test]
    fn refuses_name_other_than_id() {
        let problems = parse("---\nname: other\ndescription: x\n---\n", "demo").unwrap_err();
        assert_eq!(
            problems,
            vec![problem(
                "front matter `name` is \"other\", but the pack id is \"demo\""
            )]
        );
    }

    #[test]
    fn refuses_long_or_missing_description() {
        let long = format!("---\nname: demo\ndescription: {}\n---\n", "a".repeat(1025));
        let problems = parse(&long, "demo").unwrap_err();
        assert!(problems[0].message.contains("1025 characters"), "{problems:?}");
        let problems = parse("---\nname: demo\n---\n", "demo").unwrap_err();
        assert!(problems[0].message.contains("needs `description`"));
        // Exactly 1,024 is fine.
        let edge = format!("---\nname: demo\ndescription: {}\n---\n", "é".repeat(1024));
        assert!(parse(&edge, "demo").is_ok());
    }

    #[test]
    fn refuses_invalid_yaml() {
        let problems = parse("---\nname: [demo\n---\n", "demo").unwrap_err();
        assert!(problems[0].message.starts_with("front matter is not valid YAML"));
    }

    #[test]
    fn front_matter_as_json_keeps_every_field_as_yaml_reads_it() {
        let text = "---\nname: demo\ndescription: >\n  Does a thing.\n  Use it when.\nlicense: MIT\n\
                    metadata:\n  version: \"1.2\"\n  count: 3\n  ratio: 0.5\n  tags: [a, b]\n  on: true\n  none: ~\n---\n# Demo\n";
        assert_eq!(
            Value::Object(front_matter_json(text).unwrap()),
            serde_json::json!({
                "name": "demo",
                "description": "Does a thing. Use it when.\n",
                "license": "MIT",
                "metadata": { "version": "1.2", "count": 3, "ratio": 0.5, "tags": ["a", "b"], "on": true, "none": null }
            })
        );
        // What JSON cannot say the same way is no front matter at all.
        assert_eq!(front_matter_json("---\nname: demo\nx: .inf\n---\n"), None);
        assert_eq!(front_matter_json("---\n[a, b]: 1\n---\n"), None);
        assert_eq!(front_matter_json("---\n- a\n---\n"), None);
        assert_eq!(front_matter_json("# no front matter\n"), None);
    }
}
