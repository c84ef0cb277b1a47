//! Nothing of a call outlives it or crosses to another user: a call's private
//! temporary folder is its user's alone (mode 0700), a folder left by an hcpx that
//! was killed goes when the next hcpx starts a call, and the temporary files of an
//! atomic write cut short go with the next command that takes the state lock. Each
//! test runs the attack (another user reading, a kill) and fails when the
//! protection it names is taken out.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::{Nobody, TestEnv, as_user, is_root, wait_until};

/// A folder like `/tmp` (mode 1777) for `TMPDIR`, so that each test sees only the
/// folders of its own hcpx processes.
fn shared_tmp(base: &Path) -> PathBuf {
    let tmp = base.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    tmp
}

/// The probe pack installed, with `TMPDIR` a folder of the test's own like `/tmp`.
fn probe_env() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    let tmp = shared_tmp(env.root.path());
    let env = env.env("TMPDIR", &tmp.display().to_string());
    (env, tmp)
}

/// The `note` files that terminal calls of the probe's `tmp` command wrote under
/// `tmp` (`hcpx-UID/PROCESS-XXXXXX/note`: a terminal's call gets one folder, named
/// after its process).
fn notes(tmp: &Path) -> Vec<PathBuf> {
    let folders = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect()
    };
    let mut found = Vec::new();
    for user in folders(tmp) {
        for call in folders(&user) {
            if call.join("note").is_file() {
                found.push(call.join("note"));
            }
        }
    }
    found
}

/// The user's folder hcpx keeps its processes' folders in.
fn user_folder(tmp: &Path) -> PathBuf {
    tmp.join(format!("hcpx-{}", rustix::process::geteuid().as_raw()))
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// How hcpx names the folder of process `pid` in the user's folder (its pid
/// namespace, pid and start time), so the test can make folders of live and of dead
/// processes.
fn process_tag(pid: u32) -> String {
    let namespace = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let start = after_name.split(' ').nth(19).unwrap();
    format!("{namespace}-{pid}-{start}")
}

/// Runs the probe's `tmp` command (it writes `note` in its `TMPDIR` and waits) with
/// `command`, and returns the note once it is there.
fn call_writing_a_note(mut command: std::process::Command, tmp: &Path) -> (std::process::Child, PathBuf) {
    let hcpx = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || !notes(tmp).is_empty()),
        "the call wrote no note in {}",
        tmp.display()
    );
    (hcpx, notes(tmp).remove(0))
}

/// The attack: while a call runs, another local user lists its temporary folder and
/// reads what the pack wrote there. The folder the pack sees as `TMPDIR`, and the
/// user's folder around it, are 0700: the other user gets nothing.
#[test]
fn another_user_cannot_read_a_calls_temporary_files() {
    let (env, tmp) = probe_env();
    let (hcpx, note) = call_writing_a_note(env.command(&["exec", "probe", "tmp", "--", "wait=2"]), &tmp);
    let call = note.parent().unwrap().to_path_buf();
    if let Some(mut cat) = as_user(65534, "cat") {
        let read = cat.arg(&note).output().unwrap();
        assert!(
            !read.status.success() && read.stdout.is_empty(),
            "another user read the call's file: {}",
            String::from_utf8_lossy(&read.stdout)
        );
        let listed = as_user(65534, "ls").unwrap().arg(&call).output().unwrap();
        assert!(!listed.status.success(), "another user listed the call's folder");
    }
    assert_eq!(call.parent(), Some(user_folder(&tmp).as_path()));
    for folder in [&call, &user_folder(&tmp)] {
        assert_eq!(mode(folder), 0o700, "{}", folder.display());
    }
    let output = hcpx.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // What the pack itself saw.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("700\n{}\n", call.display())
    );
    // And the call's folder went with the call.
    assert!(!call.exists());
}

/// The same as an unprivileged user: hcpx runs as `nobody`, another unprivileged
/// user (uid 65533) reads nothing; and `nobody`'s killed call is swept by its next
/// one, while a folder of root's is left alone.
#[test]
fn an_unprivileged_users_temporary_files_are_its_own() {
    let Some(nobody) = Nobody::new() else { return };
    let tmp = shared_tmp(&nobody.base);
    let tmpdir = tmp.display().to_string();
    let mut command = nobody.command(&["exec", "probe", "tmp", "--", "wait=60"]);
    command.env("TMPDIR", &tmpdir);
    let (mut hcpx, note) = call_writing_a_note(command, &tmp);
    let folder = note.parent().unwrap().to_path_buf();
    let read = as_user(65533, "cat").unwrap().arg(&note).output().unwrap();
    assert!(
        !read.status.success() && read.stdout.is_empty(),
        "another user read nobody's file: {}",
        String::from_utf8_lossy(&read.stdout)
    );
    assert_eq!(mode(note.parent().unwrap()), 0o700);
    // Killed mid-call: its folder stays until nobody's next call.
    hcpx.kill().unwrap();
    hcpx.wait().unwrap();
    assert!(note.exists(), "the killed call's file is left behind");
    // A dead process's folder that root owns: not nobody's to sweep.
    let ours = process_tag(std::process::id());
    let this_pid = ours.rsplit_once('-').unwrap().0;
    let roots = folder.parent().unwrap().join(format!("{this_pid}-1-r00t00"));
    std::fs::create_dir(&roots).unwrap();
    let mut next = nobody.command(&["exec", "probe", "args", "--", "count=1"]);
    next.env("TMPDIR", &tmpdir);
    let output = next.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!folder.exists(), "the killed call's folder is still there");
    assert!(roots.exists(), "a folder of root's went");
}

/// The attack: hcpx is killed (SIGKILL, the OOM killer) mid-call, so no clean-up
/// runs and what the pack wrote in `TMPDIR` stays in `/tmp` for good. The next hcpx
/// that starts a call removes the folders of hcpx processes that are gone, and
/// nothing else: not a live process's, not another user's, not one it did not name,
/// not through a link.
#[test]
fn a_killed_calls_temporary_folder_goes_at_the_next_call() {
    let (env, tmp) = probe_env();
    let (mut hcpx, note) = call_writing_a_note(env.command(&["exec", "probe", "tmp", "--", "wait=60"]), &tmp);
    let killed = note.parent().unwrap().to_path_buf();
    hcpx.kill().unwrap();
    hcpx.wait().unwrap();
    assert!(note.exists(), "the killed call's file is left behind");

    let ours = process_tag(std::process::id());
    // This very test process: alive, so its folder stays.
    let user = user_folder(&tmp);
    let live = user.join(format!("{ours}-live00"));
    // The pid of this process with another start time: a process that is gone
    // (its pid now reused), so its folder goes.
    let this_pid = ours.rsplit_once('-').unwrap().0;
    let reused = user.join(format!("{this_pid}-1-reuse0"));
    // Another user's folder of a gone process: not ours to remove.
    let others = user.join(format!("{this_pid}-1-other0"));
    // A name hcpx does not make.
    let unnamed = user.join("keepme");
    // A link named as hcpx names its folders, to a folder elsewhere.
    let elsewhere = env.root.path().join("elsewhere");
    let link = user.join(format!("{this_pid}-1-link00"));
    for dir in [&live, &reused, &others, &unnamed, &elsewhere] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join("file"), "kept?").unwrap();
    }
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&others, Some(65534), Some(65534)).unwrap();
    }

    let output = env.run(&["exec", "probe", "args", "--", "count=1"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(!killed.exists(), "the killed call's folder is still there");
    assert!(
        !reused.exists(),
        "the folder of a gone process whose pid was reused stays"
    );
    assert!(live.join("file").exists(), "a live process's folder went");
    assert!(unnamed.join("file").exists());
    assert!(
        std::fs::symlink_metadata(&link).is_ok_and(|link| link.file_type().is_symlink()),
        "a link named as hcpx names its folders went"
    );
    assert!(elsewhere.join("file").exists(), "the sweep followed a link");
    if is_root() {
        assert!(others.join("file").exists(), "another user's folder went");
    }
    // The folder of the call that just ran went with it, and the sweep runs once a
    // process: a second call in the same server would not sweep again (unit tests).
    let left: Vec<String> = std::fs::read_dir(&user)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with("live00") && !name.ends_with("other0") && !name.ends_with("link00"))
        .collect();
    assert_eq!(left, ["keepme"]);
}

/// A call refused on the way (an unknown parameter, an unknown command, a denial),
/// a dry run and a call that ran: none leaves a folder behind.
#[test]
fn a_call_refused_before_it_runs_leaves_no_folder() {
    let (env, tmp) = probe_env();
    let user = user_folder(&tmp);
    let left = || -> Vec<String> {
        std::fs::read_dir(&user)
            .into_iter()
            .flatten()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    for (argv, code) in [
        (&["exec", "probe", "args", "--", "nope=1"][..], 2),
        (&["exec", "probe", "nope"][..], 2),
        (&["exec", "probe", "args", "--dry-run", "--", "count=1"][..], 0),
        (&["exec", "probe", "args", "--", "count=1"][..], 0),
    ] {
        let output = env.run(argv);
        assert_eq!(output.code, code, "{argv:?}: {output}");
        assert_eq!(left(), Vec::<String>::new(), "{argv:?} left a folder");
    }
    assert_eq!(env.run(&["policy", "set", "probe.args", "deny"]).code, 0);
    let output = env.run(&["exec", "probe", "args", "--", "count=1"]);
    assert_eq!(output.code, 2, "{output}");
    assert_eq!(left(), Vec::<String>::new(), "a denied call left a folder");
}

/// The attack: another local user makes `hcpx-UID` in the shared `/tmp` first (open
/// to all, or a link to a folder of theirs), to read what calls write there. hcpx
/// takes only a folder of its user's own, that no one else may enter: the call runs
/// in a folder of its own beside it, and nothing lands in the other user's.
#[test]
fn a_users_folder_that_someone_else_made_is_not_used() {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    let tmp = shared_tmp(env.root.path());
    let squatted = user_folder(&tmp);
    std::fs::create_dir(&squatted).unwrap();
    std::fs::set_permissions(&squatted, std::fs::Permissions::from_mode(0o777)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&squatted, Some(65534), Some(65534)).unwrap();
    }
    let env = env.env("TMPDIR", &tmp.display().to_string());
    let output = env.run(&["exec", "probe", "tmp"]);
    assert_eq!(output.code, 0, "{output}");
    let mut lines = output.stdout.lines();
    assert_eq!(lines.next(), Some("700"), "{output}");
    let used = PathBuf::from(lines.next().unwrap());
    assert!(!used.starts_with(&squatted), "the call ran in {}", used.display());
    assert_eq!(used.parent(), Some(tmp.as_path()));
    assert_eq!(std::fs::read_dir(&squatted).unwrap().count(), 0);
}

/// The temporary files of an atomic write (`.NAME.XXXXXX.tmp`) that hcpx was killed
/// in the middle of: the next command that takes the state lock removes them, in
/// `$HCP_HOME` and in the folders of the CLIs it writes there; other names stay.
#[test]
fn temporaries_of_a_cut_short_write_go_with_the_next_locked_command() {
    let env = TestEnv::new();
    let home = env.home();
    let program_dir = home.join(".builtin/jq-1.0.0-0123abcd");
    std::fs::create_dir_all(&program_dir).unwrap();
    let planted = [
        home.join(".packs.lock.json.Ab3dE9.tmp"),
        home.join(".packs.generation.Zz9Yy8.tmp"),
        home.join(".bindings.json.q1W2e3.tmp"),
        home.join(".packs.index.AAAAAA.tmp"),
        program_dir.join(".jq.x1y2z3.tmp"),
    ];
    let kept = [
        home.join("notes.tmp"),
        home.join(".packs.lock.json.tmp"),
        home.join(".policy.json.short.tmp"),
        program_dir.join("jq"),
    ];
    for path in planted.iter().chain(&kept) {
        std::fs::write(path, "half written").unwrap();
    }
    let output = env.run(&["policy", "set", "git.*", "allow"]);
    assert_eq!(output.code, 0, "{output}");
    for path in &planted {
        assert!(!path.exists(), "{} is left behind", path.display());
    }
    for path in &kept {
        assert!(path.exists(), "{} was removed", path.display());
    }
}
