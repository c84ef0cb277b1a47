//! What the benchmarks share: timing loops, percentiles, and copying fixture packs.

#![allow(dead_code, reason = "each benchmark uses a part of it")]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The `p` quantile (0.0 to 1.0) of the samples, which it sorts.
pub(crate) fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Runs `run` a few times to warm up, then `runs` times; returns p50 and p99.
pub(crate) fn measure(runs: usize, mut run: impl FnMut()) -> (Duration, Duration) {
    for _ in 0..(runs / 20).max(3) {
        run();
    }
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    (percentile(&mut samples, 0.5), percentile(&mut samples, 0.99))
}

/// Copies a flat fixture pack folder.
/// Sets the modification time of each path an hour back, so that the packs index
/// (on disk, or held by `hcpx mcp`) is used at once: a key part changed within the
/// last 2 s is racy, and the index is read again on every call until it settles
/// (what a benchmark that starts right after writing its packs would measure).
pub(crate) fn settle(paths: &[&Path]) {
    for path in paths {
        let status = Command::new("touch")
            .args(["-c", "-m", "-d", "1 hour ago"])
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Runs every variant once per round, `runs` rounds after a few warm-up rounds, so
/// that drift on the machine falls on all of them alike; returns p50 and p99 of each.
pub(crate) fn interleaved(runs: usize, variants: &mut [&mut dyn FnMut()]) -> Vec<(Duration, Duration)> {
    interleaved_cpu(runs, variants)
        .into_iter()
        .map(|timing| (timing.p50, timing.p99))
        .collect()
}

/// One variant's figures from [`interleaved_cpu`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    /// CPU time per run (user and system, this process and the children it
    /// reaped): what a run costs the machine, which a loaded machine changes far
    /// less than the wall time.
    pub(crate) cpu: Duration,
}

/// CPU time so far of this process (every thread) and of the children it reaped.
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "getrusage through libc")]
pub(crate) fn cpu_time() -> Duration {
    let used = |who| {
        // SAFETY: plain old data, filled in by getrusage on this stack.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::getrusage(who, &raw mut usage) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(usage.ru_utime) + tv(usage.ru_stime)
    };
    used(libc::RUSAGE_SELF) + used(libc::RUSAGE_CHILDREN)
}

/// Not measured off Linux (the benches' `libc` is Linux's).
#[cfg(not(target_os = "linux"))]
pub(crate) fn cpu_time() -> Duration {
    Duration::ZERO
}

/// [`interleaved`], with each variant's mean CPU time per run too.
pub(crate) fn interleaved_cpu(runs: usize, variants: &mut [&mut dyn FnMut()]) -> Vec<Timing> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); variants.len()];
    let mut cpu = vec![Duration::ZERO; variants.len()];
    let count = variants.len();
    let warm_up = (runs / 20).max(3);
    let mut order: Vec<usize> = (0..count).collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..runs + warm_up {
        // A new order each round (Fisher-Yates over a fixed xorshift sequence, so
        // every run of the bench takes the same orders): the variant that runs right
        // after another kind of work pays for it (seen here: 0.1 to 0.3 ms on an exec
        // through MCP, 0.4 ms on a CLI process run after the in-process ones), and
        // merely rotating the first variant left each one always after the same other.
        for last in (1..count).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let pick = usize::try_from(state % (last as u64 + 1)).unwrap_or(0);
            order.swap(last, pick);
        }
        for &index in &order {
            let cpu_before = cpu_time();
            let started = Instant::now();
            variants[index]();
            if round >= warm_up {
                samples[index].push(started.elapsed());
                cpu[index] += cpu_time().saturating_sub(cpu_before);
            }
        }
    }
    samples
        .iter_mut()
        .zip(cpu)
        .map(|(samples, cpu)| Timing {
            p50: percentile(samples, 0.5),
            p99: percentile(samples, 0.99),
            cpu: cpu / u32::try_from(runs).unwrap_or(u32::MAX),
        })
        .collect()
}

/// Words the generated packs are made of.
pub(crate) const WORDS: [&str; 48] = [
    "alpha", "bravo", "cloud", "data", "engine", "file", "graph", "http", "image", "json", "kube", "log",
    "mail", "network", "object", "pdf", "query", "route", "storage", "text", "user", "video", "web", "xml",
    "yaml", "zip", "backup", "calendar", "deploy", "email", "format", "git", "hash", "index", "journal",
    "key", "lint", "metric", "note", "order", "package", "queue", "report", "search", "task", "upload",
    "vault", "weather",
];

/// A small deterministic generator, so every run benchmarks the same packs.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).unwrap_or(0)
    }

    pub(crate) fn word(&mut self) -> &'static str {
        WORDS[self.next() % WORDS.len()]
    }

    pub(crate) fn sentence(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

pub(crate) fn generate(index: usize, rng: &mut Lcg) -> (String, String, String) {
    let id = format!("{}-{}-{index}", rng.word(), rng.word());
    let keywords: Vec<String> = (0..4).map(|_| format!("\"{}\"", rng.word())).collect();
    let manifest = format!(
        r#"{{"hcp":1,"id":"{id}","version":"1.0.{}","description":"{}","keywords":[{}],"bin":["tool-{index}"],
        "commands":{{"run":{{"summary":"{}","effect":"read","params":{{"q":{{"type":"string","pattern":"[a-z]+"}}}},
        "argv":["run","--q={{q?}}"]}},"list":{{"summary":"{}","effect":"read","argv":["list"]}}}}}}"#,
        index % 7,
        rng.sentence(8),
        keywords.join(","),
        rng.sentence(6),
        rng.sentence(6),
    );
    let skill = format!(
        "---\nname: {id}\ndescription: {}\n---\n\n# {id}\n\n{}\n",
        rng.sentence(12),
        rng.sentence(150)
    );
    (id, manifest, skill)
}

/// `hcpx mcp` over stdio, spoken by hand: one request at a time, answers matched by id.
pub(crate) struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    pub(crate) fn start(home: &Path, work: &Path) -> (Self, Duration) {
        Self::start_binary(Path::new(env!("CARGO_BIN_EXE_hcpx")), home, work)
    }

    pub(crate) fn start_binary(bin: &Path, home: &Path, work: &Path) -> (Self, Duration) {
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

    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
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

    pub(crate) fn call(&mut self, argv: &[&str]) -> Value {
        let reply = self.request(
            "tools/call",
            json!({ "name": "hcp", "arguments": { "argv": argv } }),
        );
        assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
        reply
    }

    pub(crate) fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find(|line| line.starts_with("VmRSS:"))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
