//! The programs the catalog's tests run are there: in CI (`HCP_CI=1`) a broken install
//! step (`.ci/apt-tools`, `scripts/tools.sh`) fails here, by name, instead of as many
//! pack tests at once; elsewhere each missing one is listed as a skip.

use std::path::Path;

use super::{on_tools_path, tools_dir};
use crate::common::require;

/// Every program a catalog pack wraps or its test runs, as `scripts/tools.sh` lists
/// them in `target/tools/versions.txt`.
const PROGRAMS: [&str; 29] = [
    "aws",
    "cargo",
    "curl",
    "docker",
    "eslint",
    "fdfind",
    "gh",
    "git",
    "go",
    "jq",
    "kubectl",
    "make",
    "mypy",
    "node",
    "npm",
    "pip",
    "prettier",
    "psql",
    "pytest",
    "python3",
    "redis-cli",
    "redis-server",
    "rg",
    "ruff",
    "shellcheck",
    "sqlite3",
    "tar",
    "uv",
    "yq",
];

/// Each catalog pack's program (`bin[0]`) or one of its aliases, for the packs
/// that wrap a program.
fn catalog_programs() -> Vec<(String, Vec<String>)> {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("packs/catalog");
    let Ok(entries) = std::fs::read_dir(&catalog) else {
        return Vec::new();
    };
    let mut programs = Vec::new();
    for entry in entries {
        let manifest = entry.unwrap().path().join("hcp.json");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let id = value["id"].as_str().unwrap().to_owned();
        let mut names: Vec<String> = value["bin"]
            .get(0)
            .and_then(|bin| bin.as_str())
            .into_iter()
            .map(str::to_owned)
            .collect();
        if let Some(aliases) = value["program"]["aliases"].as_array() {
            names.extend(aliases.iter().filter_map(|a| a.as_str()).map(str::to_owned));
        }
        // A pack whose program is a script of its own is there by construction.
        if names.iter().any(|name| name.contains('/')) || names.is_empty() {
            continue;
        }
        programs.push((id, names));
    }
    programs.sort();
    programs
}

#[test]
fn every_catalog_program_is_on_the_tools_path() {
    let mut missing: Vec<String> = PROGRAMS
        .iter()
        .filter(|program| on_tools_path(program).is_none())
        .map(|program| (*program).to_owned())
        .collect();
    for (id, names) in catalog_programs() {
        if !names.iter().any(|name| on_tools_path(name).is_some()) {
            missing.push(format!("{} (pack {id})", names.join(" or ")));
        }
    }
    if std::env::var_os("HCP_CI").is_some() {
        assert_eq!(
            missing,
            Vec::<String>::new(),
            "these programs are missing from the catalog tests' PATH; .ci/apt-tools \
             installs the Debian ones, scripts/tools.sh the PyPI and npm ones"
        );
    }
    for program in &missing {
        require(
            false,
            &format!("{program} for the catalog tests (.ci/apt-tools, scripts/tools.sh)"),
        );
    }
}

/// `scripts/tools.sh` reports a version for exactly these programs, so the list a
/// person reads and the one CI checks are the same.
#[test]
fn the_versions_file_names_the_same_programs() {
    let versions = tools_dir().join("versions.txt");
    let Ok(text) = std::fs::read_to_string(&versions) else {
        require(false, "target/tools/versions.txt (run scripts/tools.sh)");
        return;
    };
    let mut named: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    named.sort_unstable();
    assert_eq!(named, PROGRAMS);
}

/// Each catalog pack, installed, is runnable here against the real program its tests
/// run: found on the tools' PATH (under an alias where it has one) and, where the
/// manifest names a `versionPattern`, the variant it supports, told by availability's
/// sandboxed run of the program. A program that is missing, or another variant
/// (Debian 12's kubectl 1.20 for a pack of 1.24 or later), fails here in CI.
#[test]
fn every_catalog_pack_is_runnable_with_the_program_it_supports() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = super::env();
    let mut failures = Vec::new();
    for (id, names) in catalog_programs() {
        let program = names.join(" or ");
        if !require(
            names.iter().any(|name| on_tools_path(name).is_some()),
            &format!("{program} (pack {id})"),
        ) {
            continue;
        }
        super::install(&env, &id);
        let (code, envelope) = env.json(&["availability", &id]);
        assert_eq!(code, 0, "{envelope}");
        let data = &envelope["data"];
        let runnable: Vec<&serde_json::Value> = data["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|problem| problem["flag"] == "runnable")
            .collect();
        if data["runnable"] != true || !runnable.is_empty() {
            failures.push(format!("{id}: {runnable:?}"));
            continue;
        }
        let manifest = super::catalog_manifest(&id);
        if let Some(pattern) = manifest["program"]["versionPattern"].as_str() {
            // The line availability shows is the one that told the variant.
            let line = data["program"]["version"].as_str().unwrap_or_default();
            assert!(
                regex::Regex::new(pattern).unwrap().is_match(line),
                "{id}: {line:?} does not match {pattern}"
            );
        }
        eprintln!(
            "{id}: {} ({})",
            data["program"]["path"].as_str().unwrap_or("?"),
            data["program"]["version"].as_str().unwrap_or("no version asked")
        );
    }
    assert_eq!(failures, Vec::<String>::new());
}
