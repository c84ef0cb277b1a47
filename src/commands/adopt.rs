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

mod native;
mod plugin;
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
    /// `adopt plugin`: the folder to write, under the working directory when relative.
    pub dir: Option<&'a Path>,
    /// `adopt plugin`: also the installed packs' skills.
    pub pack_skills: bool,
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
        let dir = self.dir.map(|dir| dir.display().to_string());
        if let Some(dir) = &dir {
            words.extend(["--dir", dir]);
        }
        if let Some(url) = self.url {
            words.extend(["--url", url]);
        }
        for (on, flag) in [
            (self.native, "--native"),
            (self.pack_skills, "--pack-skills"),
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
    if request.host == plugin::PLUGIN {
        return Ok(plugin::host());
    }
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

/// How `host` is to start hcpx: this very binary, by the name `hcpx` only when the
/// `hcpx` on PATH is this file (and the host gets the shell's PATH), with the
/// caller's `HCP_HOME` when they set one.
pub(crate) fn launch(ctx: &Context, gui: bool) -> adopt::Launch {
    let on_path = resolve_program("hcpx", ctx.var(env_vars::PATH));
    let home = ctx.var(env_vars::HCP_HOME).map(|_| ctx.home.clone());
    adopt::Launch::new(ctx.self_exe.get(), on_path.as_deref(), gui, home)
}

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
    /// The mode a file adopt makes gets (a script's 0755); `None`: the file's own,
    /// or 0644.
    mode: Option<u32>,
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
    /// Folders `--remove` takes away when it leaves them empty, innermost first.
    tidy: Vec<PathBuf>,
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

/// Keys of one configuration file (the server entry; `HCP_AGENT` and `HCP_HOME`),
/// planned against the record one after the other: an entry adopt did not write is
/// replaced only with `--force`, and `--remove` takes out only adopt's own.
struct Keyed<'a> {
    path: PathBuf,
    format: adopt::Format,
    servers_path: &'a [String],
    /// Each key with its value; `None` takes adopt's own entry there out, quietly
    /// (a key adopt no longer writes, such as `HCP_HOME` once it is not set).
    keys: Vec<(&'a str, Option<&'a Value>)>,
}

fn keyed_change(
    request: &Request<'_>,
    keyed: Keyed<'_>,
    record: &mut Record,
    warnings: &mut Vec<Warning>,
) -> Result<Change, Failure> {
    let named = keyed.keys.first().map(|(key, _)| *key);
    planned_change(
        keyed.path,
        request,
        record,
        warnings,
        named,
        |record, file, old, backup| {
            let mut rewrite = adopt::Rewrite {
                new: old.map(str::to_owned),
                record: record.clone(),
                kept_foreign: false,
            };
            let mut first = true;
            for (key, value) in &keyed.keys {
                // The file is gone (adopt made it and took its last entry out).
                if !first && rewrite.new.is_none() {
                    break;
                }
                let text = if first { old } else { rewrite.new.as_deref() };
                let value = value.filter(|_| !request.remove);
                let next = adopt::plan(
                    &rewrite.record,
                    file,
                    text,
                    backup,
                    &KeyEdit {
                        format: keyed.format,
                        path: keyed.servers_path,
                        key,
                        value,
                        force: request.force,
                    },
                )?;
                let kept_foreign = rewrite.kept_foreign || (next.kept_foreign && request.remove);
                rewrite = adopt::Rewrite { kept_foreign, ..next };
                first = false;
            }
            Ok(rewrite)
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
        mode: None,
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
    let there = |path: &Path| std::fs::symlink_metadata(path).is_ok();
    let path = adopt::scope_path(paths, &ctx.env, &ctx.cwd, there).ok_or_else(|| {
        Failure::new(
            Reason::Io,
            format!("{} keeps no configuration on this system", host.name),
        )
    })?;
    let launch = launch(ctx, host.gui);
    let env: Option<BTreeMap<String, String>> = launch
        .home
        .as_ref()
        .map(|home| [(env_vars::HCP_HOME.to_owned(), home.display().to_string())].into());
    let entry = match request.url {
        None => {
            if let Some(other) = &launch.other_on_path {
                warnings.push(Warning::OtherHcpx {
                    on_path: other.clone(),
                    written: launch.command.clone(),
                });
            }
            adopt::entry(host, &launch.command, env.as_ref())
        }
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
            keys: vec![(&host.key, Some(&entry))],
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
    let (changes, tidy) = if request.host == plugin::PLUGIN {
        plugin::changes(site, &mut record, &mut warnings)?
    } else if request.native {
        (native::changes(site, &mut record, &mut warnings)?, Vec::new())
    } else {
        (vec![mcp_change(site, &mut record, &mut warnings)?], Vec::new())
    };
    Ok(Planned {
        changes,
        recorded,
        record,
        warnings,
        tidy,
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
    /// What the host still needs from the person once the entry is written (an
    /// approval, a trusted folder), from the host's data; `null` when nothing.
    then: Option<&'a str>,
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
    plugin::check_flags(request)?;
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
        then: (!request.remove && !request.native)
            .then(|| host.then.get(scope).map(String::as_str))
            .flatten(),
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
        let text = render::adopt_unchanged_text(&host.name, data.then);
        return Ok(Reply::new(&data, text).warn(warnings));
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
        let mode = change.mode.unwrap_or_else(|| file_mode(&change.target));
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
    if request.remove {
        for dir in &again.tidy {
            // Only an empty folder goes.
            let _ = std::fs::remove_dir(dir);
        }
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
    let text = render::adopt_written_text(&host.name, request.remove, &written, data.then);
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
