//! `cargo bench -p hcpx --bench search`: search over 10,000 generated packs, in process (the
//! index built once, as a long-lived MCP server holds it, and also built per query,
//! as a CLI run does) and as whole `hcpx search` processes over an HCP_HOME holding
//! the same packs. Prints medians and p99s; never asserts on time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "tests and benchmarks start processes, print, and stop loudly on failure"
)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Lcg, generate, ms, percentile};
use hcpx::catalog::{Catalog, Origin, Pack, parse_pack};
use hcpx::search::SearchIndex;

const PACKS: usize = 10_000;
fn report(label: &str, samples: &mut [Duration]) {
    let p50 = percentile(samples, 0.5);
    let p99 = percentile(samples, 0.99);
    println!(
        "{label:<48} p50 {:>9.3} ms   p99 {:>9.3} ms   (n={})",
        ms(p50),
        ms(p99),
        samples.len()
    );
}

fn write_home(home: &Path, packs: &[(String, String, String)]) {
    for (id, manifest, skill) in packs {
        let dir = home.join("packs").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hcp.json"), manifest).unwrap();
        std::fs::write(dir.join("SKILL.md"), skill).unwrap();
    }
}

fn main() {
    let mut rng = Lcg(42);
    let generated: Vec<(String, String, String)> = (0..PACKS).map(|i| generate(i, &mut rng)).collect();

    let started = Instant::now();
    let packs: Vec<Pack> = generated
        .iter()
        .map(|(_, manifest, skill)| {
            let (manifest, skill) = parse_pack(manifest, Some(skill), |_| None).unwrap();
            Pack {
                manifest: manifest.into(),
                skill: skill.into(),
                origin: Origin::Builtin { bin: None },
            }
        })
        .collect();
    let catalog = Catalog::from_packs(packs);
    println!(
        "parse + validate {PACKS} manifests and skills: {:.1} ms",
        ms(started.elapsed())
    );

    let mut samples: Vec<Duration> = (0..20)
        .map(|_| {
            let started = Instant::now();
            let index = SearchIndex::build(&catalog.packs);
            std::hint::black_box(&index);
            started.elapsed()
        })
        .collect();
    report("build index over 10,000 packs", &mut samples);

    let index = SearchIndex::build(&catalog.packs);
    let queries = [
        "weather",
        "json query",
        "git backup report",
        "vault key",
        "zebra",
        "net",
    ];
    for query in queries {
        let mut samples: Vec<Duration> = (0..500)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(index.search(query, 10));
                started.elapsed()
            })
            .collect();
        report(
            &format!("in-process search \"{query}\" (index held)"),
            &mut samples,
        );
    }

    // As a CLI run: a fresh process loads HCP_HOME/packs and searches.
    let home = tempfile::tempdir().unwrap();
    write_home(home.path(), &generated);
    for query in ["weather", "json query"] {
        let mut samples: Vec<Duration> = (0..10)
            .map(|_| {
                let started = Instant::now();
                let output = Command::new(env!("CARGO_BIN_EXE_hcpx"))
                    .args(["search", query, "--json"])
                    .env("HCP_HOME", home.path())
                    .output()
                    .unwrap();
                assert!(output.status.success());
                started.elapsed()
            })
            .collect();
        report(
            &format!("CLI `hcpx search {query}` over 10,000 installed"),
            &mut samples,
        );
    }
    let empty = tempfile::tempdir().unwrap();
    let mut samples: Vec<Duration> = (0..20)
        .map(|_| {
            let started = Instant::now();
            let output = Command::new(env!("CARGO_BIN_EXE_hcpx"))
                .args(["search", "journey", "--json"])
                .env("HCP_HOME", empty.path())
                .output()
                .unwrap();
            assert!(output.status.success());
            started.elapsed()
        })
        .collect();
    report("CLI `hcpx search journey` (built-in packs only)", &mut samples);
}
