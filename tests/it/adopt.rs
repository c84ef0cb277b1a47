//! adopt, one golden case per host: a realistic existing file, `--write`, a second
//! run that changes nothing, `--remove` restoring it byte for byte, and an
//! unparsable file left alone.

use serde_json::{Value, json};

use crate::common::TestEnv;

/// (host, scope, file under the test root, an existing file as people have them)
pub(crate) const CASES: [(&str, &str, &str, &str); 19] = [
    (
        "mcp",
        "project",
        "work/.hcp/mcp.json",
        "{\n  \"mcpServers\": {\n    \"files\": { \"command\": \"mcp-files\", \"args\": [\"--root\", \".\"] }\n  }\n}\n",
    ),
    (
        "claude-desktop",
        "user",
        "user/.config/Claude/claude_desktop_config.json",
        "{\n  \"globalShortcut\": \"Ctrl+Space\",\n  \"mcpServers\": {\n    \"fs\": {\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me\"]\n    }\n  }\n}\n",
    ),
    (
        "claude-code",
        "project",
        "work/.mcp.json",
        "{\n  \"mcpServers\": {\n    \"github\": { \"type\": \"http\", \"url\": \"https://api.example.com/mcp\" }\n  }\n}\n",
    ),
    (
        "cursor",
        "project",
        "work/.cursor/mcp.json",
        "{\n  \"mcpServers\": {\n    \"db\": { \"command\": \"db-mcp\", \"env\": { \"DB_URL\": \"${env:DB_URL}\" } }\n  }\n}\n",
    ),
    (
        "vscode",
        "project",
        "work/.vscode/mcp.json",
        "// Workspace MCP servers\n{\n  \"inputs\": [\n    { \"type\": \"promptString\", \"id\": \"token\", \"password\": true }, // asked once\n  ],\n  \"servers\": {\n    \"remote\": { \"type\": \"http\", \"url\": \"https://example.com/mcp\" },\n  },\n}\n",
    ),
    (
        "codex",
        "user",
        "user/.codex/config.toml",
        "# Codex settings\nmodel = \"o4-mini\"\napproval_policy = \"on-request\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # the docs server\nargs = [\"serve\"]\n\n[tui]\nnotifications = true\n",
    ),
    (
        "windsurf",
        "user",
        "user/.codeium/windsurf/mcp_config.json",
        "{\n  \"mcpServers\": {\n    \"linear\": { \"serverUrl\": \"https://mcp.linear.app/sse\" }\n  }\n}\n",
    ),
    (
        "zed",
        "user",
        "user/.config/zed/settings.json",
        "// Zed settings\n{\n  \"theme\": \"One Dark\",\n  \"buffer_font_size\": 15, // bigger\n  \"context_servers\": {\n    \"postgres\": { \"source\": \"custom\", \"command\": \"pg-mcp\", \"args\": [] },\n  },\n  \"vim_mode\": true,\n}\n",
    ),
    (
        "gemini",
        "project",
        "work/.gemini/settings.json",
        "{\n  \"theme\": \"GitHub\",\n  // servers for this repo\n  \"mcpServers\": {\n    \"search\": { \"command\": \"search-mcp\", \"timeout\": 30000 }\n  }\n}\n",
    ),
    (
        "opencode",
        "project",
        "work/opencode.json",
        "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // local tools\n  \"mcp\": {\n    \"notes\": { \"type\": \"local\", \"command\": [\"notes-mcp\"], \"enabled\": true },\n  },\n}\n",
    ),
    (
        "copilot-cli",
        "user",
        "user/.copilot/mcp-config.json",
        "{\n  \"mcpServers\": {\n    \"jira\": { \"type\": \"local\", \"command\": \"jira-mcp\", \"args\": [], \"tools\": [\"*\"] }\n  }\n}\n",
    ),
    (
        "qwen-code",
        "project",
        "work/.qwen/settings.json",
        "{\n  \"mcpServers\": {\n    \"fetch\": {\n      \"command\": \"fetch-mcp\",\n      \"args\": []\n    }\n  },\n  \"$version\": 4\n}\n",
    ),
    (
        "kiro",
        "user",
        "user/.kiro/settings/mcp.json",
        "{\n  \"mcpServers\": {\n    \"aws-docs\": { \"command\": \"uvx\", \"args\": [\"awslabs.aws-documentation-mcp-server@latest\"], \"disabled\": false }\n  }\n}\n",
    ),
    (
        "cline",
        "user",
        "user/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        "{\n  \"mcpServers\": {\n    \"github\": { \"command\": \"github-mcp\", \"args\": [], \"alwaysAllow\": [], \"disabled\": false }\n  }\n}\n",
    ),
    (
        "lm-studio",
        "user",
        "user/.lmstudio/mcp.json",
        "{\n  \"mcpServers\": {\n    \"hf\": { \"url\": \"https://huggingface.co/mcp\" }\n  }\n}\n",
    ),
    (
        "antigravity",
        "user",
        "user/.gemini/antigravity/mcp_config.json",
        "{\n  \"mcpServers\": {\n    \"linear\": { \"serverUrl\": \"https://mcp.linear.app/mcp\" }\n  }\n}\n",
    ),
    (
        "amp",
        "user",
        "user/.config/amp/settings.json",
        "{\n  \"amp.notifications.enabled\": true,\n  \"amp.mcpServers\": {\n    \"playwright\": { \"command\": \"npx\", \"args\": [\"-y\", \"@playwright/mcp@latest\"] }\n  }\n}\n",
    ),
    (
        "crush",
        "project",
        "work/.crush.json",
        "{\n  \"$schema\": \"https://charm.land/crush.json\",\n  \"mcp\": {\n    \"fs\": { \"type\": \"stdio\", \"command\": \"fs-mcp\" }\n  }\n}\n",
    ),
    (
        "factory",
        "user",
        "user/.factory/mcp.json",
        "{\n  \"mcpServers\": {\n    \"sentry\": { \"type\": \"http\", \"url\": \"https://mcp.sentry.dev/mcp\" }\n  }\n}\n",
    ),
];

pub(crate) fn entry_of(host: &str, text: &str) -> Value {
    if host == "codex" {
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        let table = doc["mcp_servers"]["hcp"].as_table().unwrap();
        if let Some(url) = table.get("url") {
            return json!({ "url": url.as_str().unwrap() });
        }
        return json!({
            "command": table["command"].as_str().unwrap(),
            "args": table["args"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>(),
            "env": table.get("env").and_then(|e| e.as_inline_table()).map(|env| env.iter().map(|(k, v)| (k.to_owned(), json!(v.as_str().unwrap()))).collect::<serde_json::Map<_, _>>()),
        });
    }
    let root: Value = jsonc_parser::parse_to_serde_value::<Value>(text, &Default::default()).unwrap();
    let servers = match host {
        "vscode" => &root["servers"],
        "zed" => &root["context_servers"],
        "opencode" | "crush" => &root["mcp"],
        "amp" => &root["amp.mcpServers"],
        _ => &root["mcpServers"],
    };
    servers["hcp"].clone()
}

#[test]
fn every_host_write_is_minimal_idempotent_and_removable() {
    for (host, scope, file, original) in CASES {
        let env = TestEnv::new();
        let path = env.write(file, original);
        // Without --write: a diff, nothing written.
        let output = env.run(&["adopt", host, "--scope", scope]);
        assert_eq!(output.code, 0, "{host}: {output}");
        assert!(output.stdout.contains("+"), "{host}: {output}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            original,
            "{host}: a dry run writes nothing"
        );
        // --write.
        let (code, envelope) = env.json(&["adopt", host, "--scope", scope, "--write", "--yes"]);
        assert_eq!(code, 0, "{host}: {envelope}");
        assert_eq!(envelope["data"]["written"], json!(true), "{host}");
        let written = std::fs::read_to_string(&path).unwrap();
        let entry = entry_of(host, &written);
        let command = entry.get("command").cloned().unwrap_or_default();
        let command = if host == "opencode" {
            command[0].clone()
        } else {
            command
        };
        assert!(command.as_str().unwrap().ends_with("hcpx"), "{host}: {entry}");
        let args_mcp = if host == "opencode" {
            entry["command"][1] == json!("mcp")
        } else {
            entry["args"] == json!(["mcp"])
        };
        assert!(args_mcp, "{host}: {entry}");
        let home = env.home().display().to_string();
        let env_key = if host == "opencode" { "environment" } else { "env" };
        assert_eq!(
            entry[env_key]["HCP_HOME"],
            json!(home),
            "{host}: HCP_HOME is set in this test, so it is passed"
        );
        assert_eq!(
            std::fs::read_to_string(format!("{}.bak", path.display())).unwrap(),
            original,
            "{host}: .bak"
        );
        // Every line of the original is still there, in order (nothing re-serialised);
        // the one change JSON allows is the comma a new property needs before it.
        let mut lines = written.lines();
        for line in original.lines().filter(|line| !line.trim().is_empty()) {
            assert!(
                lines.any(|l| l == line || l == format!("{line},")),
                "{host}: lost or changed line {line:?}\n{written}"
            );
        }
        // A second run changes nothing.
        let (_, envelope) = env.json(&["adopt", host, "--scope", scope, "--write", "--yes"]);
        assert_eq!(envelope["data"]["changed"], json!(false), "{host}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written, "{host}");
        // --remove restores the original, byte for byte.
        let (code, _) = env.json(&["adopt", host, "--scope", scope, "--remove", "--write", "--yes"]);
        assert_eq!(code, 0, "{host}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            original,
            "{host}: --remove restores the original"
        );
    }
}

#[test]
fn unparsable_files_are_left_alone() {
    for (host, scope, file, original) in CASES {
        let env = TestEnv::new();
        let broken = format!("{}\n<<<<<<< merge conflict\n", &original[..original.len() / 2]);
        let path = env.write(file, &broken);
        let (code, envelope) = env.json(&["adopt", host, "--scope", scope, "--write", "--yes"]);
        assert_eq!(code, 2, "{host}: {envelope}");
        assert!(
            envelope["error"]["message"]
                .as_str()
                .unwrap()
                .contains("it was left untouched"),
            "{host}: {envelope}"
        );
        // A broken file is not the caller's mistake: a file hcpx needs.
        assert_eq!(
            envelope["error"]["reason"],
            json!("io_error"),
            "{host}: {envelope}"
        );
        assert_eq!(envelope["data"]["why"], json!("unparsable"), "{host}: {envelope}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broken, "{host}");
        assert!(
            !std::path::Path::new(&format!("{}.bak", path.display())).exists(),
            "{host}"
        );
    }
}

#[test]
fn adopt_mcp_in_a_fresh_folder_writes_one_hcp_entry_with_hcp_home_only_when_set() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["adopt", "mcp", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(env.work().join(".hcp/mcp.json")).unwrap()).unwrap();
    let server = &written["mcpServers"]["hcp"];
    assert_eq!(server["args"], json!(["mcp"]));
    assert_eq!(
        server["env"],
        json!({ "HCP_HOME": env.home().display().to_string() })
    );
    assert_eq!(written.as_object().unwrap().len(), 1);
    // Without HCP_HOME in the environment, no env at all.
    let env2 = TestEnv::new();
    let output = env2
        .command(&["adopt", "mcp", "--write", "--yes"])
        .env_remove("HCP_HOME")
        .env("HOME", env2.root.path().join("user"))
        .output()
        .unwrap();
    assert!(output.status.success());
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(env2.work().join(".hcp/mcp.json")).unwrap()).unwrap();
    assert!(written["mcpServers"]["hcp"].get("env").is_none(), "{written}");
}

/// Writing a host's configuration is an access change (it could remove
/// `HCP_AGENT=1`): an agent is refused, confirmed or not; it may still look.
#[test]
fn agents_cannot_adopt() {
    let env = TestEnv::new().env("HCP_AGENT", "1");
    let (code, envelope) = env.json(&["adopt", "cursor", "--write", "--yes"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("access_refused"));
    let (code, envelope) = env.json(&["adopt", "cursor"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["written"], json!(false));
    assert!(!env.work().join(".cursor/mcp.json").exists());
    let (code, envelope) = env.json(&["adopt", "nosuchhost"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["data"]["hosts"].as_array().unwrap().len(), 19);
}

pub(crate) fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

pub(crate) fn bak(path: &std::path::Path) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{}.bak", path.display()))
}

/// The cursor entry adopt writes in `env` (hcpx is not on the test PATH, so the
/// absolute path of this build).
fn cursor_entry(env: &TestEnv) -> Value {
    json!({
        "type": "stdio",
        "command": crate::common::BIN,
        "args": ["mcp"],
        "env": { "HCP_HOME": env.home().display().to_string() },
    })
}

/// A server entry that a person wrote under adopt's key is never replaced without
/// --force: the refusal shows it and says what to do, nothing is written, --remove
/// leaves it; with --force it is replaced, and --remove brings it back byte for byte.
#[test]
fn an_entry_adopt_did_not_write_is_refused_shown_and_restored() {
    // (host, file, original, the entry as the refusal shows it, the file after --force)
    let bin = crate::common::BIN;
    let cases = [
        (
            "cursor",
            "work/.cursor/mcp.json",
            "{\n  \"mcpServers\": {\n    \"hcp\": { \"command\": \"old\" } // mine\n  }\n}\n",
            "{ \"command\": \"old\" }",
        ),
        (
            "codex",
            "user/.codex/config.toml",
            "model = \"o4\"\n\n[mcp_servers.hcp]\ncommand = \"old\" # mine\n",
            "[mcp_servers.hcp]\ncommand = \"old\" # mine\n",
        ),
    ];
    for (host, file, original, shown) in cases {
        let env = TestEnv::new();
        let path = env.write(file, original);
        let shown_path = path.display().to_string();
        let message = format!(
            "{shown_path} has a `hcp` entry that hcpx did not write; nothing was written. \
             Replace it with --force (--remove puts it back), or rename or remove that entry"
        );
        let (code, envelope) = env.json(&["adopt", host, "--write", "--yes"]);
        assert_eq!(code, 2, "{host}: {envelope}");
        assert_eq!(
            envelope["error"],
            json!({ "code": 2, "reason": "invalid_arguments", "message": message }),
            "{host}"
        );
        assert_eq!(
            envelope["next"],
            json!(format!("hcpx adopt {host} --write --force")),
            "{host}"
        );
        assert_eq!(
            envelope["data"],
            json!({ "path": shown_path, "key": "hcp", "entry": shown }),
            "{host}"
        );
        // For a person: the same, with the entry under the message.
        let output = env.run(&["adopt", host, "--write", "--yes"]);
        let indented: String = shown.lines().map(|line| format!("    {line}\n")).collect();
        assert_eq!(
            output.stderr,
            format!("error: {message}\n  `hcp` now:\n{indented}next: hcpx adopt {host} --write --force\n"),
            "{host}"
        );
        assert_eq!(output.code, 2, "{host}");
        assert_eq!(read(&path), original, "{host}: nothing written");
        assert!(!bak(&path).exists(), "{host}: no .bak");
        assert!(
            !env.home().join("adopted.json").exists(),
            "{host}: nothing recorded"
        );
        // --remove takes out only what adopt wrote: this entry stays.
        let (code, envelope) = env.json(&["adopt", host, "--remove", "--write", "--yes"]);
        assert_eq!(code, 0, "{host}: {envelope}");
        assert_eq!(envelope["data"]["changed"], json!(false), "{host}");
        assert_eq!(
            envelope["data"]["warnings"],
            json!([format!(
                "{shown_path}: the `hcp` entry there was not written by hcpx, so --remove leaves it"
            )]),
            "{host}"
        );
        assert_eq!(read(&path), original, "{host}: --remove kept it");
        // --force replaces it; the .bak holds the person's file.
        let (code, envelope) = env.json(&["adopt", host, "--write", "--yes", "--force"]);
        assert_eq!(code, 0, "{host}: {envelope}");
        let home = env.home().display().to_string();
        let forced = if host == "codex" {
            format!(
                "model = \"o4\"\n\n[mcp_servers.hcp]\ncommand = \"{bin}\"\nargs = [\"mcp\"]\nenv = {{ HCP_HOME = \"{home}\" }}\n"
            )
        } else {
            format!(
                "{{\n  \"mcpServers\": {{\n    \"hcp\": {{\n      \"type\": \"stdio\",\n      \"command\": \"{bin}\",\n      \"args\": [\"mcp\"],\n      \"env\": {{\n        \"HCP_HOME\": \"{home}\"\n      }}\n    }} // mine\n  }}\n}}\n"
            )
        };
        assert_eq!(read(&path), forced, "{host}");
        assert_eq!(read(&bak(&path)), original, "{host}: .bak");
        // Now the entry is adopt's own: a second run changes nothing, without --force.
        let (code, envelope) = env.json(&["adopt", host, "--write", "--yes"]);
        assert_eq!(
            (code, &envelope["data"]["changed"]),
            (0, &json!(false)),
            "{host}: {envelope}"
        );
        assert_eq!(read(&path), forced, "{host}");
        // --remove restores the person's file exactly.
        let (code, envelope) = env.json(&["adopt", host, "--remove", "--write", "--yes"]);
        assert_eq!(code, 0, "{host}: {envelope}");
        assert_eq!(read(&path), original, "{host}: --remove restores the original");
        assert_eq!(read(&bak(&path)), original, "{host}: .bak");
    }
}

/// When the person changed the file after adopt wrote it, --remove cannot put the old
/// bytes back; it puts the previous entry back under the key and keeps the change.
#[test]
fn remove_after_other_edits_restores_the_previous_entry_and_keeps_the_edits() {
    let env = TestEnv::new();
    let original = "{\n  \"mcpServers\": {\n    \"hcp\": { \"command\": \"old\", \"args\": [1, 2.5, true, null] }\n  }\n}\n";
    let path = env.write("work/.cursor/mcp.json", original);
    let (code, envelope) = env.json(&["adopt", "cursor", "--write", "--yes", "--force"]);
    assert_eq!(code, 0, "{envelope}");
    let edited = read(&path).replacen("{\n", "{\n  \"theme\": \"dark\",\n", 1);
    std::fs::write(&path, &edited).unwrap();
    let (code, envelope) = env.json(&["adopt", "cursor", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        read(&path),
        "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"hcp\": {\n      \"command\": \"old\",\n      \"args\": [1, 2.5, true, null]\n    }\n  }\n}\n"
    );
    // The record is gone with the entry: adopt remembers nothing about this file.
    let record: Value = serde_json::from_str(&read(&env.home().join("adopted.json"))).unwrap();
    assert_eq!(record, json!({ "version": 1, "files": {} }));
}

/// NAME.bak is the file before the first adopt; later writes never replace it.
#[test]
fn the_backup_is_the_file_before_the_first_adopt() {
    let mut env = TestEnv::new();
    let original = "{\n  \"mcpServers\": {\n    \"db\": { \"command\": \"db-mcp\" }\n  }\n}\n";
    let path = env.write("work/.mcp.json", original);
    let (code, envelope) = env.json(&["adopt", "claude-code", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    let first = read(&path);
    // The person edits the file; then hcpx lands on PATH, so the entry changes (for
    // Claude Code, which runs with the shell's PATH; Cursor's entry keeps the path).
    let edited = first.replacen("{\n", "{\n  \"theme\": \"dark\",\n", 1);
    std::fs::write(&path, &edited).unwrap();
    let bin = env.root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::common::BIN, bin.join("hcpx")).unwrap();
    env.path = format!("{}:{}", bin.display(), env.path);
    let (code, envelope) = env.json(&["adopt", "claude-code", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["changed"], json!(true));
    let mut entry = cursor_entry(&env);
    entry["command"] = json!("hcpx");
    let written: Value = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(
        written,
        json!({ "theme": "dark", "mcpServers": { "db": { "command": "db-mcp" }, "hcp": entry } })
    );
    assert_eq!(read(&bak(&path)), original, ".bak is still the first one");
    // --remove takes the entry out and keeps the person's edit.
    let (code, envelope) = env.json(&["adopt", "claude-code", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        read(&path),
        "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"db\": { \"command\": \"db-mcp\" }\n  }\n}\n"
    );
    assert_eq!(read(&bak(&path)), original);
}

/// A host file that is a link (a dotfiles repository) is edited where it points; the
/// link stays a link and nothing else lands next to the target.
#[test]
fn a_linked_host_file_is_edited_at_its_target() {
    let env = TestEnv::new();
    let original = "{\n  \"mcpServers\": {\n    \"db\": { \"command\": \"db-mcp\" }\n  }\n}\n";
    let target = env.write("dotfiles/cursor.json", original);
    let link = env.work().join(".cursor/mcp.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("../../dotfiles/cursor.json", &link).unwrap();
    let (code, envelope) = env.json(&["adopt", "cursor", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::Path::new("../../dotfiles/cursor.json"),
        "still the same link"
    );
    let written: Value = serde_json::from_str(&read(&target)).unwrap();
    assert_eq!(
        written,
        json!({ "mcpServers": { "db": { "command": "db-mcp" }, "hcp": cursor_entry(&env) } })
    );
    assert!(
        std::fs::symlink_metadata(bak(&link)).unwrap().is_file(),
        "the .bak is a file next to the link"
    );
    assert_eq!(read(&bak(&link)), original);
    let names: Vec<String> = std::fs::read_dir(target.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["cursor.json"], "nothing else next to the target");
    let (_, envelope) = env.json(&["adopt", "cursor", "--write", "--yes"]);
    assert_eq!(envelope["data"]["changed"], json!(false), "{envelope}");
    let (code, envelope) = env.json(&["adopt", "cursor", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(read(&target), original);
}

/// A file without write permission is refused (also for root, who could write it):
/// nothing written, no .bak, the fix named.
#[test]
fn a_read_only_host_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let original = "{\n  \"mcpServers\": {}\n}\n";
    let path = env.write("work/.cursor/mcp.json", original);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let shown = path.display().to_string();
    // The dry run says so before anyone asks for --write.
    let (code, envelope) = env.json(&["adopt", "cursor"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"]["warnings"],
        json!([format!(
            "{shown} is read-only: --write leaves it as it is until it is writable (chmod u+w {shown})"
        )])
    );
    let refusal = json!({
        "code": 2,
        "reason": "io_error",
        "message": format!("{shown} is read-only, so hcpx leaves it as it is; nothing was written. Make it writable, then run adopt again"),
    });
    let (code, envelope) = env.json(&["adopt", "cursor", "--write", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"], refusal);
    assert_eq!(envelope["next"], json!(format!("chmod u+w {shown}")));
    assert_eq!(read(&path), original);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o444
    );
    assert!(!bak(&path).exists());
    assert!(!env.home().join("adopted.json").exists());
    // Adopted while writable, then made read-only: --remove is refused the same way.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, envelope) = env.json(&["adopt", "cursor", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    let adopted = read(&path);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let (code, envelope) = env.json(&["adopt", "cursor", "--remove", "--write", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"], refusal);
    assert_eq!(read(&path), adopted);
}

/// The server key is `hcp`; an `hcpx` entry from an older hcpx is left alone and
/// pointed out.
#[test]
fn a_legacy_hcpx_entry_is_kept_and_pointed_out() {
    let env = TestEnv::new();
    let original = "{\n  \"mcpServers\": {\n    \"hcpx\": { \"type\": \"stdio\", \"command\": \"/opt/hcpx\", \"args\": [\"mcp\"] }\n  }\n}\n";
    let path = env.write("work/.cursor/mcp.json", original);
    let warning = format!(
        "{}: it also has an `hcpx` entry, from an older hcpx; hcpx now uses `hcp` and leaves \
         that one alone: remove it by hand when nothing needs it",
        path.display()
    );
    let output = env.run(&["adopt", "cursor"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(output.stderr, format!("warning: {warning}\n"));
    let (code, envelope) = env.json(&["adopt", "cursor", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["warnings"], json!([warning]));
    let written: Value = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(
        written,
        json!({ "mcpServers": {
            "hcpx": { "type": "stdio", "command": "/opt/hcpx", "args": ["mcp"] },
            "hcp": cursor_entry(&env),
        } })
    );
    let (code, _) = env.json(&["adopt", "cursor", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0);
    assert_eq!(read(&path), original);
}

/// Taking adopt's entry out of a file a person changed since keeps the (empty)
/// servers object or table the person had before adopt.
#[test]
fn remove_keeps_an_empty_servers_table_the_person_had() {
    // (host, file, original, the person's later edit as (from, to), after --remove)
    let cases = [
        (
            "cursor",
            "work/.cursor/mcp.json",
            "{\n  \"mcpServers\": {}\n}\n",
            ("{\n", "{\n  \"theme\": \"dark\",\n"),
            "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {}\n}\n",
        ),
        (
            "codex",
            "user/.codex/config.toml",
            "[mcp_servers]\n",
            ("[mcp_servers]\n", "model = \"o4\"\n\n[mcp_servers]\n"),
            "model = \"o4\"\n\n[mcp_servers]\n",
        ),
    ];
    for (host, file, original, (from, to), expected) in cases {
        let env = TestEnv::new();
        let path = env.write(file, original);
        let (code, envelope) = env.json(&["adopt", host, "--write", "--yes"]);
        assert_eq!(code, 0, "{host}: {envelope}");
        std::fs::write(&path, read(&path).replacen(from, to, 1)).unwrap();
        let (code, envelope) = env.json(&["adopt", host, "--remove", "--write", "--yes"]);
        assert_eq!(code, 0, "{host}: {envelope}");
        assert_eq!(read(&path), expected, "{host}");
    }
}

/// A host named by its first words gets the hosts it begins, and as `next` the same
/// call with the first of them, every flag kept; the message never repeats the
/// caller's word.
#[test]
fn an_unknown_host_names_the_closest_ones() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["adopt", "claude", "--scope", "user", "--write", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"],
        json!({
            "code": 2,
            "reason": "invalid_arguments",
            "message": "unknown host; closest: claude-code, claude-desktop; hcpx knows: amp, antigravity, claude-code, \
                        claude-desktop, cline, codex, copilot-cli, crush, cursor, factory, gemini, kiro, lm-studio, mcp, \
                        opencode, qwen-code, vscode, windsurf, zed"
        })
    );
    assert_eq!(
        envelope["data"]["suggestions"],
        json!(["claude-code", "claude-desktop"])
    );
    assert_eq!(
        envelope["next"],
        json!("hcpx adopt claude-code --scope user --write --yes")
    );
    let (_, envelope) = env.json(&["adopt", "qqqqqq"]);
    assert_eq!(envelope["next"], json!("hcpx adopt mcp"));
    assert_eq!(envelope["data"]["suggestions"], json!([]));
}
