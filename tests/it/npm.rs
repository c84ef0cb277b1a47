//! install from npm: a fixture pack published with the real npm client to a registry
//! on loopback (tests/interop/registry.py), installed by name and by version.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::common::{TestEnv, copy_dir, fixture};

struct Registry(Child);

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn publish(env: &TestEnv, npmrc: &Path, name: &str, version: &str, marker: &Path) {
    let dir = env.root.path().join(format!("pkg-{version}"));
    copy_dir(&fixture("probe"), &dir);
    let manifest = std::fs::read_to_string(dir.join("hcp.json"))
        .unwrap()
        .replace("0.1.0", version);
    std::fs::write(dir.join("hcp.json"), manifest).unwrap();
    let package = json!({
        "name": name, "version": version, "description": "hcpx fixture",
        "scripts": { "postinstall": format!("node -e \"require('fs').writeFileSync('{}', 'ran')\"", marker.display()) },
        "files": ["hcp.json", "SKILL.md", "probe", "extra.txt"]
    });
    std::fs::write(dir.join("package.json"), package.to_string()).unwrap();
    std::fs::write(dir.join("extra.txt"), "not part of the pack").unwrap();
    let status = Command::new("npm")
        .args(["publish", "--ignore-scripts"])
        .current_dir(&dir)
        .env("npm_config_userconfig", npmrc)
        .env("npm_config_cache", env.root.path().join("npm-cache"))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "npm publish {version}");
}

#[test]
fn install_by_name_and_version_from_a_registry_without_running_scripts() {
    if !crate::common::require(available("npm") && available("python3"), "npm and python3") {
        return;
    }
    let env = TestEnv::new();
    let storage = env.root.path().join("registry");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/registry.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(&storage)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let _registry = Registry(child);
    let url = format!("http://127.0.0.1:{}/", port.trim());
    let npmrc = env.write(
        "npmrc",
        &format!(
            "registry={url}\n//127.0.0.1:{}/:_authToken=test-token\n",
            port.trim()
        ),
    );
    let marker = env.root.path().join("postinstall-ran");
    let name = "hcp-probe-fixture";
    publish(&env, &npmrc, name, "1.0.0", &marker);
    publish(&env, &npmrc, name, "2.0.0", &marker);

    let cache = env.root.path().join("npm-cache").display().to_string();
    let mut env = env
        .env("npm_config_userconfig", npmrc.to_str().unwrap())
        .env("npm_config_cache", &cache);
    // npm and node live where this machine keeps them.
    env.path = std::env::var("PATH").unwrap_or_else(|_| env.path.clone());
    let (code, envelope) = env.json(&["install", &format!("npm:{name}@1.0.0"), "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["version"], json!("1.0.0"));
    assert_eq!(envelope["data"]["source"], json!(format!("npm:{name}@1.0.0")));
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(env.home().join("packs.lock.json")).unwrap()).unwrap();
    let entry = &lock["packs"]["probe"];
    assert_eq!(entry["version"], json!("1.0.0"));
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
    let (code, envelope) = env.json(&["install", &format!("npm:{name}"), "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["replaced"], json!("1.0.0"));
    assert_eq!(envelope["data"]["version"], json!("2.0.0"));
    let (_, envelope) = env.json(&["install", &format!("npm:{name}@2.0.0"), "--yes"]);
    assert_eq!(envelope["data"]["changed"], json!(false));
    // A name the registry does not have.
    let (code, envelope) = env.json(&["install", "npm:hcp-no-such-package@1.0.0", "--yes"]);
    assert_eq!(code, 2);
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
    assert!(!marker.exists());
}
