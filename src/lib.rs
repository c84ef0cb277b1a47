//! hcpx: one safe door from agents and people to command-line tools.
//!
//! [`run`] is the whole command tree behind one entry: it parses an argv with clap,
//! dispatches it, and returns an [`Outcome`] holding the result envelope of SPEC §8.
//! It never prints or exits by itself; it writes rendered text to a [`Sink`], so the
//! terminal binary and the MCP server run the very same tree.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod audit;
pub mod availability;
pub mod binding;
pub mod catalog;
pub mod cli;
pub mod commands;
pub mod context;
pub mod dispatch;
pub mod error;
pub mod invocation;
pub mod manifest;
pub mod output;
pub mod policy;
pub mod redact;
pub mod runtime;
pub mod sandbox;
pub mod search;
pub mod skill;
pub mod state;
pub mod template;
pub mod terminal;

use std::time::Instant;

use clap::Parser as _;

pub use crate::context::{Context, Principal};
use crate::error::{Failure, Reason};
pub use crate::output::Envelope;

/// Where rendered output goes: the process's streams, a buffer in tests, nothing
/// under MCP (which reads the envelope).
pub trait Sink: Send {
    fn stdout(&mut self, text: &str);
    fn stderr(&mut self, text: &str);
}

/// A sink that keeps everything, for tests and in-process callers.
#[derive(Debug, Default, Clone)]
pub struct BufferSink {
    pub stdout: String,
    pub stderr: String,
}

impl Sink for BufferSink {
    fn stdout(&mut self, text: &str) {
        self.stdout.push_str(text);
    }

    fn stderr(&mut self, text: &str) {
        self.stderr.push_str(text);
    }
}

/// What one call produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub envelope: Envelope,
    /// The process exit code of SPEC §3.
    pub exit_code: u8,
}

/// A command's successful result: JSON data for the envelope, text for people.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub data: Option<serde_json::Value>,
    pub text: String,
    /// Warnings for people (stderr); in JSON mode they are in `data`.
    pub warnings: String,
    /// What the pack's CLI did, when one ran.
    pub run: Option<output::RunInfo>,
}

/// Whether `--json` appears among hcpx's own flags (before any `--`), so that even a
/// parse error is answered in the format the caller asked for.
fn wants_json(argv: &[String]) -> bool {
    argv.iter()
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == "--json")
}

/// Runs one hcpx command line (the words after `hcpx`).
pub async fn run(argv: Vec<String>, ctx: &Context, sink: &mut dyn Sink) -> Outcome {
    let started = Instant::now();
    let json = wants_json(&argv);
    let parsed = cli::Cli::try_parse_from(std::iter::once("hcpx".to_owned()).chain(argv.iter().cloned()));
    let result = match parsed {
        Ok(cli) => dispatch::dispatch(cli.command, cli.json, &argv, ctx).await,
        Err(error) => match error.kind() {
            clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayVersion
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                let text = error.render().to_string();
                Ok(Reply {
                    data: Some(serde_json::json!({ "help": text })),
                    text,
                    ..Reply::default()
                })
            }
            _ => Err(usage_failure(&argv, &error)),
        },
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (mut envelope, exit_code) = match &result {
        Ok(reply) => {
            let envelope = Envelope::ok(argv, reply.data.clone());
            let envelope = match &reply.run {
                Some(run) => envelope.with_run(run),
                None => envelope,
            };
            (envelope, error::EXIT_OK)
        }
        Err(failure) => (Envelope::failed(argv, failure), failure.exit_code),
    };
    envelope.duration_ms = duration_ms;
    if json {
        let line = serde_json::to_string(&envelope).unwrap_or_else(|_| "{\"ok\":false}".to_owned());
        sink.stdout(&line);
        sink.stdout("\n");
    } else {
        match &result {
            Ok(reply) => {
                sink.stdout(&reply.text);
                sink.stderr(&reply.warnings);
            }
            Err(failure) => {
                if let Some(run) = &failure.run {
                    sink.stdout(&run.stdout);
                    sink.stderr(&run.stderr);
                }
                sink.stderr(&output::failure_text(failure));
            }
        }
    }
    Outcome { envelope, exit_code }
}

/// A clap error as a refusal: fixed message; clap's own words (which quote the
/// caller's text) only as details for a person.
fn usage_failure(argv: &[String], error: &clap::Error) -> Failure {
    use clap::CommandFactory as _;
    let tree = cli::Cli::command();
    let subcommand = argv.iter().find(|arg| !arg.starts_with('-'));
    let known = subcommand.filter(|name| tree.find_subcommand(name.as_str()).is_some());
    let next = match known {
        Some(name) => format!("hcpx {name} --help"),
        None => "hcpx --help".to_owned(),
    };
    let details = error
        .render()
        .to_string()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect();
    Failure::new(
        Reason::InvalidArguments,
        "the arguments do not match the command's usage",
    )
    .details(details)
    .next(next)
}
