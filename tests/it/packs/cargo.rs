//! The cargo pack against the real `cargo` (the toolchain that builds these tests): a
//! crate with no dependency made here (so nothing needs the network) checked with a
//! type error as JSON diagnostics, built twice (the second compiles nothing), tested
//! with a failing and a passing test, formatted, described as JSON; cargo's home in
//! the pack's cache folder, never `~/.cargo`, where a dependency fetched once from a
//! registry on loopback stays for the builds, which have no network; values that read
//! as options refused.

use std::path::Path;

use serde_json::{Value, json};

use super::{install, tools_path};
use crate::common::{TestEnv, require};

/// A test environment whose PATH starts with the folder of the cargo that builds this
/// test suite (a toolchain's own `bin`, with rustc, rustfmt and clippy beside it).
fn ready() -> Option<TestEnv> {
    let cargo = Path::new(env!("CARGO"));
    let bin = cargo.parent()?;
    if !require(
        bin.join("rustc").is_file(),
        "cargo and rustc in one toolchain folder",
    ) {
        return None;
    }
    let mut env = TestEnv::new();
    env.path = format!("{}:{}", bin.display(), tools_path());
    install(&env, "cargo");
    env.write(
        "work/Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    env.write(
        "work/src/main.rs",
        "fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\nfn main() {\n    println!(\"{}\", add(1, 2));\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n\n    #[test]\n    fn breaks() {\n        assert_eq!(super::add(2, 2), 5);\n    }\n}\n",
    );
    // check/build/clippy may write target and an existing Cargo.lock, not make one
    // (the SKILL says so): fetch makes it, as a person would first.
    let (code, envelope) = env.json(&["exec", "cargo", "fetch", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    Some(env)
}

/// The `(level, code, file, line)` of each compiler message in `data`.
fn diagnostics(data: &Value) -> Vec<(String, String, String, u64)> {
    data.as_array()
        .unwrap_or_else(|| panic!("data is not a list: {data}"))
        .iter()
        // Newer cargo adds a "failure-note" (`rustc --explain`): not a diagnostic.
        .filter(|message| {
            message["reason"] == json!("compiler-message")
                && message["message"]["level"] != json!("failure-note")
        })
        .map(|message| {
            let message = &message["message"];
            let span = &message["spans"][0];
            (
                message["level"].as_str().unwrap().to_owned(),
                message["code"]["code"].as_str().unwrap_or_default().to_owned(),
                span["file_name"].as_str().unwrap_or_default().to_owned(),
                span["line_start"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn check_reports_a_type_error_as_json_diagnostics() {
    let Some(env) = ready() else { return };
    env.write(
        "work/src/main.rs",
        "fn main() {\n    let x: u32 = \"text\";\n    let _ = x;\n}\n",
    );
    let (code, envelope) = env.json(&["exec", "cargo", "check", "--yes"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(101)),
        "{envelope}"
    );
    assert_eq!(
        diagnostics(&envelope["data"]),
        [(
            "error".to_owned(),
            "E0308".to_owned(),
            "src/main.rs".to_owned(),
            2
        )],
        "{envelope}"
    );
    let last = envelope["data"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last, json!({"reason": "build-finished", "success": false}));
    // target was made for it.
    assert!(env.work().join("target").is_dir());
}

#[test]
fn a_second_build_compiles_nothing_and_cargo_home_is_the_packs() {
    let Some(env) = ready() else { return };
    let output = env.run(&["exec", "cargo", "build", "--yes"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(output.stderr.contains("Compiling demo v0.1.0"), "{output}");
    let program = env.work().join("target/debug/demo");
    let ran = std::process::Command::new(&program).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "3\n");
    let output = env.run(&["exec", "cargo", "build", "--yes"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(!output.stderr.contains("Compiling"), "{output}");
    assert!(output.stderr.contains("Finished"), "{output}");
    // Cargo's home is in the pack's cache folder: ~/.cargo is never made.
    let (_, plan) = env.json(&["exec", "cargo", "build", "--dry-run", "--yes"]);
    assert!(
        plan["data"]["env"]
            .as_array()
            .unwrap()
            .contains(&json!("CARGO_HOME")),
        "{plan}"
    );
    assert!(!env.root.path().join("user/.cargo").exists());
}

#[test]
fn test_runs_the_tests_and_a_failure_fails_the_call() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "cargo", "test", "--yes"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(101)), "{envelope}");
    let stdout = envelope["stdout"].as_str().unwrap();
    for line in [
        "test tests::adds ... ok",
        "test tests::breaks ... FAILED",
        "test result: FAILED. 1 passed; 1 failed;",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let output = env.run(&[
        "exec",
        "cargo",
        "test",
        "--yes",
        "--",
        "filter=adds",
        "args=--exact",
        "args=tests::adds",
    ]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.contains("test result: ok. 1 passed; 0 failed;"),
        "{output}"
    );
}

#[test]
fn fmt_check_is_an_answer_and_fmt_rewrites() {
    let Some(env) = ready() else { return };
    env.write("work/src/main.rs", "fn main() { println!(\"hi\"); }\n");
    let (code, envelope) = env.json(&["exec", "cargo", "fmt-check"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap()
            .contains("+    println!(\"hi\");"),
        "{envelope}"
    );
    let output = env.run(&["exec", "cargo", "fmt", "--yes"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("src/main.rs")).unwrap(),
        "fn main() {\n    println!(\"hi\");\n}\n"
    );
}

/// clippy's lints are JSON diagnostics like the compiler's; a warning is an answer,
/// unless deny_warnings makes it fail the call as CI setups do.
#[test]
fn clippy_lints_as_json_and_deny_warnings_fails() {
    let Some(env) = ready() else { return };
    if !require(
        Path::new(env!("CARGO")).with_file_name("cargo-clippy").is_file(),
        "clippy in the toolchain",
    ) {
        return;
    }
    env.write(
        "work/src/main.rs",
        "fn one() -> u32 {\n    return 1;\n}\n\nfn main() {\n    println!(\"{}\", one());\n}\n",
    );
    let lint = vec![(
        "warning".to_owned(),
        "clippy::needless_return".to_owned(),
        "src/main.rs".to_owned(),
        2,
    )];
    let (code, envelope) = env.json(&["exec", "cargo", "clippy", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(diagnostics(&envelope["data"]), lint, "{envelope}");
    let (code, envelope) = env.json(&["exec", "cargo", "clippy", "--yes", "--", "deny_warnings=true"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(101)), "{envelope}");
    let denied = diagnostics(&envelope["data"]);
    assert_eq!(
        (denied[0].0.as_str(), denied[0].1.as_str()),
        ("error", "clippy::needless_return"),
        "{envelope}"
    );
}

#[test]
fn metadata_is_json() {
    let Some(env) = ready() else { return };
    let (code, envelope) = env.json(&["exec", "cargo", "metadata"]);
    assert_eq!(code, 0, "{envelope}");
    let package = &envelope["data"]["packages"][0];
    assert_eq!(
        (
            &package["name"],
            &package["version"],
            &package["targets"][0]["kind"],
            &package["dependencies"]
        ),
        (&json!("demo"), &json!("0.1.0"), &json!(["bin"]), &json!([])),
        "{envelope}"
    );
}

#[test]
fn values_that_read_as_options_or_leave_are_refused() {
    let Some(env) = ready() else { return };
    super::refused(
        &env,
        "cargo",
        &[
            ("check", "package=--config=build.rustc-wrapper=/bin/sh"),
            ("build", "target_dir=../elsewhere"),
            ("build", "features=a --config x"),
            ("test", "filter=--ignored"),
            ("add", "crates=--git=https://example.invalid/x"),
            ("add", "crates=../local"),
            ("tree", "invert=serde --offline"),
        ],
    );
    // Test-binary arguments come after `--`: cargo never reads them as its own.
    let (_, plan) = env.json(&[
        "exec",
        "cargo",
        "test",
        "--dry-run",
        "--yes",
        "--",
        "args=--config=x",
    ]);
    assert_eq!(
        plan["data"]["child"].as_array().unwrap()[1..],
        [json!("test"), json!("--"), json!("--config=x")],
        "{plan}"
    );
}

/// A crate registry on loopback in cargo's sparse protocol, serving one crate,
/// `hcpdep` 0.1.0 (`pub fn answer() -> u32 { 42 }`), and the paths it was asked for.
struct Registry {
    port: u16,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Registry {
    fn start() -> Self {
        use std::io::{BufRead as _, Write as _};
        let mut packed = Vec::new();
        {
            let mut archive = tar::Builder::new(flate2::write::GzEncoder::new(
                &mut packed,
                flate2::Compression::default(),
            ));
            for (path, text) in [
                (
                    "hcpdep-0.1.0/Cargo.toml",
                    "[package]\nname = \"hcpdep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
                ),
                ("hcpdep-0.1.0/src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n"),
            ] {
                let mut header = tar::Header::new_gnu();
                header.set_size(text.len() as u64);
                header.set_mode(0o644);
                header.set_cksum();
                archive.append_data(&mut header, path, text.as_bytes()).unwrap();
            }
            archive.into_inner().unwrap().finish().unwrap();
        }
        let digest = <sha2::Sha256 as sha2::Digest>::digest(&packed);
        let cksum: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let config = json!({ "dl": format!("http://127.0.0.1:{port}/dl/{{crate}}/{{version}}.crate") });
        let entry = json!({ "name": "hcpdep", "vers": "0.1.0", "deps": [], "cksum": cksum,
                            "features": {}, "yanked": false });
        let files: Vec<(String, Vec<u8>)> = vec![
            ("/config.json".to_owned(), config.to_string().into_bytes()),
            ("/hc/pd/hcpdep".to_owned(), format!("{entry}\n").into_bytes()),
            ("/dl/hcpdep/0.1.0.crate".to_owned(), packed),
        ];
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = asked.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    continue;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).map_or(true, |read| read == 0) || line == "\r\n" {
                        break;
                    }
                }
                let path = request.split_whitespace().nth(1).unwrap_or_default().to_owned();
                log.lock().unwrap().push(path.clone());
                let found = files.iter().find(|(name, _)| *name == path);
                let (status, body): (&str, &[u8]) = match found {
                    Some((_, body)) => ("200 OK", body),
                    None => ("404 Not Found", b""),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(body);
            }
        });
        Self { port, asked }
    }

    /// How many times the crate's file was downloaded.
    fn downloads(&self) -> usize {
        let asked = self.asked.lock().unwrap();
        asked.iter().filter(|path| path.starts_with("/dl/")).count()
    }
}

/// What `sandbox.env` with `{cache}` is for: `fetch` downloads a dependency once,
/// into cargo's home in the pack's own cache folder (never `~/.cargo`), and the
/// builds after it, which have no network, find it there; a second fetch downloads
/// nothing. The dependency comes from a registry on loopback (cargo's sparse
/// protocol), named in the project's `.cargo/config.toml`.
#[test]
fn a_dependency_is_fetched_once_into_the_packs_cache_and_builds_find_it_offline() {
    let Some(env) = ready() else { return };
    let registry = Registry::start();
    env.write(
        "work/.cargo/config.toml",
        &format!(
            "[registries.local]\nindex = \"sparse+http://127.0.0.1:{}/\"\n",
            registry.port
        ),
    );
    env.write(
        "work/Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nhcpdep = { version = \"0.1\", registry = \"local\" }\n",
    );
    env.write(
        "work/src/main.rs",
        "fn main() {\n    println!(\"{}\", hcpdep::answer());\n}\n",
    );
    let (code, envelope) = env.json(&["exec", "cargo", "fetch", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(registry.downloads(), 1, "{:?}", registry.asked);
    // The crate is in the pack's cache folder, in the user's cache, not in ~/.cargo.
    let caches = env.root.path().join("user/.cache/hcpx/packs");
    let cached: Vec<std::path::PathBuf> = std::fs::read_dir(&caches)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|dir| dir.file_name().unwrap().to_string_lossy().starts_with("cargo-"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let registry_cache = cached[0].join("cargo/registry/cache");
    let crates: Vec<String> = std::fs::read_dir(&registry_cache)
        .unwrap()
        .flat_map(|dir| std::fs::read_dir(dir.unwrap().path()).unwrap())
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(crates, ["hcpdep-0.1.0.crate"]);
    assert!(!env.root.path().join("user/.cargo").exists());

    // build has no network: it compiles the dependency from the pack's cache.
    assert_eq!(
        super::plan(&env, "cargo", "build", &[])["sandbox"]["network"],
        json!(false)
    );
    for _ in 0..2 {
        let output = env.run(&["exec", "cargo", "build", "--yes"]);
        assert_eq!(output.code, 0, "{output}");
    }
    let ran = std::process::Command::new(env.work().join("target/debug/demo"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "42\n");
    // tree reads Cargo.lock and the cache, without the network either.
    let output = env.run(&["exec", "cargo", "tree"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.starts_with("demo v0.1.0 (")
            && output
                .stdout
                .ends_with("\n└── hcpdep v0.1.0 (registry `local`)\n"),
        "{output}"
    );
    let (code, envelope) = env.json(&["exec", "cargo", "fetch", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(registry.downloads(), 1, "{:?}", registry.asked);
}
