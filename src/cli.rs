//! The clap types of the command tree (SPEC §3). They only parse: no I/O, no env.
//! Doc comments are the help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "hcpx",
    version,
    about = "One safe door from agents and people to command-line tools",
    long_about = "hcpx runs command-line tools wrapped as packs, for people, coding agents and MCP hosts, \
                  through one policy, one credential binding and one sandbox.",
    after_help = "Start here:\n  hcpx search journey          find a pack\n  hcpx skill transit           \
                  read how to use it\n  hcpx availability transit    check it can run here\n\n\
                  Every command takes --json and then prints the result envelope.",
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Print the result envelope as JSON instead of text (every command takes it).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find packs by what they do, ranked by relevance.
    #[command(
        after_help = "Examples:\n  hcpx search journey\n  hcpx search git history --limit 3\n  \
                            hcpx search          (every pack)"
    )]
    Search {
        /// Words to look for in ids, keywords, descriptions, commands and skills.
        query: Vec<String>,
        /// Show at most this many packs.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
    },
    /// Show a pack's SKILL.md and a reference of its commands and parameters.
    #[command(after_help = "Example:\n  hcpx skill transit")]
    Skill {
        /// The pack id.
        pack: String,
    },
    /// Say whether a pack is installed, runnable, bound and permitted here, and how to fix what is not.
    #[command(after_help = "Example:\n  hcpx availability transit --json")]
    Availability {
        /// The pack id.
        pack: String,
    },
    /// Show the effective policy, or check one decision.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Tools for pack authors.
    #[command(subcommand)]
    Pack(PackCommand),
    /// Report HCP_HOME, packs, policy files and which sandbox layers this machine enforces.
    Doctor,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print every default and rule in force, and which file each comes from.
    Show,
    /// Decide one pack command for the current caller, and name the rule behind it.
    #[command(after_help = "Example:\n  hcpx policy check git commit")]
    Check {
        /// The pack id.
        pack: String,
        /// The command name.
        command: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PackCommand {
    /// Validate a pack folder: manifest, SKILL.md and CLI file. Lists every problem.
    #[command(after_help = "Example:\n  hcpx pack check ./my-pack")]
    Check {
        /// The pack folder.
        dir: PathBuf,
    },
    /// Write a valid starting pack into ./ID/.
    #[command(after_help = "Example:\n  hcpx pack new weather && hcpx pack check weather")]
    New {
        /// The new pack's id.
        id: String,
    },
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn json_is_global() {
        let cli = Cli::try_parse_from(["hcpx", "--json", "search", "journey"]).unwrap();
        assert!(cli.json);
        let cli = Cli::try_parse_from(["hcpx", "policy", "check", "git", "log", "--json"]).unwrap();
        assert!(cli.json);
    }
}
