//! The `fs` catalog pack (GNU find, and sed for `read`) against the real programs.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

/// 2026-03-01 10:12:00 UTC, the modification time the tree's entries get.
fn when() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_772_359_920)
}

fn touch(env: &TestEnv, relative: &str) {
    let file = std::fs::File::open(env.work().join(relative)).unwrap();
    file.set_modified(when()).unwrap();
}

fn tree() -> TestEnv {
    let env = env();
    env.write("work/src/main.rs", "fn main() {\n    one();\n    two();\n}\n");
    env.write("work/src/parser/mod.rs", "pub mod lexer;\n");
    env.write("work/README.md", "# demo\n");
    env.write("work/.git/HEAD", "ref: refs/heads/main\n");
    env.write("work/-n.txt", "dash\n");
    std::os::unix::fs::symlink("main.rs", env.work().join("src/current")).unwrap();
    for entry in [
        "src/main.rs",
        "src/parser/mod.rs",
        "src/parser",
        "src",
        "README.md",
    ] {
        touch(&env, entry);
    }
    install(&env, "fs");
    env
}

/// `hcpx exec fs COMMAND -- PARAMS` as text: exit code and stdout, stderr empty.
fn text(env: &TestEnv, command: &str, params: &[&str]) -> (i32, String) {
    let mut args = vec!["exec", "fs", command, "--yes", "--"];
    args.extend_from_slice(params);
    let output = env.run(&args);
    assert_eq!(output.stderr, "", "{output}");
    (output.code, output.stdout)
}

fn sorted(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

fn refused(env: &TestEnv, command: &str, params: &[&str]) -> Value {
    let mut args = vec!["exec", "fs", command, "--yes", "--"];
    args.extend_from_slice(params);
    let (code, envelope) = env.json(&args);
    assert_eq!((code, &envelope["spawned"]), (2, &json!(false)), "{envelope}");
    envelope["error"]["message"].clone()
}

fn user_and_group() -> String {
    let id = |flag: &str| {
        let output = std::process::Command::new("id").arg(flag).output().unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    format!("{}:{}", id("-un"), id("-gn"))
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

#[test]
fn fs_reads_a_file_or_a_range_of_its_lines() {
    if !have("find") || !have("sed") {
        return;
    }
    let env = tree();
    assert_eq!(
        text(&env, "read", &["file=src/main.rs"]),
        (0, "fn main() {\n    one();\n    two();\n}\n".to_owned())
    );
    assert_eq!(
        text(&env, "read", &["file=src/main.rs", "from=2", "to=3"]),
        (0, "    one();\n    two();\n".to_owned())
    );
    assert_eq!(
        text(&env, "read", &["file=src/main.rs", "from=4"]),
        (0, "}\n".to_owned())
    );
    // A name that starts with `-` is a file here, never an option of find or sed.
    assert_eq!(text(&env, "read", &["file=-n.txt"]), (0, "dash\n".to_owned()));
    // A folder is sed's error.
    let (code, envelope) = env.json(&["exec", "fs", "read", "--", "file=src"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stderr"]),
        (1, &json!(1), &json!("sed: read error on ./src: Is a directory\n")),
        "{envelope}"
    );
}

#[test]
fn fs_lists_a_folder_with_types_sizes_and_times() {
    if !have("find") {
        return;
    }
    let env = tree();
    let (code, stdout) = text(&env, "list", &["dir=src"]);
    assert_eq!(code, 0);
    assert_eq!(
        sorted(&stdout),
        [
            "d       4096 2026-03-01 10:12 parser/",
            "f         36 2026-03-01 10:12 main.rs",
            &format!(
                "l          7 {} current -> main.rs",
                time_of_link(&env, "src/current")
            ),
        ]
    );
    let (_, stdout) = text(&env, "list", &["dir=src", "depth=2"]);
    assert!(
        stdout.contains("f         15 2026-03-01 10:12 parser/mod.rs\n"),
        "{stdout}"
    );
}

/// A link's own modification time (the test cannot set it without lutimes).
fn time_of_link(env: &TestEnv, relative: &str) -> String {
    let output = std::process::Command::new("find")
        .args([relative, "-maxdepth", "0", "-printf", "%TY-%Tm-%Td %TH:%TM"])
        .current_dir(env.work())
        .env("TZ", "UTC")
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn fs_finds_by_name_and_type_and_skips_git() {
    if !have("find") {
        return;
    }
    let env = tree();
    let (code, stdout) = text(&env, "find", &["name=*.rs"]);
    assert_eq!(
        (code, sorted(&stdout)),
        (0, vec!["./src/main.rs", "./src/parser/mod.rs"])
    );
    let (_, stdout) = text(&env, "find", &["iname=readme*"]);
    assert_eq!(sorted(&stdout), ["./README.md"]);
    let (_, stdout) = text(&env, "find", &["type=d"]);
    assert_eq!(sorted(&stdout), ["./src", "./src/parser"]);
    let (_, stdout) = text(&env, "find", &["dir=src", "depth=1"]);
    assert_eq!(
        sorted(&stdout),
        ["./src/current", "./src/main.rs", "./src/parser"]
    );
    assert_eq!(text(&env, "find", &["name=HEAD"]), (0, String::new()));
}

#[test]
fn fs_stats_a_file_and_a_link() {
    if !have("find") {
        return;
    }
    let env = tree();
    assert_eq!(
        text(&env, "stat", &["path=README.md"]),
        (
            0,
            format!(
                "path: ./README.md\ntype: f\nsize: 7\nmode: -rw-r--r-- (644)\nowner: {}\nmodified: 2026-03-01 10:12:00.0000000000 +0000\n",
                user_and_group()
            )
        )
    );
    let (code, stdout) = text(&env, "stat", &["path=src/current"]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("path: ./src/current\ntype: l\nsize: 7\nmode: lrwxrwxrwx (777)\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with(" +0000\ntarget: main.rs\n"), "{stdout}");
}

/// `write` replaces a file, so it is destructive: an agent cannot confirm it, a
/// person's policy can make it a plain confirmation. The text is written exactly,
/// its doubled `%%` and `\\` as one.
#[test]
fn fs_writes_exactly_the_text_and_is_destructive() {
    if !have("find") {
        return;
    }
    let env = tree();
    let agent = env
        .command(&[
            "--json",
            "exec",
            "fs",
            "write",
            "--yes",
            "--",
            "file=x.txt",
            "content=a",
        ])
        .env("HCP_AGENT", "1")
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&agent.stdout).unwrap();
    assert_eq!(
        (
            agent.status.code(),
            &envelope["spawned"],
            &envelope["data"]["decision"]
        ),
        (Some(2), &json!(false), &json!("confirm-human")),
        "{envelope}"
    );
    let output = env.run(&["policy", "set", "fs.write", "confirm"]);
    assert_eq!(output.code, 0, "{output}");
    let content = "- first\n100%% done, C:\\\\temp {} ;\n\tno newline at the end";
    assert_eq!(
        text(
            &env,
            "write",
            &["file=src/notes.md", &format!("content={content}")]
        ),
        (0, String::new())
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("src/notes.md")).unwrap(),
        "- first\n100% done, C:\\temp {} ;\n\tno newline at the end"
    );
    // Replacing, and writing nothing.
    assert_eq!(
        text(&env, "write", &["file=src/notes.md", "content="]),
        (0, String::new())
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("src/notes.md")).unwrap(),
        ""
    );
    for content in ["content=100%", "content=a\\b", "content=%s"] {
        assert_eq!(
            refused(&env, "write", &["file=y.txt", content]),
            json!("parameter `content` does not match the pattern (?s)(?:[^%\\\\]|%%|\\\\\\\\)*")
        );
    }
    assert!(!env.work().join("y.txt").exists());
}

/// Read commands are granted no write; `write` is granted the working directory.
#[test]
fn fs_grants_writes_to_write_alone() {
    if !have("find") {
        return;
    }
    let env = tree();
    for (command, param) in [
        ("read", "file=README.md"),
        ("list", "dir=src"),
        ("find", "name=x"),
        ("stat", "path=src"),
        ("write", "file=a.txt"),
    ] {
        let mut args = vec!["exec", "fs", command, "--dry-run", "--", param];
        if command == "write" {
            args.push("content=x");
        }
        let (code, envelope) = env.json(&args);
        assert_eq!(code, 0, "{envelope}");
        let expected = if command == "write" {
            vec![env.work()]
        } else {
            vec![]
        };
        assert_eq!(write_grants(&env, &envelope), expected, "{command}: {envelope}");
    }
}

#[test]
fn fs_refuses_paths_outside_and_values_read_as_options() {
    if !have("find") {
        return;
    }
    let env = tree();
    std::os::unix::fs::symlink("/etc", env.work().join("etc")).unwrap();
    for (command, params, message) in [
        (
            "read",
            &["file=../x"][..],
            "parameter `file` leaves the working directory",
        ),
        (
            "read",
            &["file=/etc/passwd"],
            "parameter `file` is not a relative path inside the working directory",
        ),
        (
            "read",
            &["file=etc/passwd"],
            "parameter `file` leaves the working directory through a link",
        ),
        (
            "list",
            &["dir=etc"],
            "parameter `dir` leaves the working directory through a link",
        ),
        (
            "stat",
            &["path=~/x"],
            "parameter `path` is not a relative path inside the working directory",
        ),
        (
            "write",
            &["file=../x", "content=x"],
            "parameter `file` leaves the working directory",
        ),
        (
            "read",
            &["file=README.md", "to=-1"],
            "parameter `to` does not match the pattern [1-9][0-9]{0,8}|\\$",
        ),
        (
            "read",
            &["file=README.md", "from=1p;w x"],
            "parameter `from` is not an integer",
        ),
        (
            "find",
            &["name=-delete"],
            "parameter `name` starts with `-`, which an option's value given as a separate argument may not (it would read as an option)",
        ),
    ] {
        assert_eq!(
            refused(&env, command, params),
            json!(message),
            "{command} {params:?}"
        );
    }
}
