//! The `rg` catalog pack against the real program.

use serde_json::{Value, json};

use super::{env, have, install};
use crate::common::TestEnv;

/// A small tree: two sources, notes whose lines start with `-`, a file `.ignore` excludes and
/// a hidden one.
fn tree() -> TestEnv {
    let env = env();
    env.write("work/src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    env.write("work/src/lib.rs", "// TODO: test\npub fn hello() {}\n");
    env.write(
        "work/notes.md",
        "hello world\n-v is not an option\n--files neither\n",
    );
    env.write("work/.ignore", "build/\n");
    env.write("work/build/out.rs", "fn hello() {}\n");
    env.write("work/.hidden.md", "hello hidden\n");
    install(&env, "rg");
    env
}

/// `hcpx --json exec rg COMMAND -- PARAMS`: with `search`, rg's own JSON.
fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "rg", command, "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

/// `hcpx exec rg COMMAND -- PARAMS` as text: hcpx's exit code and rg's stdout.
fn text(env: &TestEnv, command: &str, params: &[&str]) -> (i32, String) {
    let mut args = vec!["exec", "rg", command, "--"];
    args.extend_from_slice(params);
    let output = env.run(&args);
    assert_eq!(output.stderr, "", "{output}");
    (output.code, output.stdout)
}

#[test]
fn rg_search_prints_path_line_and_text_and_honours_the_filters() {
    if !have("rg") {
        return;
    }
    let env = tree();
    assert_eq!(
        text(&env, "search", &["pattern=hello", "ignore-case=true", "sort=path"]),
        (
            0,
            "notes.md:1:hello world\nsrc/lib.rs:2:pub fn hello() {}\nsrc/main.rs:2:    println!(\"Hello\");\n".to_owned()
        )
    );
    // Hidden and ignored files on request; a glob; a fixed string; context and type.
    assert_eq!(
        text(
            &env,
            "search",
            &[
                "pattern=hello",
                "hidden=true",
                "no-ignore=true",
                "glob=*.md",
                "sort=path"
            ]
        ),
        (
            0,
            ".hidden.md:1:hello hidden\nnotes.md:1:hello world\n".to_owned()
        )
    );
    assert_eq!(
        text(
            &env,
            "search",
            &["pattern=() {}", "fixed=true", "paths=src", "sort=path"]
        ),
        (0, "./src/lib.rs:2:pub fn hello() {}\n".to_owned())
    );
    assert_eq!(
        text(
            &env,
            "search",
            &["pattern=TODO", "context=1", "type=rust", "sort=path"]
        ),
        (
            0,
            "src/lib.rs:1:// TODO: test\nsrc/lib.rs-2-pub fn hello() {}\n".to_owned()
        )
    );
}

/// Exit code 1 is ripgrep's "no match": a normal answer, so `ok` is true.
#[test]
fn rg_no_match_is_ok_with_exit_code_1() {
    if !have("rg") {
        return;
    }
    let env = tree();
    for (command, params) in [("count", &["pattern=absent"][..]), ("files", &["glob=*.none"])] {
        let (code, envelope) = exec(&env, command, params);
        assert_eq!(
            (code, &envelope["ok"], &envelope["exitCode"], &envelope["stdout"]),
            (0, &json!(true), &json!(1), &json!("")),
            "{command}: {envelope}"
        );
    }
    // search's JSON without a match is the summary alone (one JSON value: data is it).
    let (code, envelope) = exec(&env, "search", &["pattern=absent"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (0, &json!(true), &json!(1)),
        "{envelope}"
    );
    assert_eq!(
        (
            &envelope["data"]["type"],
            &envelope["data"]["data"]["stats"]["matches"]
        ),
        (&json!("summary"), &json!(0))
    );
    // As text, hcpx says which exit code it counted as success.
    let output = env.run(&["exec", "rg", "search", "--", "pattern=absent"]);
    assert_eq!(
        (output.code, output.stdout.as_str(), output.stderr.as_str()),
        (0, "", "note: exit 1, which this command counts as success\n")
    );
    // A real error (a bad regular expression) is exit code 2 and not ok.
    let (code, envelope) = exec(&env, "search", &["pattern=("]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"]),
        (1, &json!(false), &json!(2)),
        "{envelope}"
    );
    assert!(
        envelope["stderr"].as_str().unwrap().contains("regex parse error"),
        "{envelope}"
    );
}

#[test]
fn rg_search_json_is_ripgreps_message_stream() {
    if !have("rg") {
        return;
    }
    let env = tree();
    let (code, envelope) = exec(&env, "search", &["pattern=TODO", "paths=src/lib.rs"]);
    assert_eq!(code, 0, "{envelope}");
    let messages = envelope["data"].as_array().unwrap();
    let kinds: Vec<&str> = messages.iter().map(|m| m["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["begin", "match", "end", "summary"], "{envelope}");
    assert_eq!(
        messages[1]["data"],
        json!({
            "path": { "text": "./src/lib.rs" },
            "lines": { "text": "// TODO: test\n" },
            "line_number": 1,
            "absolute_offset": 0,
            "submatches": [{ "match": { "text": "TODO" }, "start": 3, "end": 7 }]
        })
    );
    assert_eq!(messages[3]["data"]["stats"]["matches"], json!(1));
}

#[test]
fn rg_files_and_count() {
    if !have("rg") {
        return;
    }
    let env = tree();
    assert_eq!(
        text(&env, "files", &["sort=path"]),
        (0, "notes.md\nsrc/lib.rs\nsrc/main.rs\n".to_owned())
    );
    assert_eq!(
        text(&env, "files", &["type=rust", "paths=src", "sort=path"]),
        (0, "./src/lib.rs\n./src/main.rs\n".to_owned())
    );
    assert_eq!(
        text(&env, "count", &["pattern=l", "sort=path"]),
        (0, "notes.md:2\nsrc/lib.rs:1\nsrc/main.rs:1\n".to_owned())
    );
    assert_eq!(
        text(&env, "count", &["pattern=l", "matches=true", "sort=path"]),
        (0, "notes.md:4\nsrc/lib.rs:2\nsrc/main.rs:3\n".to_owned())
    );
}

/// A pattern that looks like an option is searched for; paths that leave the
/// working directory never reach rg; a link out of the tree is not followed.
#[test]
fn rg_values_never_become_options_or_paths_outside() {
    if !have("rg") {
        return;
    }
    let env = tree();
    assert_eq!(
        text(&env, "search", &["pattern=-v"]),
        (0, "notes.md:2:-v is not an option\n".to_owned())
    );
    assert_eq!(
        text(&env, "search", &["pattern=--files"]),
        (0, "notes.md:3:--files neither\n".to_owned())
    );
    std::os::unix::fs::symlink("/etc", env.work().join("etc")).unwrap();
    for (path, message) in [
        ("paths=../home", "parameter `paths` leaves the working directory"),
        (
            "paths=/etc",
            "parameter `paths` is not a relative path inside the working directory",
        ),
        (
            "paths=etc/passwd",
            "parameter `paths` leaves the working directory through a link",
        ),
    ] {
        let (code, envelope) = exec(&env, "search", &["pattern=root", path]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // Searching the whole tree does not follow the link to /etc (whose passwd has
    // a line that starts with root:).
    env.write("work/users.txt", "root:me\n");
    assert_eq!(
        text(&env, "search", &["pattern=^root:"]),
        (0, "users.txt:1:root:me\n".to_owned())
    );
    let (code, envelope) = exec(&env, "search", &["pattern=x", "type=--pre=sh"]);
    assert_eq!(
        (code, &envelope["error"]["reason"], &envelope["spawned"]),
        (2, &json!("invalid_param"), &json!(false)),
        "{envelope}"
    );
}
