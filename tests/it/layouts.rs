//! `$HCP_HOME` hidden from packs whatever the folders around it look like: a link
//! (GNU stow, chezmoi), a link beside it pointing back, a link above it (`/home ->
//! var/home` on atomic distributions), a bind mount of a folder above it beside it or
//! deeper inside, and a hard link of a state file. Each layout is attacked from a
//! working directory elsewhere, from `~`, and from a folder that holds `~`: a read pack
//! prints `bindings.json` through every path that reaches it, a write pack (granted
//! `.`) overwrites `packs.lock.json`. Then: another pack's credential is redacted
//! wherever the pack found it, and declared reads that reach `$HCP_HOME` are refused.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::common::{BIN, TestEnv, bind_with, copy_dir, copy_fixture_as, fixture, is_root, require};

/// The bound credential, and a line of `bindings.json` that redaction would not hide.
const SECRET: &str = "layout-secret-93f1";
/// The pack whose credential is bound: its id is in `bindings.json` in clear.
const MARK: &str = "\"victim\"";

/// Where the attack runs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cwd {
    /// A folder beside `~`.
    Elsewhere,
    /// `~` itself (an MCP host started there), as `HOME` names it.
    Home,
    /// The folder that holds `~` and everything of the layout.
    Top,
}

/// One layout: the environment hcpx runs with, the paths through which `$HCP_HOME`
/// can be reached, and a bind mount to make first (in a mount namespace of the
/// call's own), if any.
struct Layout {
    name: &'static str,
    top: PathBuf,
    home_var: PathBuf,
    hcp_home_var: PathBuf,
    aliases: Vec<PathBuf>,
    bind: Option<(PathBuf, PathBuf)>,
}

fn mkdir(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
}

fn link(target: &str, at: &Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// Every layout of the issue, each in a fresh folder under `root`.
fn layouts(root: &Path) -> Vec<Layout> {
    let mut all = Vec::new();
    // `~/.hcp -> dotfiles/hcp`: the real folder is a sibling of the link.
    let top = root.join("stow");
    mkdir(&top.join("u/dotfiles/hcp"));
    link("dotfiles/hcp", &top.join("u/.hcp"));
    all.push(Layout {
        name: "HCP_HOME is a link",
        home_var: top.join("u"),
        hcp_home_var: top.join("u/.hcp"),
        aliases: vec![top.join("u/.hcp"), top.join("u/dotfiles/hcp")],
        bind: None,
        top,
    });
    // `~/hcp-config -> ~/.hcp`.
    let top = root.join("beside");
    mkdir(&top.join("u/.hcp"));
    link(".hcp", &top.join("u/hcp-config"));
    all.push(Layout {
        name: "a link beside HCP_HOME points back",
        home_var: top.join("u"),
        hcp_home_var: top.join("u/.hcp"),
        aliases: vec![top.join("u/.hcp"), top.join("u/hcp-config")],
        bind: None,
        top,
    });
    // `/home -> var/home`, HOME given by the link, then by the real path.
    for (name, by_link) in [
        ("a link above, HOME through it", true),
        ("a link above, HOME by the real path", false),
    ] {
        let top = root.join(if by_link { "above-link" } else { "above-real" });
        mkdir(&top.join("var/home/u/.hcp"));
        link("var/home", &top.join("home"));
        let home = if by_link {
            top.join("home/u")
        } else {
            top.join("var/home/u")
        };
        all.push(Layout {
            name,
            hcp_home_var: home.join(".hcp"),
            home_var: home,
            aliases: vec![top.join("home/u/.hcp"), top.join("var/home/u/.hcp")],
            bind: None,
            top,
        });
    }
    if is_root() {
        // `~` bind-mounted beside `$HCP_HOME`, then deeper inside `~`.
        for (name, at) in [
            ("a bind mount of ~ beside HCP_HOME", "u/mirror"),
            ("a bind mount of ~ deeper inside it", "u/a/b"),
        ] {
            let top = root.join(at.replace('/', "-"));
            mkdir(&top.join("u/.hcp"));
            mkdir(&top.join(at));
            all.push(Layout {
                name,
                home_var: top.join("u"),
                hcp_home_var: top.join("u/.hcp"),
                aliases: vec![top.join("u/.hcp"), top.join(at).join(".hcp")],
                bind: Some((top.join("u"), top.join(at))),
                top,
            });
        }
    }
    all
}

impl Layout {
    fn cwd(&self, cwd: Cwd) -> PathBuf {
        match cwd {
            Cwd::Elsewhere => {
                let dir = self.top.join("work");
                mkdir(&dir);
                dir
            }
            Cwd::Home => self.home_var.clone(),
            Cwd::Top => self.top.clone(),
        }
    }

    /// `hcpx ARGS` in this layout, from `cwd`, inside a mount namespace of its own
    /// holding the layout's bind mount.
    fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut command = match &self.bind {
            Some((from, to)) => {
                let mut command = Command::new("unshare");
                command
                    .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
                    .arg(r#"mount --bind "$1" "$2" && shift 2 && exec "$@""#)
                    .arg("sh")
                    .arg(from)
                    .arg(to)
                    .arg(BIN);
                command
            }
            None => Command::new(BIN),
        };
        command
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.home_var)
            .env("HCP_HOME", &self.hcp_home_var)
            .stdin(std::process::Stdio::null());
        command
    }

    fn run(&self, cwd: &Path, args: &[&str]) -> (i32, String, String) {
        let output = self.command(cwd, args).output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// The attacker installed with a write grant of `.`, and a credential bound for
    /// another pack.
    fn prepare(&self) {
        let packs = self.hcp_home_var.join("packs");
        let attacker = packs.join("attacker");
        copy_dir(&fixture("attacker"), &attacker);
        let manifest = attacker.join("hcp.json");
        let text = std::fs::read_to_string(&manifest).unwrap().replace(
            "\"write\": [\n      \"out\"\n    ]",
            "\"write\": [\n      \".\"\n    ]",
        );
        assert!(text.contains("\"write\": [\n      \".\"\n    ]"), "{text}");
        std::fs::write(&manifest, text).unwrap();
        copy_fixture_as("probe", "victim", &packs.join("victim"));
        bind_with(
            self.command(&self.top, &["bind", "victim", "PROBE_TOKEN"]),
            SECRET,
        );
        let real = self.hcp_home_var.canonicalize().unwrap();
        let bindings = std::fs::read_to_string(real.join("bindings.json")).unwrap();
        assert!(bindings.contains(MARK) && bindings.contains(SECRET), "{bindings}");
        std::fs::write(real.join("packs.lock.json"), "{\"packs\": []}\n").unwrap();
    }
}

/// Every layout, from every working directory: nothing of `$HCP_HOME` is read or
/// written through any path, while the pack still reads its working directory.
#[test]
fn hcp_home_stays_hidden_in_every_layout() {
    if !require(
        is_root() && Path::new("/usr/bin/unshare").exists(),
        "root and unshare(1), for the bind-mount layouts",
    ) {
        return;
    }
    let root = tempfile::Builder::new()
        .prefix("hcpx-layouts-")
        .tempdir()
        .unwrap();
    let mut failures = Vec::new();
    for layout in layouts(root.path()) {
        layout.prepare();
        // `doctor` names every path of HCP_HOME the mount table shows.
        if let Some((_, at)) = &layout.bind {
            let (_, doctor, _) = layout.run(&layout.top, &["--json", "doctor"]);
            let doctor: serde_json::Value = serde_json::from_str(&doctor).unwrap();
            let real = layout.hcp_home_var.canonicalize().unwrap();
            assert_eq!(
                doctor["data"]["homePaths"],
                json!([real, at.join(".hcp")]),
                "{}",
                layout.name
            );
        }
        let lock = layout
            .hcp_home_var
            .canonicalize()
            .unwrap()
            .join("packs.lock.json");
        for cwd in [Cwd::Elsewhere, Cwd::Home, Cwd::Top] {
            let dir = layout.cwd(cwd);
            // The control: the pack runs and reads its working directory.
            std::fs::write(dir.join("control.txt"), "control\n").unwrap();
            let (code, stdout, stderr) =
                layout.run(&dir, &["exec", "attacker", "cat", "--", "file=control.txt"]);
            if (code, stdout.as_str()) != (0, "control\n") {
                failures.push(format!(
                    "{} from {cwd:?}: the control failed: {code} {stdout}{stderr}",
                    layout.name
                ));
                continue;
            }
            for alias in &layout.aliases {
                let target = alias.join("bindings.json");
                let file = format!("file={}", target.display());
                let (code, stdout, stderr) = layout.run(&dir, &["exec", "attacker", "cat", "--", &file]);
                if stdout.contains(MARK) || stdout.contains(SECRET) || code == 0 {
                    failures.push(format!(
                        "{} from {cwd:?}: read {}: {code} {stdout}{stderr}",
                        layout.name,
                        target.display()
                    ));
                }
                let target = alias.join("packs.lock.json");
                let file = format!("file={}", target.display());
                let (code, stdout, stderr) =
                    layout.run(&dir, &["exec", "attacker", "clobber", "--yes", "--", &file]);
                let now = std::fs::read_to_string(&lock).unwrap();
                if now.contains("pwned") || code == 0 {
                    failures.push(format!(
                        "{} from {cwd:?}: wrote {}: {code} {stdout}{stderr}",
                        layout.name,
                        target.display()
                    ));
                    std::fs::write(&lock, "{\"packs\": []}\n").unwrap();
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} breaks:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A hard link of `bindings.json` elsewhere would be read through its other name:
/// hcpx finds it and refuses to run packs (strict mode), and `doctor` says why.
#[test]
fn a_hard_link_of_a_state_file_is_found_and_refused() {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    env.install_fixture("probe", "probe");
    env.bind("probe", "PROBE_TOKEN", SECRET);
    std::fs::hard_link(env.home().join("bindings.json"), env.work().join("b.json")).unwrap();
    let (code, envelope) = env.json(&["exec", "attacker", "cat", "--", "file=b.json"]);
    assert!(!envelope.to_string().contains("\"probe\""), "{envelope}");
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("not_runnable"), "{envelope}");
    assert_eq!(envelope["spawned"], json!(false));
    let message = envelope["error"]["message"].as_str().unwrap();
    assert_eq!(
        message,
        "this machine cannot enforce what the pack needs: filesystem"
    );
    let (_, doctor) = env.json(&["doctor"]);
    let layers = doctor["data"]["sandbox"]["layers"].as_array().unwrap();
    let filesystem = layers
        .iter()
        .find(|layer| layer["layer"] == json!("filesystem"))
        .unwrap();
    assert_eq!(filesystem["enforced"], json!(false), "{filesystem}");
    let detail = filesystem["detail"].as_str().unwrap();
    assert!(
        detail.contains("bindings.json") && detail.contains("2 hard links"),
        "{detail}"
    );
    // Gone again, the pack runs.
    std::fs::remove_file(env.work().join("b.json")).unwrap();
    std::fs::write(env.work().join("c.txt"), "ok\n").unwrap();
    let (code, envelope) = env.json(&["exec", "attacker", "cat", "--", "file=c.txt"]);
    assert_eq!((code, &envelope["stdout"]), (0, &json!("ok\n")), "{envelope}");
}

/// A credential of one pack, found by another in a file it may read, is redacted
/// like the pack's own.
#[test]
fn another_packs_credential_is_redacted_wherever_it_is_found() {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    env.install_fixture("probe", "probe");
    env.bind("probe", "PROBE_TOKEN", SECRET);
    std::fs::write(env.work().join(".env"), format!("PROBE_TOKEN={SECRET}\n")).unwrap();
    let (code, envelope) = env.json(&["exec", "attacker", "cat", "--", "file=.env"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!("PROBE_TOKEN=[REDACTED:PROBE_TOKEN]\n"));
    let output = env.run(&["exec", "attacker", "cat", "--", "file=.env"]);
    assert!(!output.stdout.contains(SECRET), "{output}");
}

/// Outside the allowlist nothing of `$HOME` is read: not `~/.ssh`, not a file
/// beside the working directory; what the manifest declares is.
#[test]
fn reads_outside_the_allowlist_are_refused() {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    let key = env.write("user/.ssh/id_ed25519", "PRIVATE KEY\n");
    let beside = env.write("beside.txt", "beside\n");
    for target in [&key, &beside] {
        let file = format!("file={}", target.display());
        let output = env.run(&["exec", "attacker", "cat", "--", &file]);
        assert_eq!(output.code, 1, "{output}");
        assert!(output.stderr.contains("Permission denied"), "{output}");
    }
    // Declared, it is read (and only that).
    let manifest = env.home().join("packs/attacker/hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "\"timeoutMs\": 20000",
        "\"read\": [\"~/.ssh\"],\n    \"timeoutMs\": 20000",
    );
    std::fs::write(&manifest, text).unwrap();
    let output = env.run(&[
        "exec",
        "attacker",
        "cat",
        "--",
        &format!("file={}", key.display()),
    ]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "PRIVATE KEY\n"),
        "{output}"
    );
    let output = env.run(&[
        "exec",
        "attacker",
        "cat",
        "--",
        &format!("file={}", beside.display()),
    ]);
    assert_eq!(output.code, 1, "{output}");
}

/// A folder on the caller's `PATH` that is a link into `$HCP_HOME` (hcpx checks the
/// folders it adds as written, and follows no link) grants nothing of it: the call's
/// layer gives no rule to a path whose real place is hidden, so another pack's files
/// stay unread, through the link and by their own path. (The layer that hides
/// `$HCP_HOME` is not built here: no folder of the call holds it.)
#[test]
fn a_path_folder_that_links_into_hcp_home_grants_nothing_of_it() {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    env.install_fixture("probe", "probe");
    let link = env.root.path().join("tools");
    std::os::unix::fs::symlink(env.home().join("packs/probe"), &link).unwrap();
    let env = env.env(
        "PATH",
        &format!("{}:/usr/local/bin:/usr/bin:/bin", link.display()),
    );
    for target in [link.join("hcp.json"), env.home().join("packs/probe/hcp.json")] {
        let file = format!("file={}", target.display());
        let output = env.run(&["exec", "attacker", "cat", "--", &file]);
        assert_eq!((output.code, output.stdout.as_str()), (1, ""), "{output}");
        assert!(output.stderr.contains("Permission denied"), "{output}");
    }
}

/// A declared read that is `$HCP_HOME`, inside it, or holds it, is refused by `pack
/// check` and at exec, before anything runs.
#[test]
fn a_declared_read_that_reaches_hcp_home_is_refused() {
    let env = TestEnv::new();
    let home = env.home().display().to_string();
    for read in [
        home.clone(),
        format!("{home}/packs"),
        env.root.path().display().to_string(),
    ] {
        let pack = env.root.path().join("reader");
        let _ = std::fs::remove_dir_all(&pack);
        copy_dir(&fixture("attacker"), &pack);
        let manifest = pack.join("hcp.json");
        let text = std::fs::read_to_string(&manifest).unwrap().replace(
            "\"timeoutMs\": 20000",
            &format!("\"read\": [{}],\n    \"timeoutMs\": 20000", json!(read)),
        );
        std::fs::write(&manifest, text).unwrap();
        let (code, envelope) = env.json(&["pack", "check", pack.to_str().unwrap()]);
        assert_eq!(code, 2, "{read}: {envelope}");
        let problems = envelope["data"]["problems"].to_string();
        assert!(
            problems.contains("sandbox.read[0]") && problems.contains("HCP_HOME"),
            "{read}: {envelope}"
        );
        let _ = std::fs::remove_dir_all(env.home().join("packs/attacker"));
        copy_dir(&pack, &env.home().join("packs/attacker"));
        std::fs::write(env.work().join("c.txt"), "ok\n").unwrap();
        let (code, envelope) = env.json(&["exec", "attacker", "cat", "--", "file=c.txt"]);
        assert_eq!(code, 2, "{read}: {envelope}");
        assert_eq!(envelope["spawned"], json!(false), "{read}: {envelope}");
        assert!(
            envelope["error"]["message"]
                .as_str()
                .unwrap()
                .contains("HCP_HOME"),
            "{read}: {envelope}"
        );
    }
}

/// As root a pack runs as root (without capabilities, but the owner of root's files):
/// the system's secret files are hidden from it; the rest of `/etc` is read.
#[test]
fn as_root_the_systems_secrets_stay_hidden() {
    if !require(is_root(), "root, whose packs own /etc/shadow") {
        return;
    }
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    let output = env.run(&["exec", "attacker", "cat", "--", "file=/etc/passwd"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(output.stdout.contains("root:"), "{output}");
    for secret in ["/etc/shadow", "/etc/gshadow"] {
        if !Path::new(secret).exists() {
            continue;
        }
        let output = env.run(&["exec", "attacker", "cat", "--", &format!("file={secret}")]);
        assert_eq!(output.code, 1, "{secret}: {output}");
        assert!(output.stderr.contains("Permission denied"), "{output}");
    }
    let keys: Vec<PathBuf> = std::fs::read_dir("/etc/ssh")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("ssh_host_") && name.ends_with("_key")
        })
        .collect();
    for key in keys {
        let output = env.run(&[
            "exec",
            "attacker",
            "cat",
            "--",
            &format!("file={}", key.display()),
        ]);
        assert_eq!(output.code, 1, "{}: {output}", key.display());
    }
}

/// Takes away, when dropped, the files a test made in the system's folders.
struct Made(Vec<PathBuf>);

impl Drop for Made {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A long-lived server covers the system's secrets in its namespace once, at its first
/// call. A secret replaced later by a rename (as `passwd` replaces `/etc/shadow`), which
/// takes the cover off it in that namespace, and a secret that appears later, stay
/// hidden from the calls after: the server sees the change and hides them again.
#[tokio::test]
async fn as_root_a_secret_replaced_or_added_while_a_server_runs_stays_hidden() {
    if !require(is_root(), "root, whose packs own the system's secret files") {
        return;
    }
    // Two secret files of the list this machine has not: the test makes them.
    let replaced = Path::new("/etc/ipsec.secrets");
    let added = Path::new("/etc/krb5.keytab");
    if !require(
        !replaced.exists() && !added.exists(),
        "no /etc/ipsec.secrets nor /etc/krb5.keytab, which the test makes and removes",
    ) {
        return;
    }
    let staged = PathBuf::from("/etc/.ipsec.secrets.hcpx-test");
    let _made = Made(vec![replaced.to_path_buf(), added.to_path_buf(), staged.clone()]);
    std::fs::write(replaced, "canary-first-5d1e\n").unwrap();
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    let vars = vec![
        ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
        ("HCP_HOME".to_owned(), env.home().display().to_string()),
    ];
    let mut ctx = hcpx::Context::new(vars, env.work(), false).unwrap();
    // As `hcpx mcp` runs every call: one session, its namespace made once.
    ctx.session = std::sync::Arc::new(hcpx::Session::server());
    let _calls = crate::common::calls_here();
    let read = |file: &Path| {
        let argv: Vec<String> = ["--json", "exec", "attacker", "cat", "--"]
            .iter()
            .map(|word| (*word).to_owned())
            .chain([format!("file={}", file.display())])
            .collect();
        let ctx = &ctx;
        async move {
            let outcome = hcpx::run_to_sink(argv, ctx, &mut hcpx::BufferSink::default()).await;
            serde_json::to_value(&outcome.envelope).unwrap()
        }
    };
    let passwd = read(Path::new("/etc/passwd")).await;
    assert!(passwd["stdout"].as_str().unwrap().contains("root:"), "{passwd}");
    let hidden = |envelope: &serde_json::Value, what: &str| {
        assert_eq!(envelope["exitCode"], json!(1), "{what}: {envelope}");
        assert!(
            envelope["stderr"].as_str().unwrap().contains("Permission denied"),
            "{what}: {envelope}"
        );
        assert!(!envelope.to_string().contains("canary-"), "{what}: {envelope}");
    };
    hidden(&read(replaced).await, "the secret there when the server started");
    std::fs::write(&staged, "canary-second-77a0\n").unwrap();
    std::fs::rename(&staged, replaced).unwrap();
    hidden(&read(replaced).await, "the secret replaced by a rename");
    std::fs::write(added, "canary-third-3c42\n").unwrap();
    hidden(&read(added).await, "a secret that appeared");
    // And the rest of `/etc` is still read.
    let passwd = read(Path::new("/etc/passwd")).await;
    assert!(passwd["stdout"].as_str().unwrap().contains("root:"), "{passwd}");
}
