//! `cargo bench -p hcpx --bench exec`: what hcpx adds to one pack command, and what each
//! sandbox layer costs, measured in one run with the variants interleaved (each
//! round runs every variant once, so drift on the machine falls on all alike):
//!
//! - direct: the probe fixture's CLI (a shell script), spawned and waited for;
//! - in-process `hcpx::run_to_sink(["exec", …])`, as the MCP server calls it (with its
//!   caches), with every
//!   layer, then with one kernel layer left out at a time (best-effort mode and a
//!   machine description without it), then with none of them;
//! - the same with the pack's network on (`"network": true`): what taking the
//!   network away costs;
//! - the same with an allowlist (`"network": {"allow": ["127.0.0.1:9"]}`): its
//!   namespace (made ahead by the server) and the proxy;
//! - a whole `hcpx exec …` process per call, of the plain pack and of the
//!   allowlisted one;
//! - run as root, the same CLI process and the direct run as `nobody` too (through
//!   `setpriv`, both alike): agents run hcpx as a user, and a root process also
//!   makes its `/proc` namespace;
//! - the same CLI process handed to a resident `hcpx serve` (`HCP_RESIDENT=require`);
//! - with `HCP_BENCH_CLI=/path/to/another/hcpx` (a static build, say), that build's
//!   CLI process too, in the same rounds, in its own process and handed to its own
//!   `hcpx serve`.
//!
//! Prints p50 and p99 and the added milliseconds, and the CPU time per call, which
//! a loaded machine changes far less than the wall time; never asserts on time.
//! `HCP_BENCH_RUNS=N` sets the rounds; `HCP_BENCH_PROFILE=N` runs only the
//! in-process exec with every layer, N times, for a profiler.

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
use std::process::Command;
use std::sync::Arc;

use common::{copy_dir, interleaved_cpu, ms};
use hcpx::sandbox::{Machine, Support};

/// Rounds, unless `HCP_BENCH_RUNS` says otherwise.
const RUNS: usize = 300;

fn off(support: &mut Support) {
    support.enforced = false;
}

fn main() {
    // Not in /tmp: the CLI variant's temporary folders come and go there, and the
    // sandbox's cached layer is rebuilt when a folder on the way to HCP_HOME
    // changes, which a person's ~/.hcp does not see on every call.
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = root.path().join("home");
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/packs/probe");
    copy_dir(&fixture, &home.join("packs/probe"));
    // The same pack with the network as the user has it: what taking the network
    // away costs is the difference.
    probe_with_network(&fixture, &home, "probenet", "true");
    // The same pack with an allowlist: its own network namespace and the proxy.
    probe_with_network(&fixture, &home, "probeallow", "{\"allow\": [\"127.0.0.1:9\"]}");
    let script: PathBuf = home.join("packs/probe/probe");
    let bin = env!("CARGO_BIN_EXE_hcpx");
    let path = "/usr/local/bin:/usr/bin:/bin";

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // `args` takes a path parameter, so its reads are confined: the costlier layer.
    let argv: Vec<String> = ["exec", "probe", "args", "--json", "--", "text=hello"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    // The machine as the MCP server sees it: the probe, and what its session's cache
    // adds (the call's own /proc, and as root the secrets covered there, so that no
    // Landlock layer has to hide them one entry at a time).
    let machine = hcpx::Session::server().sandbox.machine().clone();
    let less = |turn_off: fn(&mut Machine)| {
        let mut m = machine.clone();
        turn_off(&mut m);
        m
    };
    let without: Vec<(&str, Machine)> = vec![
        ("every layer", machine.clone()),
        ("no keeper (containment)", less(|m| off(&mut m.containment))),
        (
            "no Landlock (filesystem, scopes)",
            less(|m| {
                off(&mut m.landlock);
                off(&mut m.scopes);
            }),
        ),
        ("no seccomp (network, syscalls)", less(|m| off(&mut m.seccomp))),
        ("no privilege drop", less(|m| off(&mut m.privileges))),
        // As root, the secrets then take a Landlock layer of their own.
        ("no /proc of its own", less(|m| off(&mut m.process_list))),
        ("no descriptor closing", less(|m| off(&mut m.descriptors))),
        ("no kernel layer at all", Machine::without_kernel_layers("off")),
    ];
    let contexts: Vec<(&str, hcpx::Context)> = without
        .into_iter()
        .map(|(label, machine)| {
            let env: Vec<(String, String)> = vec![
                ("PATH".into(), path.into()),
                ("HOME".into(), root.path().display().to_string()),
                ("HCP_HOME".into(), home.display().to_string()),
                ("HCP_SANDBOX".into(), "best-effort".into()),
            ];
            let mut ctx = hcpx::Context::new(env, work.clone(), false)
                .unwrap()
                .with_temp_dir(std::env::temp_dir());
            // As the MCP server runs it: one session across calls (the catalog
            // cache, temporary folders made ahead).
            ctx.session = Arc::new(hcpx::Session::server_with_machine(machine));
            (label, ctx)
        })
        .collect();

    let mut direct = || {
        let status = Command::new(&script)
            .args(["args", "--text=hello", "--"])
            .current_dir(&work)
            .env_clear()
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(status.status.success());
    };
    let mut runs: Vec<Box<dyn FnMut()>> = contexts
        .iter()
        .map(|(_, ctx)| {
            let argv = argv.clone();
            let runtime = &runtime;
            Box::new(move || {
                let mut sink = hcpx::BufferSink::default();
                let outcome = runtime.block_on(hcpx::run_to_sink(argv.clone(), ctx, &mut sink));
                assert_eq!(outcome.exit_code, 0, "{:?}", outcome.envelope.error);
            }) as Box<dyn FnMut()>
        })
        .collect();
    // Every layer, the network on, then an allowlist (a namespace made ahead): the
    // same server session as "every layer".
    let in_server = |pack: &'static str| {
        let argv: Vec<String> = ["exec", pack, "args", "--json", "--", "text=hello"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let (runtime, ctx) = (&runtime, &contexts[0].1);
        move || {
            let mut sink = hcpx::BufferSink::default();
            let outcome = runtime.block_on(hcpx::run_to_sink(argv.clone(), ctx, &mut sink));
            assert_eq!(outcome.exit_code, 0, "{:?}", outcome.envelope.error);
        }
    };
    let mut with_network = in_server("probenet");
    let mut with_allowlist = in_server("probeallow");
    let cleared = |program: &Path| {
        let mut command = Command::new(program);
        command.env_clear();
        command
    };
    // Both builds' CLIs run from copies made alike, here: the same file as the linker
    // wrote it started 0.3 to 0.4 ms slower as root than a copy of it (measured with
    // HCP_BENCH_CLI naming a copy of this very build), which hid a real difference.
    let copies = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bin_copy = copies.path().join("hcpx");
    std::fs::copy(bin, &bin_copy).unwrap();
    let mut cli = || run_cli(cleared(&bin_copy), &work, &home, path, "probe", false);
    let mut cli_allowlisted = || run_cli(cleared(&bin_copy), &work, &home, path, "probeallow", false);
    // `hcpx serve` for the same home, which the CLI hands its calls to.
    let _resident = Resident::start(cleared(&bin_copy), &home, path);
    let mut cli_resident = || run_cli(cleared(&bin_copy), &work, &home, path, "probe", true);
    // For a profiler: only the in-process exec with every layer, N times; with the
    // feature `marks`, the median time of each step it marks, and of a direct run.
    if let Some(times) = std::env::var("HCP_BENCH_PROFILE")
        .ok()
        .and_then(|times| times.parse::<usize>().ok())
    {
        profile(times, &mut *runs[0], &mut direct);
        return;
    }
    let mut variants: Vec<&mut dyn FnMut()> = vec![&mut direct];
    for run in &mut runs {
        variants.push(run.as_mut());
    }
    variants.push(&mut with_network);
    variants.push(&mut with_allowlist);
    variants.push(&mut cli);
    variants.push(&mut cli_allowlisted);
    variants.push(&mut cli_resident);
    // Another build's CLI, and every CLI as `nobody`, when asked and possible.
    let other = std::env::var_os("HCP_BENCH_CLI").map(PathBuf::from);
    let other_copy = other.as_ref().map(|other| {
        let copy = copies.path().join("hcpx-other");
        std::fs::copy(other, &copy).unwrap();
        copy
    });
    let mut other_cli = other_copy.as_ref().map(|other| {
        let (work, home) = (work.clone(), home.clone());
        move || run_cli(cleared(other), &work, &home, path, "probe", false)
    });
    // That build's own `hcpx serve` (a server serves its own binary only), for a home
    // of its own (one server per home).
    let other_home = root.path().join("home-other");
    copy_dir(&home.join("packs/probe"), &other_home.join("packs/probe"));
    let _other_resident = other_copy
        .as_ref()
        .map(|other| Resident::start(cleared(other), &other_home, path));
    let mut other_cli_resident = other_copy.as_ref().map(|other| {
        let (work, other_home) = (work.clone(), other_home.clone());
        move || run_cli(cleared(other), &work, &other_home, path, "probe", true)
    });
    let nobody = Nobody::new(bin, other.as_deref(), &home, &script);
    let _nobody_resident = nobody
        .as_ref()
        .map(|nobody| Resident::start(nobody.command(&nobody.bins[0]), &nobody.home, path));
    let mut nobody_runs: Vec<Box<dyn FnMut()>> = nobody.as_ref().map_or_else(Vec::new, |nobody| {
        let mut runs: Vec<Box<dyn FnMut()>> = vec![Box::new(|| {
            let output = nobody
                .command(&nobody.script)
                .args(["args", "--text=hello", "--"])
                .current_dir(&nobody.work)
                .output()
                .unwrap();
            assert!(output.status.success());
        })];
        for bin in &nobody.bins {
            runs.push(Box::new(|| {
                run_cli(
                    nobody.command(bin),
                    &nobody.work,
                    &nobody.home,
                    path,
                    "probe",
                    false,
                );
            }));
        }
        runs.push(Box::new(|| {
            run_cli(
                nobody.command(&nobody.bins[0]),
                &nobody.work,
                &nobody.home,
                path,
                "probe",
                true,
            );
        }));
        runs
    });
    if let (Some(other_cli), Some(other_cli_resident)) = (other_cli.as_mut(), other_cli_resident.as_mut()) {
        variants.push(other_cli);
        variants.push(other_cli_resident);
    }
    for run in &mut nobody_runs {
        variants.push(run.as_mut());
    }
    let runs = std::env::var("HCP_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(RUNS);
    let results = interleaved_cpu(runs, &mut variants);

    let direct = results[0];
    println!(
        "exec overhead, {runs} interleaved rounds (wall p50 / p99; CPU per call, hcpx and its children):"
    );
    let line = |label: &str, timing: &common::Timing, extra: String| {
        println!(
            "  {label:<49}{:>7.3} ms / {:>7.3} ms  cpu {:>6.3} ms{extra}",
            ms(timing.p50),
            ms(timing.p99),
            ms(timing.cpu),
        );
    };
    line("direct: the pack's CLI alone", &direct, String::new());
    let every = results[1];
    for ((label, _), timing) in contexts.iter().zip(&results[1..]) {
        let added = format!(
            "  added {:>6.3} ms p50, {:>6.3} ms cpu",
            ms(timing.p50) - ms(direct.p50),
            ms(timing.cpu) - ms(direct.cpu)
        );
        let costs = if *label == "every layer" {
            String::new()
        } else {
            format!(
                "; layer costs {:>6.3} ms p50, {:>6.3} ms cpu",
                ms(every.p50) - ms(timing.p50),
                ms(every.cpu) - ms(timing.cpu)
            )
        };
        line(&format!("in-process exec, {label}"), timing, added + &costs);
    }
    let added = |timing: &common::Timing, base: &common::Timing| {
        format!(
            "  added {:>6.3} ms p50, {:>6.3} ms cpu",
            ms(timing.p50) - ms(base.p50),
            ms(timing.cpu) - ms(base.cpu)
        )
    };
    let network = results[contexts.len() + 1];
    line(
        "in-process exec, every layer, network: true",
        &network,
        added(&network, &direct)
            + &format!(
                "; no network costs {:>6.3} ms p50, {:>6.3} ms cpu",
                ms(every.p50) - ms(network.p50),
                ms(every.cpu) - ms(network.cpu)
            ),
    );
    let allowlist = results[contexts.len() + 2];
    line(
        "in-process exec, every layer, network.allow",
        &allowlist,
        added(&allowlist, &direct)
            + &format!(
                "; the allowlist costs {:>6.3} ms p50",
                ms(allowlist.p50) - ms(every.p50)
            ),
    );
    let mut rest = results[contexts.len() + 3..].iter();
    if let (Some(cli), Some(allowlisted), Some(resident)) = (rest.next(), rest.next(), rest.next()) {
        line("hcpx exec CLI process, every layer", cli, added(cli, &direct));
        line(
            "  the same, network.allow",
            allowlisted,
            added(allowlisted, &direct)
                + &format!(
                    "; the allowlist costs {:>6.3} ms p50",
                    ms(allowlisted.p50) - ms(cli.p50)
                ),
        );
        line(
            "  the same, handed to hcpx serve",
            resident,
            added(resident, &direct),
        );
    }
    if other.is_some()
        && let (Some(cli), Some(resident)) = (rest.next(), rest.next())
    {
        line("  the same, HCP_BENCH_CLI's build", cli, added(cli, &direct));
        line(
            "    that build handed to its hcpx serve",
            resident,
            added(resident, &direct),
        );
    }
    if let Some(direct) = rest.next() {
        line("direct, as nobody (through setpriv)", direct, String::new());
        let mut labels = vec!["hcpx exec CLI process, as nobody"];
        if other.is_some() {
            labels.push("  the same, HCP_BENCH_CLI's build");
        }
        labels.push("  the same, handed to hcpx serve");
        for (cli, label) in rest.zip(labels) {
            line(label, cli, added(cli, direct));
        }
    } else {
        println!("  (not run as nobody: that takes root and setpriv)");
    }
}

/// A copy of the probe fixture named `id` whose `sandbox.network` is `network`.
fn probe_with_network(fixture: &Path, home: &Path, id: &str, network: &str) {
    let dir = home.join("packs").join(id);
    copy_dir(fixture, &dir);
    for (file, from, to) in [
        (
            "hcp.json",
            "\"network\": false".to_owned(),
            format!("\"network\": {network}"),
        ),
        (
            "hcp.json",
            "\"id\": \"probe\"".to_owned(),
            format!("\"id\": \"{id}\""),
        ),
        ("SKILL.md", "name: probe".to_owned(), format!("name: {id}")),
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(text.contains(&from), "{file}: {from}");
        std::fs::write(dir.join(file), text.replacen(&from, &to, 1)).unwrap();
    }
}

/// One `hcpx exec` CLI process (`command` is hcpx, or what runs it), which must
/// succeed: run in its own process, or handed to the resident server
/// (`HCP_RESIDENT=require`) when `resident`.
fn run_cli(mut command: Command, work: &Path, home: &Path, path: &str, pack: &str, resident: bool) {
    let output = command
        .args(["exec", pack, "args", "--", "text=hello"])
        .current_dir(work)
        .env("PATH", path)
        .env("HCP_HOME", home)
        .env("HCP_RESIDENT", if resident { "require" } else { "off" })
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A running `hcpx serve` (`command` is hcpx, or what runs it) for `home`, stopped
/// when dropped.
struct Resident(std::process::Child);

impl Resident {
    fn start(mut command: Command, home: &Path, path: &str) -> Self {
        let child = command
            .arg("serve")
            .env("PATH", path)
            .env("HCP_HOME", home)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let socket = home.join("run/exec.sock");
        let started = std::time::Instant::now();
        while !socket.exists() {
            assert!(started.elapsed().as_secs() < 10, "hcpx serve did not start");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Self(child)
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.0.id()).unwrap()).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = self.0.wait();
    }
}

/// `nobody`'s copy of the pack and of the binaries (the build folder may not be
/// reachable for it), in a folder of its own: made only when the bench runs as root
/// and setpriv is there.
struct Nobody {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    script: PathBuf,
    bins: Vec<PathBuf>,
}

impl Nobody {
    const SETPRIV: &str = "/usr/bin/setpriv";

    fn new(bin: &str, other: Option<&Path>, home: &Path, script: &Path) -> Option<Self> {
        if !rustix::process::geteuid().is_root() || !Path::new(Self::SETPRIV).exists() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let (own_home, work) = (base.join("home"), base.join("work"));
        std::fs::create_dir_all(&work).unwrap();
        copy_dir(&home.join("packs/probe"), &own_home.join("packs/probe"));
        let mut bins = vec![base.join("hcpx")];
        std::fs::copy(bin, &bins[0]).unwrap();
        if let Some(other) = other {
            bins.push(base.join("hcpx-other"));
            std::fs::copy(other, &bins[1]).unwrap();
        }
        let owned = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(base)
            .status()
            .unwrap();
        assert!(owned.success());
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
        let script = own_home.join("packs/probe").join(script.file_name().unwrap());
        Some(Self {
            _dir: dir,
            home: own_home,
            work,
            script,
            bins,
        })
    }

    /// `program` as nobody, with a cleared environment (PATH and HOME set).
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(Self::SETPRIV);
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.work);
        command
    }
}

/// Runs `run` `times` times and prints the median of each step the code marks
/// (`hcpx::mark`, with the feature `marks`), then the median of a direct run.
fn profile(times: usize, run: &mut dyn FnMut(), direct: &mut dyn FnMut()) {
    let median = |mut samples: Vec<f64>| {
        samples.sort_by(f64::total_cmp);
        samples.get(samples.len() / 2).copied().unwrap_or(0.0)
    };
    let mut names: Vec<&'static str> = Vec::new();
    let mut samples: Vec<Vec<f64>> = Vec::new();
    for _ in 0..times {
        let _ = hcpx::take_marks();
        hcpx::mark("start");
        run();
        hcpx::mark("end");
        let marks = hcpx::take_marks();
        if names.is_empty() {
            names = marks.iter().map(|(name, _)| *name).collect();
            samples = vec![Vec::new(); names.len()];
        }
        // A call that marked other steps (an error, say) is left out.
        if marks.len() == names.len() {
            for (index, pair) in marks.windows(2).enumerate() {
                samples[index + 1].push(ms(pair[1].1 - pair[0].1));
            }
        }
    }
    if names.len() > 2 {
        println!("median of each marked step, {times} calls:");
        for (name, step) in names.iter().zip(samples).skip(1) {
            println!("  {name:<18}{:>8.4} ms", median(step));
        }
    } else {
        println!("(build with --features marks for the time of each step)");
    }
    let direct: Vec<f64> = (0..times)
        .map(|_| {
            let started = std::time::Instant::now();
            direct();
            ms(started.elapsed())
        })
        .collect();
    println!("direct run, median: {:.4} ms", median(direct));
}
