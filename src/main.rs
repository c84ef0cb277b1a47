//! The `hcpx` binary: reads the process's environment, arguments and streams, runs
//! the command tree in [`hcpx::run`], and turns the outcome into an exit code. The
//! only place that touches process-wide state.

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

/// Writes straight to the process's streams, ignoring a closed pipe (`hcpx … | head`).
struct StdStreams;

impl hcpx::Sink for StdStreams {
    fn stdout(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    fn stderr(&mut self, text: &str) {
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HCP_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .init();
    #[expect(clippy::disallowed_methods, reason = "main.rs is where process state is read")]
    let (env, cwd): (Vec<(String, String)>, _) = (std::env::vars().collect(), std::env::current_dir());
    let Ok(cwd) = cwd else {
        let _ = writeln!(
            std::io::stderr(),
            "error: the current folder cannot be read (was it deleted?)"
        );
        return ExitCode::from(hcpx::error::EXIT_REFUSED);
    };
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let ctx = match hcpx::Context::new(env, cwd, interactive) {
        Ok(ctx) => ctx,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "error: {error}");
            return ExitCode::from(hcpx::error::EXIT_REFUSED);
        }
    };
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "error: cannot start the runtime: {error}");
            return ExitCode::from(hcpx::error::EXIT_FAILED);
        }
    };
    let outcome = runtime.block_on(hcpx::run(argv, &ctx, &mut StdStreams));
    ExitCode::from(outcome.exit_code)
}
