//! The packs index (`$HCP_HOME/packs.index`) across processes: what one `hcpx`
//! installs, uninstalls or edits is what the next one searches, describes and runs;
//! a damaged index is rebuilt. Times are set back with touch(1) so that the index
//! is written (a key changed in the last seconds is not: see src/index.rs).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::TestEnv;

/// A pack `hail-<word>` whose CLI prints `say` and its argument.
fn hail_pack(env: &TestEnv, word: &str, said: &str) -> PathBuf {
    let id = format!("hail-{word}");
    let dir = env.work().join(&id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hcp.json"),
        format!(
            r#"{{"hcp":1,"id":"{id}","version":"1.0.0","description":"Says {word} about hailstones","bin":["./hail"],
            "commands":{{"say":{{"summary":"Say it","effect":"read","argv":["{said}"]}}}}}}"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {id}\ndescription: Hailstone sayings ({word})\n---\nUse `say`.\n"),
    )
    .unwrap();
    std::fs::write(dir.join("hail"), "#!/bin/sh\necho \"said $1\"\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("hail"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn install(env: &TestEnv, dir: &Path) {
    let (code, envelope) = env.json(&["install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code, 0, "{envelope}");
}

/// Sets the modification time of `packs/` and the lock file an hour back, as if
/// the last install were long ago: the next search writes the index.
fn settle(env: &TestEnv) {
    for path in [env.home().join("packs"), env.home().join("packs.lock.json")] {
        let status = Command::new("touch")
            .args(["-m", "-d", "1 hour ago"])
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

fn found(env: &TestEnv, query: &str) -> Vec<String> {
    let (code, envelope) = env.json(&["search", query, "--limit", "100"]);
    assert_eq!(code, 0, "{envelope}");
    envelope["data"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The index file's identity: a new one is a rewrite.
fn index_file(env: &TestEnv) -> Option<(u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(env.home().join("packs.index")).ok()?;
    Some((meta.ino(), meta.modified().unwrap()))
}

#[test]
fn what_another_process_installs_or_uninstalls_is_seen_at_once() {
    let env = TestEnv::new();
    install(&env, &hail_pack(&env, "alpha", "one"));
    settle(&env);
    assert_eq!(found(&env, "hailstones"), ["hail-alpha"]);
    let written = index_file(&env).expect("the search wrote the index");
    assert_eq!(found(&env, "hailstones"), ["hail-alpha"]);
    assert_eq!(index_file(&env), Some(written), "the second search read it");

    install(&env, &hail_pack(&env, "bravo", "two"));
    assert_eq!(found(&env, "hailstones"), ["hail-alpha", "hail-bravo"]);
    let (code, envelope) = env.json(&["skill", "hail-bravo"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(envelope["data"]["skill"].as_str().unwrap().contains("(bravo)"));
    let output = env.run(&["exec", "hail-bravo", "say"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "said two\n"),
        "{output}"
    );

    settle(&env);
    found(&env, "hailstones");
    let (code, _) = env.json(&["uninstall", "hail-alpha", "--yes"]);
    assert_eq!(code, 0);
    assert_eq!(found(&env, "hailstones"), ["hail-bravo"]);
    let (code, envelope) = env.json(&["skill", "hail-alpha"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("unknown_pack"));
    assert_eq!(
        envelope["data"]["suggestions"][0],
        json!("hail-bravo"),
        "the closest ids come from the index: {envelope}"
    );
}

#[test]
fn a_pack_edited_after_indexing_runs_and_shows_as_it_is_on_disk() {
    let env = TestEnv::new();
    install(&env, &hail_pack(&env, "alpha", "AAAA"));
    settle(&env);
    assert_eq!(found(&env, "hailstones"), ["hail-alpha"]);
    assert!(index_file(&env).is_some());
    // In place, same size, the old modification time put back: nothing the key or
    // a time check sees.
    let manifest = env.home().join("packs/hail-alpha/hcp.json");
    let before = std::fs::metadata(&manifest).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("AAAA", "BBBB")
            .replace("about hailstones", "about sleetfalls"),
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&manifest)
        .unwrap()
        .set_modified(before)
        .unwrap();
    let output = env.run(&["exec", "hail-alpha", "say"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "said BBBB\n"),
        "{output}"
    );
    let (_, envelope) = env.json(&["skill", "hail-alpha"]);
    assert!(
        envelope["data"]["reference"]
            .as_str()
            .unwrap()
            .contains("hail-alpha 1.0.0")
    );
    // Its old words still find it in the index, but a result is checked against
    // its files first: the index is rebuilt, and answers from what they say now.
    assert!(found(&env, "hailstones").is_empty());
    assert_eq!(found(&env, "sleetfalls"), ["hail-alpha"]);
}

#[test]
fn a_damaged_index_is_rebuilt_not_trusted() {
    let env = TestEnv::new();
    install(&env, &hail_pack(&env, "alpha", "one"));
    install(&env, &hail_pack(&env, "bravo", "two"));
    settle(&env);
    assert_eq!(found(&env, "hailstones"), ["hail-alpha", "hail-bravo"]);
    let path = env.home().join("packs.index");
    let whole = std::fs::read(&path).unwrap();
    for damaged in [whole[..whole.len() - 7].to_vec(), b"garbage".to_vec(), Vec::new()] {
        std::fs::write(&path, &damaged).unwrap();
        assert_eq!(found(&env, "hailstones"), ["hail-alpha", "hail-bravo"]);
        assert_eq!(std::fs::read(&path).unwrap(), whole, "rebuilt whole");
    }
    let (code, envelope) = env.json(&["search", "hailstones"]);
    assert_eq!(code, 0);
    assert_eq!(envelope["data"]["broken"], json!([]));
}

#[test]
fn concurrent_installs_by_many_processes_all_show() {
    let env = TestEnv::new();
    let dirs: Vec<PathBuf> = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
        .iter()
        .map(|word| hail_pack(&env, word, word))
        .collect();
    let installs: Vec<_> = dirs
        .iter()
        .map(|dir| {
            env.command(&["--json", "install", dir.to_str().unwrap(), "--yes"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let searches: Vec<_> = (0..4)
        .map(|_| {
            env.command(&["--json", "search", "hailstones"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in installs.into_iter().chain(searches) {
        assert!(child.wait().unwrap().success());
    }
    let expected: Vec<String> = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
        .iter()
        .map(|word| format!("hail-{word}"))
        .collect();
    assert_eq!(found(&env, "hailstones"), expected);
    settle(&env);
    assert_eq!(found(&env, "hailstones"), expected);
    assert_eq!(found(&env, "hailstones"), expected, "from the index");
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(env.home().join("packs.lock.json")).unwrap()).unwrap();
    assert_eq!(lock["packs"].as_object().unwrap().len(), expected.len());
}
