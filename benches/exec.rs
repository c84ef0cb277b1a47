//! `cargo bench --bench exec`: the overhead hcpx adds to one pack command, measured in
//! one run against the same program run directly:
//!
//! - direct: the probe fixture's CLI (a shell script), spawned and waited for;
//! - in-process: `hcpx::run(["exec", …])`, as the MCP server calls it, including
//!   policy, binding, the sandbox, Landlock and the network namespace;
//! - CLI: a whole `hcpx exec …` process per call;
//! - CLI without a network namespace (the pack declares network), to show its cost.
//!
//! Prints p50 and p99 and the added milliseconds; never asserts on time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmarks start processes, print, and stop loudly on failure"
)]

mod common;

use std::path::{Path, PathBuf};

use common::{copy_dir, measure, ms};
use std::process::Command;

const RUNS: usize = 200;

fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/packs/probe");
    copy_dir(&fixture, &home.join("packs/probe"));
    // The same CLI, declaring network access: no network namespace is set up.
    let net = home.join("packs/netprobe");
    copy_dir(&fixture, &net);
    let manifest = std::fs::read_to_string(net.join("hcp.json")).unwrap();
    std::fs::write(
        net.join("hcp.json"),
        manifest
            .replace("\"id\": \"probe\"", "\"id\": \"netprobe\"")
            .replace("\"network\": false", "\"network\": true"),
    )
    .unwrap();
    std::fs::write(
        net.join("SKILL.md"),
        "---\nname: netprobe\ndescription: probe with network\n---\n",
    )
    .unwrap();
    let script: PathBuf = home.join("packs/probe/probe");
    let bin = env!("CARGO_BIN_EXE_hcpx");
    let path = "/usr/local/bin:/usr/bin:/bin";

    let direct = measure(RUNS, || {
        let status = Command::new(&script)
            .args(["args", "--text=hello", "--"])
            .current_dir(&work)
            .env_clear()
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(status.status.success());
    });

    let env: Vec<(String, String)> = vec![
        ("PATH".into(), path.into()),
        ("HOME".into(), root.path().display().to_string()),
        ("HCP_HOME".into(), home.display().to_string()),
    ];
    let ctx = hcpx::Context::new(env, work.clone(), false)
        .unwrap()
        .with_temp_dir(std::env::temp_dir());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let argv: Vec<String> = ["exec", "probe", "args", "--json", "--", "text=hello"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let in_process = measure(RUNS, || {
        let mut sink = hcpx::BufferSink::default();
        let outcome = runtime.block_on(hcpx::run(argv.clone(), &ctx, &mut sink));
        assert_eq!(outcome.exit_code, 0, "{:?}", outcome.envelope.error);
    });

    let cli = |pack: &'static str| {
        let home = home.clone();
        let work = work.clone();
        move || {
            let output = Command::new(bin)
                .args(["exec", pack, "args", "--", "text=hello"])
                .current_dir(&work)
                .env_clear()
                .env("PATH", path)
                .env("HCP_HOME", &home)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    };
    let through_cli = measure(RUNS, cli("probe"));
    let without_netns = measure(RUNS, cli("netprobe"));

    println!("exec overhead, {RUNS} runs each (p50 / p99):");
    println!(
        "  direct: the pack's CLI alone            {:>7.2} ms / {:>7.2} ms",
        ms(direct.0),
        ms(direct.1)
    );
    for (label, (p50, p99)) in [
        ("in-process hcpx::run exec (as MCP)", in_process),
        ("hcpx exec CLI process", through_cli),
        ("hcpx exec CLI, pack with network", without_netns),
    ] {
        println!(
            "  {label:<38}  {:>7.2} ms / {:>7.2} ms   added {:>6.2} ms p50, ratio {:.2}x",
            ms(p50),
            ms(p99),
            ms(p50) - ms(direct.0),
            p50.as_secs_f64() / direct.0.as_secs_f64()
        );
    }
}
