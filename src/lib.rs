//! hcpx: one safe door from agents and people to command-line tools.
//!
//! [`execute`] is the whole command tree behind one entry: it parses an argv with
//! clap, dispatches it, and returns the result envelope (see docs/mcp.md) and the text
//! for people. It never prints or exits by itself. The terminal binary calls
//! [`run_to_sink`], which renders that to a [`Sink`]; the MCP server calls
//! [`execute_for_program`]: both run the very same tree.

#![forbid(unsafe_code)]
#![deny(clippy::print_stdout, clippy::print_stderr)]
#![warn(unreachable_pub)]

// The crate's surface: `pub` modules are what the binary (cli, context, error, mcp),
// the integration tests and benches (catalog, index, install, sandbox, search) and the
// fuzz targets (adopt, manifest, template, mcp::args, install) use; every other module
// is the crate's own, and `unreachable_pub` keeps their items from claiming more.
pub mod adopt;
pub(crate) mod audit;
pub(crate) mod availability;
pub(crate) mod binding;
pub mod cache;
pub(crate) mod captures;
pub mod catalog;
pub(crate) mod child;
pub mod cli;
pub(crate) mod commands;
pub mod context;
pub(crate) mod dispatch;
pub(crate) mod envelope;
pub mod error;
pub mod index;
pub mod install;
pub(crate) use hcpx_pack::invocation;
pub(crate) mod layout;
pub use hcpx_pack::manifest;
pub mod mcp;
pub(crate) mod next;
pub(crate) mod npm;
pub(crate) mod pack_cache;
pub(crate) mod policy;
pub(crate) mod program;
pub(crate) mod redact;
pub(crate) mod registry;
pub(crate) mod render;
pub(crate) mod reply;
pub mod resident;
pub(crate) use hcpx_process::runtime;
pub use hcpx_process::sandbox;
pub mod search;
pub(crate) use hcpx_pack::skill;
pub(crate) mod state;
pub(crate) use hcpx_pack::suggest;
pub use hcpx_pack::template;
pub(crate) mod terminal;
pub(crate) mod workdir;

use std::time::Instant;

pub use crate::context::{Context, Principal, Session};
// What the binary needs from modules that are otherwise the crate's own.
pub use crate::envelope::Envelope;
use crate::error::{Failure, Reason};
use crate::next::Next;
pub use crate::render::Ready;
use crate::reply::Effects;
pub(crate) use crate::reply::Reply;
pub use crate::runtime::Progress;
pub use crate::terminal::Terminal;

/// Where rendered output goes: the process's streams, a buffer in tests, nothing
/// under MCP (which reads the envelope).
pub trait Sink: Send {
    fn stdout(&mut self, text: &str);
    fn stderr(&mut self, text: &str);

    /// Whether `stdout` reaches a terminal: the pack's own output is then shown with
    /// its control characters escaped, else byte for byte.
    fn stdout_is_terminal(&self) -> bool {
        false
    }

    /// The same for `stderr`.
    fn stderr_is_terminal(&self) -> bool {
        false
    }
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
    /// The process exit code (see README.md).
    pub exit_code: u8,
}

/// Streams serialized JSON to a [`Sink`] in bounded chunks, cut only at UTF-8
/// boundaries, so an 8 MiB envelope is never built twice in memory.
struct SinkWriter<'a> {
    sink: &'a mut dyn Sink,
    pending: Vec<u8>,
}

impl SinkWriter<'_> {
    const CHUNK: usize = 64 * 1024;

    fn emit(&mut self, all: bool) {
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(text) => text.len(),
            Err(error) => error.valid_up_to(),
        };
        let cut = if all { self.pending.len() } else { valid };
        self.sink.stdout(&String::from_utf8_lossy(&self.pending[..cut]));
        self.pending.drain(..cut);
    }

    fn finish(mut self) {
        self.emit(true);
    }
}

impl std::io::Write for SinkWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        // serde_json hands a long string over in one piece: pass it on in chunks.
        for piece in bytes.chunks(Self::CHUNK) {
            self.pending.extend_from_slice(piece);
            if self.pending.len() >= Self::CHUNK {
                self.emit(false);
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether `--json` appears among hcpx's own flags (before any `--`), so that even a
/// parse error is answered in the format the caller asked for.
fn wants_json(argv: &[String]) -> bool {
    argv.iter()
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == "--json")
}

/// Parses an argv with a command tree built once per thread: building clap's tree
/// was a fifth of what a call cost the MCP server. `hcpx exec` is parsed with a
/// tree of exec alone first ([`cli::exec_tree`]), which a CLI process builds in a
/// fraction of the time.
pub fn parse(argv: &[String]) -> Result<cli::Cli, clap::Error> {
    use clap::{CommandFactory as _, FromArgMatches as _};
    thread_local! {
        static TREE: std::cell::RefCell<clap::Command> = std::cell::RefCell::new(cli::Cli::command());
        static EXEC: std::cell::RefCell<clap::Command> = std::cell::RefCell::new(cli::exec_tree());
    }
    let words = std::iter::once("hcpx".to_owned()).chain(argv.iter().cloned());
    // `hcpx exec` with exec's part of the tree only; anything it does not accept
    // (help, a version, an error) again with the whole tree, which words it.
    if cli::names_exec(argv)
        && let Ok(cli) = EXEC.with(|tree| {
            let matches = tree.borrow_mut().try_get_matches_from_mut(words.clone())?;
            cli::Cli::from_arg_matches(&matches)
        })
    {
        return Ok(cli);
    }
    TREE.with(|tree| {
        let matches = tree.borrow_mut().try_get_matches_from_mut(words)?;
        cli::Cli::from_arg_matches(&matches)
    })
}

/// One call's result, for in-process callers such as the MCP server.
#[derive(Debug, Clone)]
pub struct Executed {
    pub envelope: Envelope,
    /// The process exit code (see README.md).
    pub exit_code: u8,
    /// The human rendering, besides the child's own output (which is in the
    /// envelope): what a person would read on stdout and stderr.
    pub text: String,
    pub errors: String,
    /// What the command changed beyond its result (the packs there are, say).
    pub effects: Effects,
}

/// `hcpx --version` as data.
#[derive(serde::Serialize)]
struct Version {
    name: &'static str,
    version: &'static str,
}

/// Runs one hcpx command line (the words after `hcpx`) and returns the envelope and
/// the human rendering. Prints nothing.
pub async fn execute(argv: Vec<String>, ctx: &Context) -> Executed {
    mark("execute");
    let started = Instant::now();
    // What the completion scripts ask is outside the clap tree (`commands::complete`).
    let completing = commands::complete::request(&argv);
    let parsed = match completing {
        Some(_) => Ok(None),
        None => parse(&commands::help::parseable(&argv)).map(Some),
    };
    let result = match parsed {
        Ok(None) => commands::complete::complete(ctx, completing.unwrap_or(&[])),
        Ok(Some(cli)) => {
            mark("parsed");
            dispatch::dispatch(cli.command, cli.global.json, &argv, ctx).await
        }
        Err(error) => match error.kind() {
            clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                Ok(commands::help::help(&argv, &error.render().to_string()))
            }
            // The version as a field of its own: `hcpx --version --json` is read by
            // scripts, which should not have to cut `hcpx ` off a help text.
            clap::error::ErrorKind::DisplayVersion => {
                let version = env!("CARGO_PKG_VERSION");
                Ok(Reply::new(
                    &Version {
                        name: "hcpx",
                        version,
                    },
                    format!("hcpx {version}\n"),
                ))
            }
            _ => Err(usage_failure(&argv, &error)),
        },
    };
    let mut executed = match result {
        Ok(reply) => {
            let mut errors = reply.note.as_deref().map(render::note_line).unwrap_or_default();
            errors.push_str(&render::warnings_text(&reply.warnings));
            let mut envelope = Envelope::ok(argv, reply.data);
            envelope.warnings = reply.warnings;
            envelope.next = reply.next;
            let envelope = match reply.run {
                Some(run) => envelope.with_run(run),
                None => envelope,
            };
            Executed {
                envelope,
                exit_code: error::EXIT_OK,
                text: reply.text,
                errors,
                effects: reply.effects,
            }
        }
        Err(failure) => {
            let errors = render::failure_text(&failure);
            let exit_code = failure.exit_code;
            Executed {
                envelope: Envelope::failed(argv, failure),
                exit_code,
                text: String::new(),
                errors,
                effects: Effects::default(),
            }
        }
    };
    executed.envelope.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    executed
}

/// [`execute`] for a program that reads the envelope's data, never text (the MCP
/// tool): the command runs as if `--json` were given, and the envelope's `argv` says
/// so, as it would for `hcpx --json …` at a terminal.
pub async fn execute_for_program(mut argv: Vec<String>, ctx: &Context) -> Executed {
    if !wants_json(&argv) {
        argv.insert(0, "--json".to_owned());
    }
    execute(argv, ctx).await
}

/// Runs one hcpx command line (the words after `hcpx`) and renders it to `sink`: the
/// envelope as JSON with `--json`, else text for people.
pub async fn run_to_sink(argv: Vec<String>, ctx: &Context, sink: &mut dyn Sink) -> Outcome {
    let json = wants_json(&argv);
    let executed = execute(argv, ctx).await;
    mark("executed");
    if json {
        let mut writer = SinkWriter {
            sink,
            pending: Vec::with_capacity(SinkWriter::CHUNK),
        };
        if serde_json::to_writer(&mut writer, &executed.envelope).is_err() {
            writer.pending.clear();
            writer.sink.stdout("{\"ok\":false}");
        }
        writer.pending.push(b'\n');
        writer.finish();
    } else {
        let to = render::Terminals {
            stdout: sink.stdout_is_terminal(),
            stderr: sink.stderr_is_terminal(),
        };
        let shown = render::shown(&executed.envelope, &executed.text, &executed.errors, to);
        shown.stdout.iter().for_each(|text| sink.stdout(text));
        shown.stderr.iter().for_each(|text| sink.stderr(text));
    }
    Outcome {
        envelope: executed.envelope,
        exit_code: executed.exit_code,
    }
}

/// A clap error as a refusal: fixed message; clap's own words (which quote the
/// caller's text) only as details for a person.
/// The most characters of clap's words a usage refusal shows, per line.
const MAX_USAGE_TEXT: usize = 300;

fn usage_failure(argv: &[String], error: &clap::Error) -> Failure {
    use clap::CommandFactory as _;
    let tree = cli::Cli::command();
    let subcommand = argv.iter().find(|arg| !arg.starts_with('-'));
    let known = subcommand.filter(|name| tree.find_subcommand(name.as_str()).is_some());
    // clap's own words, without terminal styling: what was wrong, its tips (a
    // similar subcommand, `-- -x` for a value), and the usage line.
    let rendered = error.render().to_string();
    let mut problem = None;
    let mut tips = Vec::new();
    let mut usage = None;
    for line in rendered
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
    {
        if let Some(rest) = line.strip_prefix("error: ") {
            problem.get_or_insert_with(|| rest.to_owned());
        } else if let Some(rest) = line.strip_prefix("tip: ") {
            tips.push(rest.to_owned());
        } else if let Some(rest) = line.strip_prefix("Usage: ") {
            usage.get_or_insert_with(|| rest.to_owned());
        } else if usage.is_none()
            && tips.is_empty()
            && let Some(problem) = problem.as_mut()
        {
            // What the problem lists on lines of its own (the missing arguments).
            problem.push_str(if problem.ends_with(':') { " " } else { ", " });
            problem.push_str(line);
        }
    }
    // clap quotes the caller's own words: shown with control characters and
    // reordering marks escaped, and bounded, whatever they were.
    let shown = |text: &str| -> String {
        let mut shown: String = text.chars().take(MAX_USAGE_TEXT).map(render::printable).collect();
        if text.chars().count() > MAX_USAGE_TEXT {
            shown.push('…');
        }
        shown
    };
    let problem =
        shown(&problem.unwrap_or_else(|| "the arguments do not match the command's usage".to_owned()));
    let tips: Vec<String> = tips.iter().map(|tip| shown(tip)).collect();
    let mut message = problem.clone();
    for tip in &tips {
        message.push_str("; ");
        message.push_str(tip);
    }
    // A misspelt command or option whose fix clap knows: the same words with it
    // corrected.
    use clap::error::{ContextKind, ContextValue};
    let fix = |wrong: ContextKind, suggested: ContextKind| match (error.get(wrong), error.get(suggested)) {
        (Some(wrong), Some(ContextValue::String(right))) => Some((wrong.to_string(), right.clone())),
        (Some(wrong), Some(ContextValue::Strings(right))) if right.len() == 1 => {
            Some((wrong.to_string(), right[0].clone()))
        }
        _ => None,
    };
    let corrected = fix(ContextKind::InvalidSubcommand, ContextKind::SuggestedSubcommand)
        .or_else(|| fix(ContextKind::InvalidArg, ContextKind::SuggestedArg))
        .map(|(wrong, right)| -> Vec<String> {
            argv.iter()
                .filter(|word| *word != "--json")
                .map(|word| {
                    if *word == wrong {
                        right.clone()
                    } else {
                        word.clone()
                    }
                })
                .collect()
        });
    let next = match (corrected, known) {
        // A correction that still does not parse is shown, not offered as a call.
        (Some(corrected), _) if !parses(&corrected) => {
            Next::advice(format!("hcpx {}", shell_words::join(corrected)))
        }
        (Some(corrected), _) => Next::hcpx(corrected),
        (None, Some(name)) => Next::hcpx([name.as_str(), "--help"]),
        (None, None) => Next::hcpx(["--help"]),
    };
    let details = usage.iter().map(|usage| format!("usage: {usage}")).collect();
    Failure::new(Reason::InvalidArguments, message)
        .details(details)
        .data(Usage {
            problem: &problem,
            tips: &tips,
            usage: usage.as_deref(),
        })
        .next(next)
}

/// What a usage refusal's `data` says: clap's words, split.
#[derive(serde::Serialize)]
struct Usage<'a> {
    problem: &'a str,
    tips: &'a [String],
    usage: Option<&'a str>,
}

/// Whether `argv` is one whole command (a help request is).
fn parses(argv: &[String]) -> bool {
    match parse(argv) {
        Ok(_) => true,
        Err(error) => error.kind() == clap::error::ErrorKind::DisplayHelp,
    }
}

/// Step marks for the exec bench's profile (feature `marks`).
#[doc(hidden)]
pub use hcpx_process::{mark, take_marks};

/// How long each step marked on this thread since the last take took, a line each
/// (empty without the feature `marks`).
#[doc(hidden)]
pub fn marks_text() -> String {
    let marks = take_marks();
    let mut text = String::new();
    for pair in marks.windows(2) {
        let [(_, from), (name, to)] = pair else { continue };
        text.push_str(&format!(
            "{:>8.3} ms  {name}\n",
            (*to - *from).as_secs_f64() * 1e3
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn sink_writer_never_splits_a_code_point() {
        let mut sink = BufferSink::default();
        let mut writer = SinkWriter {
            sink: &mut sink,
            pending: Vec::new(),
        };
        let text = "é".repeat(SinkWriter::CHUNK);
        for piece in text.as_bytes().chunks(SinkWriter::CHUNK - 1) {
            writer.write_all(piece).unwrap();
        }
        writer.finish();
        assert_eq!(sink.stdout, text);
    }

    #[test]
    fn sink_writer_passes_one_big_write_on_in_chunks() {
        struct Counting(Vec<usize>);
        impl Sink for Counting {
            fn stdout(&mut self, text: &str) {
                self.0.push(text.len());
            }
            fn stderr(&mut self, _: &str) {}
        }
        let mut sink = Counting(Vec::new());
        let mut writer = SinkWriter {
            sink: &mut sink,
            pending: Vec::new(),
        };
        writer.write_all(&vec![b'x'; 10 * SinkWriter::CHUNK]).unwrap();
        writer.finish();
        assert!(sink.0.iter().all(|len| *len <= SinkWriter::CHUNK), "{:?}", sink.0);
        assert_eq!(sink.0.iter().sum::<usize>(), 10 * SinkWriter::CHUNK);
    }
}
