//! The catalog: packs compiled in, off until installed; listed by search, turned on
//! by install, offered again when a newer version ships, and named in the README.

use serde_json::json;

use crate::common::TestEnv;

/// The catalog's pack ids, from the repository's `packs/catalog/`, sorted.
pub(crate) fn catalog_ids() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packs/catalog");
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

/// The catalog pack `id`'s manifest, as the repository has it.
fn catalog_manifest(id: &str) -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("packs/catalog/{id}/hcp.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The attack this guards against is an agent or a person running a pack nobody
/// installed: a catalog pack is listed, and every way of running it or reading it
/// as if it were installed says it is not, with the command that installs it.
#[test]
fn a_catalog_pack_is_off_until_installed() {
    let env = TestEnv::new();
    let refusal = json!({ "code": 2, "reason": "unknown_pack",
        "message": "that pack is in the catalog of this hcpx but not installed; nothing ran" });
    for argv in [
        &["exec", "rg", "search", "--", "pattern=x"][..],
        &["exec", "rg", "no-such-command"][..],
        &["skill", "rg"][..],
    ] {
        let (code, envelope) = env.json(argv);
        assert_eq!(code, 2, "{argv:?}: {envelope}");
        assert_eq!(
            (
                &envelope["error"],
                &envelope["next"],
                &envelope["data"],
                &envelope["spawned"]
            ),
            (
                &refusal,
                &json!("hcpx install rg"),
                &json!({ "id": "rg", "installed": false, "source": "catalog" }),
                &json!(false)
            ),
            "{argv:?}"
        );
    }
    let output = env.run(&["skill", "rg"]);
    assert_eq!(
        output.stderr,
        "error: that pack is in the catalog of this hcpx but not installed; nothing ran\nnext: hcpx install rg\n"
    );
    // availability reports it, flags and all, and says how to install it.
    let (code, envelope) = env.json(&["availability", "rg"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["next"], json!("hcpx install rg"));
    let data = &envelope["data"];
    assert_eq!(
        (&data["installed"], &data["ready"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(
        data["problems"][0],
        json!({ "flag": "installed", "reason": "it is in the catalog of this hcpx, and not installed",
                "fix": "hcpx install rg" })
    );
    let output = env.run(&["availability", "rg"]);
    assert!(
        output.stdout.starts_with("rg: not ready\n  installed  NO \n"),
        "{output}"
    );
    assert!(output.stdout.ends_with("next: hcpx install rg\n"), "{output}");
    // Nothing of it is on disk, and nothing was written to HCP_HOME by looking.
    assert!(!env.home().join("packs").exists());
}

/// `search` lists uninstalled catalog packs with `installed: false`, the program each
/// needs and its variant, and says how to install them; once installed, the same
/// pack is listed as installed and runs.
#[test]
fn search_lists_catalog_packs_and_install_turns_one_on() {
    let env = TestEnv::new();
    let manifest = catalog_manifest("rg");
    let (code, envelope) = env.json(&["search", "ripgrep"]);
    assert_eq!(code, 0, "{envelope}");
    let first = &envelope["data"]["results"][0];
    assert_eq!(
        (
            &first["id"],
            &first["version"],
            &first["source"],
            &first["installed"],
            &first["program"],
            &first["variant"],
            &first["ready"]
        ),
        (
            &json!("rg"),
            &manifest["version"],
            &json!("catalog"),
            &json!(false),
            &json!("rg"),
            &manifest["program"]["variant"],
            &json!(false)
        )
    );
    let output = env.run(&["search", "ripgrep"]);
    let variant = manifest["program"]["variant"].as_str().unwrap();
    assert!(
        output
            .stdout
            .contains(&format!("[not installed: hcpx install rg; needs rg, {variant}")),
        "{output}"
    );
    assert!(output.stdout.ends_with("next: hcpx install rg\n"), "{output}");

    env.install_ok("rg", false);
    let (_, envelope) = env.json(&["search", "ripgrep"]);
    let first = &envelope["data"]["results"][0];
    assert_eq!(
        (&first["id"], &first["source"], &first["installed"]),
        (&json!("rg"), &json!("installed"), &json!(true))
    );
    let (code, envelope) = env.json(&["skill", "rg"]);
    assert_eq!((code, &envelope["data"]["source"]), (0, &json!("installed")));
    if !crate::common::require_kernel_layers()
        || !crate::common::require(std::path::Path::new("/usr/bin/rg").exists(), "rg")
    {
        return;
    }
    env.write("work/notes.txt", "one\nneedle two\n");
    let (code, envelope) = env.json(&["exec", "rg", "search", "--", "pattern=needle"]);
    assert_eq!(code, 0, "{envelope}");
    // The child's argv names the program it found, by its absolute path.
    let child = envelope["child"].as_array().unwrap();
    assert!(
        std::path::Path::new(child[0].as_str().unwrap()).is_absolute()
            && child[0].as_str().unwrap().ends_with("/rg"),
        "{envelope}"
    );
    assert!(
        envelope["stdout"].as_str().unwrap().contains("needle two"),
        "{envelope}"
    );
}

/// `search --all` lists every pack there is, installed or not, each result with its
/// `installed` flag: those that run first, then the catalog's, each in id order.
#[test]
fn search_all_lists_every_pack_installed_or_not() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["search", "--all"]);
    assert_eq!(code, 0, "{envelope}");
    let listed: Vec<(String, bool)> = envelope["data"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| {
            (
                result["id"].as_str().unwrap().to_owned(),
                result["installed"].as_bool().unwrap(),
            )
        })
        .collect();
    let mut expected: Vec<(String, bool)> = ["git", "jq", "sqlite", "transit"]
        .iter()
        .map(|id| ((*id).to_owned(), true))
        .collect();
    expected.extend(catalog_ids().into_iter().map(|id| (id, false)));
    assert_eq!(listed, expected);
    // Without --all, ten at most; with a limit, that many.
    let (_, envelope) = env.json(&["search"]);
    assert_eq!(
        envelope["data"]["results"].as_array().unwrap().len(),
        expected.len().min(10)
    );
    let (_, envelope) = env.json(&["search", "--all", "--limit", "5"]);
    assert_eq!(
        envelope["data"]["results"].as_array().unwrap().len(),
        expected.len().min(5)
    );
}

/// Of two packs that match a query equally, the installed one ranks first: a copy of
/// the catalog's rg installed under another id outranks the catalog's own.
#[test]
fn an_installed_pack_ranks_above_an_uninstalled_one_that_matches_equally() {
    let env = TestEnv::new();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packs/catalog/rg");
    let copy = env.work().join("rgcopy");
    crate::common::copy_dir(&repo, &copy);
    for file in ["hcp.json", "SKILL.md"] {
        let text = std::fs::read_to_string(copy.join(file))
            .unwrap()
            .replacen("\"id\": \"rg\"", "\"id\": \"rgcopy\"", 1)
            .replacen("name: rg\n", "name: rgcopy\n", 1);
        std::fs::write(copy.join(file), text).unwrap();
    }
    env.install_ok("./rgcopy", false);
    let (_, envelope) = env.json(&["search", "ripgrep"]);
    let results = envelope["data"]["results"].as_array().unwrap();
    let top: Vec<(&str, &serde_json::Value, bool)> = results
        .iter()
        .take(2)
        .map(|result| {
            (
                result["id"].as_str().unwrap(),
                &result["score"],
                result["installed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(top[0].1, top[1].1, "they match equally: {envelope}");
    assert_eq!(
        (top[0].0, top[0].2, top[1].0, top[1].2),
        ("rgcopy", true, "rg", false)
    );
}

/// A catalog pack installed at an older version than this hcpx ships is offered the
/// update by `availability` and `search`; `install ID` takes it, over the old one.
#[test]
fn a_newer_catalog_version_is_offered_as_an_update() {
    let env = TestEnv::new();
    env.install_ok("rg", false);
    let shipped = catalog_manifest("rg")["version"].clone();
    let (_, envelope) = env.json(&["availability", "rg"]);
    assert_eq!(envelope["data"]["update"], json!(null));
    // As if installed by an older hcpx.
    let manifest = env.home().join("packs/rg/hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let old = text.replacen(&format!("\"version\": {shipped}"), "\"version\": \"0.0.1\"", 1);
    assert_ne!(old, text);
    std::fs::write(&manifest, old).unwrap();
    let lock = env.home().join("packs.lock.json");
    let mut entries: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    entries["packs"]["rg"]["version"] = json!("0.0.1");
    std::fs::write(&lock, entries.to_string()).unwrap();
    let (_, envelope) = env.json(&["availability", "rg"]);
    assert_eq!(envelope["data"]["update"], shipped, "{envelope}");
    let output = env.run(&["availability", "rg"]);
    assert!(
        output.stdout.contains(&format!(
            "  update     {} is in this hcpx's catalog: hcpx install rg\n",
            shipped.as_str().unwrap()
        )),
        "{output}"
    );
    let (_, envelope) = env.json(&["search", "ripgrep"]);
    assert_eq!(envelope["data"]["results"][0]["update"], shipped);
    let output = env.run(&["search", "ripgrep"]);
    assert!(
        output.stdout.contains(&format!(
            "update to {}: hcpx install rg]",
            shipped.as_str().unwrap()
        )),
        "{output}"
    );
    // The update, over the old version.
    let installed = env.install_ok("rg", false);
    assert_eq!(
        (&installed["data"]["changed"], &installed["data"]["replaced"]),
        (&json!(true), &json!("0.0.1"))
    );
    let (_, envelope) = env.json(&["availability", "rg"]);
    assert_eq!(envelope["data"]["update"], json!(null));
}

/// The README's table of the catalog names every catalog pack, and no other.
#[test]
fn the_readme_lists_every_catalog_pack() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme.split("## The catalog\n").nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    let mut listed: Vec<String> = section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    listed.sort();
    assert_eq!(listed, catalog_ids());
}
