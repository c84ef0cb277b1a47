//! `hcpx adopt HOST [--write] [--remove] [--scope project|user] [--yes]`: plugs hcpx
//! into a host's configuration (SPEC §9). Without `--write` it shows the file and a
//! diff; with it, it edits in place, keeps the old file as `NAME.bak` and writes
//! atomically. `--write` is a write command of the pseudo-pack `hcp` (`hcp.adopt`).

use std::collections::BTreeMap;

use serde_json::json;

use super::{Asked, confirm, load_policies, to_json};
use crate::Reply;
use crate::adopt::{self, AdoptError, Host};
use crate::audit;
use crate::availability::resolve_program;
use crate::context::{Context, env_vars};
use crate::error::{Failure, Reason};
use crate::manifest::Effect;
use crate::policy::{self, Subject};
use crate::state;

/// What to do.
pub struct Request<'a> {
    pub host: &'a str,
    pub write: bool,
    pub remove: bool,
    pub scope: Option<&'a str>,
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

pub async fn run(ctx: &Context, request: &Request<'_>, argv: &[String]) -> Result<Reply, Failure> {
    let host = find_host(request.host)?;
    let scope = request.scope.unwrap_or(&host.default_scope);
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
    let entry = adopt::entry(&host, &launcher(ctx), env.as_ref());
    let existed = path.exists();
    let old = if existed {
        std::fs::read_to_string(&path).map_err(|error| {
            Failure::new(
                Reason::InvalidArguments,
                format!("{} cannot be read: {error}", path.display()),
            )
        })?
    } else {
        String::new()
    };
    let value = (!request.remove).then_some(&entry);
    let new = adopt::edit(host.format, &old, &host.servers_path, &host.key, value).map_err(|error| {
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
            "fix {} by hand, then run hcpx adopt {} again",
            path.display(),
            host.host
        ))
    })?;
    let changed = new != old;
    let diff = adopt::diff(&path, &old, &new);
    let mut data = json!({
        "host": host.host, "scope": scope, "path": path, "format": format!("{:?}", host.format).to_lowercase(),
        "changed": changed, "written": false, "backup": null, "diff": diff, "entry": entry,
    });
    if !request.write {
        let text = if changed {
            format!(
                "{}: {}\n{diff}next: hcpx adopt {} --write{}\n",
                host.name,
                path.display(),
                host.host,
                if request.remove { " --remove" } else { "" }
            )
        } else {
            format!(
                "{}: {} already {}; nothing to change\n",
                host.name,
                path.display(),
                if request.remove {
                    "has no hcpx entry"
                } else {
                    "has this entry"
                }
            )
        };
        return Ok(Reply {
            text,
            data: Some(data),
            ..Reply::default()
        });
    }
    // Writing is `hcp.adopt`, through the policy like install.
    let evaluation = match ctx.read_only.then(|| policy::read_only(Effect::Write)).flatten() {
        Some(denied) => denied,
        None => policy::evaluate(
            &Subject {
                principal: ctx.principal,
                pack: super::policy::PSEUDO_PACK,
                command: "adopt",
                effect: Effect::Write,
            },
            &load_policies(ctx),
        ),
    };
    let plan = json!({ "pack": "hcp", "command": "adopt", "path": path, "diff": diff, "decision": evaluation.decision, "rule": to_json(&evaluation.rule) });
    let asked = Asked {
        what: format!("Change {}?", path.display()),
        yes: request.yes,
        retry: format!("hcpx adopt {} --write --yes", host.host),
        by_hand: format!("hcpx adopt {} --write", host.host),
    };
    confirm(ctx, &asked, &evaluation, &plan).await?;
    if !changed {
        return Ok(Reply {
            text: format!(
                "{}: {} is already up to date; nothing written\n",
                host.name,
                path.display()
            ),
            data: Some(data),
            ..Reply::default()
        });
    }
    let failure = |error: String| {
        Failure::new(
            Reason::InvalidArguments,
            format!("cannot write {}: {error}", path.display()),
        )
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|error| failure(error.to_string()))?;
    }
    let mode = file_mode(&path);
    let backup = if existed {
        let backup = path.with_file_name(format!(
            "{}.bak",
            path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
        ));
        state::write_atomic(&backup, old.as_bytes(), mode).map_err(|error| failure(error.to_string()))?;
        Some(backup)
    } else {
        None
    };
    state::write_atomic(&path, new.as_bytes(), mode).map_err(|error| failure(error.to_string()))?;
    let entry_log = audit::Entry {
        ts: audit::now(),
        principal: ctx.principal,
        argv,
        pack: super::policy::PSEUDO_PACK,
        command: "adopt",
        decision: if request.remove {
            "adopt-removed"
        } else {
            "adopted"
        },
        exit_code: None,
        duration_ms: 0,
        output_bytes: 0,
    };
    let warnings = match audit::append(&ctx.home, &entry_log) {
        Ok(()) => String::new(),
        Err(error) => format!("warning: the audit line was not written: {error}\n"),
    };
    data["written"] = json!(true);
    data["backup"] = json!(backup);
    let kept = backup
        .as_ref()
        .map(|b| format!(" (the previous file is {})", b.display()))
        .unwrap_or_default();
    let what = if request.remove {
        "removed hcpx from"
    } else {
        "wrote"
    };
    Ok(Reply {
        text: format!("{}: {what} {}{kept}\n", host.name, path.display()),
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
