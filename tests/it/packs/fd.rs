//! The `fd` catalog pack against the real program, which Debian installs as
//! `fdfind` (found through the manifest's `program.aliases`).

use serde_json::json;

use super::{env, have, install, on_tools_path};
use crate::common::TestEnv;

/// fd under either of its names; in CI a missing one fails the test.
fn have_fd() -> bool {
    on_tools_path("fd").is_some() || have("fdfind")
}

fn tree() -> TestEnv {
    let env = env();
    env.write("work/src/main.rs", "fn main() {}\n");
    env.write("work/src/parser/mod.rs", "\n");
    env.write("work/docs/Guide.md", "# Guide\n");
    env.write(
        "work/notes.txt",
        "a bigger file than the others, over sixty-four bytes long, to sort by size\n",
    );
    env.write("work/-rf.txt", "\n");
    env.write("work/.env", "X=1\n");
    env.write("work/.ignore", "target/\n");
    env.write("work/target/out.rs", "\n");
    install(&env, "fd");
    env
}

/// `hcpx exec fd find -- PARAMS`, which must succeed: fd's lines, sorted (fd walks
/// on several threads, so its order varies).
fn find(env: &TestEnv, params: &[&str]) -> Vec<String> {
    let mut args = vec!["exec", "fd", "find", "--"];
    args.extend_from_slice(params);
    let output = env.run(&args);
    assert_eq!((output.code, output.stderr.as_str()), (0, ""), "{output}");
    let mut lines: Vec<String> = output.stdout.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn fd_finds_by_name_glob_extension_type_and_depth() {
    if !have_fd() {
        return;
    }
    let env = tree();
    assert_eq!(find(&env, &["pattern=main"]), ["src/main.rs"]);
    // Smart case: lower case matches any case.
    assert_eq!(find(&env, &["pattern=guide"]), ["docs/Guide.md"]);
    assert_eq!(
        find(&env, &["pattern=guide", "case-sensitive=true"]),
        [] as [&str; 0]
    );
    assert_eq!(
        find(&env, &["glob=true", "pattern=*.rs"]),
        ["src/main.rs", "src/parser/mod.rs"]
    );
    assert_eq!(
        find(&env, &["extension=md", "extension=txt", "type=file"]),
        ["-rf.txt", "docs/Guide.md", "notes.txt"]
    );
    assert_eq!(find(&env, &["type=directory"]), ["docs/", "src/", "src/parser/"]);
    assert_eq!(
        find(&env, &["paths=src", "max-depth=1"]),
        ["./src/main.rs", "./src/parser/"]
    );
    assert_eq!(find(&env, &["size=+64b", "type=file"]), ["notes.txt"]);
    assert_eq!(find(&env, &["pattern=absent"]), [] as [&str; 0]);
}

/// Hidden and ignored entries are left out unless asked for.
#[test]
fn fd_hides_hidden_and_ignored_entries_unless_asked() {
    if !have_fd() {
        return;
    }
    let env = tree();
    assert_eq!(find(&env, &["pattern=env|out"]), [] as [&str; 0]);
    assert_eq!(
        find(&env, &["pattern=env|out", "hidden=true", "no-ignore=true"]),
        [".env", "target/out.rs"]
    );
    assert_eq!(
        find(&env, &["type=file", "exclude=*.rs", "exclude=docs"]),
        ["-rf.txt", "notes.txt"]
    );
}

/// A pattern that starts with `-` is a pattern; search paths stay inside the working
/// directory; a link out of it is listed, not followed.
#[test]
fn fd_values_never_become_options_or_paths_outside() {
    if !have_fd() {
        return;
    }
    let env = tree();
    assert_eq!(find(&env, &["pattern=-rf"]), ["-rf.txt"]);
    assert_eq!(find(&env, &["pattern=--exec=rm"]), [] as [&str; 0]);
    std::os::unix::fs::symlink("/etc", env.work().join("etc")).unwrap();
    assert_eq!(find(&env, &["pattern=^passwd$"]), [] as [&str; 0]);
    assert_eq!(find(&env, &["pattern=^etc$"]), ["etc"]);
    for (value, message) in [
        ("paths=..", "parameter `paths` leaves the working directory"),
        (
            "paths=/",
            "parameter `paths` is not a relative path inside the working directory",
        ),
        (
            "paths=etc",
            "parameter `paths` leaves the working directory through a link",
        ),
        (
            "size=1x",
            "parameter `size` does not match the pattern (?i)[+-]?[0-9]{1,12}(b|k|m|g|t|ki|mi|gi|ti)",
        ),
    ] {
        let (code, envelope) = env.json(&["exec", "fd", "find", "--", value]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{envelope}"
        );
    }
    // A bad regular expression is fd's error, exit code 1.
    let (code, envelope) = env.json(&["exec", "fd", "find", "--", "pattern=("]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert!(
        envelope["stderr"].as_str().unwrap().contains("regex parse error"),
        "{envelope}"
    );
}
