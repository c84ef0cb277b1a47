//! The `tar` catalog pack against the real GNU tar: a round trip, and archives
//! that aim outside the folder they are extracted into.

use std::process::Command;

use serde_json::{Value, json};

use super::{env, have, held_for_a_person_then_lowered, install};
use crate::common::TestEnv;

fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "tar", command, "--yes", "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

/// The system's tar, run by the test itself in the working directory (to make
/// archives that the pack would never make).
fn tar(env: &TestEnv, args: &[&str]) {
    let output = Command::new("tar")
        .args(args)
        .current_dir(env.work())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tar {args:?}: {stderr}");
}

/// The write grants of a `--dry-run` plan, as absolute paths (the plan may show
/// them relative to the working directory).
fn write_grants(env: &TestEnv, envelope: &Value) -> Vec<std::path::PathBuf> {
    envelope["data"]["sandbox"]["write"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let joined = env.work().join(entry.as_str().unwrap());
            joined
                .components()
                .filter(|part| *part != std::path::Component::CurDir)
                .collect()
        })
        .collect()
}

fn project() -> TestEnv {
    let env = env();
    env.write("work/src/main.c", "int main(void) { return 0; }\n");
    env.write("work/src/main.o", "object\n");
    env.write("work/README.md", "# demo\n");
    install(&env, "tar");
    env
}

#[test]
fn tar_creates_lists_and_extracts_a_compressed_archive() {
    if !have("tar") || !have("gzip") {
        return;
    }
    let env = project();
    let create = [
        "archive=demo.tar.gz",
        "paths=src",
        "paths=README.md",
        "exclude=*.o",
    ];
    // It replaces a file of the archive's name.
    held_for_a_person_then_lowered(&env, "tar", "create", &create);
    assert!(!env.work().join("demo.tar.gz").exists());
    let (code, envelope) = exec(&env, "create", &create);
    assert_eq!((code, &envelope["stderr"]), (0, &json!("")), "{envelope}");
    // gzip's magic number: the suffix picked the compression.
    assert_eq!(
        std::fs::read(env.work().join("demo.tar.gz")).unwrap()[..2],
        [0x1f, 0x8b]
    );
    let (code, envelope) = exec(&env, "list", &["archive=demo.tar.gz"]);
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("src/\nsrc/main.c\nREADME.md\n")),
        "{envelope}"
    );
    let (code, envelope) = exec(
        &env,
        "list",
        &["archive=demo.tar.gz", "wildcards=true", "members=*.md"],
    );
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("README.md\n")),
        "{envelope}"
    );
    // Into a folder that does not exist yet; then without the top folder.
    let (code, envelope) = exec(&env, "extract", &["archive=demo.tar.gz", "into=out/demo"]);
    assert_eq!((code, &envelope["stderr"]), (0, &json!("")), "{envelope}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("out/demo/src/main.c")).unwrap(),
        "int main(void) { return 0; }\n"
    );
    assert!(!env.work().join("out/demo/src/main.o").exists());
    let (code, envelope) = exec(
        &env,
        "extract",
        &[
            "archive=demo.tar.gz",
            "into=flat",
            "strip-components=1",
            "members=src",
        ],
    );
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        std::fs::read_dir(env.work().join("flat"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>(),
        ["main.c"]
    );
}

/// `extract` writes only into its folder: the plan grants that folder alone, and
/// `list`, a read, is granted nothing.
#[test]
fn tar_extract_is_granted_its_folder_only() {
    if !have("tar") {
        return;
    }
    let env = project();
    let (code, envelope) = env.json(&[
        "exec",
        "tar",
        "extract",
        "--dry-run",
        "--",
        "archive=a.tar",
        "into=out",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        (&envelope["data"]["effect"], write_grants(&env, &envelope)),
        (&json!("write"), vec![env.work().join("out")]),
        "{envelope}"
    );
    let (_, envelope) = env.json(&["exec", "tar", "list", "--dry-run", "--", "archive=a.tar"]);
    assert_eq!(
        (&envelope["data"]["effect"], write_grants(&env, &envelope)),
        (&json!("read"), vec![])
    );
}

/// An archive with an absolute member, members with `..`, and a link out of the
/// folder followed by a member through it: GNU tar keeps the first inside the
/// folder and refuses the others, and nothing appears outside.
#[test]
fn tar_extract_keeps_hostile_members_inside_the_folder() {
    if !have("tar") {
        return;
    }
    let env = project();
    let outside = env.root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let abs = env.root.path().join("abs.txt");
    std::fs::write(&abs, "absolute\n").unwrap();
    env.write("work/d/evil.txt", "evil\n");
    std::os::unix::fs::symlink(&outside, env.work().join("link")).unwrap();
    let abs = abs.display().to_string();
    tar(
        &env,
        &[
            "--create",
            "--absolute-names",
            "--file=evil.tar",
            &abs,
            "../outside",
            "link",
        ],
    );
    tar(
        &env,
        &[
            "--append",
            "--file=evil.tar",
            "--transform=s,^d,link,",
            "d/evil.txt",
        ],
    );
    std::fs::remove_file(env.work().join("link")).unwrap();
    let (code, envelope) = exec(&env, "extract", &["archive=evil.tar", "into=x"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(2)), "{envelope}");
    let stderr = envelope["stderr"].as_str().unwrap();
    for expected in [
        "Removing leading `/' from member names",
        "../outside/: Member name contains '..'",
        "link/evil.txt: Cannot open: Not a directory",
    ] {
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    let inside = env.work().join("x").join(abs.trim_start_matches('/'));
    assert_eq!(std::fs::read_to_string(inside).unwrap(), "absolute\n");
}

/// `extract` never replaces a file (a write, not a destructive command).
#[test]
fn tar_extract_never_replaces_an_existing_file() {
    if !have("tar") {
        return;
    }
    let env = project();
    tar(&env, &["--create", "--file=a.tar", "README.md"]);
    env.write("work/out/README.md", "mine\n");
    let (code, envelope) = exec(&env, "extract", &["archive=a.tar", "into=out"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(2)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .contains("README.md: Cannot open: File exists"),
        "{envelope}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("out/README.md")).unwrap(),
        "mine\n"
    );
}

/// Values never become options, archives and folders stay inside the working
/// directory, and `create` only writes files named like archives.
#[test]
fn tar_refuses_values_that_leave_or_turn_into_options() {
    if !have("tar") {
        return;
    }
    let env = project();
    tar(&env, &["--create", "--file=a.tar", "README.md"]);
    for (command, params, message) in [
        (
            "list",
            &["archive=../a.tar"][..],
            "parameter `archive` leaves the working directory",
        ),
        (
            "extract",
            &["archive=a.tar", "into=/tmp"],
            "parameter `into` is not a relative path inside the working directory",
        ),
        (
            "extract",
            &["archive=a.tar", "into=../up"],
            "parameter `into` leaves the working directory",
        ),
        (
            "extract",
            &["archive=a.tar", "into=o", "strip-components=-1"],
            "parameter `strip-components` does not match the pattern [0-9]{1,2}",
        ),
        (
            "create",
            &["archive=src/main.c", "paths=README.md"],
            "parameter `archive` does not match the pattern (?s).*\\.(tar|tar\\.gz|tgz|tar\\.bz2|tbz2?|tar\\.xz|txz|tar\\.zst|tzst|tar\\.lz|tar\\.lzma|tlz)",
        ),
    ] {
        let (code, envelope) = exec(&env, command, params);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // A member that looks like an option is a member name, and none has it.
    let (code, envelope) = exec(&env, "list", &["archive=a.tar", "members=--to-command=sh"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(2)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .contains("--to-command=sh: Not found in archive"),
        "{envelope}"
    );
    // A file name with a colon is a local file, not host:path: hcpx passes it as
    // ./host:a.tar (a slash before the colon), and --force-local says so again.
    std::fs::copy(env.work().join("a.tar"), env.work().join("host:a.tar")).unwrap();
    let (code, envelope) = exec(&env, "list", &["archive=host:a.tar"]);
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("README.md\n")),
        "{envelope}"
    );
}
