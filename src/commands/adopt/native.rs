//! What `adopt --native` changes for a coding agent with a shell: the hcpx skill
//! where the host reads skills, a marked block in its instructions file, and
//! `HCP_AGENT=1` (with the pinned `HCP_HOME`) in its configuration. The skill and
//! the block name hcpx by the same command and home as the host's MCP entry, so an
//! agent's shell reaches the same binary and the same state. Part of [`super`].

use serde_json::Value;

use super::{Change, Keyed, Site, edit_failure, keyed_change, launch, pick, planned_change, read};
use crate::adopt::record::Record;
use crate::adopt::{self, Launch};
use crate::context::env_vars;
use crate::error::{Failure, Reason};
use crate::reply::Warning;

/// The hcpx skill that `--native` installs for a shell agent (and `adopt plugin`
/// puts in a plugin), as written for an agent that types plain `hcpx`.
pub(crate) const HCPX_SKILL: &str = include_str!("../../hcpx_skill.md");

/// The block `--native` puts in a host's instructions file.
const INSTRUCTIONS: &str = "## Command-line tools: use hcpx\n\n\
Run command-line tools through `hcpx` when a pack exists for the job: `hcpx search WORDS`, then \
`hcpx skill PACK`, then `hcpx exec PACK COMMAND -- KEY=VALUE`. Confirmation and credentials are the \
user's to give: on `needs_confirmation` or `unbound`, ask the user; never work around a refusal.";

/// The hcpx skill for an agent that starts hcpx as `launch` says: every command in
/// it written that way, and a line saying so for the `next` of hcpx's own results.
pub(crate) fn skill(launch: &Launch) -> String {
    if launch.is_plain() {
        return HCPX_SKILL.to_owned();
    }
    let text = launch.in_text(HCPX_SKILL);
    let note = format!(
        "Here hcpx runs as `{}`: type that where this skill or an hcpx result's `next` says `hcpx`.\n\n",
        launch.shell()
    );
    // After the title line, before the first paragraph.
    match text.split_once("# hcpx\n\n") {
        Some((head, body)) => format!("{head}# hcpx\n\n{note}{body}"),
        None => text,
    }
}

/// The instructions block for an agent that starts hcpx as `launch` says.
fn instructions(launch: &Launch) -> String {
    if launch.is_plain() {
        return INSTRUCTIONS.to_owned();
    }
    format!(
        "{}\n\nHere `hcpx` is `{}`: run it that way.",
        launch.in_text(INSTRUCTIONS),
        launch.shell()
    )
}

/// What `--native` changes: the skill, the instructions block, `HCP_AGENT=1` (and
/// `HCP_HOME` when pinned).
pub(super) fn changes(
    site: Site<'_>,
    record: &mut Record,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Change>, Failure> {
    let (ctx, host, scope, request) = (site.ctx, site.host, site.scope, site.request);
    let Some(native) = &host.native else {
        let agents: Vec<String> = adopt::hosts()
            .into_values()
            .filter(|host| host.native.is_some())
            .map(|host| host.host)
            .collect();
        return Err(Failure::new(
            Reason::InvalidArguments,
            format!(
                "{} has no shell agent; --native is for {}",
                host.name,
                agents.join(", ")
            ),
        ));
    };
    // An agent's shell has the person's PATH, as a terminal does: not a desktop's.
    let launch = launch(ctx, false);
    let remove = request.remove;
    let mut changes = Vec::new();
    if let Some(dir) = pick(&native.skills, scope, ctx) {
        let path = dir.join("hcpx").join("SKILL.md");
        let ours = skill(&launch);
        changes.push(planned_change(
            path,
            request,
            record,
            warnings,
            None,
            |record, file, old, backup| {
                adopt::plan_file(record, file, old, backup, &ours, remove, request.force)
            },
        )?);
    }
    if let Some(path) = pick(&native.instructions, scope, ctx) {
        let target = adopt::resolve(&path).map_err(|error| edit_failure(&path, request, error))?;
        let (old, existed) = read(&target)?;
        let block = instructions(&launch);
        let new = adopt::edit_block(&old, (!remove).then_some(block.as_str()));
        changes.push(Change {
            path,
            target,
            old,
            new: Some(new),
            existed,
            mode: None,
        });
    }
    if let Some(agent_env) = &native.agent_env
        && let Some(path) = pick(&agent_env.path, scope, ctx)
    {
        let agent = Value::String("1".to_owned());
        let home = launch
            .home
            .as_ref()
            .map(|home| Value::String(home.display().to_string()));
        changes.push(keyed_change(
            request,
            Keyed {
                path,
                format: agent_env.format,
                servers_path: &agent_env.env_path,
                keys: vec![("HCP_AGENT", Some(&agent)), (env_vars::HCP_HOME, home.as_ref())],
            },
            record,
            warnings,
        )?);
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_hcpx_skill_is_a_valid_skill() {
        let doc = crate::skill::parse(HCPX_SKILL, "hcpx").unwrap();
        assert!(doc.description.contains("Use it"));
        for command in ["hcpx search", "hcpx skill", "hcpx availability", "hcpx exec"] {
            assert!(doc.body.contains(command), "{command}");
        }
    }

    /// A skill for an hcpx that is not plain `hcpx` names it as the MCP entry does,
    /// in every command, and stays a valid skill.
    #[test]
    fn the_skill_and_block_use_the_entrys_command_and_home() {
        let launch = Launch {
            command: "/opt/hcpx/bin/hcpx".to_owned(),
            home: Some(PathBuf::from("/srv/hcp home")),
            other_on_path: None,
        };
        let shell = "HCP_HOME='/srv/hcp home' /opt/hcpx/bin/hcpx";
        assert_eq!(launch.shell(), shell);
        let text = skill(&launch);
        let doc = crate::skill::parse(&text, "hcpx").unwrap();
        for command in ["search", "skill", "availability", "exec"] {
            assert!(
                doc.body.contains(&format!("`{shell} {command}")),
                "{command}: {text}"
            );
        }
        assert!(!text.contains("`hcpx "), "{text}");
        assert!(
            doc.body
                .trim_start()
                .starts_with(&format!("# hcpx\n\nHere hcpx runs as `{shell}`")),
            "{text}"
        );
        let block = instructions(&launch);
        assert!(block.contains(&format!("`{shell} search WORDS`")), "{block}");
        assert!(!block.contains("`hcpx "), "{block}");
        let plain = Launch::new(None, None, false, None);
        assert_eq!(skill(&plain), HCPX_SKILL);
        assert_eq!(instructions(&plain), INSTRUCTIONS);
    }
}
