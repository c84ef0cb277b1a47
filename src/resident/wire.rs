//! What a CLI process and the resident server say to each other over the socket.
//! The client sends one request: a big-endian `u32` length and that many bytes of
//! JSON ([`Request`]). The server answers with frames, each a kind byte, a
//! big-endian `u32` length and the payload:
//!
//! - `R` refused (UTF-8, why): nothing ran, and the client runs the call itself;
//! - `O` and `E`: text for the client's stdout and stderr, in order;
//! - `X` the exit code (one byte): the call is over.
//!
//! Both ends are the same binary (the server checks), so the format has no version.

use std::io::{Read, Write};

/// The largest request read: a command line and an environment (Linux passes a
/// process at most 2 MiB of both, with the default stack limit).
pub(crate) const MAX_REQUEST: usize = 8 * 1024 * 1024;

/// The largest frame read: more than any one call's rendering.
const MAX_FRAME: usize = 256 * 1024 * 1024;

/// One call as the client sends it: a [`Request`], borrowed from the process's own
/// arguments and environment (nothing is copied to try a server that is not there).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Outgoing<'a> {
    pub argv: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: &'a std::path::Path,
    pub terminals: (bool, bool),
}

impl Outgoing<'_> {
    /// Writes the request, length first.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        let body = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        let length = u32::try_from(body.len()).map_err(std::io::Error::other)?;
        let mut message = Vec::with_capacity(4 + body.len());
        message.extend_from_slice(&length.to_be_bytes());
        message.extend_from_slice(&body);
        out.write_all(&message)
    }

    /// The value of environment variable `wanted`.
    pub fn var(&self, wanted: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.as_str())
    }
}

/// One call, as the client's process would have run it (what the server reads).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub(crate) struct Request {
    /// The words after `hcpx`.
    pub(crate) argv: Vec<String>,
    /// The client's whole environment.
    pub(crate) env: Vec<(String, String)>,
    /// The client's working folder, absolute.
    pub(crate) cwd: std::path::PathBuf,
    /// Whether the client's stdout and stderr are terminals.
    pub(crate) terminals: (bool, bool),
}

/// A frame from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    Refused(String),
    Started,
    Stdout(String),
    Stderr(String),
    Exit(u8),
}

impl Frame {
    /// Appends this frame to `out`.
    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        let (kind, payload): (u8, &[u8]) = match self {
            Self::Refused(text) => (b'R', text.as_bytes()),
            Self::Started => (b'S', &[]),
            Self::Stdout(text) => (b'O', text.as_bytes()),
            Self::Stderr(text) => (b'E', text.as_bytes()),
            Self::Exit(code) => (b'X', std::slice::from_ref(code)),
        };
        out.push(kind);
        // A frame's payload is a rendering of one call, capped far below 4 GiB.
        out.extend_from_slice(&u32::try_from(payload.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(payload);
    }

    /// Reads the next frame; `Ok(None)` when the server closed the connection.
    pub(crate) fn read_from(input: &mut impl Read) -> std::io::Result<Option<Self>> {
        let mut head = [0_u8; 5];
        match input.read_exact(&mut head) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(error) => return Err(error),
        }
        let [kind, length @ ..] = head;
        let length = usize::try_from(u32::from_be_bytes(length)).unwrap_or(usize::MAX);
        if length > MAX_FRAME {
            return Err(std::io::Error::other(format!(
                "the server sent a frame of {length} bytes"
            )));
        }
        let mut payload = vec![0_u8; length];
        input.read_exact(&mut payload)?;
        let text = || String::from_utf8(payload.clone()).map_err(std::io::Error::other);
        Ok(Some(match kind {
            b'R' => Self::Refused(text()?),
            b'S' => Self::Started,
            b'O' => Self::Stdout(text()?),
            b'E' => Self::Stderr(text()?),
            b'X' => Self::Exit(payload.first().copied().unwrap_or(crate::error::EXIT_FAILED)),
            other => {
                return Err(std::io::Error::other(format!(
                    "the server sent a frame of unknown kind {other}"
                )));
            }
        }))
    }
}

impl Request {
    /// Parses a request's body (after its length).
    pub(crate) fn parse(body: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(body).map_err(|error| format!("the request cannot be read: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_back_as_they_were_written() {
        let frames = [
            Frame::Refused("no".to_owned()),
            Frame::Started,
            Frame::Stdout("out ✓\n".to_owned()),
            Frame::Stderr(String::new()),
            Frame::Exit(124),
        ];
        let mut bytes = Vec::new();
        frames.iter().for_each(|frame| frame.write_to(&mut bytes));
        let mut input = bytes.as_slice();
        let mut read = Vec::new();
        while let Some(frame) = Frame::read_from(&mut input).unwrap() {
            read.push(frame);
        }
        assert_eq!(read, frames);
    }

    #[test]
    fn a_cut_frame_is_an_error_and_an_unknown_kind_too() {
        let mut bytes = Vec::new();
        Frame::Stdout("abc".to_owned()).write_to(&mut bytes);
        bytes.pop();
        assert!(Frame::read_from(&mut bytes.as_slice()).is_err());
        assert!(Frame::read_from(&mut [b'Z', 0, 0, 0, 0].as_slice()).is_err());
    }

    #[test]
    fn a_request_is_its_length_then_its_json() {
        let request = Request {
            argv: vec!["exec".to_owned(), "p".to_owned()],
            env: vec![("HOME".to_owned(), "/h".to_owned())],
            cwd: "/w".into(),
            terminals: (true, false),
        };
        let outgoing = Outgoing {
            argv: &request.argv,
            env: &request.env,
            cwd: &request.cwd,
            terminals: request.terminals,
        };
        assert_eq!(outgoing.var("HOME"), Some("/h"));
        let mut bytes = Vec::new();
        outgoing.write_to(&mut bytes).unwrap();
        let length = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(length, bytes.len() - 4);
        assert_eq!(Request::parse(&bytes[4..]).unwrap(), request);
    }
}
