//! The skills extension (`io.modelcontextprotocol/skills`, see docs/mcp.md): each
//! pack that runs here (built in or installed, as `search` marks them) is a skill
//! at `skill://<id>/SKILL.md`, whose files are the author's `SKILL.md`, byte for
//! byte, and `references/commands.md`, the command reference `hcpx skill`
//! generates. `skills/list` and `skills/get` give each skill's front matter as
//! YAML reads it and every file's SHA-256 digest and size; `resources/read` serves
//! the same bytes. The list follows installs and uninstalls, which the server
//! already announces as a change of its resources ([`super::Changes`]).
//!
//! A pack whose id is no Agent Skills name (one with `.` or `_`), whose front
//! matter JSON cannot say as YAML does, or whose files do not fit in a message is
//! served only as `hcp://skill/<id>`.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetSkillResult, ListSkillsResult, Resource, ResourceContents, Skill, SkillFrontmatter, SkillResource,
    SkillResources,
};
use serde_json::Value;

use super::{Server, fit};
use crate::commands::skill::SkillFiles;

/// The file every skill has, at its root.
const SKILL_FILE: &str = "SKILL.md";
/// The generated command reference, beside it (the Agent Skills layout keeps
/// further reading under `references/`).
const REFERENCE_FILE: &str = "references/commands.md";
const MARKDOWN: &str = "text/markdown";
/// The most a skill's files may hold together: what the extension asks every
/// host to accept.
const SKILL_BYTES: usize = 16 * 1024 * 1024;
/// Room in a message for what surrounds one file's text (URI, MIME type, `_meta`).
const ENVELOPE_ROOM: usize = 16 * 1024;

/// One served skill: its entry and its files, by URI.
pub(crate) struct Served {
    pub(crate) skill: Skill,
    files: Vec<(String, String)>,
}

impl Served {
    /// A pack's skill as the extension serves it, or `None` when it cannot be
    /// served through the extension (see the module's header).
    fn new(files: SkillFiles) -> Option<Self> {
        let mut front = crate::skill::front_matter_json(&files.skill)?;
        let name = front.remove("name").and_then(text)?;
        let description = front.remove("description").and_then(text)?;
        let mut frontmatter = SkillFrontmatter::new(name, description);
        frontmatter.extra = front;
        let root = format!("skill://{}/", files.id);
        let files = vec![
            (format!("{root}{SKILL_FILE}"), files.skill),
            (format!("{root}{REFERENCE_FILE}"), files.reference),
        ];
        let fits = files
            .iter()
            .all(|(_, text)| fit::json_len(text) + ENVELOPE_ROOM <= fit::MAX_MESSAGE)
            && files.iter().map(|(_, text)| text.len()).sum::<usize>() <= SKILL_BYTES;
        let resources = files
            .iter()
            .map(|(uri, text)| SkillResource::from_bytes(uri.clone(), text.as_bytes()))
            .collect();
        let skill = Skill::new(files[0].0.clone(), frontmatter, SkillResources::Files(resources));
        (fits && skill.validate().is_ok()).then_some(Self { skill, files })
    }

    /// Its `SKILL.md` as `resources/list` shows it.
    fn listed(&self) -> Resource {
        let size = self.files[0].1.len();
        Resource::new(self.skill.uri.clone(), self.skill.frontmatter.name.clone())
            .with_description(self.skill.frontmatter.description.clone())
            .with_mime_type(MARKDOWN)
            .with_size(u64::try_from(size).unwrap_or(u64::MAX))
    }
}

fn text(value: Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text),
        _ => None,
    }
}

impl Server {
    /// The skills served now, ordered by URI.
    pub(crate) fn skills(&self) -> Vec<Served> {
        crate::commands::skill::served(&self.base)
            .into_iter()
            .filter_map(Served::new)
            .collect()
    }

    /// `skills/list`: every skill, on one page.
    pub(crate) fn list_skills_now(&self) -> ListSkillsResult {
        ListSkillsResult::with_all_items(self.skills().into_iter().map(|served| served.skill).collect())
    }

    /// `skills/get`: the skill whose `SKILL.md` is at `uri`; `-32602` (as the
    /// extension says) when no skill is served there.
    pub(crate) fn get_skill_now(&self, uri: &str) -> Result<GetSkillResult, McpError> {
        self.skills()
            .into_iter()
            .find(|served| served.skill.uri == uri)
            .map(|served| GetSkillResult::new(served.skill))
            .ok_or_else(|| McpError::invalid_params("no skill is served at that URI", None))
    }

    /// Each skill's `SKILL.md`, for `resources/list`.
    pub(crate) fn skill_resources(&self) -> Vec<Resource> {
        self.skills().iter().map(Served::listed).collect()
    }

    /// A skill's file, exactly the bytes its digest covers, or `None` when no
    /// served skill has a file at `uri`.
    pub(crate) fn skill_file(&self, uri: &str) -> Option<ResourceContents> {
        self.skills().into_iter().find_map(|served| {
            served
                .files
                .into_iter()
                .find(|(file, _)| file == uri)
                .map(|(_, text)| ResourceContents::text(text, uri).with_mime_type(MARKDOWN))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(id: &str, skill: &str) -> SkillFiles {
        SkillFiles {
            id: id.to_owned(),
            skill: skill.to_owned(),
            reference: "## Command reference\n".to_owned(),
        }
    }

    #[test]
    fn a_skill_entry_is_the_front_matter_and_both_files_digests() {
        let skill = "---\nname: demo\ndescription: Does a thing.\nlicense: MIT\n---\n# Demo\n";
        let served = Served::new(files("demo", skill)).unwrap();
        assert_eq!(
            serde_json::to_value(&served.skill).unwrap(),
            serde_json::json!({
                "uri": "skill://demo/SKILL.md",
                "frontmatter": { "name": "demo", "description": "Does a thing.", "license": "MIT" },
                "resources": [
                    {
                        "uri": "skill://demo/SKILL.md",
                        "digest": rmcp::model::sha256_digest(skill.as_bytes()),
                        "size": skill.len()
                    },
                    {
                        "uri": "skill://demo/references/commands.md",
                        "digest": rmcp::model::sha256_digest(b"## Command reference\n"),
                        "size": 21
                    }
                ]
            })
        );
    }

    #[test]
    fn what_the_extension_cannot_carry_is_not_served_through_it() {
        // An id that is no Agent Skills name.
        let dotted = "---\nname: my.tool\ndescription: x\n---\n";
        assert!(Served::new(files("my.tool", dotted)).is_none());
        // Front matter JSON cannot say as YAML does.
        let infinite = "---\nname: demo\ndescription: x\nratio: .inf\n---\n";
        assert!(Served::new(files("demo", infinite)).is_none());
        // A file no message can hold.
        let huge = format!(
            "---\nname: demo\ndescription: x\n---\n{}",
            "\u{1}".repeat(2 * 1024 * 1024)
        );
        assert!(Served::new(files("demo", &huge)).is_none());
    }
}
