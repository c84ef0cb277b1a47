//! Moving and linking files between folders (Landlock's "refer" right) inside a
//! call's sandbox: within a folder the call may write, and within its temporary
//! folder, as compilers and package managers do (rustc writes a crate's metadata in a
//! folder beside the output and renames it into place); never out of them, and never
//! a link that would make a file the call may only read writable.

use serde_json::json;

use crate::common::{TestEnv, require, require_kernel_layers};

/// A pack whose one command, given a folder it may write, tries each move and link
/// with python3's `os.rename` and `os.link` (which, unlike mv, never copy instead)
/// and prints what happened.
const SCRIPT: &str = r#"import os, sys
into, tmp = sys.argv[-1], os.environ["TMPDIR"]
def attempt(what, act):
    try:
        act()
        print(what, "done")
    except OSError as error:
        print(what, "refused:", error.strerror)
os.makedirs(into + "/a")
open(into + "/a/f", "w").write("x")
attempt("rename within the folder", lambda: os.rename(into + "/a/f", into + "/f"))
attempt("link within the folder", lambda: os.link(into + "/f", into + "/a/g"))
os.makedirs(tmp + "/a")
open(tmp + "/a/f", "w").write("x")
attempt("rename within the temporary folder", lambda: os.rename(tmp + "/a/f", tmp + "/f"))
attempt("rename from the temporary folder", lambda: os.rename(tmp + "/f", into + "/from-tmp"))
attempt("rename out of the folder", lambda: os.rename(into + "/f", "beside"))
attempt("link a read-only file in", lambda: os.link("read-only.txt", into + "/writable"))
"#;

#[test]
fn files_move_between_folders_of_a_write_grant_and_never_out_of_it() {
    if !require_kernel_layers() || !require(std::path::Path::new("/usr/bin/python3").exists(), "python3") {
        return;
    }
    let env = TestEnv::new();
    let manifest = json!({
        "hcp": 1, "id": "mover", "version": "1.0.0",
        "description": "Moves and links files between folders",
        "bin": ["python3", "-c", SCRIPT],
        "commands": { "move": {
            "summary": "Try each move and link", "effect": "write", "write": ["{into}"],
            "params": { "into": { "type": "path", "required": true } },
            "argv": ["--", "{into}"]
        } }
    });
    env.write("mover/hcp.json", &manifest.to_string());
    env.write(
        "mover/SKILL.md",
        "---\nname: mover\ndescription: Moves and links files between folders.\n---\n",
    );
    env.install_ok(&env.root.path().join("mover").to_string_lossy(), false);
    env.write("work/read-only.txt", "the caller's\n");
    let (code, envelope) = env.json(&["exec", "mover", "move", "--yes", "--", "into=out"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["stdout"].as_str().unwrap(),
        "rename within the folder done\n\
         link within the folder done\n\
         rename within the temporary folder done\n\
         rename from the temporary folder done\n\
         rename out of the folder refused: Permission denied\n\
         link a read-only file in refused: Invalid cross-device link\n",
        "{envelope}"
    );
    let work = env.work();
    assert_eq!(std::fs::read_to_string(work.join("out/from-tmp")).unwrap(), "x");
    assert!(work.join("out/f").exists() && work.join("out/a/g").exists());
    assert!(!work.join("beside").exists() && !work.join("out/writable").exists());
    assert_eq!(
        std::fs::read_to_string(work.join("read-only.txt")).unwrap(),
        "the caller's\n"
    );
}
