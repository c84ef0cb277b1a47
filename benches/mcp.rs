//! `cargo bench -p hcpx --bench mcp`: in one run,
//!
//! (a) `tools/call` of `search journey` through a running `hcpx mcp` (stdio, raw
//!     JSON-RPC lines), 1,000 calls;
//! (b) the same query as a fresh `hcpx search` process per call, as servers that
//!     spawn their CLI for every call work;
//! (c) an exec through MCP against running the pack's CLI directly, interleaved;
//!     with `HCP_BENCH_BASELINE=/path/to/an/older/hcpx`, that build's `hcpx mcp`
//!     runs the same exec in the same rounds (before/after in one run);
//!     `HCP_BENCH_RUNS=N` runs N rounds instead of 400;
//! (d) spawn to `initialize` answered, and resident memory at rest;
//! (e) `tools/call` of `search journey` through `hcpx mcp --http` (one session on
//!     a kept-alive HTTP/1.1 connection), interleaved with (a) on stdio, 1,000 each;
//! (f) `GET /healthz` on a new loopback connection each time, which the peer gate
//!     checks first (its owner, asked of the kernel by sock_diag, then whether a
//!     pack's call holds it), against the same on the kept-alive connection,
//!     interleaved, 300 each (and on a new connection to the baseline's
//!     `hcpx mcp --http`, when given). Each closed connection stays in TIME_WAIT for a
//!     minute, so these runs leave thousands of sockets: a gate that reads the whole
//!     of `/proc/net/tcp` (builds before sock_diag) grows slower as they pile up.
//!
//! Prints p50 and p99 and the ratios; never asserts on time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmarks start processes, print, and stop loudly on failure"
)]

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Server, copy_dir, interleaved, measure, ms, percentile};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_hcpx");
/// Rounds of the exec comparison (each runs both).
const EXEC_RUNS: usize = 400;

/// `hcpx mcp --http 127.0.0.1:0` and one session on one kept-alive connection,
/// spoken by hand (HTTP/1.1; the answers come as chunked event streams).
struct HttpServer {
    child: Child,
    stream: BufReader<std::net::TcpStream>,
    host: String,
    session: Option<String>,
    next_id: u64,
}

impl HttpServer {
    fn start(bin: &std::ffi::OsStr, home: &Path, work: &Path) -> Self {
        let mut child = Command::new(bin)
            .args(["mcp", "--http", "127.0.0.1:0"])
            .current_dir(work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HCP_HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let host = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split("/mcp").next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        let stream = std::net::TcpStream::connect(&host).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut server = Self {
            child,
            stream: BufReader::new(stream),
            host,
            session: None,
            next_id: 1,
        };
        server.post(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "bench", "version": "0" } } }));
        server.post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        server
    }

    /// Sends one message; returns the JSON-RPC messages of the answer.
    fn post(&mut self, message: &Value) -> Vec<Value> {
        let body = message.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str(&format!(
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            ));
        }
        head.push_str("\r\n");
        head.push_str(&body);
        self.stream.get_mut().write_all(head.as_bytes()).unwrap();
        String::from_utf8_lossy(&self.answer())
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }

    /// Reads one answer off the connection: its body, de-chunked (the session id
    /// it names is kept).
    fn answer(&mut self) -> Vec<u8> {
        let mut length = None;
        let mut chunked = false;
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse::<usize>().ok();
            } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            } else if lower.starts_with("mcp-session-id:") {
                self.session = Some(line["mcp-session-id:".len()..].trim().to_owned());
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                self.stream.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0_u8; size + 2];
                std::io::Read::read_exact(&mut self.stream, &mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            std::io::Read::read_exact(&mut self.stream, &mut body).unwrap();
        }
        body
    }

    /// `GET /healthz` on the kept-alive connection.
    fn health(&mut self) {
        let head = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", self.host);
        self.stream.get_mut().write_all(head.as_bytes()).unwrap();
        self.answer();
    }

    fn call(&mut self, argv: &[&str]) {
        let id = self.next_id;
        self.next_id += 1;
        let answer = self.post(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "hcp", "arguments": { "argv": argv } } }));
        let reply = answer.iter().find(|message| message["id"] == json!(id)).unwrap();
        assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    }
}

/// `GET /healthz` on a connection of its own to `host`, which the server's gate
/// checks before it reads the request.
fn health_on_a_new_connection(host: &str) {
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream.set_nodelay(true).unwrap();
    let head = format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/packs/probe");
    copy_dir(&probe, &home.join("packs/probe"));
    common::settle(&[&home.join("packs")]);

    let mut starts: Vec<Duration> = (0..20)
        .map(|_| {
            let (server, ready) = Server::start(&home, &work);
            drop(server);
            ready
        })
        .collect();
    let start_p50 = percentile(&mut starts, 0.5);

    let (mut server, _) = Server::start(&home, &work);
    let (mcp_p50, mcp_p99) = measure(1000, || {
        server.call(&["search", "journey"]);
    });
    std::thread::sleep(Duration::from_millis(300));
    let rss_at_rest = server.rss_kib();

    let (cli_p50, cli_p99) = measure(200, || {
        let output = Command::new(BIN)
            .args(["search", "journey", "--json"])
            .current_dir(&work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HCP_HOME", &home)
            .output()
            .unwrap();
        assert!(output.status.success());
    });

    // Interleaved, so that drift on the machine falls on both alike.
    let script = home.join("packs/probe/probe");
    let mut direct = || {
        let output = Command::new(&script)
            .args(["args", "--text=hello", "--"])
            .current_dir(&work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .output()
            .unwrap();
        assert!(output.status.success());
    };
    let mut exec = || {
        server.call(&["exec", "probe", "args", "--", "text=hello"]);
    };
    let baseline_bin = std::env::var_os("HCP_BENCH_BASELINE");
    let mut baseline = baseline_bin
        .as_ref()
        .map(|bin| Server::start_binary(Path::new(bin), &home, &work).0);
    let mut baseline_exec = || {
        if let Some(server) = baseline.as_mut() {
            server.call(&["exec", "probe", "args", "--", "text=hello"]);
        }
    };
    // `HCP_BENCH_RUNS=N`: more rounds, for a before/after closer than the noise.
    let exec_runs = std::env::var("HCP_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(EXEC_RUNS);
    let results = interleaved(exec_runs, &mut [&mut direct, &mut exec, &mut baseline_exec]);
    let ((direct_p50, direct_p99), (exec_p50, exec_p99)) = (results[0], results[1]);

    let mut http = HttpServer::start(BIN.as_ref(), &home, &work);
    let mut over_stdio = || {
        server.call(&["search", "journey"]);
    };
    let mut over_http = || http.call(&["search", "journey"]);
    let mut baseline_search = || {
        if let Some(server) = baseline.as_mut() {
            server.call(&["search", "journey"]);
        }
    };
    let transports = interleaved(1000, &mut [&mut over_stdio, &mut over_http, &mut baseline_search]);
    let ((stdio_p50, stdio_p99), (http_p50, http_p99)) = (transports[0], transports[1]);
    let host = http.host.clone();
    let baseline_host = baseline_bin
        .as_deref()
        .map(|bin| HttpServer::start(bin, &home, &work));
    let mut kept = || http.health();
    let mut new_connection = || health_on_a_new_connection(&host);
    let mut baseline_new_connection = || {
        if let Some(server) = &baseline_host {
            health_on_a_new_connection(&server.host);
        }
    };
    let health = interleaved(
        300,
        &mut [&mut kept, &mut new_connection, &mut baseline_new_connection],
    );
    let ((kept_p50, kept_p99), (new_p50, new_p99)) = (health[0], health[1]);

    println!("MCP benchmark (p50 / p99):");
    println!(
        "  spawn -> initialize answered            {:>8.3} ms (p50 of 20)",
        ms(start_p50)
    );
    println!("  resident memory at rest                 {rss_at_rest:>8} KiB");
    println!(
        "  (a) tools/call search via hcpx mcp      {:>8.3} ms / {:>8.3} ms  (n=1000)",
        ms(mcp_p50),
        ms(mcp_p99)
    );
    println!(
        "  (b) fresh `hcpx search` per call        {:>8.3} ms / {:>8.3} ms  (n=200)",
        ms(cli_p50),
        ms(cli_p99)
    );
    println!(
        "      (b) / (a) at p50                    {:>8.1}x",
        cli_p50.as_secs_f64() / mcp_p50.as_secs_f64()
    );
    println!(
        "  (c) pack CLI run directly               {:>8.3} ms / {:>8.3} ms  (n={exec_runs}, interleaved)",
        ms(direct_p50),
        ms(direct_p99)
    );
    println!(
        "      exec through hcpx mcp               {:>8.3} ms / {:>8.3} ms  (n={exec_runs}, every layer)",
        ms(exec_p50),
        ms(exec_p99)
    );
    println!(
        "      added by MCP + policy + sandbox     {:>8.3} ms at p50 ({:.2}x)",
        ms(exec_p50) - ms(direct_p50),
        exec_p50.as_secs_f64() / direct_p50.as_secs_f64()
    );
    println!(
        "  (e) tools/call search, stdio            {:>8.3} ms / {:>8.3} ms  (n=1000, interleaved)",
        ms(stdio_p50),
        ms(stdio_p99)
    );
    println!(
        "      tools/call search, HTTP             {:>8.3} ms / {:>8.3} ms  (n=1000, one session, kept alive)",
        ms(http_p50),
        ms(http_p99)
    );
    println!(
        "      HTTP / stdio at p50                 {:>8.2}x",
        http_p50.as_secs_f64() / stdio_p50.as_secs_f64()
    );
    println!(
        "  (f) GET /healthz, kept-alive connection {:>8.3} ms / {:>8.3} ms  (n=300, interleaved)",
        ms(kept_p50),
        ms(kept_p99)
    );
    println!(
        "      GET /healthz, a new connection      {:>8.3} ms / {:>8.3} ms  (n=300, the peer gate each time)",
        ms(new_p50),
        ms(new_p99)
    );
    println!(
        "      a new connection costs              {:>8.3} ms at p50",
        ms(new_p50) - ms(kept_p50)
    );
    if let Some(bin) = baseline_bin {
        let (base_p50, base_p99) = results[2];
        println!("      baseline {}:", bin.to_string_lossy());
        println!(
            "      exec through its hcpx mcp           {:>8.3} ms / {:>8.3} ms  added {:.3} ms at p50 ({:.2}x)",
            ms(base_p50),
            ms(base_p99),
            ms(base_p50) - ms(direct_p50),
            base_p50.as_secs_f64() / direct_p50.as_secs_f64()
        );
        let (base_p50, base_p99) = health[2];
        println!(
            "      GET /healthz, its new connection    {:>8.3} ms / {:>8.3} ms  (this build costs {:.3} ms more at p50)",
            ms(base_p50),
            ms(base_p99),
            ms(new_p50) - ms(base_p50)
        );
        let (base_p50, base_p99) = transports[2];
        println!(
            "      tools/call search, its stdio        {:>8.3} ms / {:>8.3} ms  (this build / it at p50: {:.2}x)",
            ms(base_p50),
            ms(base_p99),
            stdio_p50.as_secs_f64() / base_p50.as_secs_f64()
        );
    }
}
