//! The built-in packs confined to their inputs, attacked: a caller's value or a
//! hostile repository in the working directory trying to make sqlite3, jq or git read,
//! write or run something outside it. Each escape is tried three ways:
//!
//! - against a copy of the pack with that one protection taken out, which must let the
//!   attack through (otherwise the test would prove nothing on this machine);
//! - against the built-in pack with Landlock off (in this process, on a machine whose
//!   other layers are as probed), so what stops it is the pack itself;
//! - against the built-in pack through the real binary with every layer.
//!
//! Then read commands without a write grant: they run in the folder that holds
//! `HCP_HOME`, and cannot write to the working directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::builtins::have;
use crate::common::{TestEnv, builtin, copy_dir, require};
use crate::confine_git::git_env;

const SECRET: &str = "outside-secret";

/// Installs a copy of built-in pack `id` as `as_id`, with `edits` made to its
/// manifest, each of which must apply: the pack without one of its protections.
pub(crate) fn bare(env: &TestEnv, id: &str, as_id: &str, edits: &[(&str, &str)]) {
    let target = env.home().join("packs").join(as_id);
    copy_dir(&builtin(id), &target);
    let manifest = target.join("hcp.json");
    let mut text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace(&format!("\"id\": \"{id}\""), &format!("\"id\": \"{as_id}\""));
    for (from, to) in edits {
        assert!(text.contains(from), "{id}'s manifest no longer holds {from}");
        text = text.replace(from, to);
    }
    std::fs::write(&manifest, text).unwrap();
    let skill = target.join("SKILL.md");
    let text = std::fs::read_to_string(&skill)
        .unwrap()
        .replace(&format!("name: {id}\n"), &format!("name: {as_id}\n"));
    std::fs::write(&skill, text).unwrap();
}

/// Runs `hcpx ARGS` in this process, as the binary would with `env`'s environment
/// and `HCP_SANDBOX=best-effort`, on this machine with Landlock taken out: every other
/// layer as probed. The exit code and the envelope.
pub(crate) fn without_landlock(env: &TestEnv, args: &[&str]) -> (i32, Value) {
    let mut environment: Vec<(String, String)> = vec![
        ("PATH".to_owned(), env.path.clone()),
        (
            "HOME".to_owned(),
            env.root.path().join("user").display().to_string(),
        ),
        ("HCP_HOME".to_owned(), env.home().display().to_string()),
        ("HCP_SANDBOX".to_owned(), "best-effort".to_owned()),
    ];
    environment.extend(env.extra_env.iter().cloned());
    let mut ctx = hcpx::Context::new(environment, env.work(), false).unwrap();
    let mut machine = hcpx::sandbox::probe();
    let off = hcpx::sandbox::Support {
        enforced: false,
        detail: "taken out by the test".to_owned(),
    };
    machine.landlock = off.clone();
    machine.scopes = off;
    machine.landlock_abi = 0;
    ctx.session = std::sync::Arc::new(hcpx::Session::with_machine(machine));
    let mut argv = vec!["--json".to_owned()];
    argv.extend(args.iter().map(|arg| (*arg).to_owned()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _calls = crate::common::calls_here();
    let outcome = runtime.block_on(hcpx::run_to_sink(argv, &ctx, &mut hcpx::BufferSink::default()));
    (
        i32::from(outcome.exit_code),
        serde_json::to_value(&outcome.envelope).unwrap(),
    )
}

/// `args` with the pack id replaced: the same call to another pack.
pub(crate) fn to(pack: &str, args: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    args[1] = pack.to_owned();
    args
}

pub(crate) fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn leaked(envelope: &Value) -> bool {
    envelope.to_string().contains(SECRET)
}

/// The read attack `args` (on pack `id`): through `bare_id` it reads [`SECRET`]; the
/// built-in pack, with or without Landlock, does not. The built-in's envelope without
/// Landlock, for more checks.
fn read_attack(env: &TestEnv, bare_id: &str, args: &[&str]) -> Value {
    let (_, envelope) = without_landlock(env, &strs(&to(bare_id, args)));
    assert!(
        leaked(&envelope),
        "the attack did not work without the protection: {envelope}"
    );
    let (code, envelope) = without_landlock(env, args);
    assert!(!leaked(&envelope), "{envelope}");
    assert_ne!(code, 0, "{envelope}");
    let (code, full) = env.json(args);
    assert!(!leaked(&full), "{full}");
    assert_ne!(code, 0, "{full}");
    envelope
}

/// The reason of a refusal before anything ran, or `None` when the CLI ran.
pub(crate) fn refused(envelope: &Value) -> Option<&str> {
    (envelope["spawned"] == json!(false))
        .then(|| envelope["error"]["reason"].as_str())
        .flatten()
}

// ---------------------------------------------------------------- sqlite

/// A working directory with `t.db`, and `outside/x.db` next to it holding [`SECRET`].
fn sqlite_env() -> Option<(TestEnv, PathBuf)> {
    if !have("sqlite3") {
        return None;
    }
    let env = TestEnv::new();
    let outside = env.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let sqlite = |dir: &Path, db: &str, sql: &str| {
        let status = Command::new("sqlite3")
            .arg(dir.join(db))
            .arg(sql)
            .status()
            .unwrap();
        assert!(status.success());
    };
    sqlite(
        &outside,
        "x.db",
        &format!("create table s(v); insert into s values ('{SECRET}');"),
    );
    sqlite(
        &env.work(),
        "t.db",
        "create table t(a); insert into t values (1);",
    );
    Some((env, outside))
}

/// Without `-safe`: ATTACH, VACUUM INTO, load_extension, dot-commands.
const SQLITE_NO_SAFE: (&str, &str) = ("\"-bail\", \"-safe\"]", "\"-bail\"]");

/// Without `refuse` on `sql`: fsdir, zipfile, temp_store_directory.
const SQLITE_NO_REFUSE: (&str, &str) = ("\"refuse\": \"(?i-u)fsdir|zipfile|_store_directory\", ", "");

/// `ATTACH` of a database outside, by path or as a URI, in the read-only `query`:
/// refused by the CLI's safe mode.
#[test]
fn sqlite_query_cannot_attach_a_database_outside() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    bare(&env, "sqlite", "sqlite-bare", &[SQLITE_NO_SAFE]);
    let x = outside.join("x.db").display().to_string();
    for attach in [format!("'{x}'"), format!("'file:{x}?mode=ro'")] {
        let sql = format!("sql=ATTACH {attach} AS o; SELECT v FROM o.s");
        let envelope = read_attack(
            &env,
            "sqlite-bare",
            &["exec", "sqlite", "query", "--", "db=t.db", &sql],
        );
        let stderr = envelope["stderr"].as_str().unwrap();
        assert!(stderr.contains("cannot run ATTACH in safe mode"), "{envelope}");
    }
}

/// `ATTACH` in `exec`, which may write: the database outside is neither read nor
/// changed.
#[test]
fn sqlite_exec_cannot_attach_and_change_a_database_outside() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    bare(&env, "sqlite", "sqlite-bare", &[SQLITE_NO_SAFE]);
    let sql = format!(
        "sql=ATTACH '{}' AS o; UPDATE o.s SET v = 'changed'",
        outside.join("x.db").display()
    );
    let args = ["exec", "sqlite", "exec", "--yes", "--", "db=t.db", sql.as_str()];
    let outside_value = || {
        let output = Command::new("sqlite3")
            .arg(outside.join("x.db"))
            .arg("select v from s")
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    for run in [without_landlock, |env: &TestEnv, args: &[&str]| env.json(args)] {
        let (code, envelope) = run(&env, &args);
        assert_eq!(code, 1, "{envelope}");
        assert!(
            envelope["stderr"]
                .as_str()
                .unwrap()
                .contains("cannot run ATTACH in safe mode"),
            "{envelope}"
        );
        assert_eq!(outside_value(), SECRET);
    }
    let (code, envelope) = without_landlock(&env, &strs(&to("sqlite-bare", &args)));
    assert_eq!((code, outside_value().as_str()), (0, "changed"), "{envelope}");
}

/// `VACUUM INTO` a file outside: a read command writing a copy of the database
/// anywhere. Safe mode refuses it as an ATTACH.
#[test]
fn sqlite_query_cannot_vacuum_into_a_file_outside() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    bare(&env, "sqlite", "sqlite-bare", &[SQLITE_NO_SAFE]);
    let copy = outside.join("copy.db");
    let sql = format!("sql=VACUUM INTO '{}'", copy.display());
    let args = ["exec", "sqlite", "query", "--", "db=t.db", sql.as_str()];
    let (code, envelope) = without_landlock(&env, &args);
    assert_eq!(code, 1, "{envelope}");
    let (code, envelope) = env.json(&args);
    assert_eq!(code, 1, "{envelope}");
    assert!(!copy.exists());
    let (code, envelope) = without_landlock(&env, &strs(&to("sqlite-bare", &args)));
    assert_eq!(code, 0, "{envelope}");
    assert!(copy.exists(), "the attack did not work without -safe: {envelope}");
}

/// `load_extension` of a library outside: refused by safe mode before the CLI tries
/// to load it.
#[test]
fn sqlite_cannot_load_an_extension() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    bare(&env, "sqlite", "sqlite-bare", &[SQLITE_NO_SAFE]);
    let sql = format!("sql=SELECT load_extension('{}')", outside.join("evil").display());
    let args = ["exec", "sqlite", "query", "--", "db=t.db", sql.as_str()];
    let (_, envelope) = without_landlock(&env, &strs(&to("sqlite-bare", &args)));
    let stderr = envelope["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("evil"),
        "the CLI did not try to load it: {envelope}"
    );
    for (code, envelope) in [without_landlock(&env, &args), env.json(&args)] {
        assert_eq!(code, 1, "{envelope}");
        let stderr = envelope["stderr"].as_str().unwrap();
        assert!(
            stderr.contains("cannot use the load_extension() function in safe mode"),
            "{envelope}"
        );
    }
}

/// Dot-commands (`.read`, `.open`) in `sql`: one that starts the value is refused by
/// the parameter's pattern; one on a later line is SQL to the CLI, a syntax error (and
/// safe mode refuses `.read` and `.open` anyway).
#[test]
fn sqlite_dot_commands_never_run() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    std::fs::write(outside.join("cmds.sql"), format!("SELECT '{SECRET}';\n")).unwrap();
    bare(
        &env,
        "sqlite",
        "sqlite-bare",
        &[SQLITE_NO_SAFE, ("\"pattern\": \"(?s)[^.].*\", ", "")],
    );
    let cmds = outside.join("cmds.sql").display().to_string();
    let x = outside.join("x.db").display().to_string();
    let first = format!("sql=.read {cmds}");
    let envelope = read_attack(
        &env,
        "sqlite-bare",
        &["exec", "sqlite", "query", "--", "db=t.db", &first],
    );
    assert_eq!(refused(&envelope), Some("invalid_param"), "{envelope}");
    let later = format!("sql=SELECT 1;\n.read {cmds}");
    for pack in ["sqlite", "sqlite-bare"] {
        let (code, envelope) = without_landlock(&env, &["exec", pack, "query", "--", "db=t.db", &later]);
        assert_eq!(code, 1, "{envelope}");
        assert!(!leaked(&envelope), "{envelope}");
        assert!(
            envelope["stderr"].as_str().unwrap().contains("syntax error"),
            "{envelope}"
        );
    }
    let open = format!("sql=.open {x}");
    let (_, envelope) = without_landlock(&env, &["exec", "sqlite", "query", "--", "db=t.db", &open]);
    assert_eq!(refused(&envelope), Some("invalid_param"), "{envelope}");
}

/// The shell's `fsdir` table reads any file, and safe mode does not refuse it: the
/// pack refuses `sql` that names it, before anything runs.
#[test]
fn sqlite_fsdir_cannot_read_a_file_outside() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    bare(&env, "sqlite", "sqlite-bare", &[SQLITE_NO_REFUSE]);
    let secret = outside.join("secret.txt").display().to_string();
    for form in ["fsdir", "FsDir", "\"fsdir\"", "main.fsdir"] {
        let sql = format!("sql=SELECT data FROM {form}('{secret}')");
        for command in ["query", "exec"] {
            let args = ["exec", "sqlite", command, "--yes", "--", "db=t.db", sql.as_str()];
            let envelope = read_attack(&env, "sqlite-bare", &args);
            assert_eq!(refused(&envelope), Some("invalid_param"), "{envelope}");
        }
    }
}

/// The shell's `zipfile` table writes an archive anywhere, from the read-only
/// `query`; safe mode does not refuse it, the pack does.
#[test]
fn sqlite_zipfile_cannot_write_a_file_outside() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    bare(&env, "sqlite", "sqlite-bare", &[SQLITE_NO_REFUSE]);
    let zip = outside.join("new.zip");
    let sql = format!(
        "sql=CREATE VIRTUAL TABLE temp.z USING zipfile('{}'); INSERT INTO temp.z(name, data) VALUES ('a', 'pwned')",
        zip.display()
    );
    let args = ["exec", "sqlite", "query", "--", "db=t.db", sql.as_str()];
    for (code, envelope) in [without_landlock(&env, &args), env.json(&args)] {
        assert_eq!(
            (code, refused(&envelope)),
            (2, Some("invalid_param")),
            "{envelope}"
        );
        assert!(!zip.exists());
    }
    let (code, envelope) = without_landlock(&env, &strs(&to("sqlite-bare", &args)));
    assert_eq!(code, 0, "{envelope}");
    assert!(zip.exists(), "the attack did not work without refuse: {envelope}");
    // Nor may temporary files go to a folder outside.
    let sql = format!("sql=PRAGMA temp_store_directory = '{}'", outside.display());
    let (code, envelope) = without_landlock(&env, &["exec", "sqlite", "query", "--", "db=t.db", &sql]);
    assert_eq!(
        (code, refused(&envelope)),
        (2, Some("invalid_param")),
        "{envelope}"
    );
}

/// A `path` value SQLite would read as a URI reaches it anchored (`./file:/...`), a
/// file name here, also without Landlock.
#[test]
fn sqlite_never_opens_a_uri_even_without_landlock() {
    let Some((env, outside)) = sqlite_env() else {
        return;
    };
    std::fs::create_dir_all(env.work().join("file:")).unwrap();
    let db = format!("db=file:{}", outside.join("x.db").display());
    let args = [
        "exec",
        "sqlite",
        "query",
        "--",
        db.as_str(),
        "sql=SELECT v FROM s",
    ];
    for (code, envelope) in [without_landlock(&env, &args), env.json(&args)] {
        assert_eq!(code, 1, "{envelope}");
        assert!(!leaked(&envelope), "{envelope}");
        let child = envelope["child"].as_array().unwrap();
        assert!(
            child.contains(&json!(format!("./file:{}", outside.join("x.db").display()))),
            "{envelope}"
        );
    }
}

// ---------------------------------------------------------------- jq

/// A working directory with `x.json`; `../secret.json` and `../mod.jq` next to it, and
/// `outside/secret.json`.
fn jq_env() -> Option<TestEnv> {
    if !have("jq") {
        return None;
    }
    let env = TestEnv::new();
    env.write("work/x.json", r#"{"a": 1}"#);
    env.write("secret.json", &format!(r#"{{"s": "{SECRET}"}}"#));
    env.write("mod.jq", &format!(r#"def s: "{SECRET}";"#));
    env.write("outside/secret.json", &format!(r#"{{"s": "{SECRET}"}}"#));
    Some(env)
}

/// Without the `.|` before the filter, which keeps `import` and `include` (allowed
/// only at the start of a jq program) out.
const JQ_NO_PREFIX: (&str, &str) = ("\".|{filter}\"", "\"{filter}\"");

/// `import "../secret" as $d`: a JSON file outside, as data. `-L` does not stop it:
/// jq resolves the path against the folder the program came from.
#[test]
fn jq_cannot_import_data_from_outside() {
    let Some(env) = jq_env() else { return };
    bare(&env, "jq", "jq-bare", &[JQ_NO_PREFIX]);
    let envelope = read_attack(
        &env,
        "jq-bare",
        &[
            "exec",
            "jq",
            "filter",
            "--",
            r#"filter=import "../secret" as $d; $d"#,
            "file=x.json",
        ],
    );
    assert!(
        envelope["stderr"].as_str().unwrap().contains("syntax error"),
        "{envelope}"
    );
}

/// `include "../mod"`: a jq module outside, its definitions used.
#[test]
fn jq_cannot_include_a_module_from_outside() {
    let Some(env) = jq_env() else { return };
    bare(&env, "jq", "jq-bare", &[JQ_NO_PREFIX]);
    read_attack(
        &env,
        "jq-bare",
        &[
            "exec",
            "jq",
            "filter",
            "--",
            r#"filter=include "../mod"; s"#,
            "file=x.json",
        ],
    );
}

/// An import's `search` metadata names any folder, absolute included, past `-L`.
#[test]
fn jq_import_search_paths_cannot_point_outside() {
    let Some(env) = jq_env() else { return };
    bare(&env, "jq", "jq-bare", &[JQ_NO_PREFIX]);
    let filter = format!(
        r#"filter=import "secret" as $d {{search: "{}"}}; $d"#,
        env.root.path().join("outside").display()
    );
    read_attack(
        &env,
        "jq-bare",
        &["exec", "jq", "filter", "--", &filter, "file=x.json"],
    );
}

/// `modulemeta` loads a module by name from the library search path (by default
/// `~/.jq` and folders beside jq): `-L /dev/null` leaves a search path beneath which
/// nothing can exist.
#[test]
fn jq_modulemeta_cannot_read_a_module_outside() {
    let Some(env) = jq_env() else { return };
    env.write(
        "user/.jq/mod.jq",
        &format!(r#"module {{s: "{SECRET}"}}; def s: 1;"#),
    );
    bare(
        &env,
        "jq",
        "jq-bare",
        &[("\"jq\",\n    \"-L\",\n    \"/dev/null\"\n", "\"jq\"\n")],
    );
    for name in ["mod", "../.jq/mod"] {
        let filter = format!(r#"filter="{name}" | modulemeta"#);
        let envelope = read_attack(
            &env,
            "jq-bare",
            &["exec", "jq", "filter", "--", &filter, "file=x.json"],
        );
        assert!(
            envelope["stderr"].as_str().unwrap().contains("module not found"),
            "{envelope}"
        );
    }
}

/// What jq says about where it reads from names only the given file.
#[test]
fn jq_names_only_its_file() {
    let Some(env) = jq_env() else { return };
    let (code, envelope) = env.json(&[
        "exec",
        "jq",
        "filter",
        "--",
        "filter=[input_filename, $__loc__, get_search_list]",
        "file=x.json",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"],
        json!(["./x.json", { "file": "<top-level>", "line": 1 }, ["/dev/null"]])
    );
}

// ------------------------------------------------- read commands, no write grant

/// A repository in the working directory, with `HCP_HOME` in it (as `~/.hcp` is in
/// `~`).
fn home_in_work() -> Option<TestEnv> {
    let env = git_env()?;
    let home = env.work().join(".hcp");
    env.write("work/.git/info/exclude", ".hcp/\n");
    Some(env.env("HCP_HOME", &home.display().to_string()))
}

/// `git status` in the folder that holds `HCP_HOME`: a read gets no write grant, so
/// nothing keeps it from running there, with Landlock or without; its plan grants
/// no write.
#[test]
fn a_read_command_runs_in_the_folder_that_holds_hcp_home() {
    let Some(env) = home_in_work() else { return };
    for (code, envelope) in [
        without_landlock(&env, &["exec", "git", "status"]),
        env.json(&["exec", "git", "status"]),
    ] {
        assert_eq!(code, 0, "{envelope}");
        assert_eq!(envelope["stdout"], json!("## main\n"), "{envelope}");
    }
    let (_, envelope) = env.json(&["exec", "git", "status", "--dry-run"]);
    assert_eq!(envelope["data"]["sandbox"]["write"], json!([]), "{envelope}");
    let (_, envelope) = env.json(&["exec", "git", "add", "--dry-run", "--", "paths=a.txt"]);
    assert_eq!(envelope["data"]["sandbox"]["write"], json!(["."]), "{envelope}");
}

/// A write command there keeps its grant, so without Landlock (nothing else keeps it
/// out of `HCP_HOME`) it is refused before it runs.
#[test]
fn a_write_command_in_the_folder_that_holds_hcp_home_needs_landlock() {
    let Some(env) = home_in_work() else { return };
    let (code, envelope) = without_landlock(&env, &["exec", "git", "add", "--yes", "--", "paths=a.txt"]);
    assert_eq!(
        (code, refused(&envelope)),
        (2, Some("not_runnable")),
        "{envelope}"
    );
    assert_eq!(
        envelope["error"]["message"],
        json!(
            "the pack may write to a folder that holds HCP_HOME, and without Landlock nothing stops it there"
        )
    );
    let (code, envelope) = env.json(&["exec", "git", "add", "--yes", "--", "paths=a.txt"]);
    assert_eq!(code, 0, "{envelope}");
}

/// A read command cannot write to the working directory, though its pack declares
/// a write grant: the same command declared `write` can.
#[test]
fn a_read_command_cannot_write_to_the_working_directory() {
    if !require(hcpx::sandbox::probe().landlock.enforced, "Landlock (ABI 3)") {
        return;
    }
    let env = TestEnv::new();
    let pack = env.install_fixture("attacker", "attacker");
    let manifest = pack.join("hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let reading = text.replace(
        "\"summary\": \"Wait half a second, then write a file\",\n      \"effect\": \"write\"",
        "\"summary\": \"Wait half a second, then write a file\",\n      \"effect\": \"read\"",
    );
    assert_ne!(reading, text);
    std::fs::create_dir(env.work().join("out")).unwrap();
    let target = env.work().join("out/x");
    std::fs::write(&manifest, &reading).unwrap();
    let (code, envelope) = env.json(&["exec", "attacker", "slowwrite", "--", "target=out/x"]);
    assert_eq!(code, 1, "{envelope}");
    assert!(
        envelope["stderr"].as_str().unwrap().contains("Permission denied"),
        "{envelope}"
    );
    assert!(!target.exists());
    let (_, envelope) = env.json(&["exec", "attacker", "slowwrite", "--dry-run", "--", "target=out/x"]);
    assert_eq!(envelope["data"]["sandbox"]["write"], json!([]), "{envelope}");
    std::fs::write(&manifest, &text).unwrap();
    let (code, envelope) = env.json(&["exec", "attacker", "slowwrite", "--yes", "--", "target=out/x"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(target.exists());
}
