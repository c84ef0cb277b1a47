//! The person at the terminal, for `main.rs` to hand to the command tree: y/N
//! confirmations read from `/dev/tty` (the question shown inert, see
//! [`crate::render::inert`]), and secrets read without echo (or from stdin when it is
//! not a terminal). Nothing else in the crate touches the terminal.

use std::future::Future;
use std::io::{BufRead as _, IsTerminal as _, Read as _, Write as _};
use std::pin::Pin;

use crate::context::{Answer, Human, SecretInput};

pub struct Terminal;

impl Human for Terminal {
    fn confirm<'a>(&'a self, question: &'a str) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(async move {
            let mut stderr = std::io::stderr();
            // The question quotes the caller's words (a source, a value): inert.
            let _ = write!(stderr, "{} [y/N] ", crate::render::inert(question));
            let _ = stderr.flush();
            let Ok(tty) = std::fs::File::open("/dev/tty") else {
                return Answer::No;
            };
            let mut line = String::new();
            if std::io::BufReader::new(tty).read_line(&mut line).is_err() {
                return Answer::No;
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Answer::Yes,
                _ => Answer::No,
            }
        })
    }
}

impl SecretInput for Terminal {
    fn read_secret(&self, prompt: &str) -> Result<String, String> {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return rpassword::prompt_password(crate::render::inert_line(prompt))
                .map_err(|error| format!("cannot read from the terminal: {error}"));
        }
        let mut value = String::new();
        stdin
            .lock()
            .read_to_string(&mut value)
            .map_err(|error| format!("cannot read stdin: {error}"))?;
        // One trailing newline is the pipe's, not the value's.
        if value.ends_with('\n') {
            value.pop();
            if value.ends_with('\r') {
                value.pop();
            }
        }
        Ok(value)
    }
}
