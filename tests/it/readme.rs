//! Every command in the README's `sh` blocks, run as written against the built
//! binary with a temporary HCP_HOME, HOME and working directory: an example that
//! stops working (a renamed flag, a pack that changed, a time of day) fails here.

use std::path::Path;
use std::process::Command;

use crate::common::{BIN, TestEnv};

/// The lines of every fenced `sh` block of a Markdown file, with their line numbers.
fn sh_lines(markdown: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut inside = false;
    for (number, line) in markdown.lines().enumerate() {
        if line.starts_with("```") {
            inside = !inside && line.trim_end() == "```sh";
            continue;
        }
        if inside && !line.trim().is_empty() {
            lines.push((number + 1, line.to_owned()));
        }
    }
    lines
}

/// Lines not run here, and why. Nothing in the tour needs the network or npm;
/// these are the build, the suites themselves and an install (with what it needs).
fn skipped(line: &str) -> Option<&'static str> {
    if line.starts_with("scripts/test.sh") {
        Some("the test suite this test is part of")
    } else if line.starts_with("cargo bench") {
        Some("benchmarks: minutes of generated packs, not an example")
    } else if line.contains("cargo install") {
        Some("an install: a release build of minutes, into the user's ~/.cargo")
    } else if line.starts_with("rustup target add") {
        Some("a download of a target's standard library, for an install")
    } else {
        None
    }
}

/// A line as it runs: `cargo run --release --` is the built hcpx (the build is
/// what this test binary already did).
fn as_run(line: &str) -> String {
    match line.strip_prefix("cargo run --release -- ") {
        Some(rest) => format!("hcpx {rest}"),
        None => line.to_owned(),
    }
}

#[test]
fn every_readme_command_runs_as_written() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let lines = sh_lines(&readme);
    assert!(lines.len() >= 15, "the README's tour was not found: {lines:?}");
    let env = TestEnv::new();
    // `hcpx` on PATH, as `cargo install --path .` puts it.
    let bin = env.root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("hcpx")).unwrap();
    let path = format!("{}:{}", bin.display(), env.path);
    let mut ran = 0;
    for (number, line) in &lines {
        if let Some(why) = skipped(line) {
            eprintln!("note: README.md:{number} not run ({why}): {line}");
            continue;
        }
        let output = Command::new("/bin/sh")
            .args(["-c", &as_run(line)])
            .current_dir(env.work())
            .env_clear()
            .env("PATH", &path)
            .env("HOME", env.root.path().join("user"))
            .env("HCP_HOME", env.home())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "README.md:{number} failed ({}): {line}\n--- stdout\n{}--- stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 15, "only {ran} README lines ran");
}

/// Examples hold at any hour: the transit pack plans from the current time when no
/// `at=` is given, and its last service leaves before midnight, so an example
/// without `at=` fails late in the evening. Every README line and every example in
/// `--help` that plans or lists departures names its time.
#[test]
fn transit_examples_name_their_time() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let env = TestEnv::new();
    let mut examples: Vec<String> = sh_lines(&readme).into_iter().map(|(_, line)| line).collect();
    for command in [&["exec", "--help"][..], &["--help"], &["skill", "transit"]] {
        let output = env.run(command);
        assert_eq!(output.code, 0, "{output}");
        examples.extend(output.stdout.lines().map(str::to_owned));
    }
    let timed: Vec<&String> = examples
        .iter()
        .filter(|line| line.contains("transit plan") || line.contains("transit departures"))
        // A generated reference's `from=<from>` is a form to fill in, not an example.
        .filter(|line| !line.contains("=<"))
        .collect();
    assert!(timed.len() >= 4, "{timed:?}");
    for line in timed {
        assert!(
            line.contains(" at="),
            "an example that depends on the hour: {line}"
        );
    }
}

/// `exec --help`'s examples run as written.
#[test]
fn exec_help_examples_run() {
    let env = TestEnv::new();
    let help = env.run(&["exec", "--help"]).stdout;
    let examples: Vec<&str> = help
        .lines()
        .filter_map(|line| line.trim().strip_prefix("hcpx "))
        .collect();
    assert!(examples.len() >= 3, "{help}");
    for example in examples {
        let words = shell_words::split(example).unwrap();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let output = env.run(&words);
        assert_eq!(output.code, 0, "`hcpx {example}`: {output}");
    }
}
