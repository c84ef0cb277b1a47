//! install from npm: fixture packs made with the real `npm pack`, published with the
//! real `npm publish` to Verdaccio on loopback (no uplinks: nothing leaves the
//! machine), then installed by `hcpx install npm:NAME[@VERSION]`, hcpx running the
//! machine's npm pointed at that registry by `npm_config_userconfig`.
//!
//! One Verdaccio serves every test of the binary (under nextest, of the process). It
//! is installed under `target/npm-registry` by scripts/test.sh, pinned by
//! tests/npm-registry/package-lock.json; without it these tests say so and skip, and
//! fail under `HCP_CI=1`.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TestEnv, copy_dir, fixture, http_request};

/// How long Verdaccio may take to print its port (it takes about a second).
const START_LIMIT: Duration = Duration::from_secs(60);

/// Verdaccio, running for as long as this test binary does.
struct Registry {
    /// `http://127.0.0.1:PORT/`.
    url: String,
    /// An npmrc naming the registry, with a publish token for it.
    npmrc: PathBuf,
    /// What Verdaccio wrote to stderr, shown when npm fails.
    log: PathBuf,
    /// The write end of the server's stdin: it exits, removing its storage, when
    /// this closes, which the kernel does when the test binary ends however it ends.
    _lifeline: ChildStdin,
    _child: Child,
}

/// Where scripts/test.sh installs Verdaccio.
fn verdaccio_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-registry/node_modules/verdaccio")
}

fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The shared registry, started by the first test that asks; `None` (said loudly, a
/// failure under CI) when npm or Verdaccio is missing.
fn registry() -> Option<&'static Registry> {
    static TOOLS: OnceLock<bool> = OnceLock::new();
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    let ready = *TOOLS.get_or_init(|| {
        available("npm") && available("node") && verdaccio_dir().join("package.json").is_file()
    });
    if !crate::common::require(
        ready,
        "npm, node and Verdaccio under target/npm-registry (scripts/test.sh installs it)",
    ) {
        return None;
    }
    Some(REGISTRY.get_or_init(start))
}

fn start() -> Registry {
    // Its own storage and configuration, removed by serve.js when it exits; no
    // uplinks, so a name it does not hold is npm's E404, never a fetch elsewhere.
    let root = tempfile::Builder::new()
        .prefix("hcpx-verdaccio-")
        .tempdir()
        .unwrap()
        .keep();
    let config = format!(
        "storage: {storage}\n\
         auth:\n  htpasswd:\n    file: {htpasswd}\n    max_users: 10\n\
         uplinks: {{}}\n\
         packages:\n  '**':\n    access: $all\n    publish: $authenticated\n\
         web:\n  enable: false\n\
         log: {{ type: stdout, format: pretty, level: warn }}\n",
        storage = root.join("storage").display(),
        htpasswd = root.join("htpasswd").display(),
    );
    std::fs::write(root.join("config.yaml"), config).unwrap();
    let log = root.join("verdaccio.log");
    let serve = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npm-registry/serve.js");
    let mut child = Command::new("node")
        .arg(serve)
        .arg(verdaccio_dir())
        .arg(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(append(&log))
        .spawn()
        .unwrap();
    let lifeline = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    let mut rest = append(&log);
    std::thread::spawn(move || {
        let mut stdout = std::io::BufReader::new(stdout);
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let _ = sender.send(line);
        // Verdaccio logs to stdout: read on to its end, or its writes would fail.
        let _ = std::io::copy(&mut stdout, &mut rest);
    });
    let port: u16 = match receiver.recv_timeout(START_LIMIT).map(|line| line.trim().parse()) {
        Ok(Ok(port)) => port,
        _ => panic!(
            "Verdaccio printed no port; its log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        ),
    };
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // What `npm adduser` does: a user on the registry, and its token.
    let body = json!({ "name": "hcpx-test", "password": "hcpx-test-password" }).to_string();
    let response = http_request(
        address,
        "PUT",
        "/-/user/org.couchdb.user:hcpx-test",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(response.status, 201, "{response:?}");
    let token: Value = serde_json::from_str(&response.body).unwrap();
    let token = token["token"].as_str().unwrap();
    let npmrc = root.join("npmrc");
    let url = format!("http://{address}/");
    std::fs::write(
        &npmrc,
        format!("registry={url}\n//{address}/:_authToken={token}\n"),
    )
    .unwrap();
    Registry {
        url,
        npmrc,
        log,
        _lifeline: lifeline,
        _child: child,
    }
}

fn append(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
}

/// npm as the tests run it: the registry's npmrc, a cache of the test's own.
fn npm(registry: &Registry, env: &TestEnv, args: &[&str], dir: &Path) -> std::process::Output {
    let output = Command::new("npm")
        .args(args)
        .current_dir(dir)
        .env("npm_config_userconfig", &registry.npmrc)
        .env("npm_config_cache", env.root.path().join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "npm {args:?} in {}: {}\nVerdaccio's log:\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(&registry.log).unwrap_or_default()
    );
    output
}

/// The probe pack as an npm package NAME@VERSION, with a file that is not part of the
/// pack and a postinstall script that leaves `marker` if anything runs it; packed by
/// `npm pack` and that tarball sent by `npm publish`.
fn publish(registry: &Registry, env: &TestEnv, name: &str, version: &str, marker: &Path) {
    publish_with(registry, env, name, version, marker, &json!({}));
}

/// [`publish`] with these fields added to its package.json (`keywords`,
/// `description`).
fn publish_with(registry: &Registry, env: &TestEnv, name: &str, version: &str, marker: &Path, extra: &Value) {
    let dir = env
        .root
        .path()
        .join(format!("pkg-{}-{version}", name.replace('/', "-")));
    copy_dir(&fixture("probe"), &dir);
    let manifest = std::fs::read_to_string(dir.join("hcp.json"))
        .unwrap()
        .replace("0.1.0", version);
    std::fs::write(dir.join("hcp.json"), manifest).unwrap();
    let mut package = json!({
        "name": name, "version": version, "description": "hcpx fixture",
        "scripts": { "postinstall": format!("node -e \"require('fs').writeFileSync('{}', 'ran')\"", marker.display()) },
        "files": ["hcp.json", "SKILL.md", "probe", "extra.txt"]
    });
    for (key, value) in extra.as_object().unwrap() {
        package[key] = value.clone();
    }
    std::fs::write(dir.join("package.json"), package.to_string()).unwrap();
    std::fs::write(dir.join("extra.txt"), "not part of the pack").unwrap();
    let packed = npm(registry, env, &["pack", "--ignore-scripts", "--json"], &dir);
    let packed: Value = serde_json::from_slice(&packed.stdout).unwrap();
    let tarball = dir.join(packed[0]["filename"].as_str().unwrap());
    assert!(tarball.is_file(), "npm pack made {}", tarball.display());
    npm(
        registry,
        env,
        &["publish", "--ignore-scripts", tarball.to_str().unwrap()],
        &dir,
    );
}

/// A test environment whose hcpx finds the machine's npm and the registry.
fn npm_env(registry: &Registry) -> TestEnv {
    let env = TestEnv::new();
    let cache = env.root.path().join("npm-cache").display().to_string();
    let mut env = env
        .env("npm_config_userconfig", registry.npmrc.to_str().unwrap())
        .env("npm_config_cache", &cache);
    // npm and node live where this machine keeps them.
    env.path = std::env::var("PATH").unwrap_or_else(|_| env.path.clone());
    env
}

fn lock_entry(env: &TestEnv, id: &str) -> Value {
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(env.home().join("packs.lock.json")).unwrap()).unwrap();
    lock["packs"][id].clone()
}

#[test]
fn install_by_name_and_version_without_running_scripts() {
    let Some(registry) = registry() else { return };
    let env = npm_env(registry);
    let marker = env.root.path().join("postinstall-ran");
    let name = "hcp-probe-fixture";
    publish(registry, &env, name, "1.0.0", &marker);
    publish(registry, &env, name, "2.0.0", &marker);
    // The registry holds what npm published.
    let view = npm(registry, &env, &["view", name, "versions", "--json"], &env.work());
    assert_eq!(
        serde_json::from_slice::<Value>(&view.stdout).unwrap(),
        json!(["1.0.0", "2.0.0"]),
        "published to {}",
        registry.url
    );

    let envelope = env.install_ok(&format!("npm:{name}@1.0.0"), false);
    assert_eq!(envelope["data"]["version"], json!("1.0.0"));
    assert_eq!(envelope["data"]["source"], json!(format!("npm:{name}@1.0.0")));
    let entry = lock_entry(&env, "probe");
    assert_eq!(entry["version"], json!("1.0.0"));
    assert_eq!(entry["source"], json!(format!("npm:{name}@1.0.0")));
    assert_eq!(entry["integrity"], envelope["data"]["integrity"]);
    assert!(entry["integrity"].as_str().unwrap().starts_with("sha512-"));
    let mut names: Vec<String> = std::fs::read_dir(env.home().join("packs/probe"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["SKILL.md", "hcp.json", "probe"],
        "package.json and extra.txt are not taken"
    );
    assert!(!marker.exists(), "the package's postinstall script did not run");
    // The installed CLI runs, executable as its manifest says.
    let (code, _) = env.json(&["exec", "probe", "args", "--", "count=1"]);
    assert_eq!(code, 0);
    // By name: the latest version replaces it; the same again changes nothing.
    let envelope = env.install_ok(&format!("npm:{name}"), false);
    assert_eq!(envelope["data"]["replaced"], json!("1.0.0"));
    assert_eq!(envelope["data"]["version"], json!("2.0.0"));
    assert_eq!(envelope["data"]["source"], json!(format!("npm:{name}@2.0.0")));
    let integrity = envelope["data"]["integrity"].clone();
    assert_eq!(lock_entry(&env, "probe")["integrity"], integrity);
    let envelope = env.install_ok(&format!("npm:{name}@2.0.0"), false);
    assert_eq!(envelope["data"]["changed"], json!(false));
    assert_eq!(envelope["data"]["integrity"], integrity);
    assert!(!marker.exists(), "the package's postinstall script did not run");
}

/// A name or version the registry does not have: npm's own code in the refusal, and
/// the hint names the package asked for.
#[test]
fn a_package_the_registry_lacks_is_refused_with_npms_reason() {
    let Some(registry) = registry() else { return };
    let env = npm_env(registry);
    let (code, envelope) = env.json(&["install", "npm:hcp-no-such-package@1.0.0", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"],
        json!({
            "code": 2, "reason": "unknown_pack",
            "message": "npm could not fetch that package (E404); nothing was installed",
        })
    );
    assert_eq!(
        envelope["next"],
        json!("npm view hcp-no-such-package versions   (check the name and version)")
    );
    let (code, envelope) = env.json(&["install", "npm:@hcpx-test/no-such-package", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"]["message"],
        json!("npm could not fetch that package (E404); nothing was installed")
    );
    assert_eq!(
        envelope["next"],
        json!("npm view @hcpx-test/no-such-package versions   (check the name and version)")
    );
    // A version the registry lacks of a package it has: npm says ETARGET.
    let marker = env.root.path().join("postinstall-ran");
    publish(registry, &env, "hcp-probe-one-version", "1.0.0", &marker);
    let (code, envelope) = env.json(&["install", "npm:hcp-probe-one-version@9.9.9", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"]["message"],
        json!("npm could not fetch that package (ETARGET); nothing was installed")
    );
    assert_eq!(
        envelope["next"],
        json!("npm view hcp-probe-one-version versions   (check the name and version)")
    );
    assert!(!env.home().join("packs/probe").exists(), "nothing was installed");
}

/// A scoped name installs by version and by name, and is recorded with its scope.
#[test]
fn scoped_names_install_by_version_and_by_name() {
    let Some(registry) = registry() else { return };
    let env = npm_env(registry);
    let marker = env.root.path().join("postinstall-ran");
    let name = "@hcpx-test/probe";
    publish(registry, &env, name, "1.0.0", &marker);
    publish(registry, &env, name, "1.1.0", &marker);
    let envelope = env.install_ok(&format!("npm:{name}@1.0.0"), false);
    assert_eq!(envelope["data"]["source"], json!("npm:@hcpx-test/probe@1.0.0"));
    assert_eq!(
        lock_entry(&env, "probe")["source"],
        json!("npm:@hcpx-test/probe@1.0.0")
    );
    let envelope = env.install_ok(&format!("npm:{name}"), false);
    assert_eq!(envelope["data"]["replaced"], json!("1.0.0"));
    assert_eq!(envelope["data"]["source"], json!("npm:@hcpx-test/probe@1.1.0"));
    assert_eq!(lock_entry(&env, "probe")["version"], json!("1.1.0"));
    let (code, _) = env.json(&["exec", "probe", "args", "--", "count=1"]);
    assert_eq!(code, 0);
    assert!(!marker.exists(), "the package's postinstall script did not run");
}

/// A person's update from the same npm package keeps the pack's bindings; an
/// agent's update, or a package of the same id under another scope, holds them back.
#[test]
fn updates_from_the_same_package_keep_bindings_and_others_hold_them_back() {
    let Some(registry) = registry() else { return };
    let env = npm_env(registry);
    let marker = env.root.path().join("postinstall-ran");
    let name = "@hcpx-bind/probe";
    for version in ["1.0.0", "2.0.0", "3.0.0"] {
        publish(registry, &env, name, version, &marker);
    }
    publish(registry, &env, "@hcpx-other/probe", "9.0.0", &marker);
    env.install_ok(&format!("npm:{name}@1.0.0"), false);
    env.bind("probe", "PROBE_TOKEN", "tok-NPM-5e4d3c2b1a");
    let seen = |env: &TestEnv| -> bool {
        let output = env
            .command(&["--json", "exec", "probe", "env"])
            .env("HCP_AGENT", "1")
            .output()
            .unwrap();
        let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(output.status.code(), Some(0), "{envelope}");
        envelope["stdout"]
            .as_str()
            .unwrap()
            .contains("PROBE_TOKEN=[REDACTED:PROBE_TOKEN]")
    };
    assert!(seen(&env), "the pack it was bound for gets its token");

    // A person's update from the same package.
    let envelope = env.install_ok(&format!("npm:{name}@2.0.0"), false);
    assert_eq!(
        envelope["data"]["bindings"],
        json!({ "kept": ["PROBE_TOKEN"], "heldBack": [] })
    );
    assert!(seen(&env), "kept across the person's update");

    // An agent's update from the same package.
    let envelope = env.install_ok(&format!("npm:{name}@3.0.0"), true);
    assert_eq!(
        envelope["data"]["bindings"],
        json!({ "kept": [], "heldBack": ["PROBE_TOKEN"] })
    );
    assert!(!seen(&env), "held back after the agent's update");
    let (code, _) = env.json(&["bind", "probe", "PROBE_TOKEN", "--keep"]);
    assert_eq!(code, 0);
    assert!(seen(&env), "a person's --keep releases it");

    // A person's install of the same id from another package (another scope).
    let envelope = env.install_ok("npm:@hcpx-other/probe@9.0.0", false);
    assert_eq!(
        envelope["data"]["bindings"],
        json!({ "kept": [], "heldBack": ["PROBE_TOKEN"] })
    );
    assert!(!seen(&env), "another package gets none of it");
    assert!(!marker.exists(), "the package's postinstall script did not run");
}

/// For a folder or a git repository `npm pack` would run the package's own
/// `prepack`, `prepare` and `postpack` scripts (for a registry tarball it runs none),
/// and the install would be recorded under whatever name its package.json claims, as
/// if from the registry, keeping that package's bindings. `npm:` takes registry names
/// only: such a source is refused before npm runs, and none of its scripts runs.
#[test]
fn a_folder_or_git_source_runs_none_of_its_scripts() {
    let Some(registry) = registry() else { return };
    let env = npm_env(registry);
    let marker = env.root.path().join("script-ran");
    let dir = env.root.path().join("pkg-folder");
    copy_dir(&fixture("probe"), &dir);
    let script = format!(
        "node -e \"require('fs').appendFileSync('{}', process.env.npm_lifecycle_event + ' ')\"",
        marker.display()
    );
    let package = json!({
        "name": "hcp-probe-folder", "version": "1.0.0",
        "scripts": { "prepack": script, "prepare": script, "postpack": script },
        "files": ["hcp.json", "SKILL.md", "probe"]
    });
    std::fs::write(dir.join("package.json"), package.to_string()).unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "probe"]);
    for source in [
        format!("npm:{}", dir.display()),
        format!("npm:file:{}", dir.display()),
        format!("npm:git+file://{}", dir.display()),
    ] {
        let (code, envelope) = env.json(&["install", &source, "--yes"]);
        assert_eq!(code, 2, "{source}: {envelope}");
        assert_eq!(
            envelope["error"]["reason"],
            json!("invalid_arguments"),
            "{source}"
        );
        assert_eq!(envelope["next"], json!("hcpx install ./my-pack"), "{source}");
        assert!(
            !marker.exists(),
            "{source} ran {} ({code}: {envelope})",
            std::fs::read_to_string(&marker).unwrap_or_default()
        );
    }
}

/// The envelope's one warning, whole.
fn only_warning(envelope: &Value) -> &str {
    let warnings = envelope["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{envelope}");
    warnings[0].as_str().unwrap()
}

/// `search --registry` lists the packages with the keyword `hcpx-pack`, and no other,
/// as not installed with their latest version and the command that installs it, the
/// same over MCP; that command installs it, after which it is not listed again.
#[test]
fn search_registry_lists_marked_packs_and_what_it_prints_installs() {
    let Some(registry) = registry() else { return };
    let env = npm_env(registry);
    let marker = env.root.path().join("postinstall-ran");
    let marked = json!({ "description": "Zanzibar tides, a probe", "keywords": ["hcpx-pack", "tides"] });
    publish_with(registry, &env, "hcpx-pack-zanzibar", "1.0.0", &marker, &marked);
    publish_with(registry, &env, "hcpx-pack-zanzibar", "1.1.0", &marker, &marked);
    let unmarked = json!({ "description": "Zanzibar tides, a library", "keywords": ["tides"] });
    publish_with(registry, &env, "zanzibar-tides-lib", "2.0.0", &marker, &unmarked);

    let found = json!({
        "id": "hcpx-pack-zanzibar", "version": "1.1.0", "description": "Zanzibar tides, a probe",
        "source": "npm:hcpx-pack-zanzibar@1.1.0", "install": "hcpx install npm:hcpx-pack-zanzibar@1.1.0",
        "commands": [], "score": 14.0, "program": null, "variant": null, "update": null,
        "installed": false, "runnable": false, "bound": false, "permitted": false, "ready": false
    });
    let (code, envelope) = env.json(&["search", "--registry", "zanzibar"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["results"], json!([found]));
    assert_eq!(envelope.get("warnings"), None, "{envelope}");
    let output = env.run(&["search", "--registry", "zanzibar"]);
    assert_eq!(
        output.stdout,
        format!(
            "hcpx-pack-zanzibar  1.1.0  Zanzibar tides, a probe\n{}not installed: \
             hcpx install npm:hcpx-pack-zanzibar@1.1.0\nnext: hcpx install npm:hcpx-pack-zanzibar@1.1.0\n",
            " ".repeat(20)
        )
    );
    assert_eq!(output.stderr, "");
    // The MCP tool, with the same argv.
    let mut server = crate::mcp::Process::initialized(&env);
    let response = server.call(2, json!(["search", "--registry", "zanzibar"]));
    assert_eq!(
        response["result"]["structuredContent"]["data"]["results"],
        json!([found]),
        "{response}"
    );
    server.close();

    // What search printed installs it; then that version is the local pack.
    let install = found["install"].as_str().unwrap();
    let words: Vec<&str> = install.split_whitespace().collect();
    assert_eq!(words[..2], ["hcpx", "install"]);
    let envelope = env.install_ok(words[2], false);
    assert_eq!(envelope["data"]["source"], json!("npm:hcpx-pack-zanzibar@1.1.0"));
    assert_eq!(envelope["data"]["version"], json!("1.1.0"));
    let (code, envelope) = env.json(&["search", "--registry", "zanzibar"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"]["results"],
        json!([]),
        "installed, so not listed again"
    );
    assert!(!marker.exists(), "the package's postinstall script did not run");
}

/// A pack on the registry and a built-in pack that match the same words are ranked
/// together by score, and `--limit` bounds the list as a whole.
#[test]
fn search_registry_ranks_with_the_local_packs_within_the_limit() {
    let Some(registry) = registry() else { return };
    let env = npm_env(registry);
    let marker = env.root.path().join("postinstall-ran");
    let marked = json!({ "description": "Ferry journey times between islands, a probe",
                         "keywords": ["hcpx-pack", "ferry"] });
    publish_with(registry, &env, "hcpx-pack-ferry", "1.0.0", &marker, &marked);
    let listed = |extra: &[&str]| -> Vec<(String, String, f64)> {
        let mut argv = vec!["search", "--registry", "journey"];
        argv.extend_from_slice(extra);
        let (code, envelope) = env.json(&argv);
        assert_eq!(code, 0, "{envelope}");
        assert_eq!(envelope.get("warnings"), None, "{envelope}");
        envelope["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|result| {
                (
                    result["id"].as_str().unwrap().to_owned(),
                    result["source"].as_str().unwrap().to_owned(),
                    result["score"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let all = listed(&[]);
    let sources: Vec<&str> = all.iter().map(|(_, source, _)| source.as_str()).collect();
    assert!(
        sources.contains(&"builtin") && sources.contains(&"npm:hcpx-pack-ferry@1.0.0"),
        "{all:?}"
    );
    assert!(
        all.windows(2).all(|pair| pair[0].2 >= pair[1].2),
        "ranked by score: {all:?}"
    );
    assert_eq!(listed(&["--limit", "1"]), all[..1]);
    assert!(!marker.exists(), "the package's postinstall script did not run");
}

/// A test environment whose npm uses the registry at `url`, npm being where this
/// machine keeps it; `None` (a failure under CI) without npm.
fn env_with_registry(url: &str) -> Option<TestEnv> {
    if !crate::common::require(available("npm"), "npm") {
        return None;
    }
    let env = TestEnv::new();
    let npmrc = env.write("npmrc", &format!("registry={url}\n"));
    let cache = env.root.path().join("npm-cache").display().to_string();
    let mut env = env
        .env("npm_config_userconfig", npmrc.to_str().unwrap())
        .env("npm_config_cache", &cache);
    env.path = std::env::var("PATH").unwrap_or_else(|_| env.path.clone());
    Some(env)
}

/// `hcpx --json search --registry transit`, which must succeed within 15 s, listing
/// the local transit pack: the envelope.
fn search_transit(env: &TestEnv) -> Value {
    let started = std::time::Instant::now();
    let (code, envelope) = env.json(&["search", "--registry", "transit"]);
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
    assert_eq!(code, 0, "{envelope}");
    let ids: Vec<&str> = envelope["data"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["transit"], "the local search stands");
    envelope
}

/// A registry that refuses connections, and one that accepts them and never
/// answers: npm's reason in a warning, quickly, and the local results stand.
#[test]
fn search_registry_offline_is_a_warning_within_seconds() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let Some(env) = env_with_registry(&format!("http://127.0.0.1:{port}/")) else {
        return;
    };
    assert_eq!(
        only_warning(&search_transit(&env)),
        format!(
            "the npm registry was not searched: npm could not reach it (ECONNREFUSED: FetchError: \
             request to http://127.0.0.1:{port}/-/v1/search failed, reason: connect ECONNREFUSED \
             127.0.0.1:{port}); check with `npm ping`; only the packs on this machine are listed"
        )
    );

    // Accepted by the kernel, never read: npm's own request timeout ends it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let Some(env) = env_with_registry(&format!("http://127.0.0.1:{port}/")) else {
        return;
    };
    assert_eq!(
        only_warning(&search_transit(&env)),
        format!(
            "the npm registry was not searched: npm could not reach it (FETCH_ERROR: network \
             timeout at: http://127.0.0.1:{port}/-/v1/search); check with `npm ping`; only the \
             packs on this machine are listed"
        )
    );
    drop(silent);
}

/// Without npm on PATH, and with an npm that never ends (hcpx's own time limit
/// stops it): a warning each, and the local results.
#[test]
fn search_registry_without_npm_or_with_a_hung_one_is_a_warning() {
    let mut env = TestEnv::new();
    env.path = env.root.path().join("empty").display().to_string();
    assert_eq!(
        only_warning(&search_transit(&env)),
        "the npm registry was not searched: npm is not on PATH (install Node.js and npm to search \
         it); only the packs on this machine are listed"
    );

    let bin = env.root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("npm"), "#!/bin/sh\nexec sleep 60\n").unwrap();
    let mut permissions = std::fs::metadata(bin.join("npm")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(bin.join("npm"), permissions).unwrap();
    env.path = format!("{}:/usr/bin:/bin", bin.display());
    let started = std::time::Instant::now();
    let envelope = search_transit(&env);
    assert!(
        started.elapsed() >= Duration::from_secs(8),
        "waited for npm its 8 s"
    );
    assert_eq!(
        only_warning(&envelope),
        "the npm registry was not searched: npm had no answer within 8 s (offline, or the \
         registry is slow); only the packs on this machine are listed"
    );
}
