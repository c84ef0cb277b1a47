//! `hcpx adopt HOST [--write] [--remove] [--scope project|user] [--yes]`: plugs hcpx
//! into a host's configuration (SPEC §9). Without `--write` it shows the file and a
//! diff; with it, it edits in place, keeps the old file as `NAME.bak` and writes
//! atomically. `--write` is a write command of the pseudo-pack `hcp` (`hcp.adopt`).

use std::collections::BTreeMap;

use serde_json::json;

use super::{Asked, confirm, to_json};
use crate::Reply;
use crate::adopt::{self, AdoptError, Host};
use crate::availability::resolve_program;
use crate::context::{Context, env_vars};
use crate::error::{Failure, Reason};
use crate::state;

/// What to do.
pub struct Request<'a> {
    pub host: &'a str,
    pub write: bool,
    pub remove: bool,
    pub scope: Option<&'a str>,
    pub native: bool,
    pub yes: bool,
}

fn find_host(id: &str) -> Result<Host, Failure> {
    let mut hosts = adopt::hosts();
    let known: Vec<String> = hosts.keys().cloned().collect();
    hosts.remove(id).ok_or_else(|| {
        Failure::new(
            Reason::InvalidArguments,
            format!("unknown host; hcpx knows: {}", known.join(", ")),
        )
        .next("hcpx adopt mcp")
        .data(json!({ "hosts": known }))
    })
}

/// The command a host should start: `hcpx` when PATH finds it, else this binary.
pub fn launcher(ctx: &Context) -> String {
    if resolve_program("hcpx", ctx.var(env_vars::PATH)).is_some() {
        return "hcpx".to_owned();
    }
    ctx.self_exe
        .as_ref()
        .map_or_else(|| "hcpx".to_owned(), |exe| exe.display().to_string())
}

/// The hcpx skill that `--native` installs for a shell agent.
pub const HCPX_SKILL: &str = include_str!("../hcpx_skill.md");

/// The block `--native` puts in a host's instructions file.
const INSTRUCTIONS: &str = "## Command-line tools: use hcpx\n\n\
Run command-line tools through `hcpx` when a pack exists for the job: `hcpx search WORDS`, then \
`hcpx skill PACK`, then `hcpx exec PACK COMMAND -- KEY=VALUE`. Confirmation and credentials are the \
user's to give: on `needs_confirmation` or `unbound`, ask the user; never work around a refusal.";

/// One file adopt would change.
struct Change {
    path: std::path::PathBuf,
    old: String,
    new: String,
    existed: bool,
}

fn read(path: &std::path::Path) -> Result<(String, bool), Failure> {
    if !path.exists() {
        return Ok((String::new(), false));
    }
    std::fs::read_to_string(path)
        .map(|text| (text, true))
        .map_err(|error| {
            Failure::new(
                Reason::InvalidArguments,
                format!("{} cannot be read: {error}", path.display()),
            )
        })
}

fn edit_failure(path: &std::path::Path, host: &str, error: AdoptError) -> Failure {
    let why = match error {
        AdoptError::Unparsable(why) | AdoptError::Shape(why) => why,
    };
    Failure::new(
        Reason::InvalidArguments,
        format!(
            "{} cannot be edited ({why}); it was left untouched",
            path.display()
        ),
    )
    .next(format!(
        "fix {} by hand, then run hcpx adopt {host} again",
        path.display()
    ))
}

/// A scope's path in a `{scope: path}` map, or the other scope's when there is one.
fn pick(paths: &BTreeMap<String, String>, scope: &str, ctx: &Context) -> Option<std::path::PathBuf> {
    let path = paths.get(scope).or_else(|| paths.values().next())?;
    adopt::expand(path, &ctx.env, &ctx.cwd)
}

/// The MCP server entry in the host's configuration.
fn mcp_change(ctx: &Context, host: &Host, scope: &str, remove: bool) -> Result<Change, Failure> {
    let Some(paths) = host.scopes.get(scope) else {
        let scopes: Vec<&str> = host.scopes.keys().map(String::as_str).collect();
        return Err(Failure::new(
            Reason::InvalidArguments,
            format!(
                "{} has no {scope} configuration; it has: {}",
                host.name,
                scopes.join(", ")
            ),
        ));
    };
    let path = adopt::scope_path(paths, &ctx.env, &ctx.cwd).ok_or_else(|| {
        Failure::new(
            Reason::InvalidArguments,
            format!("{} keeps no configuration on this system", host.name),
        )
    })?;
    let env: Option<BTreeMap<String, String>> = ctx
        .var(env_vars::HCP_HOME)
        .map(|_| [(env_vars::HCP_HOME.to_owned(), ctx.home.display().to_string())].into());
    let entry = adopt::entry(host, &launcher(ctx), env.as_ref());
    let (old, existed) = read(&path)?;
    let new = adopt::edit(
        host.format,
        &old,
        &host.servers_path,
        &host.key,
        (!remove).then_some(&entry),
    )
    .map_err(|error| edit_failure(&path, &host.host, error))?;
    Ok(Change {
        path,
        old,
        new,
        existed,
    })
}

/// What `--native` changes: the skill, the instructions block, `HCP_AGENT=1`.
fn native_changes(ctx: &Context, host: &Host, scope: &str, remove: bool) -> Result<Vec<Change>, Failure> {
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
    let mut changes = Vec::new();
    if let Some(dir) = pick(&native.skills, scope, ctx) {
        let path = dir.join("hcpx").join("SKILL.md");
        let (old, existed) = read(&path)?;
        let new = if remove {
            String::new()
        } else {
            HCPX_SKILL.to_owned()
        };
        changes.push(Change {
            path,
            old,
            new,
            existed,
        });
    }
    if let Some(path) = pick(&native.instructions, scope, ctx) {
        let (old, existed) = read(&path)?;
        let new = adopt::edit_block(&old, (!remove).then_some(INSTRUCTIONS));
        changes.push(Change {
            path,
            old,
            new,
            existed,
        });
    }
    if let Some(agent_env) = &native.agent_env
        && let Some(path) = pick(&agent_env.path, scope, ctx)
    {
        let (old, existed) = read(&path)?;
        let value = serde_json::Value::String("1".to_owned());
        let new = adopt::edit(
            agent_env.format,
            &old,
            &agent_env.env_path,
            "HCP_AGENT",
            (!remove).then_some(&value),
        )
        .map_err(|error| edit_failure(&path, &host.host, error))?;
        changes.push(Change {
            path,
            old,
            new,
            existed,
        });
    }
    Ok(changes)
}

pub async fn run(ctx: &Context, request: &Request<'_>, argv: &[String]) -> Result<Reply, Failure> {
    // Writing a host's configuration can take HCP_AGENT=1 out of it: an agent would
    // change how it is recognised (SPEC §4).
    if request.write || request.remove || request.native {
        super::refuse_agents(ctx)?;
    }
    let host = find_host(request.host)?;
    let scope = request.scope.unwrap_or(&host.default_scope);
    let changes = if request.native {
        native_changes(ctx, &host, scope, request.remove)?
    } else {
        vec![mcp_change(ctx, &host, scope, request.remove)?]
    };
    let changed: Vec<&Change> = changes.iter().filter(|change| change.new != change.old).collect();
    let diffs: Vec<String> = changed
        .iter()
        .map(|change| adopt::diff(&change.path, &change.old, &change.new))
        .collect();
    let files: Vec<serde_json::Value> = changes
        .iter()
        .map(|change| json!({ "path": change.path, "changed": change.new != change.old }))
        .collect();
    let mut data = json!({
        "host": host.host, "scope": scope, "native": request.native, "files": files,
        "changed": !changed.is_empty(), "written": false, "backups": [], "diff": diffs.concat(),
    });
    if !request.write {
        let flags = format!(
            "{}{}",
            if request.native { " --native" } else { "" },
            if request.remove { " --remove" } else { "" }
        );
        let text = if changed.is_empty() {
            format!("{}: nothing to change\n", host.name)
        } else {
            format!(
                "{}:\n{}next: hcpx adopt {}{flags} --write\n",
                host.name,
                diffs.concat(),
                host.host
            )
        };
        return Ok(Reply {
            text,
            data: Some(data),
            ..Reply::default()
        });
    }
    // Writing is `hcp.adopt`, through the policy like install.
    let evaluation = super::pseudo_evaluation(ctx, "adopt");
    let plan = json!({ "pack": "hcp", "command": "adopt", "diff": diffs.concat(), "decision": evaluation.decision, "rule": to_json(&evaluation.rule) });
    let asked = Asked {
        what: format!("Change {} file(s) for {}?", changed.len(), host.name),
        yes: request.yes,
        retry: format!("hcpx adopt {} --write --yes", host.host),
        by_hand: format!("hcpx adopt {} --write", host.host),
    };
    confirm(ctx, &asked, &evaluation, &plan).await?;
    if changed.is_empty() {
        return Ok(Reply {
            text: format!("{}: already up to date; nothing written\n", host.name),
            data: Some(data),
            ..Reply::default()
        });
    }
    let mut backups = Vec::new();
    let mut lines = String::new();
    for change in &changed {
        let failure = |error: String| {
            Failure::new(
                Reason::InvalidArguments,
                format!("cannot write {}: {error}", change.path.display()),
            )
        };
        let mode = file_mode(&change.path);
        if change.existed {
            let name = change
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let backup = change.path.with_file_name(format!("{name}.bak"));
            state::write_atomic(&backup, change.old.as_bytes(), mode)
                .map_err(|error| failure(error.to_string()))?;
            backups.push(backup);
        }
        if change.new.is_empty() && !change.existed {
            continue;
        }
        if change.new.is_empty() {
            // Removing what adopt wrote: the file goes, its .bak stays.
            std::fs::remove_file(&change.path).map_err(|error| failure(error.to_string()))?;
            if let Some(dir) = change.path.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        } else {
            if let Some(parent) = change.path.parent() {
                std::fs::create_dir_all(parent).map_err(|error| failure(error.to_string()))?;
            }
            state::write_atomic(&change.path, change.new.as_bytes(), mode)
                .map_err(|error| failure(error.to_string()))?;
        }
        lines.push_str(&format!("  {}\n", change.path.display()));
    }
    let decision = if request.remove {
        "adopt-removed"
    } else {
        "adopted"
    };
    let warnings = super::record(
        ctx,
        argv,
        super::policy::PSEUDO_PACK,
        "adopt",
        decision,
        std::time::Instant::now(),
    );
    data["written"] = json!(true);
    data["backups"] = json!(backups);
    let what = if request.remove {
        "removed hcpx from"
    } else {
        "wrote"
    };
    Ok(Reply {
        text: format!("{}: {what}:\n{lines}", host.name),
        data: Some(data),
        warnings,
        run: None,
    })
}

/// The file's own permissions, kept when it is rewritten; 0644 for a new one.
fn file_mode(path: &std::path::Path) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            return meta.permissions().mode() & 0o7777;
        }
    }
    let _ = path;
    0o644
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hcpx_skill_is_a_valid_skill() {
        let doc = crate::skill::parse(super::HCPX_SKILL, "hcpx").unwrap();
        assert!(doc.description.contains("Use it"));
        for command in ["hcpx search", "hcpx skill", "hcpx availability", "hcpx exec"] {
            assert!(doc.body.contains(command), "{command}");
        }
    }
}
