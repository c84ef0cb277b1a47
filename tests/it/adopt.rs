//! adopt, one golden case per host: a realistic existing file, `--write`, a second
//! run that changes nothing, `--remove` restoring it byte for byte, and an
//! unparsable file left alone.

use serde_json::{Value, json};

use crate::common::TestEnv;

/// (host, scope, file under the test root, an existing file as people have them)
const CASES: [(&str, &str, &str, &str); 11] = [
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
];

fn entry_of(host: &str, text: &str) -> Value {
    if host == "codex" {
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        let table = doc["mcp_servers"]["hcp"].as_table().unwrap();
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
        "opencode" => &root["mcp"],
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
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broken, "{host}");
        assert!(
            !std::path::Path::new(&format!("{}.bak", path.display())).exists(),
            "{host}"
        );
    }
}

#[test]
fn adopt_mcp_in_a_fresh_folder_writes_spec_shape() {
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
    assert_eq!(envelope["data"]["hosts"].as_array().unwrap().len(), 11);
}

#[test]
fn native_installs_skill_block_and_agent_env_for_every_shell_agent() {
    // (host, skill file, instructions file, settings file with HCP_AGENT, how to read it)
    let cases = [
        (
            "claude-code",
            "work/.claude/skills/hcpx/SKILL.md",
            "work/CLAUDE.md",
            Some("work/.claude/settings.json"),
        ),
        (
            "codex",
            "user/.agents/skills/hcpx/SKILL.md",
            "user/.codex/AGENTS.md",
            Some("user/.codex/config.toml"),
        ),
        (
            "cursor",
            "work/.cursor/skills/hcpx/SKILL.md",
            "work/AGENTS.md",
            None,
        ),
        (
            "gemini",
            "work/.gemini/skills/hcpx/SKILL.md",
            "work/GEMINI.md",
            None,
        ),
        (
            "opencode",
            "work/.opencode/skills/hcpx/SKILL.md",
            "work/AGENTS.md",
            None,
        ),
        (
            "copilot-cli",
            "user/.copilot/skills/hcpx/SKILL.md",
            "work/AGENTS.md",
            None,
        ),
    ];
    for (host, skill, instructions, settings) in cases {
        let env = TestEnv::new();
        let rules = "# Team rules\n\nRun the tests before committing.\n";
        let instructions_path = env.write(instructions, rules);
        let settings_original = match settings {
            Some(file) if file.ends_with(".toml") => Some(env.write(file, "model = \"o4\"\n")),
            Some(file) => Some(env.write(file, "{\n  \"permissions\": { \"allow\": [\"Bash(ls:*)\"] }\n}\n")),
            None => None,
        };
        let (code, envelope) = env.json(&["adopt", host, "--native", "--write", "--yes"]);
        assert_eq!(code, 0, "{host}: {envelope}");
        let written = std::fs::read_to_string(env.root.path().join(skill))
            .unwrap_or_else(|_| panic!("{host}: no skill"));
        assert!(written.starts_with("---\nname: hcpx\ndescription: "), "{host}");
        let block = std::fs::read_to_string(&instructions_path).unwrap();
        assert!(block.starts_with(rules), "{host}: the instructions are kept");
        assert_eq!(block.matches("<!-- hcpx:begin").count(), 1, "{host}");
        if let Some(path) = &settings_original {
            let text = std::fs::read_to_string(path).unwrap();
            if host == "codex" {
                assert!(
                    text.contains("[shell_environment_policy.set]\nHCP_AGENT = \"1\""),
                    "{host}: {text}"
                );
            } else {
                let value: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(value["env"]["HCP_AGENT"], json!("1"), "{host}");
                assert_eq!(value["permissions"]["allow"][0], json!("Bash(ls:*)"), "{host}");
            }
        }
        // A second run replaces rather than repeats: nothing changes.
        let (_, envelope) = env.json(&["adopt", host, "--native", "--write", "--yes"]);
        assert_eq!(envelope["data"]["changed"], json!(false), "{host}: {envelope}");
        // --remove takes out only what adopt put there.
        let (code, _) = env.json(&["adopt", host, "--native", "--remove", "--write", "--yes"]);
        assert_eq!(code, 0, "{host}");
        assert_eq!(
            std::fs::read_to_string(&instructions_path).unwrap(),
            rules,
            "{host}"
        );
        assert!(!env.root.path().join(skill).exists(), "{host}");
        if let Some(path) = &settings_original {
            let text = std::fs::read_to_string(path).unwrap();
            assert!(!text.contains("HCP_AGENT"), "{host}: {text}");
        }
    }
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["adopt", "zed", "--native"]);
    assert_eq!(code, 2);
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Zed has no shell agent; --native is for")
    );
}
