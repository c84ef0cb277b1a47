//! The built-in git pack confined to its inputs, attacked by a hostile repository in
//! the working directory (hooks, fsmonitor, diff and gpg programs, a bare repository,
//! another user's repository) and by caller values that would be options; each escape
//! tried as the built-in pack's other attacks are (see the confine module).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::builtins::have;
use crate::common::{TestEnv, is_root, require};
use crate::confine::{bare, refused, strs, to, without_landlock};
/// A repository in the working directory with one commit, the person's identity in
/// `~/.gitconfig`, and `.git/evil` (a program the repository's configuration may
/// name) that leaves `.git/ran` and says `evil-ran` on stderr when it runs.
pub(crate) fn git_env() -> Option<TestEnv> {
    if !have("git") {
        return None;
    }
    let env = TestEnv::new();
    env.write(
        "user/.gitconfig",
        "[user]\n\tname = Test Person\n\temail = test@example.com\n",
    );
    git(&env, &["init", "-q", "-b", "main"]);
    env.write("work/a.txt", "a\n");
    git(&env, &["add", "a.txt"]);
    git(&env, &["commit", "-q", "-m", "first"]);
    let evil = env.write(
        "work/.git/evil",
        "#!/bin/sh\necho evil-ran >&2\necho \"$0 $*\" >> \"$(dirname \"$0\")/ran\"\ncat\n",
    );
    set_mode(&evil, 0o755);
    Some(env)
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs the machine's git as the person would, with no hook or fsmonitor of the
/// repository (the tests' own git commands must not set off the attacks).
fn git(env: &TestEnv, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"])
        .args(args)
        .current_dir(env.work())
        .env("HOME", env.root.path().join("user"))
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Whether `.git/evil` ran: its mark, or what it said on stderr (where it could not
/// write its mark).
fn ran(env: &TestEnv, envelope: &Value) -> bool {
    env.work().join(".git/ran").exists() || envelope.to_string().contains("evil-ran")
}

fn forget(env: &TestEnv) {
    let _ = std::fs::remove_file(env.work().join(".git/ran"));
}

/// The attack `args` (on pack `git`) runs `.git/evil` through `bare_id` without
/// Landlock, and never through the built-in pack, with or without Landlock.
fn git_attack(env: &TestEnv, bare_id: &str, args: &[&str]) {
    git_attack_each(env, bare_id, args, &|| {});
}

/// [`git_attack`] with `prepare` run before each try.
fn git_attack_each(env: &TestEnv, bare_id: &str, args: &[&str], prepare: &dyn Fn()) {
    prepare();
    let (_, envelope) = without_landlock(env, &strs(&to(bare_id, args)));
    assert!(
        ran(env, &envelope),
        "the attack did not work without the protection: {envelope}"
    );
    forget(env);
    let through_binary = |env: &TestEnv, args: &[&str]| env.json(args);
    for run in [without_landlock, through_binary] {
        prepare();
        let (code, envelope) = run(env, args);
        assert_eq!(code, 0, "{envelope}");
        assert!(!ran(env, &envelope), "{envelope}");
    }
}

/// `core.fsmonitor` in the repository's configuration: `git status` would run it.
#[test]
fn git_status_runs_no_fsmonitor_of_the_repository() {
    let Some(env) = git_env() else { return };
    git(&env, &["config", "core.fsmonitor", ".git/evil"]);
    bare(
        &env,
        "git",
        "git-bare",
        &[(", \"-c\", \"core.fsmonitor=false\"", "")],
    );
    git_attack(&env, "git-bare", &["exec", "git", "status"]);
}

/// Hooks, in `.git/hooks` or where `core.hooksPath` says: `post-index-change` runs
/// when `status` refreshes the index, `prepare-commit-msg` and `post-commit` despite
/// `commit --no-verify`.
#[test]
fn git_runs_no_hook_of_the_repository() {
    let Some(env) = git_env() else { return };
    for hook in [
        "post-index-change",
        "prepare-commit-msg",
        "post-commit",
        "reference-transaction",
    ] {
        let path = env.write(
            &format!("work/.git/hooks/{hook}"),
            "#!/bin/sh\nexec \"$(dirname \"$0\")/../evil\"\n",
        );
        set_mode(&path, 0o755);
    }
    bare(
        &env,
        "git",
        "git-bare",
        &[(", \"-c\", \"core.hooksPath=/dev/null\"", "")],
    );
    // Same content, another time: `status` refreshes the index, and writes it.
    let year = std::cell::Cell::new(2000);
    let touch = || {
        year.set(year.get() + 1);
        let status = Command::new("touch")
            .args(["-d", &format!("{}-01-01 00:00:00", year.get())])
            .arg(env.work().join("a.txt"))
            .status()
            .unwrap();
        assert!(status.success());
    };
    git_attack_each(&env, "git-bare", &["exec", "git", "status"], &touch);
    std::fs::write(env.work().join("a.txt"), "changed\n").unwrap();
    git(&env, &["add", "a.txt"]);
    // A commit may write to the working directory, so Landlock does not stop the hook.
    let (code, envelope) = env.json(&[
        "exec",
        "git-bare",
        "commit",
        "--yes",
        "--",
        "message=by the bare pack",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        ran(&env, &envelope),
        "the hooks did not run without the protection: {envelope}"
    );
    forget(&env);
    std::fs::write(env.work().join("a.txt"), "changed again\n").unwrap();
    git(&env, &["add", "a.txt"]);
    let (code, envelope) = env.json(&["exec", "git", "commit", "--yes", "--", "message=by the pack"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(!ran(&env, &envelope), "{envelope}");
}

/// A `textconv` driver (`diff.NAME.textconv`, chosen per file in `.git/info/attributes`)
/// runs for `diff` and `show` patches; so would `diff.external` for `diff`.
#[test]
fn git_diff_and_show_run_no_diff_program_of_the_repository() {
    let Some(env) = git_env() else { return };
    git(&env, &["config", "diff.evil.textconv", ".git/evil"]);
    env.write("work/.git/info/attributes", "*.txt diff=evil\n");
    std::fs::write(env.work().join("a.txt"), "changed\n").unwrap();
    bare(&env, "git", "git-bare", &[(", \"--no-textconv\"", "")]);
    git_attack(&env, "git-bare", &["exec", "git", "diff"]);
    git_attack(&env, "git-bare", &["exec", "git", "show"]);
    git(&env, &["config", "--unset", "diff.evil.textconv"]);
    git(&env, &["config", "diff.external", ".git/evil"]);
    bare(&env, "git", "git-bare-ext", &[(", \"--no-ext-diff\"", "")]);
    git_attack(&env, "git-bare-ext", &["exec", "git", "diff"]);
}

/// `log.showSignature` with `gpg.program`: `log` and `show` would run the program on
/// a signed commit; `commit.gpgSign` would run it on `commit`.
#[test]
fn git_runs_no_gpg_program_of_the_repository() {
    let Some(env) = git_env() else { return };
    // A commit that carries a signature, made by hand: no gpg needed.
    let head = |what: &str| {
        let output = Command::new("git")
            .args(["rev-parse", what])
            .current_dir(env.work())
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let object = format!(
        "tree {}\nparent {}\nauthor A <a@example.com> 1700000000 +0000\ncommitter A <a@example.com> 1700000000 +0000\n\
         gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n",
        head("HEAD^{tree}"),
        head("HEAD")
    );
    let file = env.write("commit.txt", &object);
    let output = Command::new("git")
        .args(["hash-object", "-t", "commit", "-w"])
        .arg(&file)
        .current_dir(env.work())
        .output()
        .unwrap();
    let signed = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    git(&env, &["update-ref", "refs/heads/main", &signed]);
    git(&env, &["config", "log.showSignature", "true"]);
    git(&env, &["config", "gpg.program", ".git/evil"]);
    bare(
        &env,
        "git",
        "git-bare",
        &[(", \"-c\", \"log.showSignature=false\"", "")],
    );
    git_attack(&env, "git-bare", &["exec", "git", "log"]);
    git_attack(&env, "git-bare", &["exec", "git", "show"]);
    git(&env, &["config", "log.showSignature", "false"]);
    git(&env, &["config", "commit.gpgSign", "true"]);
    bare(
        &env,
        "git",
        "git-bare-sign",
        &[(", \"-c\", \"commit.gpgSign=false\"", "")],
    );
    std::fs::write(env.work().join("a.txt"), "changed\n").unwrap();
    git(&env, &["add", "a.txt"]);
    let (_, envelope) = env.json(&[
        "exec",
        "git-bare-sign",
        "commit",
        "--yes",
        "--",
        "message=signed?",
    ]);
    assert!(
        ran(&env, &envelope),
        "the attack did not work without the protection: {envelope}"
    );
    forget(&env);
    let (code, envelope) = env.json(&["exec", "git", "commit", "--yes", "--", "message=unsigned"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(!ran(&env, &envelope), "{envelope}");
}

/// A bare repository inside the working directory (it arrives with a clone, config
/// included) is not used: `safe.bareRepository=explicit`.
#[test]
fn git_uses_no_bare_repository_found_in_the_working_directory() {
    if !have("git") {
        return;
    }
    let env = TestEnv::new();
    let status = Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main", "."])
        .current_dir(env.work())
        .status()
        .unwrap();
    assert!(status.success());
    let output = Command::new("git")
        .args([
            "commit-tree",
            "-m",
            "from the embedded repository",
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        ])
        .current_dir(env.work())
        .env("GIT_AUTHOR_NAME", "A")
        .env("GIT_AUTHOR_EMAIL", "a@example.com")
        .env("GIT_COMMITTER_NAME", "A")
        .env("GIT_COMMITTER_EMAIL", "a@example.com")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let commit = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let status = Command::new("git")
        .args(["update-ref", "refs/heads/main", &commit])
        .current_dir(env.work())
        .status()
        .unwrap();
    assert!(status.success());
    bare(
        &env,
        "git",
        "git-bare",
        &[(", \"-c\", \"safe.bareRepository=explicit\"", "")],
    );
    let (code, envelope) = env.json(&["exec", "git-bare", "log"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap()
            .contains("from the embedded repository")
    );
    for (code, envelope) in [
        without_landlock(&env, &["exec", "git", "log"]),
        env.json(&["exec", "git", "log"]),
    ] {
        assert_eq!(code, 1, "{envelope}");
        assert!(
            !envelope["stdout"].as_str().unwrap().contains("embedded"),
            "{envelope}"
        );
        assert!(
            envelope["stderr"].as_str().unwrap().contains("bare repository"),
            "{envelope}"
        );
    }
}

/// A repository that belongs to another user: git refuses it ("dubious ownership"),
/// and the pack does not lift that (no `safe.directory`), so its configuration never
/// runs anything.
#[test]
fn git_refuses_a_repository_of_another_user() {
    if !require(is_root(), "root, to give a repository to another user") {
        return;
    }
    let Some(env) = git_env() else { return };
    git(&env, &["config", "core.fsmonitor", ".git/evil"]);
    for dir in [env.work(), env.work().join(".git")] {
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    }
    bare(
        &env,
        "git",
        "git-bare",
        &[("\"-c\", \"core.fsmonitor=false\"", "\"-c\", \"safe.directory=*\"")],
    );
    let (_, envelope) = without_landlock(&env, &["exec", "git-bare", "status"]);
    assert!(
        ran(&env, &envelope),
        "the attack did not work with safe.directory=*: {envelope}"
    );
    forget(&env);
    bare(
        &env,
        "git",
        "git-nofsmonitor",
        &[(", \"-c\", \"core.fsmonitor=false\"", "")],
    );
    for args in [["exec", "git-nofsmonitor", "status"], ["exec", "git", "status"]] {
        for (code, envelope) in [without_landlock(&env, &args), env.json(&args)] {
            assert_eq!(code, 1, "{envelope}");
            assert!(
                envelope["stderr"].as_str().unwrap().contains("dubious ownership"),
                "{envelope}"
            );
            assert!(!ran(&env, &envelope), "{envelope}");
        }
    }
}

/// A caller's value never reaches git as an option: `rev` must start with a letter,
/// digit or `_`, `path` is anchored (`./`), `message` is fused to `--message=`.
#[test]
fn git_caller_values_never_become_options() {
    let Some(env) = git_env() else { return };
    for args in [
        ["exec", "git", "log", "--", "rev=--git-dir=/tmp"],
        ["exec", "git", "log", "--", "rev=-cdiff.external=.git/evil"],
        ["exec", "git", "show", "--", "rev=--output=/tmp/x"],
    ] {
        let (code, envelope) = env.json(&args);
        assert_eq!(
            (code, refused(&envelope)),
            (2, Some("invalid_param")),
            "{envelope}"
        );
    }
    let (_, envelope) = env.json(&["exec", "git", "log", "--dry-run", "--", "path=--work-tree=/tmp"]);
    let child = envelope["data"]["child"].as_array().unwrap();
    assert_eq!(child.last(), Some(&json!("./--work-tree=/tmp")), "{envelope}");
}
