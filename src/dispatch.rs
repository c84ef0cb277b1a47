//! The one dispatcher: a parsed [`Command`] to its handler. The terminal and the MCP
//! server both come through here, so every path gets the same checks.

use crate::Reply;
use crate::cli::{Command, PackCommand, PolicyCommand};
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
fn path(command: &Command) -> &'static str {
    match command {
        Command::Bind { .. } => "bind",
        Command::Unbind { .. } => "unbind",
        Command::Policy(PolicyCommand::Set { .. }) => "policy set",
        Command::Policy(PolicyCommand::Unset { .. }) => "policy unset",
        _ => "",
    }
}

pub(crate) async fn dispatch(
    command: Command,
    json: bool,
    argv: &[String],
    ctx: &Context,
) -> Result<Reply, Failure> {
    if FOR_PEOPLE_ONLY.contains(&path(&command)) {
        commands::refuse_agents(ctx)?;
    }
    match command {
        Command::Pack(PackCommand::New { .. }) if ctx.read_only => Err(Failure::new(
            crate::error::Reason::DeniedByPolicy,
            "this server is read-only: only commands that read are allowed",
        )
        .next(Next::hcpx(["pack", "new", "ID"]).note("at a terminal"))),
        Command::Exec(args) => {
            let request = commands::exec::Request {
                args,
                json,
                argv: argv.to_vec(),
            };
            commands::exec::run(ctx, request).await
        }
        Command::Bind {
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
        Command::Unbind { pack, key } => commands::bind::unbind(ctx, &pack, &key, argv),
        Command::Bindings => commands::bind::list(ctx),
        Command::Adopt {
            host,
            write,
            remove,
            scope,
            native,
            force,
            url,
            yes,
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
            };
            commands::adopt::run(ctx, &request, argv).await
        }
        Command::Install { source, yes } => commands::install::install(ctx, &source, yes, argv).await,
        Command::Uninstall { pack, yes } => commands::install::uninstall(ctx, &pack, yes, argv).await,
        Command::Policy(PolicyCommand::Set {
            matcher,
            decision,
            force,
        }) => commands::policy::set(ctx, &matcher, &decision, force, argv),
        Command::Policy(PolicyCommand::Unset { matcher }) => commands::policy::unset(ctx, &matcher, argv),
        Command::Search { query, limit, all } => commands::search::run(ctx, &query, limit as usize, all),
        Command::Skill { pack, .. } => commands::skill::run(ctx, &pack),
        Command::Availability { pack, .. } => commands::availability::run(ctx, &pack),
        Command::Policy(PolicyCommand::Show) => commands::policy::show(ctx),
        Command::Policy(PolicyCommand::Check { pack, command, .. }) => {
            commands::policy::check(ctx, &pack, &command)
        }
        Command::Pack(PackCommand::Check { dir, .. }) => commands::pack::check(ctx, &dir),
        Command::Pack(PackCommand::New { id, .. }) => commands::pack::new(ctx, &id),
        Command::Doctor => commands::doctor::run(ctx),
        Command::Completions { shell } => Ok(commands::completions::completions(shell)),
        Command::Man { command } => commands::completions::man(&command),
        Command::Output {
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
        // The server itself is started by `main.rs`; through the tool it is refused.
        Command::Mcp(_) => Err(Failure::new(
            crate::error::Reason::AccessRefused,
            "`mcp` starts a server; it cannot run inside one, nor from an agent's call",
        )
        .next(Next::hcpx(["adopt", "mcp"]).note("to configure a host that starts it"))),
    }
}
