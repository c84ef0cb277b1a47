//! The JSON-RPC transport of `hcpx mcp` on a byte stream: one message per line.
//!
//! In front of rmcp's service so that every line gets an answer: a line that is not
//! JSON gets `-32700` (with `id` null: there is none to read), JSON that is not a
//! message gets `-32600` (with its `id` when it has one), and a line longer than
//! [`MAX_LINE`] gets an error as soon as it passes the bound, its rest discarded
//! unread, never buffered. The server keeps serving after each. Unknown
//! notifications are ignored, as JSON-RPC says a notification is never answered.
//! Outgoing messages go through one writer task, so an error answered here never
//! interleaves with a response rmcp sends.

use std::future::Future;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

/// The longest request line read (the tool bounds `args` at 1 MiB and `argv` at
/// 1,024 words; a line past this is refused without being held).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// JSON-RPC's error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

#[derive(Debug, thiserror::Error)]
#[error("the MCP client's stream is closed")]
pub struct Closed;

/// A line transport over `read` and `write` (stdin and stdout, or a test's pipe).
pub struct Lines<R> {
    reader: BufReader<R>,
    /// The line read so far: kept across cancelled receives.
    line: Vec<u8>,
    /// Inside a line past [`MAX_LINE`], which was already answered.
    discarding: bool,
    out: Option<mpsc::UnboundedSender<Vec<u8>>>,
    writer: Option<tokio::task::JoinHandle<()>>,
}

impl<R: AsyncRead + Unpin + Send> Lines<R> {
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W) -> Self {
        let (out, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(async move {
            let mut write = write;
            while let Some(line) = queue.recv().await {
                if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                    break;
                }
                crate::mark("mcp written");
            }
            let _ = write.shutdown().await;
        });
        Self {
            reader: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            discarding: false,
            out: Some(out),
            writer: Some(writer),
        }
    }

    fn queue(&self, line: Vec<u8>) -> Result<(), Closed> {
        self.out.as_ref().ok_or(Closed)?.send(line).map_err(|_| Closed)
    }

    fn answer_error(&self, id: &Value, code: i64, message: &str) {
        let response = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
        let mut line = serde_json::to_vec(&response).unwrap_or_default();
        line.push(b'\n');
        // The client is gone when this fails; the next read will say so.
        let _ = self.queue(line);
    }

    /// The next whole line, or `Err(())` once for a line that passed the bound;
    /// `None` at the end of input. Cancellation-safe: bytes are moved out of the
    /// reader's buffer only together with their copy into `line`.
    async fn next_line(&mut self) -> Option<Result<Vec<u8>, ()>> {
        loop {
            let buffer = self.reader.fill_buf().await.ok()?;
            if buffer.is_empty() {
                return None;
            }
            let (take, complete) = match memchr::memchr(b'\n', buffer) {
                Some(at) => (at + 1, true),
                None => (buffer.len(), false),
            };
            if !self.discarding {
                let end = if complete { take - 1 } else { take };
                self.line.extend_from_slice(&buffer[..end]);
            }
            self.reader.consume(take);
            if !self.discarding && self.line.len() > MAX_LINE {
                // The rest of the line, if any, is skipped unread.
                self.discarding = !complete;
                self.line = Vec::new();
                return Some(Err(()));
            }
            if complete {
                if std::mem::take(&mut self.discarding) {
                    continue;
                }
                return Some(Ok(std::mem::take(&mut self.line)));
            }
        }
    }

    /// A message, or the error answered for a line that is none.
    fn parse(&self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
            Ok(message) => return Some(message),
            Err(error) => tracing::debug!("an incoming line is not an MCP message: {error}"),
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            self.answer_error(&Value::Null, PARSE_ERROR, "Parse error: the line is not JSON");
            return None;
        };
        let id = value.get("id").filter(|id| id.is_string() || id.is_number());
        let notification = value.get("method").is_some_and(Value::is_string) && value.get("id").is_none();
        if !notification {
            self.answer_error(
                id.unwrap_or(&Value::Null),
                INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC 2.0 request, response or notification of MCP",
            );
        }
        None
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> rmcp::transport::Transport<RoleServer> for Lines<R> {
    type Error = Closed;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        crate::mark("mcp send");
        let queued = serde_json::to_vec(&item)
            .map_err(|_| Closed)
            .and_then(|mut line| {
                line.push(b'\n');
                self.queue(line)
            });
        async move { queued }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.next_line().await? {
                Ok(line) => {
                    crate::mark("mcp line read");
                    if let Some(message) = self.parse(&line) {
                        crate::mark("mcp line parsed");
                        return Some(message);
                    }
                }
                Err(()) => self.answer_error(
                    &Value::Null,
                    INVALID_REQUEST,
                    "Request too large: a line passed 16 MiB; it was not read",
                ),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Everything queued is written before the stream closes.
        drop(self.out.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::Transport as _;
    use tokio::io::AsyncReadExt as _;

    async fn answers(input: &[u8]) -> (Vec<String>, Vec<Value>) {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let input = input.to_vec();
        let feeder = tokio::spawn(async move {
            client_write.write_all(&input).await.unwrap();
            client_write.shutdown().await.unwrap();
        });
        let mut lines = Lines::new(server_read, server_write);
        let mut methods = Vec::new();
        while let Some(message) = lines.receive().await {
            methods.push(
                serde_json::to_value(&message).unwrap()["method"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            );
        }
        lines.close().await.unwrap();
        feeder.await.unwrap();
        let mut written = String::new();
        client_read.read_to_string(&mut written).await.unwrap();
        let replies = written
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (methods, replies)
    }

    #[tokio::test]
    async fn every_bad_line_is_answered_and_the_next_is_read() {
        let ping = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        let mut input = Vec::new();
        for bad in [
            &b"not json"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
            br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\ud800"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":42}"#,
            br#"[1,2]"#,
            br#"{"jsonrpc":"2.0","method":"notifications/unknown_thing"}"#,
            b"",
        ] {
            input.extend_from_slice(bad);
            input.push(b'\n');
        }
        input.extend_from_slice(ping);
        input.push(b'\n');
        let (methods, replies) = answers(&input).await;
        // An unknown notification goes on to the service, which ignores it: a
        // notification is never answered.
        assert_eq!(methods, ["notifications/unknown_thing", "ping"]);
        let codes: Vec<(Value, Value)> = replies
            .iter()
            .map(|reply| (reply["id"].clone(), reply["error"]["code"].clone()))
            .collect();
        assert_eq!(
            codes,
            [
                (Value::Null, json!(-32700)),
                (Value::Null, json!(-32700)),
                (Value::Null, json!(-32700)),
                (json!(3), json!(-32600)),
                (Value::Null, json!(-32600)),
            ]
        );
    }

    #[tokio::test]
    async fn an_oversize_line_is_refused_without_being_held() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n");
        let (methods, replies) = answers(&input).await;
        assert_eq!(methods, ["ping"]);
        assert_eq!(replies.len(), 1);
        assert_eq!(replies[0]["error"]["code"], json!(-32600));
        assert!(
            replies[0]["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Request too large")
        );
    }
}
