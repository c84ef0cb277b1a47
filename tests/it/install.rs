//! install and uninstall from folders and built-in ids: the lock file, refusals that
//! leave the previous version intact, concurrent installs.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common::{TestEnv, copy_dir, fixture};

/// A copy of the probe fixture in the working directory, at a given version.
fn source(env: &TestEnv, name: &str, version: &str) -> PathBuf {
    let dir = env.work().join(name);
    copy_dir(&fixture("probe"), &dir);
    let manifest = std::fs::read_to_string(dir.join("hcp.json"))
        .unwrap()
        .replace("0.1.0", version);
    std::fs::write(dir.join("hcp.json"), manifest).unwrap();
    dir
}

fn lock(env: &TestEnv) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.home().join("packs.lock.json")).unwrap()).unwrap()
}

fn installed_version(env: &TestEnv) -> String {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(env.home().join("packs/probe/hcp.json")).unwrap())
            .unwrap();
    manifest["version"].as_str().unwrap().to_owned()
}

#[test]
fn folder_install_records_the_lock_and_same_version_changes_nothing() {
    let env = TestEnv::new();
    source(&env, "src1", "1.0.0");
    std::fs::write(env.work().join("src1/README.md"), "not part of a pack").unwrap();
    let (code, envelope) = env.json(&["install", "src1", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["changed"], json!(true));
    let mut names: Vec<String> = std::fs::read_dir(env.home().join("packs/probe"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["SKILL.md", "hcp.json", "probe"],
        "only the three pack files"
    );
    let entry = &lock(&env)["packs"]["probe"];
    assert_eq!(entry["version"], json!("1.0.0"));
    assert!(entry["integrity"].as_str().unwrap().starts_with("sha512-"));
    assert!(entry["installedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        entry["source"],
        json!(
            env.work()
                .join("src1")
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        )
    );
    // The installed pack runs.
    let (code, _) = env.json(&["exec", "probe", "args", "--", "count=1"]);
    assert_eq!(code, 0);
    let before = std::fs::read_to_string(env.home().join("packs.lock.json")).unwrap();
    let output = env.run(&["install", "src1", "--yes"]);
    assert_eq!(
        output.stdout,
        "probe 1.0.0 is already installed; nothing changed\nnext: hcpx skill probe\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.home().join("packs.lock.json")).unwrap(),
        before
    );
    // Another version replaces it.
    source(&env, "src2", "2.0.0");
    let (_, envelope) = env.json(&["install", "src2", "--yes"]);
    assert_eq!(envelope["data"]["replaced"], json!("1.0.0"));
    assert_eq!(installed_version(&env), "2.0.0");
}

#[test]
fn each_refusal_leaves_the_previous_version() {
    let env = TestEnv::new();
    source(&env, "good", "1.0.0");
    assert_eq!(env.json(&["install", "good", "--yes"]).0, 0);
    let refused = |dir: &Path, expect: &str| {
        let (code, envelope) = env.json(&["install", dir.to_str().unwrap(), "--yes"]);
        assert_eq!(code, 2, "{envelope}");
        let message = envelope["error"]["message"].as_str().unwrap();
        assert!(message.contains(expect), "{message}");
        assert_eq!(installed_version(&env), "1.0.0");
        assert_eq!(lock(&env)["packs"]["probe"]["version"], json!("1.0.0"));
    };
    // A link.
    let linked = source(&env, "linked", "2.0.0");
    std::fs::remove_file(linked.join("probe")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/bin/sh", linked.join("probe")).unwrap();
    refused(&linked, "is a link");
    // A device file in place of the CLI (needs mknod rights: root here).
    let device = source(&env, "device", "2.0.0");
    std::fs::remove_file(device.join("probe")).unwrap();
    let made = std::process::Command::new("mknod")
        .arg(device.join("probe"))
        .args(["c", "1", "3"])
        .status();
    if made.is_ok_and(|status| status.success()) {
        refused(&device, "not a regular file");
    } else {
        eprintln!(
            "note: mknod is not allowed here; the device-file case is covered by the tarball unit test"
        );
    }
    // A file over 16 MiB (sparse: no disk used).
    let big = source(&env, "big", "2.0.0");
    std::fs::OpenOptions::new()
        .write(true)
        .open(big.join("SKILL.md"))
        .unwrap()
        .set_len(17 * 1024 * 1024)
        .unwrap();
    refused(&big, "larger than 16 MiB");
    // An invalid manifest.
    let invalid = source(&env, "invalid", "2.0.0");
    let manifest = std::fs::read_to_string(invalid.join("hcp.json"))
        .unwrap()
        .replace("\"effect\": \"read\"", "\"effect\": \"run\"");
    std::fs::write(invalid.join("hcp.json"), manifest).unwrap();
    refused(&invalid, "the pack is invalid");
    // No staging folder is left behind by any of them.
    let leftovers: Vec<String> = std::fs::read_dir(env.home().join("packs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["probe"]);
}

#[test]
fn two_concurrent_installs_leave_a_consistent_lock() {
    let env = TestEnv::new();
    source(&env, "a", "1.0.0");
    source(&env, "b", "2.0.0");
    let locked = env.work().join("locked");
    copy_dir(&fixture("locked"), &locked);
    let children: Vec<_> = ["a", "b", "locked", "a", "b", "locked"]
        .iter()
        .map(|dir| {
            env.command(&["install", dir, "--yes"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let lock = lock(&env);
    let ids: Vec<&String> = lock["packs"].as_object().unwrap().keys().collect();
    assert_eq!(ids, ["locked", "probe"]);
    let version = lock["packs"]["probe"]["version"].as_str().unwrap();
    assert_eq!(
        version,
        installed_version(&env),
        "the lock says what is installed"
    );
}

#[test]
fn builtin_install_and_uninstall() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["install", "transit", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(lock(&env)["packs"]["transit"]["source"], json!("builtin:transit"));
    let (_, search) = env.json(&["search", "transit"]);
    assert_eq!(search["data"]["results"][0]["source"], json!("installed"));
    let output = env.run(&["uninstall", "transit", "--yes"]);
    assert_eq!(
        output.stdout,
        "uninstalled transit; the built-in transit is in use again\n"
    );
    assert!(lock(&env)["packs"].as_object().unwrap().is_empty());
    let (code, envelope) = env.json(&["uninstall", "transit", "--yes"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["error"]["message"],
        json!("that pack is built in, not installed; built-in packs stay")
    );
}

#[test]
fn installs_go_through_the_policy() {
    let env = TestEnv::new().env("HCP_AGENT", "1");
    let (code, envelope) = env.json(&["install", "transit"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("needs_confirmation"));
    assert_eq!(envelope["next"], json!("hcpx install transit --yes"));
    assert!(!env.home().join("packs/transit").exists());
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"hcp.install","decision":"deny"}]}"#,
    );
    let (_, envelope) = env.json(&["install", "transit", "--yes"]);
    assert_eq!(envelope["error"]["reason"], json!("denied_by_policy"));
    assert_eq!(
        crate::common::audit_decisions(&env),
        ["needs_confirmation", "denied"]
    );
}

/// A copy of the probe fixture whose pack id is `git`, a built-in's.
fn posing_as_git(env: &TestEnv, name: &str) -> PathBuf {
    let dir = source(env, name, "9.9.9");
    for file in ["hcp.json", "SKILL.md"] {
        let text = std::fs::read_to_string(dir.join(file))
            .unwrap()
            .replacen("\"id\": \"probe\"", "\"id\": \"git\"", 1)
            .replacen("name: probe", "name: git", 1);
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

/// The attack: an agent installs a folder (or an npm package) whose pack id is a
/// built-in's, `git`, and the person's next `hcpx exec git ...` runs the agent's
/// pack. Replacing a built-in with a pack from another source is a person's act:
/// an agent is refused (`access_refused`) and nothing is written, confirmed or not;
/// the built-in id itself stays an ordinary install, and a person may replace it.
#[test]
fn an_agent_cannot_replace_a_builtin_and_a_person_can() {
    let env = TestEnv::new();
    posing_as_git(&env, "mygit");
    let output = env
        .command(&["--json", "install", "mygit", "--yes"])
        .env("HCP_AGENT", "1")
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(2), "{envelope}");
    assert_eq!(
        envelope["error"],
        json!({
            "code": 2, "reason": "access_refused",
            "message": "an agent cannot replace a built-in pack with a pack from another source; nothing was installed",
        })
    );
    assert_eq!(
        envelope["next"],
        json!("a person runs, at a terminal and without HCP_AGENT=1: hcpx install mygit")
    );
    assert_eq!(envelope["data"], json!({ "id": "git", "builtin": true }));
    assert!(!env.home().join("packs/git").exists());
    assert!(!env.home().join("packs.lock.json").exists());
    let (_, skill) = env.json(&["skill", "git"]);
    assert_eq!(skill["data"]["source"], json!("builtin"), "{skill}");
    assert_eq!(
        crate::common::audit_decisions(&env),
        ["refused"],
        "the refusal is audited"
    );

    // Over MCP, confirmed: refused the same way.
    let mut server = crate::mcp::Process::initialized(&env);
    server.send(
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "argv": ["install", "mygit"], "confirm": true } } }),
    );
    let response = server.until(2).pop().unwrap();
    let result = &response["result"]["structuredContent"];
    assert_eq!(result["error"]["reason"], json!("access_refused"), "{response}");
    assert_eq!(server.close().0, 0);
    assert!(!env.home().join("packs/git").exists());

    // The built-in itself: an ordinary install, for an agent too.
    let installed = env.install_ok("git", true);
    assert_eq!(installed["data"]["source"], json!("builtin:git"));
    // A person may replace it.
    let installed = env.install_ok("mygit", false);
    let folder = env.work().join("mygit").canonicalize().unwrap();
    assert_eq!(installed["data"]["source"], json!(folder.display().to_string()));
    // And an agent may not install over the person's replacement either, even from
    // the same folder: what it installs is still not the built-in.
    let skill = env.work().join("mygit/SKILL.md");
    let changed = std::fs::read_to_string(&skill).unwrap() + "\nChanged by the agent.\n";
    std::fs::write(&skill, changed).unwrap();
    let output = env
        .command(&["--json", "install", "mygit", "--yes"])
        .env("HCP_AGENT", "1")
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["error"]["reason"], json!("access_refused"), "{envelope}");
}

#[test]
fn unknown_sources_say_what_is_accepted() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["install", "no-such-thing", "--yes"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["error"]["message"],
        json!(
            "SOURCE is npm:NAME[@VERSION], a folder that exists here, or the id of a built-in or catalog pack"
        )
    );
    assert_eq!(
        envelope["next"],
        json!("hcpx search --all   (every pack there is, installed or not)")
    );
}

/// The files of a folder, by name.
fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// `install rg` materialises the catalog's pack from the binary (no network): the
/// files as the repository has them, the lock's source `catalog:rg` and integrity;
/// the same version again changes nothing; `uninstall rg` takes it away, and the
/// catalog's pack is there to install again.
#[test]
fn a_catalog_pack_installs_by_id_and_uninstalls() {
    let env = TestEnv::new();
    let version = {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("packs/catalog/rg/hcp.json"))
                .unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["version"].clone()
    };
    // No npm, no network: a PATH with nothing on it.
    let mut env = env;
    env.path = "/nonexistent".to_owned();
    let installed = env.install_ok("rg", false);
    let integrity = installed["data"]["integrity"].clone();
    assert!(integrity.as_str().unwrap().starts_with("sha512-"), "{installed}");
    assert_eq!(
        installed["data"],
        json!({
            "id": "rg", "version": version, "source": "catalog:rg", "changed": true, "replaced": null,
            "integrity": integrity, "bindings": { "kept": [], "heldBack": [] }
        })
    );
    assert_eq!(
        files_in(&env.home().join("packs/rg")),
        files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("packs/catalog/rg"))
    );
    let entry = lock(&env)["packs"]["rg"].clone();
    assert_eq!(
        (&entry["source"], &entry["version"], &entry["integrity"]),
        (&json!("catalog:rg"), &version, &integrity)
    );
    // Again: nothing changes, the lock entry included.
    let again = env.install_ok("rg", false);
    assert_eq!(again["data"]["changed"], json!(false));
    assert_eq!(lock(&env)["packs"]["rg"], entry);
    let output = env.run(&["install", "rg", "--yes"]);
    assert_eq!(
        output.stdout,
        format!(
            "rg {} is already installed; nothing changed\nnext: hcpx skill rg\n",
            version.as_str().unwrap()
        )
    );
    let output = env.run(&["uninstall", "rg", "--yes"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            0,
            "uninstalled rg; it stays in the catalog: hcpx install rg installs it again\n"
        )
    );
    assert!(!env.home().join("packs/rg").exists());
    assert!(lock(&env)["packs"].as_object().unwrap().is_empty());
    let (code, envelope) = env.json(&["uninstall", "rg", "--yes"]);
    assert_eq!(code, 2);
    assert_eq!(
        (&envelope["error"]["message"], &envelope["next"]),
        (
            &json!("that pack is in the catalog and not installed; nothing to remove"),
            &json!("hcpx search --all")
        )
    );
    let (_, envelope) = env.json(&["exec", "rg", "files"]);
    assert_eq!(
        envelope["next"],
        json!("hcpx install rg"),
        "off again: {envelope}"
    );
}

/// An agent's install of a catalog pack is an ordinary install, held by the same
/// policy and confirmation as any other: without `confirm` it needs confirmation and
/// nothing is written; with `--yes` it installs; a `deny` for `hcp.install` denies it.
#[test]
fn an_agents_install_of_a_catalog_pack_is_held_by_the_policy() {
    let env = TestEnv::new().env("HCP_AGENT", "1");
    let (code, envelope) = env.json(&["install", "rg"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        (&envelope["error"]["reason"], &envelope["next"]),
        (&json!("needs_confirmation"), &json!("hcpx install rg --yes"))
    );
    assert_eq!(
        (
            &envelope["data"]["command"],
            &envelope["data"]["target"],
            &envelope["data"]["decision"]
        ),
        (&json!("install"), &json!("rg"), &json!("confirm"))
    );
    assert!(!env.home().join("packs/rg").exists());
    let installed = env.install_ok("rg", true);
    assert_eq!(installed["data"]["source"], json!("catalog:rg"));
    env.run(&["uninstall", "rg", "--yes"]);
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"hcp.install","decision":"deny"}]}"#,
    );
    let (_, envelope) = env.json(&["install", "rg", "--yes"]);
    assert_eq!(envelope["error"]["reason"], json!("denied_by_policy"));
    assert!(!env.home().join("packs/rg").exists());
    assert_eq!(
        crate::common::audit_decisions(&env),
        ["needs_confirmation", "installed", "uninstalled", "denied"]
    );
}

/// The attack: an agent installs a folder whose pack id is a catalog pack's, `rg`,
/// and the person's next `hcpx exec rg ...` (or their `hcpx install rg` afterwards,
/// which now finds it installed) runs the agent's pack. As for a built-in, that
/// replacement is a person's act: the agent is refused and nothing is written.
#[test]
fn an_agent_cannot_replace_a_catalog_pack_and_a_person_can() {
    let env = TestEnv::new();
    let dir = source(&env, "myrg", "9.9.9");
    for file in ["hcp.json", "SKILL.md"] {
        let text = std::fs::read_to_string(dir.join(file))
            .unwrap()
            .replacen("\"id\": \"probe\"", "\"id\": \"rg\"", 1)
            .replacen("name: probe", "name: rg", 1);
        std::fs::write(dir.join(file), text).unwrap();
    }
    let output = env
        .command(&["--json", "install", "myrg", "--yes"])
        .env("HCP_AGENT", "1")
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(2), "{envelope}");
    assert_eq!(
        (&envelope["error"], &envelope["data"]),
        (
            &json!({
                "code": 2, "reason": "access_refused",
                "message": "an agent cannot replace a catalog pack with a pack from another source; nothing was installed",
            }),
            &json!({ "id": "rg", "catalog": true })
        )
    );
    assert!(!env.home().join("packs/rg").exists());
    // A person may.
    let installed = env.install_ok("myrg", false);
    assert_eq!(installed["data"]["version"], json!("9.9.9"));
    // And the catalog's own, installed by an agent over it, is an ordinary install.
    let installed = env.install_ok("rg", true);
    assert_eq!(installed["data"]["source"], json!("catalog:rg"));
}

/// An id that is not a pack id is refused the same way whatever folders exist, before
/// any path is built from it: `..`-style ids never reach the packs folder.
#[test]
fn uninstall_refuses_ids_that_are_not_pack_ids() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home().join("packs")).unwrap();
    std::fs::create_dir_all(env.home().join("victim")).unwrap();
    for id in ["../victim", "..", "a/b", "../../work", "Probe", ".hidden"] {
        let (code, envelope) = env.json(&["uninstall", id, "--yes"]);
        assert_eq!(code, 2, "{id}: {envelope}");
        assert_eq!(
            envelope["error"],
            json!({
                "code": 2, "reason": "invalid_arguments",
                "message": format!("{id:?} is not a pack id: pack ids are 1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"),
            }),
            "{id}"
        );
    }
    assert!(env.home().join("victim").is_dir());
}

/// A gzipped npm tarball holding the probe pack, plus `extra` zero-filled files of
/// 16 MiB each: a few hundred KB that unpack to hundreds of MiB.
fn bomb_tarball(path: &Path, extra: usize) {
    let file = std::fs::File::create(path).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(file, flate2::Compression::best()));
    let mut add = |name: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, bytes).unwrap();
    };
    for name in ["hcp.json", "SKILL.md", "probe"] {
        add(
            &format!("package/{name}"),
            &std::fs::read(fixture("probe").join(name)).unwrap(),
        );
    }
    let zeros = vec![0_u8; 16 * 1024 * 1024];
    for i in 0..extra {
        add(&format!("package/zeros-{i}.bin"), &zeros);
    }
    builder.into_inner().unwrap().finish().unwrap();
}

/// A stand-in for `npm pack SPEC ... --pack-destination DIR` that hands over a
/// prepared tarball, first on PATH: what is measured is hcpx, not npm.
fn fake_npm(env: &TestEnv, tarball: &Path) -> String {
    let bin = env.root.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --pack-destination ] && dest=$2; shift; done\n\
         cp '{}' \"$dest/bomb-1.0.0.tgz\"\n\
         printf '[{{\"name\":\"bomb\",\"version\":\"1.0.0\",\"filename\":\"bomb-1.0.0.tgz\"}}]'\n",
        tarball.display()
    );
    let npm = bin.join("npm");
    std::fs::write(&npm, script).unwrap();
    std::fs::set_permissions(&npm, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    format!("{}:{}", bin.display(), env.path)
}

/// 24 zero-filled 16 MiB files in a tarball of well under 1 MiB: the install is
/// refused by the unpacked-size bound, the refusal names the bound, and hcpx's
/// peak memory (read by a parent that only waits for it) stays under 64 MiB.
#[test]
fn amplification_tarball_is_refused_within_bounded_memory() {
    let mut env = TestEnv::new();
    let tarball = env.root.path().join("bomb.tgz");
    bomb_tarball(&tarball, 24);
    assert!(std::fs::metadata(&tarball).unwrap().len() < 1024 * 1024);
    env.path = fake_npm(&env, &tarball);
    let hcpx = env.command(&["--json", "install", "npm:bomb", "--yes"]);
    let Some((stdout, peak_kib)) = crate::common::run_measuring_peak(&hcpx) else {
        return;
    };
    let envelope: Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(
        envelope["error"],
        json!({
            "code": 2, "reason": "too_large",
            "message": "the package unpacks to more than 64 MiB, the most an install reads; nothing was installed",
        }),
        "{envelope}"
    );
    assert_eq!(
        envelope["data"],
        json!({ "bound": "unpackedBytes", "limit": 64 * 1024 * 1024 })
    );
    assert!(peak_kib < 64 * 1024, "peak memory {peak_kib} KiB");
    assert!(!env.home().join("packs/probe").exists());
}

/// What the packs folder and the lock file say about the probe pack, after a
/// command that reads the catalog (and so recovers an interrupted change) ran.
fn agreed_state(env: &TestEnv) -> Option<String> {
    let (code, envelope) = env.json(&["search", "probe"]);
    assert_eq!(code, 0, "{envelope}");
    let packs = env.home().join("packs");
    let leftovers: Vec<String> = std::fs::read_dir(&packs)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        leftovers,
        Vec::<String>::new(),
        "temporaries or a journal left behind"
    );
    let locked = std::fs::read_to_string(env.home().join("packs.lock.json"))
        .ok()
        .map(|text| serde_json::from_str::<Value>(&text).unwrap()["packs"]["probe"].clone())
        .filter(|entry| !entry.is_null());
    let on_disk = hcpx::install::read_folder(&packs.join("probe")).ok();
    match (locked, on_disk) {
        (None, None) => None,
        (Some(entry), Some(files)) => {
            assert_eq!(
                entry["integrity"],
                json!(hcpx::install::integrity(&files)),
                "lock and files differ"
            );
            let manifest: Value = serde_json::from_slice(&files["hcp.json"]).unwrap();
            assert_eq!(entry["version"], manifest["version"]);
            Some(manifest["version"].as_str().unwrap().to_owned())
        }
        (locked, on_disk) => panic!("lock {locked:?} but files {:?}", on_disk.map(|f| f.len())),
    }
}

/// Installs and uninstalls killed (SIGKILL) at spread-out moments: after each, the
/// next hcpx finishes or rolls back what was interrupted, the lock and the folder
/// agree, nothing is left in packs/, and installing a version reports a change
/// exactly when the files on disk were not that version.
#[test]
fn installs_killed_at_any_moment_leave_the_lock_and_folder_in_agreement() {
    let env = TestEnv::new();
    source(&env, "ver1", "1.0.0");
    source(&env, "ver2", "2.0.0");
    // A deterministic spread of kill moments over a whole install, calibrated on
    // this machine as it is now: the median of five uninterrupted installs of a
    // changed version (the slowest would be an outlier when other tests run).
    let mut durations = Vec::new();
    for version in ["ver2", "ver1", "ver2", "ver1", "ver2"] {
        let started = std::time::Instant::now();
        let (code, envelope) = env.json(&["install", version, "--yes"]);
        assert_eq!(
            (code, &envelope["data"]["changed"]),
            (0, &json!(true)),
            "{envelope}"
        );
        durations.push(started.elapsed().as_micros() as u64);
    }
    durations.sort_unstable();
    let whole = durations[2];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut moments = Vec::new();
    for _ in 0..48 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        moments.push(seed % whole);
    }
    let (code, envelope) = env.json(&["install", "ver1", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    let mut interrupted = 0;
    for (round, micros) in moments.into_iter().enumerate() {
        // Each round starts from 1.0.0 installed: every call changes something.
        let args: &[&str] = match round % 3 {
            2 => &["uninstall", "probe", "--yes"],
            _ => &["install", "ver2", "--yes"],
        };
        let mut child = env
            .command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(micros));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.code().is_none() {
            interrupted += 1;
        }
        let before = agreed_state(&env);
        let (code, envelope) = env.json(&["install", "ver1", "--yes"]);
        assert_eq!(code, 0, "{envelope}");
        assert_eq!(
            envelope["data"]["changed"],
            json!(before.as_deref() != Some("1.0.0")),
            "round {round}: state before was {before:?}"
        );
        assert_eq!(agreed_state(&env).as_deref(), Some("1.0.0"));
    }
    assert!(
        interrupted >= 12,
        "only {interrupted} of 48 calls were killed before they ended (durations {durations:?} µs)"
    );
}
