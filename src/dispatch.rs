//! The one dispatcher: a parsed [`Command`] to its handler. The terminal and the MCP
//! server both come through here, so every path gets the same checks.

use crate::Reply;
use crate::cli::{Command, PackCommand, PolicyCommand};
use crate::commands;
use crate::context::Context;
use crate::error::Failure;

pub async fn dispatch(command: Command, ctx: &Context) -> Result<Reply, Failure> {
    match command {
        Command::Search { query, limit, .. } => commands::search::run(ctx, &query, limit as usize),
        Command::Skill { pack, .. } => commands::skill::run(ctx, &pack),
        Command::Availability { pack, .. } => commands::availability::run(ctx, &pack),
        Command::Policy(PolicyCommand::Show) => commands::policy::show(ctx),
        Command::Policy(PolicyCommand::Check { pack, command, .. }) => {
            commands::policy::check(ctx, &pack, &command)
        }
        Command::Pack(PackCommand::Check { dir, .. }) => commands::pack::check(ctx, &dir),
        Command::Pack(PackCommand::New { id, .. }) => commands::pack::new(ctx, &id),
        Command::Doctor => commands::doctor::run(ctx),
    }
}
