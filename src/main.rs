//! The `hcpx` binary: reads the process's environment, arguments and streams, runs
//! the command tree in [`hcpx::run_to_sink`], and turns the outcome into an exit code. The
//! only place that touches process-wide state.
//!
//! On Linux with glibc, the process starts at [`main`], the C library's entry, not
//! at Rust's (glibc hands std the arguments itself, before any entry): Rust's
//! start-up reads `/proc/self/maps` to find the main thread's stack and maps a
//! signal stack, about 0.1 ms of every `hcpx exec`, for a message on a stack
//! overflow. What else it does, [`main`] does: closed standard streams are opened on
//! `/dev/null`, SIGPIPE is ignored. A stack overflow still ends the process (the
//! kernel's guard gap), by SIGSEGV without the message.

#![cfg_attr(all(target_os = "linux", target_env = "gnu"), no_main)]
#![deny(unsafe_code)]

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;

use hcpx::context::{Human, SecretInput};

/// Writes straight to the process's streams, ignoring a closed pipe (`hcpx … | head`).
/// A progress line shown meanwhile is cleared before the first output.
struct StdStreams {
    progress_shown: Arc<std::sync::atomic::AtomicBool>,
    /// Whether stdout and stderr are terminals, read once.
    terminals: (bool, bool),
}

impl StdStreams {
    fn clear_progress(&self) {
        if self
            .progress_shown
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            let _ = std::io::stderr().write_all(b"\r\x1b[K");
        }
    }
}

impl hcpx::Sink for StdStreams {
    fn stdout(&mut self, text: &str) {
        self.clear_progress();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    fn stderr(&mut self, text: &str) {
        self.clear_progress();
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    fn stdout_is_terminal(&self) -> bool {
        self.terminals.0
    }

    fn stderr_is_terminal(&self) -> bool {
        self.terminals.1
    }
}

fn fail(message: &str, code: u8) -> u8 {
    let _ = writeln!(std::io::stderr(), "error: {message}");
    code
}

/// Cancels `cancel` on SIGINT, SIGTERM or SIGHUP: the running children's groups go
/// first, then the process ends.
fn cancel_on_signals(cancel: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            if let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                    _ = hangup.recv() => {}
                }
                cancel.cancel();
            }
        }
    });
}

/// Runs the MCP server on stdio until the client closes stdin, or over HTTP (a TCP
/// address or a unix socket), until
/// SIGTERM, SIGINT or SIGHUP (running calls are cancelled first). `--help` and bad arguments go through the command tree like
/// any other command.
fn serve_mcp(
    args: &hcpx::cli::McpArgs,
    json: bool,
    ctx: hcpx::Context,
    runtime: &tokio::runtime::Runtime,
) -> u8 {
    let options = hcpx::mcp::Options::from_context(&ctx, args.read_only);
    if args.http.is_some() || args.unix.is_some() {
        let settings = match hcpx::mcp::http::Settings::resolve(args, &ctx) {
            Ok(settings) => settings,
            Err(error) => return fail(&error.to_string(), hcpx::error::EXIT_REFUSED),
        };
        let keys = match args.state_key_file.as_deref().map(hcpx::mcp::StateKeys::load) {
            None => None,
            Some(Ok(keys)) => Some(keys),
            Some(Err(error)) => return fail(&error.to_string(), hcpx::error::EXIT_REFUSED),
        };
        let cancel = ctx.cancel.clone();
        let server = hcpx::mcp::Server::new(ctx, options).shared(hcpx::mcp::Shared {
            keys,
            stateless: args.stateless,
        });
        return match runtime.block_on(async {
            let bound = hcpx::mcp::http::bind(settings).await?;
            let endpoint = bound.endpoint();
            let _ = writeln!(
                std::io::stderr(),
                "hcpx: serving MCP at {endpoint} (stop with Ctrl-C or SIGTERM)"
            );
            if json {
                let (url, socket) = match endpoint {
                    hcpx::mcp::http::Endpoint::Tcp(address) => (format!("http://{address}/mcp"), None),
                    hcpx::mcp::http::Endpoint::Unix(path) => ("http://localhost/mcp".to_owned(), Some(path)),
                };
                ready(&hcpx::Ready {
                    serving: "mcp",
                    url: Some(url),
                    socket,
                    pid: std::process::id(),
                });
            }
            cancel_on_signals(cancel);
            bound.serve(server).await
        }) {
            Ok(()) => 0,
            Err(error) => fail(&error.to_string(), hcpx::error::EXIT_FAILED),
        };
    }
    let cancel = ctx.cancel.clone();
    let server = hcpx::mcp::Server::new(ctx, options);
    // Non-blocking pipes where stdin and stdout are FIFOs (Linux), so no read or
    // write waits on a blocking thread; the plain stdio handles elsewhere.
    match runtime.block_on(async {
        cancel_on_signals(cancel);
        let (read, write) = rmcp::transport::stdio_pipes();
        hcpx::mcp::serve(server, read, write).await
    }) {
        Ok(()) => {
            print_marks();
            0
        }
        Err(error) => fail(&error, hcpx::error::EXIT_FAILED),
    }
}

/// Runs `hcpx serve` until SIGTERM, SIGINT or SIGHUP, or its idle time is over.
fn serve_resident(
    args: &hcpx::cli::ServeArgs,
    json: bool,
    ctx: &hcpx::Context,
    runtime: &tokio::runtime::Runtime,
) -> u8 {
    let cancel = ctx.cancel.clone();
    runtime.block_on(async {
        let bound = match hcpx::resident::bind(ctx) {
            Ok(bound) => bound,
            Err(error) => return fail(&error.to_string(), hcpx::error::EXIT_REFUSED),
        };
        let _ = writeln!(
            std::io::stderr(),
            "hcpx: serving `hcpx exec` calls at {} (stop with Ctrl-C or SIGTERM)",
            bound.path().display()
        );
        if json {
            ready(&hcpx::Ready {
                serving: "exec",
                url: None,
                socket: Some(bound.path().to_path_buf()),
                pid: std::process::id(),
            });
        }
        cancel_on_signals(cancel);
        bound.serve(args.idle.map(std::time::Duration::from_secs)).await;
        0
    })
}

/// With `--json`, a server says on stdout, in one line, that it serves and where.
fn ready(ready: &hcpx::Ready) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(ready.line().as_bytes()).and_then(|()| out.flush());
}

/// `hcpx exec` without a person who may be asked to confirm (no terminal, or an
/// agent's call): handed to the resident server when one takes it (see `hcpx serve --help`). `None`: the process runs the
/// call.
fn hand_off(
    argv: &[String],
    env: &[(String, String)],
    cwd: &std::path::Path,
    interactive: bool,
) -> Option<u8> {
    use hcpx::resident::{HandOff, Mode};
    if !hcpx::cli::names_exec(argv) {
        return None;
    }
    let request = hcpx::resident::Outgoing {
        argv,
        env,
        cwd,
        terminals: (std::io::stdout().is_terminal(), std::io::stderr().is_terminal()),
    };
    use hcpx::context::env_vars;
    let mode = Mode::from_value(request.var(env_vars::HCP_RESIDENT));
    // Only a person at a terminal is asked to confirm (see `main`): an agent's call
    // runs alike anywhere.
    let interactive = interactive
        && hcpx::context::principal_of(request.var(env_vars::HCP_AGENT)) == hcpx::Principal::Terminal;
    let refused = |why: &str| {
        fail(
            &format!("HCP_RESIDENT=require, and {why}"),
            hcpx::error::EXIT_REFUSED,
        )
    };
    match mode {
        Mode::Off => return None,
        Mode::Require if interactive => {
            return Some(refused(
                "a call that a person at this terminal may be asked to confirm runs in its own process",
            ));
        }
        Mode::Auto if interactive => return None,
        Mode::Auto | Mode::Require => {}
    }
    let mut streams = StdStreams {
        progress_shown: Arc::default(),
        terminals: request.terminals,
    };
    match hcpx::resident::hand_off(&request, &mut streams) {
        HandOff::Served(code) => Some(code),
        HandOff::Local(why) if mode == Mode::Require => Some(refused(&why)),
        HandOff::Local(_) => None,
        HandOff::Lost(why) => Some(fail(&why, hcpx::error::EXIT_FAILED)),
    }
}

/// The process's entry, called by the C library with the arguments (which
/// `std::env::args_os` reads on its own). Ends the process with [`run`]'s code,
/// through `std::process::exit`, which flushes stdout.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "the process's entry must be the C symbol `main`")]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    standard_streams();
    ignore_sigpipe();
    #[expect(clippy::disallowed_methods, reason = "main.rs decides the exit code")]
    std::process::exit(i32::from(run()))
}

/// Elsewhere, Rust's own entry: std reads the arguments from it.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run())
}

/// A standard stream that is closed (fd 0, 1 or 2) is opened on `/dev/null`, as
/// Rust's start-up does: otherwise the next file hcpx opens would take its number,
/// and what is printed would land in it. `/dev/null` is opened until the number it
/// gets is not a standard one.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn standard_streams() {
    use std::os::fd::{AsRawFd as _, IntoRawFd as _};
    while let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        if null.as_raw_fd() > 2 {
            break;
        }
        // It stays open as the stream whose number it took.
        let _ = null.into_raw_fd();
    }
}

/// SIGPIPE is ignored, as Rust's start-up does: writing to a closed pipe (`hcpx …
/// | head`) is an error to handle, not the end of the process. The runtime restores
/// the default in every child.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn ignore_sigpipe() {
    // SAFETY: SIG_IGN installs no handler, and no other thread exists yet to race
    // on the disposition.
    #[expect(unsafe_code, reason = "setting a signal's disposition is a raw system call")]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// What the process does; its exit code.
fn run() -> u8 {
    hcpx::mark("main");
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    #[expect(clippy::disallowed_methods, reason = "main.rs is where process state is read")]
    let (env, cwd): (Vec<(String, String)>, _) = (std::env::vars().collect(), std::env::current_dir());
    let Ok(cwd) = cwd else {
        return fail(
            "the current folder cannot be read (was it deleted?)",
            hcpx::error::EXIT_REFUSED,
        );
    };
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if let Some(code) = hand_off(&argv, &env, &cwd, interactive) {
        return code;
    }
    {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        // Without `HCP_LOG`, warnings and errors: a fixed level, which spares every
        // command the directive parser's start-up (about 0.06 ms a process).
        #[expect(clippy::disallowed_methods, reason = "main.rs is where process state is read")]
        let levels: Box<dyn tracing_subscriber::layer::Filter<_> + Send + Sync> =
            match std::env::var_os("HCP_LOG") {
                Some(_) => Box::new(
                    tracing_subscriber::EnvFilter::try_from_env("HCP_LOG").unwrap_or_else(|_| "warn".into()),
                ),
                None => Box::new(tracing_subscriber::filter::LevelFilter::WARN),
            };
        // Logs go to stderr (stdout is the MCP channel), without rmcp's errors about
        // a client that merely went away.
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(false)
                    .with_filter(levels)
                    .with_filter(hcpx::mcp::logs::ClientGone),
            )
            .init();
    }
    hcpx::mark("logs");
    let ctx = match hcpx::Context::new(env, cwd, interactive) {
        Ok(ctx) => {
            let mut ctx = ctx.with_temp_dir(std::env::temp_dir());
            ctx.self_exe = hcpx::context::SelfExe::new(|| std::env::current_exe().ok());
            ctx
        }
        Err(error) => return fail(&error.to_string(), hcpx::error::EXIT_REFUSED),
    };
    // Only a person at a terminal is asked to confirm: never an agent's shell.
    let terminal = Arc::new(hcpx::Terminal);
    let human: Option<Arc<dyn Human>> = (ctx.principal == hcpx::Principal::Terminal && interactive)
        .then(|| terminal.clone() as Arc<dyn Human>);
    let mut ctx = ctx.with_people(human, Some(terminal as Arc<dyn SecretInput>));
    // Long work (an npm fetch, a slow command) says it is still going, on a person's
    // terminal only; the line is cleared before the result is printed.
    let progress_shown = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if interactive && ctx.principal == hcpx::Principal::Terminal {
        let shown = progress_shown.clone();
        ctx.progress = Some(Arc::new(move |progress: hcpx::Progress| {
            shown.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = write!(
                std::io::stderr(),
                "\rhcpx: still working, {} s",
                progress.elapsed.as_secs()
            );
        }));
    }
    // One thread, for the CLI and for the MCP server alike: every wait is
    // asynchronous (children, pipes, timers), and hopping between worker threads cost
    // the server more per call than it ever saved.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            return fail(
                &format!("cannot start the runtime: {error}"),
                hcpx::error::EXIT_FAILED,
            );
        }
    };
    hcpx::mark("context, runtime");
    // `hcpx mcp`: the server owns stdin and stdout from here on. Anything else,
    // `hcpx mcp --help` and bad arguments included, goes through the command tree
    // (which parses again, with the tree built once per thread). A call without the
    // word is not parsed twice.
    if argv.iter().any(|word| word == "mcp")
        && let Ok(hcpx::cli::Cli {
            command: hcpx::cli::HcpxCommand::Mcp(args),
            global,
        }) = hcpx::parse(&argv)
    {
        return serve_mcp(&args, global.json, ctx, &runtime);
    }
    if argv.iter().any(|word| word == "serve")
        && let Ok(hcpx::cli::Cli {
            command: hcpx::cli::HcpxCommand::Serve(args),
            global,
        }) = hcpx::parse(&argv)
    {
        return serve_resident(&args, global.json, &ctx, &runtime);
    }
    let outcome = runtime.block_on(async {
        // Interrupted or terminated: the running child's whole group goes first.
        cancel_on_signals(ctx.cancel.clone());
        let mut streams = StdStreams {
            progress_shown,
            terminals: (std::io::stdout().is_terminal(), std::io::stderr().is_terminal()),
        };
        hcpx::run_to_sink(argv, &ctx, &mut streams).await
    });
    hcpx::mark("main done");
    print_marks();
    // The call is over: its output written, its folder removed, its processes gone.
    // What it held (the runtime, the session's caches and descriptors) goes with the
    // process, as the kernel takes it back, instead of being freed piece by piece
    // first. The standard streams are still flushed on the way out.
    std::mem::forget(runtime);
    std::mem::forget(ctx);
    outcome.exit_code
}

/// Built with the feature `marks` and run with `HCP_MARKS` set: how long each marked
/// step of this process took, on stderr (for profiling the CLI; see the README's
/// benchmarks). Otherwise nothing.
fn print_marks() {
    #[expect(clippy::disallowed_methods, reason = "main.rs is where process state is read")]
    if cfg!(feature = "marks") && std::env::var_os("HCP_MARKS").is_some() {
        let _ = std::io::stderr().write_all(hcpx::marks_text().as_bytes());
    }
}
