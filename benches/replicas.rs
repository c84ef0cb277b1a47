//! `cargo bench -p hcpx --bench replicas`: calls per second through a load balancer in front
//! of three `hcpx mcp --http --stateless` replicas against one, and the p50 and p99
//! latency of each, in one run.
//!
//! HAProxy (Debian's `haproxy`, which `.ci/apt-tools` installs) listens on two ports of
//! loopback: one balances round robin over three replicas sharing one `HCP_HOME` and
//! state key file, the other sends everything to one of them. Eight client threads,
//! each on its own kept-alive connection, send protocol 2026-07-28 `tools/call`s of
//! `exec transit plan` (a sandboxed run of the built-in pack's CLI) as fast as answers
//! come; the two setups take turns, a few seconds at a time, so that drift on the
//! machine falls on both. Prints the figures; never asserts on them. What the second
//! and third replica can add is bounded by the machine's cores: on a machine whose
//! cores one replica already keeps busy, three do not go faster.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmarks start processes, print, and stop loudly on failure"
)]

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{ms, percentile};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_hcpx");
const TOKEN: &str = "bench-token-0123456789abcdef";
const KEY: &str = "k1 YmVuY2gtYmVuY2gtYmVuY2gtYmVuY2gtYmVuY2gtYmVuY2g=";
/// Client threads, each with one connection and one call in flight.
const CLIENTS: usize = 8;
/// Turns of each setup, and how long one lasts.
const TURNS: usize = 4;
const TURN: Duration = Duration::from_secs(4);

struct Replica(Child);

impl Replica {
    fn start(home: &Path, work: &Path, keys: &Path) -> (Self, u16) {
        let mut child = Command::new(BIN)
            .args(["mcp", "--http", "127.0.0.1:0", "--stateless", "--state-key-file"])
            .arg(keys)
            .current_dir(work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HCP_HOME", home)
            .env("HCP_MCP_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no address printed: {line}"));
        (Self(child), port)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn haproxy() -> Option<PathBuf> {
    ["/usr/sbin/haproxy", "/usr/local/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
}

/// One kept-alive connection to the balancer, speaking 2026-07-28 by hand.
struct Connection {
    stream: BufReader<TcpStream>,
    port: u16,
    body: Vec<u8>,
}

impl Connection {
    fn open(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_nodelay(true).unwrap();
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "hcp",
            "arguments": { "argv": ["exec", "transit", "plan", "--", "from=Westgate", "to=North Park", "at=08:00"] },
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {},
                       "io.modelcontextprotocol/clientInfo": { "name": "bench", "version": "0" } } } })
        .to_string()
        .into_bytes();
        Self {
            stream: BufReader::new(stream),
            port,
            body,
        }
    }

    /// One call; panics on anything but a successful result.
    fn call(&mut self) {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: hcp\r\n\
             Content-Length: {}\r\n\r\n",
            self.port,
            self.body.len()
        );
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&self.body).unwrap();
        let mut status = String::new();
        self.stream.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "{status}");
        let (mut length, mut chunked) = (None, false);
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).unwrap();
            let lower = line.trim().to_ascii_lowercase();
            if lower.is_empty() {
                break;
            }
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse::<usize>().ok();
            } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                self.stream.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0_u8; size + 2];
                self.stream.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            body.resize(length.unwrap(), 0);
            self.stream.read_exact(&mut body).unwrap();
        }
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.contains("08:31") && !text.contains("\"isError\":true"),
            "{text}"
        );
    }
}

/// Calls through `port` from [`CLIENTS`] threads for [`TURN`]; every call's latency.
fn turn(port: u16) -> Vec<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(CLIENTS + 1));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (stop, start) = (stop.clone(), start.clone());
            std::thread::spawn(move || {
                let mut connection = Connection::open(port);
                connection.call();
                start.wait();
                let mut samples = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    connection.call();
                    samples.push(started.elapsed());
                }
                samples
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(TURN);
    stop.store(true, Ordering::Relaxed);
    threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect()
}

fn main() {
    let Some(haproxy) = haproxy() else {
        eprintln!("this bench needs HAProxy (Debian's haproxy; .ci/apt-tools installs it)");
        std::process::exit(2);
    };
    let root = tempfile::tempdir().unwrap();
    let (home, work, keys) = (
        root.path().join("home"),
        root.path().join("work"),
        root.path().join("keys"),
    );
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(&keys, format!("{KEY}\n")).unwrap();
    let replicas: Vec<(Replica, u16)> = (0..3).map(|_| Replica::start(&home, &work, &keys)).collect();
    let (three, one) = (free_port(), free_port());
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(index, (_, port))| format!("    server r{index} 127.0.0.1:{port}\n"))
        .collect();
    let config = format!(
        "global\n    maxconn 1024\n\
         defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\
         frontend three\n    bind 127.0.0.1:{three}\n    default_backend three\n\
         frontend one\n    bind 127.0.0.1:{one}\n    default_backend one\n\
         backend three\n    balance roundrobin\n{servers}\
         backend one\n    server r0 127.0.0.1:{}\n",
        replicas[0].1
    );
    let config_path = root.path().join("haproxy.cfg");
    std::fs::write(&config_path, config).unwrap();
    let mut balancer = Command::new(haproxy)
        .arg("-db")
        .arg("-f")
        .arg(&config_path)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", one)).is_err() || TcpStream::connect(("127.0.0.1", three)).is_err()
    {
        assert!(Instant::now() < deadline, "HAProxy did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }

    println!(
        "replicas: {CLIENTS} clients, {TURNS} turns of {} s per setup, exec transit plan through HAProxy",
        TURN.as_secs()
    );
    let (mut on_three, mut on_one) = (Vec::new(), Vec::new());
    for _ in 0..TURNS {
        on_three.extend(turn(three));
        on_one.extend(turn(one));
    }
    let seconds = (TURN * TURNS as u32).as_secs_f64();
    for (name, samples) in [("3 replicas", &mut on_three), ("1 replica", &mut on_one)] {
        let rate = samples.len() as f64 / seconds;
        println!(
            "{name:>10}: {rate:7.1} calls/s   p50 {:6.2} ms   p99 {:6.2} ms   ({} calls)",
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99)),
            samples.len()
        );
    }
    println!(
        "ratio: {:.2}x the calls per second with three replicas; this machine has {} cores",
        on_three.len() as f64 / on_one.len() as f64,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let _ = balancer.kill();
    let _ = balancer.wait();
}
