//! `cargo bench --bench mcp`: in one run,
//!
//! (a) `tools/call` of `search journey` through a running `hcpx mcp` (stdio, raw
//!     JSON-RPC lines), 1,000 calls;
//! (b) the same query as a fresh `hcpx search` process per call, as servers that
//!     spawn their CLI for every call work;
//! (c) an exec through MCP against running the pack's CLI directly, interleaved;
//!     with `HCP_BENCH_BASELINE=/path/to/an/older/hcpx`, that build's `hcpx mcp`
//!     runs the same exec in the same rounds (before/after in one run);
//! (d) spawn to `initialize` answered, and resident memory at rest.
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
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{copy_dir, interleaved, measure, ms, percentile};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_hcpx");
/// Rounds of the exec comparison (each runs both).
const EXEC_RUNS: usize = 400;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(home: &Path, work: &Path) -> (Self, Duration) {
        Self::start_binary(Path::new(BIN), home, work)
    }

    fn start_binary(bin: &Path, home: &Path, work: &Path) -> (Self, Duration) {
        let started = Instant::now();
        let mut child = Command::new(bin)
            .arg("mcp")
            .current_dir(work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HCP_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        server.request("initialize", json!({
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "bench", "version": "0" }
        }));
        let ready = started.elapsed();
        writeln!(
            server.stdin,
            "{}",
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })
        )
        .unwrap();
        (server, ready)
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
        )
        .unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == json!(id) {
                return value;
            }
        }
    }

    fn call(&mut self, argv: &[&str]) -> Value {
        let reply = self.request(
            "tools/call",
            json!({ "name": "hcp", "arguments": { "argv": argv } }),
        );
        assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
        reply
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find(|line| line.starts_with("VmRSS:"))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    }
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/packs/probe");
    copy_dir(&probe, &home.join("packs/probe"));

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
    let results = interleaved(EXEC_RUNS, &mut [&mut direct, &mut exec, &mut baseline_exec]);
    let ((direct_p50, direct_p99), (exec_p50, exec_p99)) = (results[0], results[1]);

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
        "  (c) pack CLI run directly               {:>8.3} ms / {:>8.3} ms  (n={EXEC_RUNS}, interleaved)",
        ms(direct_p50),
        ms(direct_p99)
    );
    println!(
        "      exec through hcpx mcp               {:>8.3} ms / {:>8.3} ms  (n={EXEC_RUNS}, every layer)",
        ms(exec_p50),
        ms(exec_p99)
    );
    println!(
        "      added by MCP + policy + sandbox     {:>8.3} ms at p50 ({:.2}x)",
        ms(exec_p50) - ms(direct_p50),
        exec_p50.as_secs_f64() / direct_p50.as_secs_f64()
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
    }
}
