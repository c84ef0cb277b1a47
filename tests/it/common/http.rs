//! `hcpx mcp --http` and `--unix` as a child process, and a small HTTP/1.1 client for
//! it: one request, its response parsed (chunked bodies joined), over TCP or a unix
//! socket.

use super::*;
/// `hcpx mcp --http ...` (or `--unix`) running as a child, with the address it printed.
pub(crate) struct HttpServer {
    pub(crate) child: std::process::Child,
    /// The TCP address it listens on (unspecified for a unix socket).
    pub(crate) address: std::net::SocketAddr,
    /// The socket file, when it serves on one.
    pub(crate) unix: Option<PathBuf>,
    /// Everything it wrote to stderr so far.
    pub(crate) stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// No test runs calls in this process while this one connects (see [`calls_here`]).
    _room: InRoom,
}

impl HttpServer {
    /// Starts `hcpx mcp --http ADDRESS EXTRA...` and waits for the address line.
    pub(crate) fn start(env: &TestEnv, address: &str, extra: &[&str]) -> Self {
        let mut args = vec!["mcp", "--http", address];
        args.extend_from_slice(extra);
        Self::start_command(env.command(&args))
    }

    /// Starts `hcpx mcp --unix PATH EXTRA...` and waits for its line.
    pub(crate) fn start_unix(env: &TestEnv, path: &Path, extra: &[&str]) -> Self {
        let path_text = path.to_str().unwrap();
        let mut args = vec!["mcp", "--unix", path_text];
        args.extend_from_slice(extra);
        let mut server = Self::start_command(env.command(&args));
        server.unix = Some(path.to_path_buf());
        server
    }

    /// Starts a prepared `hcpx mcp` command and waits for the line saying where it
    /// serves.
    pub(crate) fn start_command(mut command: Command) -> Self {
        use std::io::BufRead as _;
        let room = enter(Kind::HttpClient);
        let mut child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (found, serving) = std::sync::mpsc::channel();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let log = stderr.clone();
        std::thread::spawn(move || {
            while let Some(Ok(line)) = lines.next() {
                {
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
                if line.contains("serving MCP") {
                    let _ = found.send(line);
                }
            }
        });
        let line = serving
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no address printed; stderr: {}", stderr.lock().unwrap()));
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split("/mcp").next())
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
        Self {
            child,
            address,
            unix: None,
            stderr,
            _room: room,
        }
    }

    /// The address to connect to: loopback on the bound port.
    pub(crate) fn loopback(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.address.port()))
    }

    /// One request, over the unix socket when the server has one, else to loopback.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> HttpResponse {
        match &self.unix {
            Some(socket) => http_exchange(
                std::os::unix::net::UnixStream::connect(socket).unwrap(),
                "localhost",
                method,
                path,
                headers,
                body,
            ),
            None => http_request(self.loopback(), method, path, headers, body),
        }
    }

    /// One request to `/mcp` with the usual MCP headers plus `headers`.
    pub(crate) fn post(&self, headers: &[(&str, &str)], body: &serde_json::Value) -> HttpResponse {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        self.request("POST", "/mcp", &all, body.to_string().as_bytes())
    }

    /// `initialize` on protocol 2025-11-25, then `notifications/initialized`: the
    /// session id.
    pub(crate) fn session(&self, headers: &[(&str, &str)]) -> String {
        let response = self.post(
            headers,
            &serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "hcpx-tests", "version": "0" } } }),
        );
        assert_eq!(response.status, 200, "{response:?}");
        let session = response.header("mcp-session-id").unwrap().to_owned();
        let mut with = headers.to_vec();
        with.extend_from_slice(&[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]);
        let response = self.post(
            &with,
            &serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        );
        assert_eq!(response.status, 202, "{response:?}");
        session
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub(crate) struct HttpResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl HttpResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The JSON-RPC messages of the body: the body itself, or each SSE `data:` line.
    pub(crate) fn messages(&self) -> Vec<serde_json::Value> {
        if let Ok(value) = serde_json::from_str(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }
}

/// One HTTP/1.1 request written by hand (`Connection: close`), its response read
/// to the end (a chunked body is decoded). `Host` is the address unless `headers`
/// sets one.
pub(crate) fn http_request(
    address: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let stream = std::net::TcpStream::connect(address).unwrap();
    http_exchange(stream, &address.to_string(), method, path, headers, body)
}

/// [`http_request`] on a connected stream (TCP or a unix socket), `host` the
/// default `Host`.
pub(crate) fn http_exchange<S: std::io::Read + std::io::Write + ReadTimeout>(
    mut stream: S,
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    stream.read_timeout(std::time::Duration::from_secs(30));
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(key, _)| key.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {host}\r\n"));
    }
    for (key, value) in headers {
        head.push_str(&format!("{key}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).unwrap();
    // A server that refuses a body may answer (and close) before reading all of it.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let mut buffer = [0_u8; 64 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => raw.extend_from_slice(&buffer[..read]),
            Err(error) if raw.is_empty() => panic!("no response: {error}"),
            Err(_) => break,
        }
    }
    parse_response(&raw)
}

/// An HTTP/1.1 response as read from the wire, its chunked body decoded.
pub(crate) fn parse_response(raw: &[u8]) -> HttpResponse {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let rest = &raw[split + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {head:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(key, value)| key.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    HttpResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A stream whose reads can be bounded in time.
pub(crate) trait ReadTimeout {
    fn read_timeout(&self, limit: std::time::Duration);
}

impl ReadTimeout for std::net::TcpStream {
    fn read_timeout(&self, limit: std::time::Duration) {
        self.set_read_timeout(Some(limit)).unwrap();
    }
}

impl ReadTimeout for std::os::unix::net::UnixStream {
    fn read_timeout(&self, limit: std::time::Duration) {
        self.set_read_timeout(Some(limit)).unwrap();
    }
}

pub(crate) fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = rest.windows(2).position(|window| window == b"\r\n") {
        let Ok(size) = usize::from_str_radix(String::from_utf8_lossy(&rest[..end]).trim(), 16) else {
            break;
        };
        let after = &rest[end + 2..];
        if size == 0 || after.len() < size {
            body.extend_from_slice(&after[..size.min(after.len())]);
            break;
        }
        body.extend_from_slice(&after[..size]);
        rest = after[size..].strip_prefix(b"\r\n").unwrap_or(&after[size..]);
    }
    body
}

/// The first line `child` prints on its piped stdout, waited for at most 10 s
/// (`None`: none came), and the thread that reads the rest (joined once the child is
/// gone).
pub(crate) fn first_line(
    child: &mut std::process::Child,
) -> (Option<String>, std::thread::JoinHandle<String>) {
    use std::io::{BufRead as _, Read as _};
    let stdout = child.stdout.take().expect("stdout is piped");
    let (sender, received) = std::sync::mpsc::channel();
    let rest = std::thread::spawn(move || {
        let mut stdout = std::io::BufReader::new(stdout);
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let _ = sender.send(line);
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        rest
    });
    (
        received.recv_timeout(std::time::Duration::from_secs(10)).ok(),
        rest,
    )
}
