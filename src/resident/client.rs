//! A CLI process's side: hands its call to the resident server when one serves
//! its `$HCP_HOME`, and writes out what comes back. Blocking and small: it runs
//! before the process sets up anything else.

use std::path::Path;

use super::wire::{Frame, Outgoing};
use crate::Sink;

/// What `HCP_RESIDENT` says (see [`crate::context::env_vars::HCP_RESIDENT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Auto,
    Off,
    Require,
}

impl Mode {
    /// The mode `value` (of `HCP_RESIDENT`) names: `off`, `0`, `false` or `no`
    /// for off, `require` for require, anything else auto.
    pub fn from_value(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            Some(value)
                if ["off", "0", "false", "no"]
                    .iter()
                    .any(|off| value.eq_ignore_ascii_case(off)) =>
            {
                Self::Off
            }
            Some(value) if value.eq_ignore_ascii_case("require") => Self::Require,
            _ => Self::Auto,
        }
    }
}

/// How a hand-off went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandOff {
    /// The server ran the call; its output is written; the exit code.
    Served(u8),
    /// Nothing ran: the process runs the call itself (why it was not handed off).
    Local(String),
    /// The server took the call and went away before answering: whether the call
    /// ran is unknown, so it must not run again.
    Lost(String),
}

/// Hands `request` to the server of `$HCP_HOME` (from the request's environment),
/// writing its output to `sink`.
pub fn hand_off(request: &Outgoing<'_>, sink: &mut dyn Sink) -> HandOff {
    let Ok(home) = crate::context::home_of(
        request.var(crate::context::env_vars::HCP_HOME),
        request.var(crate::context::env_vars::HOME),
        request.cwd,
    ) else {
        return HandOff::Local("hcpx does not know where its state lives".to_owned());
    };
    let path = crate::layout::resident_socket(&home);
    let mut stream = match std::os::unix::net::UnixStream::connect(&path) {
        Ok(stream) => stream,
        Err(error) => return HandOff::Local(no_server(&path, &error)),
    };
    if let Err(reason) = same_user(&stream) {
        return HandOff::Local(reason);
    }
    // A server that refuses the client may close before all of the request is
    // written: its answer is still there to read.
    let written = request.write_to(&mut stream);
    let mut input = std::io::BufReader::new(&stream);
    // Whether the server said it runs the call: until then, nothing has run.
    let mut started = false;
    loop {
        match (started, Frame::read_from(&mut input)) {
            (false, Ok(Some(Frame::Refused(reason)))) => {
                return HandOff::Local(format!("the resident server refused the call: {reason}"));
            }
            (false, Ok(Some(Frame::Started))) => started = true,
            (false, Ok(None) | Err(_)) => {
                return HandOff::Local(match written {
                    Err(error) => format!("the resident server did not take the call: {error}"),
                    Ok(()) => "the resident server closed the connection before it ran the call".to_owned(),
                });
            }
            (true, Ok(Some(Frame::Stdout(text)))) => sink.stdout(&text),
            (true, Ok(Some(Frame::Stderr(text)))) => sink.stderr(&text),
            (true, Ok(Some(Frame::Exit(code)))) => return HandOff::Served(code),
            (_, Ok(Some(frame))) => {
                return HandOff::Lost(format!(
                    "the resident server sent {frame:?} out of turn; the call may have run, so it is \
                     not run again"
                ));
            }
            (true, Ok(None)) => {
                return HandOff::Lost(
                    "the resident server stopped before the call's result came back; the call may have \
                     run, so it is not run again"
                        .to_owned(),
                );
            }
            (true, Err(error)) => {
                return HandOff::Lost(format!(
                    "the resident server's answer cannot be read ({error}); the call may have run, so it \
                     is not run again"
                ));
            }
        }
    }
}

/// Why no server took the connection.
fn no_server(path: &Path, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => format!(
            "no resident server is running for this HCP_HOME (start one with `hcpx serve`; it listens at {})",
            path.display()
        ),
        _ => format!(
            "the resident server at {} cannot be reached: {error}",
            path.display()
        ),
    }
}

/// Whether the server runs as this process's user.
fn same_user(stream: &std::os::unix::net::UnixStream) -> Result<(), String> {
    use std::os::fd::AsFd as _;
    let credentials = hcpx_process::runtime::Credentials::of(stream.as_fd())
        .map_err(|error| format!("the resident server cannot be identified: {error}"))?;
    let own = rustix::process::geteuid().as_raw();
    if credentials.uid != own {
        return Err(format!(
            "the resident server runs as user {}, not as {own}",
            credentials.uid
        ));
    }
    Ok(())
}
