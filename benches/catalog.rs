//! `cargo bench -p hcpx --bench catalog`: the catalog at scale, in one run. Two homes: one
//! holding a single installed pack (`hail`, a shell script CLI) beside the
//! built-ins, one holding the same pack and 10,000 generated ones (written
//! directly, with their `packs.lock.json` entries). In both, interleaved round by
//! round so that drift on the machine falls on all alike:
//!
//! (a) CLI `hcpx search QUERY` as a fresh process, the packs index warm;
//! (b) CLI `hcpx skill transit` and `hcpx skill hail`;
//! (c) CLI `hcpx exec hail say`;
//! (d) through one running `hcpx mcp` (stdio): `search`, `skill transit` and
//!     `skill hail`, 1,000 calls each;
//! (e) the cost of a search that has to rebuild the index (after an install).
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

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Lcg, Server, generate, interleaved, ms};

const BIN: &str = env!("CARGO_BIN_EXE_hcpx");
const PACKS: usize = 10_000;
/// Rounds of the CLI comparisons (each round runs every variant once).
const CLI_RUNS: usize = 60;
/// Rounds of the MCP comparisons.
const MCP_RUNS: usize = 1000;
const QUERY: &str = "weather journey";
/// Writes the generated packs and their lock entries straight into `home`, as
/// install would leave them (without the per-pack journal and fsyncs).
fn write_packs(home: &Path) {
    let mut rng = Lcg(42);
    let mut locked = BTreeMap::new();
    for index in 0..PACKS {
        let (id, manifest, skill) = generate(index, &mut rng);
        let dir = home.join("packs").join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hcp.json"), &manifest).unwrap();
        std::fs::write(dir.join("SKILL.md"), &skill).unwrap();
        let files: hcpx::install::Files = [
            ("SKILL.md".to_owned(), skill.into_bytes()),
            ("hcp.json".to_owned(), manifest.into_bytes()),
        ]
        .into();
        locked.insert(
            id.clone(),
            hcpx::install::Locked {
                id,
                version: format!("1.0.{}", index % 7),
                source: format!("./generated/{index}"),
                integrity: hcpx::install::integrity(&files),
                installed_at: "2026-01-01T00:00:00Z".to_owned(),
            },
        );
    }
    // Merged with what `hcpx install` recorded (the hail pack).
    let path = home.join(hcpx::install::LOCK_FILE);
    let mut lock = hcpx::install::LockFile::load(&path).unwrap();
    lock.packs.extend(locked);
    lock.save(&path).unwrap();
}

/// The pack both homes hold, installed the ordinary way.
fn install_hail(home: &Path, work: &Path) {
    let dir = work.join("hail-src");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hcp.json"),
        r#"{"hcp":1,"id":"hail","version":"1.0.0","description":"Says what it is given","bin":["./hail"],
        "commands":{"say":{"summary":"Say a word","effect":"read","argv":["word"]}}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: hail\ndescription: Says what it is given\n---\nUse `say`.\n",
    )
    .unwrap();
    std::fs::write(dir.join("hail"), "#!/bin/sh\necho \"said $1\"\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("hail"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let output = hcpx(home, work, &["install", dir.to_str().unwrap(), "--yes"]);
    assert!(output.status.success(), "{output:?}");
}

fn hcpx(home: &Path, work: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .current_dir(work)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HCP_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Sets `packs/` and the lock file an hour back, as after an install long ago, so
/// the first search writes the index (a key changed in the last two seconds is
/// used but not written down).
fn settle(home: &Path) {
    common::settle(&[&home.join("packs"), &home.join(hcpx::install::LOCK_FILE)]);
}

fn line(label: &str, (p50, p99): (Duration, Duration)) {
    println!("  {label:<52} {:>9.3} ms / {:>9.3} ms", ms(p50), ms(p99));
}

fn ratio(label: &str, a: (Duration, Duration), b: (Duration, Duration)) {
    println!(
        "  {label:<52} {:>6.2}x (p50)  {:>6.2}x (p99)",
        a.0.as_secs_f64() / b.0.as_secs_f64(),
        a.1.as_secs_f64() / b.1.as_secs_f64()
    );
}

fn main() {
    // Outside /tmp, whose churn would make the sandbox rebuild cached layers.
    let root = tempfile::Builder::new()
        .prefix("hcpx-bench-catalog-")
        .tempdir_in(std::env::current_dir().unwrap().join("target"))
        .unwrap();
    let (small, large, work) = (
        root.path().join("small"),
        root.path().join("large"),
        root.path().join("work"),
    );
    std::fs::create_dir_all(&work).unwrap();
    install_hail(&small, &work);
    install_hail(&large, &work);
    let started = Instant::now();
    write_packs(&large);
    println!(
        "wrote {PACKS} packs and their lock entries in {:.0} ms",
        ms(started.elapsed())
    );
    settle(&small);
    settle(&large);

    // (e) a search that rebuilds the index, as the first one after an install.
    let index = large.join(hcpx::index::INDEX_FILE);
    let rebuilds: Vec<Duration> = (0..3)
        .map(|_| {
            let _ = std::fs::remove_file(&index);
            let started = Instant::now();
            assert!(hcpx(&large, &work, &["search", QUERY, "--json"]).status.success());
            started.elapsed()
        })
        .collect();
    assert!(index.exists(), "the search wrote the index");
    let index_bytes = std::fs::metadata(&index).unwrap().len();

    let cli = |home: &Path, args: &'static [&'static str]| {
        let (home, work) = (home.to_path_buf(), work.clone());
        move || {
            let output = hcpx(&home, &work, args);
            assert!(output.status.success(), "{args:?}: {output:?}");
        }
    };
    let search_args: &'static [&'static str] = &["search", "weather", "journey", "--json"];
    let mut variants: Vec<Box<dyn FnMut()>> = vec![
        Box::new(cli(&small, search_args)),
        Box::new(cli(&large, search_args)),
        Box::new(cli(&small, &["skill", "transit", "--json"])),
        Box::new(cli(&large, &["skill", "transit", "--json"])),
        Box::new(cli(&small, &["skill", "hail", "--json"])),
        Box::new(cli(&large, &["skill", "hail", "--json"])),
        Box::new(cli(&small, &["exec", "hail", "say", "--json"])),
        Box::new(cli(&large, &["exec", "hail", "say", "--json"])),
        Box::new(cli(&small, &["availability", "hail", "--json"])),
        Box::new(cli(&large, &["availability", "hail", "--json"])),
    ];
    let mut refs: Vec<&mut dyn FnMut()> = variants
        .iter_mut()
        .map(|v| &mut **v as &mut dyn FnMut())
        .collect();
    let cli_results = interleaved(CLI_RUNS, &mut refs);
    assert_eq!(
        std::fs::metadata(&index).unwrap().len(),
        index_bytes,
        "the index stayed as written"
    );

    let mut small_server = Server::start(&small, &work).0;
    let mut large_server = Server::start(&large, &work).0;
    let mut mcp_results = Vec::new();
    for server in [&mut small_server, &mut large_server] {
        let cell = std::cell::RefCell::new(server);
        let mut search = || {
            cell.borrow_mut().call(&["search", "weather", "journey"]);
        };
        let mut skill = || {
            cell.borrow_mut().call(&["skill", "transit"]);
        };
        let mut skill_installed = || {
            cell.borrow_mut().call(&["skill", "hail"]);
        };
        mcp_results.push(interleaved(
            MCP_RUNS,
            &mut [&mut search, &mut skill, &mut skill_installed],
        ));
    }

    let mut rebuilt = rebuilds;
    println!(
        "\nCLI, fresh process per call, p50 / p99 (n={CLI_RUNS} each, interleaved; packs index {:.1} MiB):",
        index_bytes as f64 / (1024.0 * 1024.0)
    );
    let labels = [
        "search weather journey",
        "skill transit (built-in)",
        "skill hail (installed)",
        "exec hail say",
        "availability hail",
    ];
    for (n, label) in labels.iter().enumerate() {
        line(&format!("{label}, built-ins + 1 installed"), cli_results[2 * n]);
        line(&format!("{label}, + {PACKS} installed"), cli_results[2 * n + 1]);
    }
    line(
        "search rebuilding the index (first after a change)",
        (
            common::percentile(&mut rebuilt, 0.5),
            common::percentile(&mut rebuilt, 0.99),
        ),
    );
    println!("\nthrough one `hcpx mcp` (stdio), per tools/call, p50 / p99 (n={MCP_RUNS} each, interleaved):");
    for (home, results) in ["built-ins + 1 installed", "+ 10,000 installed"]
        .iter()
        .zip(&mcp_results)
    {
        line(&format!("search weather journey, {home}"), results[0]);
        line(&format!("skill transit, {home}"), results[1]);
        line(&format!("skill hail, {home}"), results[2]);
    }
    println!("\nratios:");
    for (n, label) in labels.iter().enumerate() {
        ratio(
            &format!("CLI {label}: 10,000 installed / built-ins"),
            cli_results[2 * n + 1],
            cli_results[2 * n],
        );
    }
    for (home, results) in ["built-ins", "10,000 installed"].iter().zip(&mcp_results) {
        ratio(
            &format!("MCP skill transit / search ({home})"),
            results[1],
            results[0],
        );
        ratio(
            &format!("MCP skill hail / search ({home})"),
            results[2],
            results[0],
        );
    }
}
