//! The one dispatcher: a parsed [`Command`] to its handler. The terminal and the MCP
//! server both come through here, so every path gets the same checks.

use crate::Reply;
use crate::cli::{HcpxCommand, PackCommand, PolicyCommand};
use crate::commands;
use crate::context::Context;
use crate::error::Failure;
use crate::next::Next;

/// Commands only a person may run, whatever the policy says: with them an agent
/// would change its own credentials or rules. Refused here, before their handler;
/// `hcp://help` marks them from this list. (`adopt` is one too with `--write`,
/// `--remove` or `--native`; its handler decides, since that depends on the flags.)
pub(crate) const FOR_PEOPLE_ONLY: [&str; 4] = ["bind", "unbind", "policy set", "policy unset"];

/// The words that name `command` in the tree, for the commands listed above.
fn path(command: &HcpxCommand) -> &'static str {
    match command {
        HcpxCommand::Bind { .. } => "bind",
        HcpxCommand::Unbind { .. } => "unbind",
        HcpxCommand::Policy(PolicyCommand::Set { .. }) => "policy set",
        HcpxCommand::Policy(PolicyCommand::Unset { .. }) => "policy unset",
        _ => "",
    }
}

pub(crate) async fn dispatch(
    command: HcpxCommand,
    json: bool,
    argv: &[String],
    ctx: &Context,
) -> Result<Reply, Failure> {
    if FOR_PEOPLE_ONLY.contains(&path(&command)) {
        commands::refuse_agents(ctx)?;
    }
    match command {
        HcpxCommand::Pack(PackCommand::New { .. }) if ctx.read_only => Err(Failure::new(
            crate::error::Reason::DeniedByPolicy,
            "this server is read-only: only commands that read are allowed",
        )
        .next(Next::hcpx(["pack", "new", "ID"]).note("at a terminal"))),
        HcpxCommand::Exec(args) => {
            let request = commands::exec::Request {
                args,
                json,
                argv: argv.to_vec(),
            };
            commands::exec::run(ctx, request).await
        }
        HcpxCommand::Bind {
            pack,
            key,
            from_env,
            keep,
        } => {
            let how = match (keep, from_env.as_deref()) {
                (true, _) => commands::bind::How::Keep,
                (false, Some(var)) => commands::bind::How::FromEnv(var),
                (false, None) => commands::bind::How::Value,
            };
            commands::bind::bind(ctx, &pack, &key, how, argv)
        }
        HcpxCommand::Unbind { pack, key } => commands::bind::unbind(ctx, &pack, &key, argv),
        HcpxCommand::Bindings => commands::bind::list(ctx),
        HcpxCommand::Adopt {
            host,
            write,
            remove,
            scope,
            native,
            force,
            url,
            yes,
            dir,
            pack_skills,
        } => {
            let request = commands::adopt::Request {
                host: &host,
                write,
                remove,
                scope: scope.as_deref(),
                native,
                force,
                url: url.as_deref(),
                yes,
                dir: dir.as_deref(),
                pack_skills,
            };
            commands::adopt::run(ctx, &request, argv).await
        }
        HcpxCommand::Install { source, yes } => commands::install::install(ctx, &source, yes, argv).await,
        HcpxCommand::Uninstall { pack, yes } => commands::install::uninstall(ctx, &pack, yes, argv).await,
        HcpxCommand::Policy(PolicyCommand::Set {
            matcher,
            decision,
            force,
        }) => commands::policy::set(ctx, &matcher, &decision, force, argv),
        HcpxCommand::Policy(PolicyCommand::Unset { matcher }) => commands::policy::unset(ctx, &matcher, argv),
        HcpxCommand::Search {
            query,
            limit,
            all,
            registry,
        } => {
            // Ten by default; `--all` alone lists everything.
            let limit = limit.map_or(if all { usize::MAX } else { 10 }, |limit| limit as usize);
            let found = match registry {
                true => Some(crate::registry::search(ctx, &query, limit).await),
                false => None,
            };
            commands::search::run(ctx, &query, limit, all, found)
        }
        HcpxCommand::Skill { pack, .. } => commands::skill::run(ctx, &pack),
        HcpxCommand::Availability { pack, .. } => commands::availability::run(ctx, &pack).await,
        HcpxCommand::Policy(PolicyCommand::Show) => commands::policy::show(ctx),
        HcpxCommand::Policy(PolicyCommand::Check { pack, command, .. }) => {
            commands::policy::check(ctx, &pack, &command)
        }
        HcpxCommand::Pack(PackCommand::Check { dir, .. }) => commands::pack::check(ctx, &dir),
        HcpxCommand::Pack(PackCommand::New { id, bin: None }) => commands::pack::new(ctx, &id),
        HcpxCommand::Pack(PackCommand::New { id, bin: Some(bin) }) => {
            commands::pack::new_around(ctx, &id, &bin).await
        }
        HcpxCommand::Doctor => commands::doctor::run(ctx),
        HcpxCommand::Completions { shell } => Ok(commands::completions::completions(shell)),
        HcpxCommand::Man { command } => commands::completions::man(&command),
        HcpxCommand::Output {
            id,
            stream,
            offset,
            limit,
        } => commands::output::run(
            ctx,
            &id,
            &stream,
            offset,
            usize::try_from(limit).unwrap_or(usize::MAX),
        ),
        // Both servers are started by `main.rs`; through the tool they are refused.
        HcpxCommand::Serve(_) => Err(Failure::new(
            crate::error::Reason::AccessRefused,
            "`serve` starts a server; it cannot run inside one, nor from an agent's call",
        )
        .next(Next::hcpx(["serve", "--help"]).note("to start it from a shell"))),
        // The server itself is started by `main.rs`; through the tool it is refused.
        HcpxCommand::Mcp(_) => Err(Failure::new(
            crate::error::Reason::AccessRefused,
            "`mcp` starts a server; it cannot run inside one, nor from an agent's call",
        )
        .next(Next::hcpx(["adopt", "mcp"]).note("to configure a host that starts it"))),
    }
}
