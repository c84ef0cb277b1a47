//! `hcpx adopt HOST [--write] [--remove] [--force] [--scope project|user] [--yes]`:
//! plugs hcpx into a host's configuration. Without `--write` it shows the file and a
//! diff; with it, it edits in place (at a link's target), keeps the file before the
//! first adopt as `NAME.bak`, writes atomically and notes what it wrote in
//! `$HCP_HOME/adopted.json` (see [`crate::adopt::record`]). An entry it did not write
//! is replaced only with `--force`; `--remove` takes out only its own and puts back
//! what was there; a read-only file is refused. `--write` is a write command of the
//! pseudo-pack `hcp` (`hcp.adopt`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{Asked, confirm};
use crate::Reply;
use crate::adopt::record::Record;
use crate::adopt::{self, AdoptError, Host, KeyEdit};
use crate::availability::resolve_program;
use crate::context::{Context, env_vars};
use crate::error::{Failure, Reason};
use crate::next::Next;
use crate::policy::{Decision, RuleRef};
use crate::render;
use crate::reply::Warning;
use crate::state;

mod refusal;

use refusal::edit_failure;

/// What to do.
pub(crate) struct Request<'a> {
    pub host: &'a str,
    pub write: bool,
    pub remove: bool,
    pub scope: Option<&'a str>,
    pub native: bool,
    /// Replace an entry adopt did not write.
    pub force: bool,
    /// A running HTTP server to point the host at, instead of a command.
    pub url: Option<&'a str>,
    pub yes: bool,
}

impl Request<'_> {
    /// This very call as a command for `next`: every flag the caller gave
    /// (`--scope user` above all: without it the project file is the one written),
    /// with `--write` and `--yes` as asked.
    fn command_line(&self, write: bool, yes: bool) -> Next {
        let mut words = vec!["adopt", self.host];
        if let Some(scope) = self.scope {
            words.extend(["--scope", scope]);
        }
        if let Some(url) = self.url {
            words.extend(["--url", url]);
        }
        for (on, flag) in [
            (self.native, "--native"),
            (self.remove, "--remove"),
            (write, "--write"),
            (self.force, "--force"),
            (yes, "--yes"),
        ] {
            if on {
                words.push(flag);
            }
        }
        Next::hcpx(words)
    }
}

/// The host by id, or a refusal naming the closest ones (and, as `next`, this call
/// with the best of them).
fn find_host(request: &Request<'_>) -> Result<Host, Failure> {
    let mut hosts = adopt::hosts();
    let known: Vec<String> = hosts.keys().cloned().collect();
    hosts.remove(request.host).ok_or_else(|| {
        #[derive(Serialize)]
        struct Hosts<'a> {
            hosts: &'a [String],
            suggestions: &'a [&'a str],
        }
        let closest = adopt::closest_hosts(request.host, known.iter().map(String::as_str));
        let (message, next) = match closest.first() {
            Some(best) => (
                format!(
                    "unknown host; closest: {}; hcpx knows: {}",
                    closest.join(", "),
                    known.join(", ")
                ),
                Request {
                    host: best,
                    ..*request
                }
                .command_line(request.write, request.yes),
            ),
            None => (
                format!("unknown host; hcpx knows: {}", known.join(", ")),
                Next::hcpx(["adopt", "mcp"]),
            ),
        };
        Failure::new(Reason::InvalidArguments, message)
            .next(next)
            .data(Hosts {
                hosts: &known,
                suggestions: &closest,
            })
    })
}

/// The command a host should start: `hcpx` when PATH finds it, else this binary.
pub(crate) fn launcher(ctx: &Context) -> String {
    if resolve_program("hcpx", ctx.var(env_vars::PATH)).is_some() {
        return "hcpx".to_owned();
    }
    ctx.self_exe
        .as_ref()
        .map_or_else(|| "hcpx".to_owned(), |exe| exe.display().to_string())
}

/// The hcpx skill that `--native` installs for a shell agent.
pub(crate) const HCPX_SKILL: &str = include_str!("../hcpx_skill.md");

/// The block `--native` puts in a host's instructions file.
const INSTRUCTIONS: &str = "## Command-line tools: use hcpx\n\n\
Run command-line tools through `hcpx` when a pack exists for the job: `hcpx search WORDS`, then \
`hcpx skill PACK`, then `hcpx exec PACK COMMAND -- KEY=VALUE`. Confirmation and credentials are the \
user's to give: on `needs_confirmation` or `unbound`, ask the user; never work around a refusal.";

/// The key an older hcpx wrote its entry under; adopt leaves such an entry alone
/// and points it out.
const LEGACY_KEY: &str = "hcpx";

/// One file adopt would change.
#[derive(Debug, PartialEq)]
struct Change {
    /// The file as the host reads it.
    path: PathBuf,
    /// Where its bytes are: `path` with links followed.
    target: PathBuf,
    old: String,
    /// `None` deletes the file.
    new: Option<String>,
    existed: bool,
}

impl Change {
    fn changed(&self) -> bool {
        match &self.new {
            None => self.existed,
            Some(new) => *new != self.old,
        }
    }
}

/// Everything one run would do.
struct Planned {
    changes: Vec<Change>,
    /// The adopt record as it is, and once the changes are written.
    recorded: Record,
    record: Record,
    /// Also `data.warnings`.
    warnings: Vec<Warning>,
}

fn read(path: &Path) -> Result<(String, bool), Failure> {
    if !path.exists() {
        return Ok((String::new(), false));
    }
    std::fs::read_to_string(path)
        .map(|text| (text, true))
        .map_err(|error| Failure::io(format_args!("{} cannot be read", path.display()), error))
}

/// `NAME.bak` next to the file as the host reads it.
fn backup_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{name}.bak"))
}

/// A scope's path in a `{scope: path}` map, or the other scope's when there is one.
fn pick(paths: &BTreeMap<String, String>, scope: &str, ctx: &Context) -> Option<PathBuf> {
    let path = paths.get(scope).or_else(|| paths.values().next())?;
    adopt::expand(path, &ctx.env, &ctx.cwd)
}

/// One key of a configuration file (the server entry, `HCP_AGENT`), planned against
/// the record: an entry adopt did not write is replaced only with `--force`, and
/// `--remove` takes out only adopt's own.
struct Keyed<'a> {
    path: PathBuf,
    format: adopt::Format,
    servers_path: &'a [String],
    key: &'a str,
    value: &'a Value,
}

fn keyed_change(
    request: &Request<'_>,
    keyed: Keyed<'_>,
    record: &mut Record,
    warnings: &mut Vec<Warning>,
) -> Result<Change, Failure> {
    planned_change(
        keyed.path,
        request,
        record,
        warnings,
        Some(keyed.key),
        |record, file, old, backup| {
            adopt::plan(
                record,
                file,
                old,
                backup,
                &KeyEdit {
                    format: keyed.format,
                    path: keyed.servers_path,
                    key: keyed.key,
                    value: (!request.remove).then_some(keyed.value),
                    force: request.force,
                },
            )
        },
    )
}

/// A change to `path` that `plan` (adopt's planner of a key or of a whole file)
/// works out from the record, the file it reaches through links, the text there now
/// and the pre-adopt backup. `key` is the entry planned, `None` for the whole file:
/// what `--remove` leaves when hcpx did not write it.
fn planned_change(
    path: PathBuf,
    request: &Request<'_>,
    record: &mut Record,
    warnings: &mut Vec<Warning>,
    key: Option<&str>,
    plan: impl FnOnce(&Record, &str, Option<&str>, Option<&str>) -> Result<adopt::Rewrite, AdoptError>,
) -> Result<Change, Failure> {
    let target = adopt::resolve(&path).map_err(|error| edit_failure(&path, request, error))?;
    let (old, existed) = read(&target)?;
    let backup = std::fs::read_to_string(backup_path(&path)).ok();
    let planned = plan(
        record,
        &target.display().to_string(),
        existed.then_some(old.as_str()),
        backup.as_deref(),
    )
    .map_err(|error| edit_failure(&path, request, error))?;
    if planned.kept_foreign {
        warnings.push(Warning::LeftForeign {
            path: path.clone(),
            key: key.map(str::to_owned),
        });
    }
    *record = planned.record;
    Ok(Change {
        path,
        target,
        old,
        new: planned.new,
        existed,
    })
}

/// Which host configuration a run of adopt changes, and as whom.
#[derive(Clone, Copy)]
struct Site<'a> {
    ctx: &'a Context,
    host: &'a Host,
    scope: &'a str,
    request: &'a Request<'a>,
}

/// The MCP server entry in the host's configuration.
fn mcp_change(site: Site<'_>, record: &mut Record, warnings: &mut Vec<Warning>) -> Result<Change, Failure> {
    let (ctx, host, scope, request) = (site.ctx, site.host, site.scope, site.request);
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
    // Where the file would be cannot be told here (no path for this system, or
    // the variable it is under is not set): a file hcpx needs, not the caller's words.
    let path = adopt::scope_path(paths, &ctx.env, &ctx.cwd).ok_or_else(|| {
        Failure::new(
            Reason::Io,
            format!("{} keeps no configuration on this system", host.name),
        )
    })?;
    let env: Option<BTreeMap<String, String>> = ctx
        .var(env_vars::HCP_HOME)
        .map(|_| [(env_vars::HCP_HOME.to_owned(), ctx.home.display().to_string())].into());
    let entry = match request.url {
        None => adopt::entry(host, &launcher(ctx), env.as_ref()),
        Some(url) => {
            if let Some(problem) = adopt::url_problem(url) {
                return Err(Failure::new(Reason::InvalidArguments, problem));
            }
            adopt::url_entry(host, url).ok_or_else(|| {
                let takers: Vec<String> = adopt::hosts()
                    .into_values()
                    .filter(|host| host.url_entry.is_some())
                    .map(|host| host.host)
                    .collect();
                Failure::new(
                    Reason::InvalidArguments,
                    format!(
                        "{} takes no URL entries; hosts that do: {}",
                        host.name,
                        takers.join(", ")
                    ),
                )
                .next(
                    Request {
                        url: None,
                        ..*request
                    }
                    .command_line(true, false)
                    .note("it starts hcpx itself"),
                )
            })?
        }
    };
    let change = keyed_change(
        request,
        Keyed {
            path,
            format: host.format,
            servers_path: &host.servers_path,
            key: &host.key,
            value: &entry,
        },
        record,
        warnings,
    )?;
    let legacy = adopt::find(host.format, &change.old, &host.servers_path, LEGACY_KEY);
    if host.key != LEGACY_KEY && matches!(legacy, Ok(Some(_))) {
        warnings.push(Warning::LegacyEntry {
            path: change.path.clone(),
            legacy: LEGACY_KEY.to_owned(),
            key: host.key.clone(),
        });
    }
    Ok(change)
}

/// What `--native` changes: the skill, the instructions block, `HCP_AGENT=1`.
fn native_changes(
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
    let remove = request.remove;
    let mut changes = Vec::new();
    if let Some(dir) = pick(&native.skills, scope, ctx) {
        let path = dir.join("hcpx").join("SKILL.md");
        changes.push(planned_change(
            path,
            request,
            record,
            warnings,
            None,
            |record, file, old, backup| {
                adopt::plan_file(record, file, old, backup, HCPX_SKILL, remove, request.force)
            },
        )?);
    }
    if let Some(path) = pick(&native.instructions, scope, ctx) {
        let target = adopt::resolve(&path).map_err(|error| edit_failure(&path, request, error))?;
        let (old, existed) = read(&target)?;
        let new = adopt::edit_block(&old, (!remove).then_some(INSTRUCTIONS));
        changes.push(Change {
            path,
            target,
            old,
            new: Some(new),
            existed,
        });
    }
    if let Some(agent_env) = &native.agent_env
        && let Some(path) = pick(&agent_env.path, scope, ctx)
    {
        let value = Value::String("1".to_owned());
        changes.push(keyed_change(
            request,
            Keyed {
                path,
                format: agent_env.format,
                servers_path: &agent_env.env_path,
                key: "HCP_AGENT",
                value: &value,
            },
            record,
            warnings,
        )?);
    }
    Ok(changes)
}

/// Reads the record and every file, and plans the run.
fn plan(ctx: &Context, host: &Host, scope: &str, request: &Request<'_>) -> Result<Planned, Failure> {
    let recorded = Record::load(&ctx.home).map_err(|error| {
        Failure::from(error).next(Next::advice(format!(
            "fix or move it, then run {} again",
            request.command_line(request.write, false)
        )))
    })?;
    let mut record = recorded.clone();
    let mut warnings = Vec::new();
    let site = Site {
        ctx,
        host,
        scope,
        request,
    };
    let changes = if request.native {
        native_changes(site, &mut record, &mut warnings)?
    } else {
        vec![mcp_change(site, &mut record, &mut warnings)?]
    };
    Ok(Planned {
        changes,
        recorded,
        record,
        warnings,
    })
}

/// `adopt`'s data: what would change, or changed.
#[derive(Serialize)]
struct Adopted<'a> {
    host: &'a str,
    scope: &'a str,
    native: bool,
    files: Vec<FileChange<'a>>,
    changed: bool,
    written: bool,
    /// The `NAME.bak` files written (each once, before the first adopt).
    backups: Vec<PathBuf>,
    diff: String,
    warnings: &'a [Warning],
}

#[derive(Serialize)]
struct FileChange<'a> {
    path: &'a Path,
    changed: bool,
}

/// What `adopt --write` asks to confirm, as the plan shown with a refusal.
#[derive(Serialize)]
struct Plan<'a> {
    pack: &'static str,
    command: &'static str,
    diff: String,
    decision: Decision,
    rule: &'a RuleRef,
}

pub(crate) async fn run(ctx: &Context, request: &Request<'_>, argv: &[String]) -> Result<Reply, Failure> {
    // Writing a host's configuration can take HCP_AGENT=1 out of it: an agent would
    // change how it is recognised.
    if request.write || request.remove || request.native {
        super::refuse_agents(ctx)?;
    }
    let host = find_host(request)?;
    let scope = request.scope.unwrap_or(&host.default_scope);
    let mut planned = plan(ctx, &host, scope, request)?;
    if !request.write {
        // What --write would refuse, said before anyone asks for it.
        for change in &planned.changes {
            if change.changed() && change.existed && adopt::read_only(&change.target) {
                planned.warnings.push(Warning::ReadOnly {
                    path: change.target.clone(),
                });
            }
        }
    }
    let changed: Vec<&Change> = planned.changes.iter().filter(|change| change.changed()).collect();
    let diffs: Vec<String> = changed
        .iter()
        .map(|change| {
            adopt::diff(
                &change.path,
                &change.old,
                change.new.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    let files: Vec<FileChange<'_>> = planned
        .changes
        .iter()
        .map(|change| FileChange {
            path: &change.path,
            changed: change.changed(),
        })
        .collect();
    let mut data = Adopted {
        host: &host.host,
        scope,
        native: request.native,
        files,
        changed: !changed.is_empty(),
        written: false,
        backups: Vec::new(),
        diff: diffs.concat(),
        warnings: &planned.warnings,
    };
    let warnings = planned.warnings.iter().cloned();
    if !request.write {
        let text = render::adopt_plan_text(&host.name, &diffs, &request.command_line(true, false));
        return Ok(Reply::new(&data, text).warn(warnings));
    }
    // Writing is `hcp.adopt`, through the policy like install.
    let evaluation = super::pseudo_evaluation(ctx, "adopt");
    let plan_data = Plan {
        pack: "hcp",
        command: "adopt",
        diff: diffs.concat(),
        decision: evaluation.decision,
        rule: &evaluation.rule,
    };
    let asked = Asked {
        what: render::adopt_question(&host.name, changed.len()),
        yes: request.yes,
        retry: request.command_line(true, true),
        by_hand: request.command_line(true, false),
    };
    confirm(ctx, &asked, &evaluation, &plan_data).await?;
    if changed.is_empty() {
        return Ok(Reply::new(&data, render::adopt_unchanged_text(&host.name)).warn(warnings));
    }
    // Under the lock, from what the files and the record are now: a prompt can take
    // long, and what was confirmed must still be what is written.
    let _lock = crate::layout::lock(&ctx.home)?;
    let again = plan(ctx, &host, scope, request)?;
    if again.changes != planned.changes {
        // Not the caller's words: a file hcpx read changed under it (io_error, as
        // for a pack's file that changes while it is installed).
        return Err(Failure::new(
            Reason::Io,
            "a file changed while hcpx was asking; nothing was written",
        )
        .next(request.command_line(true, false)));
    }
    for change in &changed {
        // A file hcpx needs to write and may not (io_error).
        if change.existed && adopt::read_only(&change.target) {
            return Err(Failure::new(
                Reason::Io,
                format!(
                    "{} is read-only, so hcpx leaves it as it is; nothing was written. \
                     Make it writable, then run adopt again",
                    change.target.display()
                ),
            )
            .next(Next::advice(format!("chmod u+w {}", change.target.display()))));
        }
    }
    // The record first: an entry adopt wrote is always one it knows.
    if again.record != again.recorded {
        again.record.save(&ctx.home)?;
    }
    let mut backups = Vec::new();
    let mut written = Vec::new();
    for change in &changed {
        let failure = |error: String| {
            Failure::new(
                Reason::Io,
                format!("cannot write {}: {error}", change.path.display()),
            )
        };
        let mode = file_mode(&change.target);
        // NAME.bak is the file before the first adopt: written once, never replaced.
        let backup = backup_path(&change.path);
        if change.existed && !request.remove && std::fs::symlink_metadata(&backup).is_err() {
            state::write_atomic(&backup, change.old.as_bytes(), mode)
                .map_err(|error| failure(error.to_string()))?;
            backups.push(backup);
        }
        match &change.new {
            None => {
                // Adopt made this file and nothing else changed it: it goes.
                std::fs::remove_file(&change.target).map_err(|error| failure(error.to_string()))?;
                if let Some(dir) = change.target.parent() {
                    let _ = std::fs::remove_dir(dir);
                }
            }
            Some(new) => {
                if let Some(parent) = change.target.parent() {
                    std::fs::create_dir_all(parent).map_err(|error| failure(error.to_string()))?;
                }
                state::write_atomic(&change.target, new.as_bytes(), mode)
                    .map_err(|error| failure(error.to_string()))?;
            }
        }
        written.push(change.path.as_path());
    }
    let decision = if request.remove {
        crate::audit::Disposition::AdoptRemoved
    } else {
        crate::audit::Disposition::Adopted
    };
    let audit_warning = super::write_audit_line(
        ctx,
        argv,
        super::policy::PSEUDO_PACK,
        "adopt",
        decision,
        std::time::Instant::now(),
    );
    data.written = true;
    data.backups = backups;
    let text = render::adopt_written_text(&host.name, request.remove, &written);
    Ok(Reply::new(&data, text).warn(warnings).warn(audit_warning))
}

/// The file's own permissions, kept when it is rewritten; 0644 for a new one.
fn file_mode(path: &Path) -> u32 {
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
