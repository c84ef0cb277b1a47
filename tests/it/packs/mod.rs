//! The catalog's packs (`packs/catalog/`), each run end to end against its real
//! program under the full sandbox. The programs come from Debian's packages, PyPI
//! and npm (`scripts/tools.sh` puts the PyPI and npm ones under `target/tools/`); a
//! test whose program is missing fails in CI (`HCP_CI=1`) and is listed as skipped
//! elsewhere.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, require};

mod aws;
mod cargo;
mod curl;
mod docker;
mod eslint;
mod fd;
mod fs;
mod gh;
mod go;
mod kubectl;
mod make;
mod mypy;
mod node;
mod npm;
mod pip;
mod prettier;
mod psql;
mod pytest;
mod python;
mod redis_cli;
mod rg;
mod ruff;
mod shellcheck;
mod tar;
mod tools;
mod uv;
mod yq;

/// Where `scripts/tools.sh` installs the PyPI and npm programs.
pub(crate) fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools")
}

/// The PATH the catalog's tests give hcpx: the PyPI and npm tools, the system's
/// folders, then the folder of the cargo building these tests (the Rust toolchain's
/// own, with rustc beside it, not rustup's proxies, which need the real HOME).
/// `node/bin` holds npm packages installed as `npm install -g --prefix` does, each
/// with its own dependencies beneath it (the sandbox reads a program's install
/// prefix, not a flat `node_modules` beside it, which eslint needs).
pub(crate) fn tools_path() -> String {
    let tools = tools_dir();
    let mut path = format!(
        "{}:{}:{}:/usr/local/bin:/usr/bin:/bin",
        tools.join("py/bin").display(),
        tools.join("node/bin").display(),
        tools.join("node/node_modules/.bin").display()
    );
    if let Some(toolchain) = Path::new(env!("CARGO")).parent() {
        path.push(':');
        path.push_str(&toolchain.to_string_lossy());
    }
    path
}

/// The first folder of [`tools_path`] holding `program`.
pub(crate) fn on_tools_path(program: &str) -> Option<PathBuf> {
    tools_path()
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|candidate| candidate.is_file())
}

/// Whether `program` is on [`tools_path`]; in CI a missing one fails the test.
pub(crate) fn have(program: &str) -> bool {
    require(on_tools_path(program).is_some(), program)
}

/// A test environment whose PATH holds the catalog's programs.
pub(crate) fn env() -> TestEnv {
    let mut env = TestEnv::new();
    env.path = tools_path();
    env
}

/// Installs the catalog pack `id` as a person would, and returns the install's
/// envelope.
pub(crate) fn install(env: &TestEnv, id: &str) -> serde_json::Value {
    env.install_ok(&catalog_dir(id).to_string_lossy(), false)
}

/// The catalog pack `id`'s folder in this repository.
fn catalog_dir(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packs/catalog")
        .join(id)
}

/// The catalog pack `id`'s manifest, as this repository holds it.
pub(crate) fn catalog_manifest(id: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(catalog_dir(id).join("hcp.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Installs a person's own copy of the catalog pack `id` whose pack-wide network
/// reaches only `127.0.0.1:port`: `sandbox`, the start of its `sandbox` exactly as
/// the manifest writes it, becomes an allowlist of that one entry.
pub(crate) fn install_reaching_only(env: &TestEnv, id: &str, sandbox: &str, port: u16) {
    let copy = env.root.path().join("changed").join(id);
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(catalog_dir(id)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
    }
    let manifest = std::fs::read_to_string(copy.join("hcp.json")).unwrap();
    assert_eq!(
        manifest.matches(sandbox).count(),
        1,
        "{id}'s sandbox does not start {sandbox}"
    );
    let allow = format!(r#""sandbox": {{"network": {{"allow": ["127.0.0.1:{port}"]}}, "#);
    std::fs::write(copy.join("hcp.json"), manifest.replace(sandbox, &allow)).unwrap();
    env.install_ok(&copy.to_string_lossy(), false);
}

/// A call that tried a server off its allowlist, `elsewhere`, failed to connect
/// and `elsewhere` never saw it. Landlock refuses the connect (EACCES) where it
/// rules TCP; without it, nothing listens on that port in the namespace.
pub(crate) fn off_the_allowlist(code: i32, envelope: &serde_json::Value, elsewhere: &std::net::TcpListener) {
    assert_eq!(
        (code, &envelope["ok"], &envelope["error"]["reason"]),
        (1, &serde_json::json!(false), &serde_json::json!("failed")),
        "{envelope}"
    );
    let stderr = envelope["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("Permission denied") || stderr.contains("Connection refused"),
        "{stderr}"
    );
    elsewhere.set_nonblocking(true).unwrap();
    assert!(
        matches!(elsewhere.accept(), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "the pack reached a port off its allowlist"
    );
}

/// Each `(command, KEY=VALUE)` of `pack` is refused before anything runs, as
/// `invalid_param` (`--yes`, so no confirmation stands in the way).
pub(crate) fn refused(env: &TestEnv, pack: &str, cases: &[(&str, &str)]) {
    for (command, word) in cases {
        let (code, envelope) = env.json(&["exec", pack, command, "--yes", "--", word]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["reason"]),
            (2, &serde_json::json!(false), &serde_json::json!("invalid_param")),
            "{word}: {envelope}"
        );
    }
}

/// The `--dry-run` plan (`data`) of `hcpx exec PACK COMMAND -- PARAMS...`, which must
/// not be refused.
pub(crate) fn plan(env: &TestEnv, pack: &str, command: &str, params: &[&str]) -> serde_json::Value {
    let mut args = vec!["exec", pack, command, "--dry-run", "--"];
    args.extend_from_slice(params);
    let (code, envelope) = env.json(&args);
    assert_eq!(code, 0, "{envelope}");
    envelope["data"].clone()
}

/// `pack.command` deletes or overwrites: by default only a person confirms it at a
/// prompt, and `--yes` is refused (`needs_confirmation`) before anything runs; then
/// the person's policy lowers it to `confirm` (`hcpx policy set`), as for an agent
/// they let run it.
pub(crate) fn held_for_a_person_then_lowered(env: &TestEnv, pack: &str, command: &str, params: &[&str]) {
    let mut args = vec!["exec", pack, command, "--yes", "--"];
    args.extend_from_slice(params);
    let (code, envelope) = env.json(&args);
    assert_eq!(
        (
            code,
            &envelope["spawned"],
            &envelope["error"]["reason"],
            &envelope["data"]["effect"],
            &envelope["data"]["decision"]
        ),
        (
            2,
            &serde_json::json!(false),
            &serde_json::json!("needs_confirmation"),
            &serde_json::json!("destructive"),
            &serde_json::json!("confirm-human")
        ),
        "{envelope}"
    );
    let rule = format!("{pack}.{command}");
    let output = env.run(&["policy", "set", &rule, "confirm"]);
    assert_eq!(output.code, 0, "{output}");
}
