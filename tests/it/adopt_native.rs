//! adopt for shell agents (`--native`: the skill, the instructions block, the agent's
//! settings) and URL entries (`--url`), for every host that takes them.

use serde_json::{Value, json};

use crate::adopt::{CASES, bak, entry_of, read};
use crate::common::TestEnv;

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
        (
            "qwen-code",
            "work/.qwen/skills/hcpx/SKILL.md",
            "work/QWEN.md",
            None,
        ),
        ("amp", "user/.agents/skills/hcpx/SKILL.md", "work/AGENTS.md", None),
        (
            "factory",
            "user/.factory/skills/hcpx/SKILL.md",
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
        // hcpx is not on the test's PATH and HCP_HOME is set: the skill names this
        // binary and home, as the MCP entry does.
        let shell = format!("HCP_HOME={} {}", env.home().display(), crate::common::BIN);
        assert!(
            written.contains(&format!("`{shell} search WORDS`")),
            "{host}: {written}"
        );
        assert!(!written.contains("`hcpx "), "{host}: {written}");
        let block = std::fs::read_to_string(&instructions_path).unwrap();
        assert!(block.starts_with(rules), "{host}: the instructions are kept");
        assert_eq!(block.matches("<!-- hcpx:begin").count(), 1, "{host}");
        assert!(
            block.contains(&format!("`{shell} search WORDS`")),
            "{host}: {block}"
        );
        if let Some(path) = &settings_original {
            let text = std::fs::read_to_string(path).unwrap();
            let home = env.home().display().to_string();
            if host == "codex" {
                assert!(
                    text.contains(&format!(
                        "[shell_environment_policy.set]\nHCP_AGENT = \"1\"\nHCP_HOME = \"{home}\""
                    )),
                    "{host}: {text}"
                );
            } else {
                let value: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(value["env"]["HCP_AGENT"], json!("1"), "{host}");
                assert_eq!(value["env"]["HCP_HOME"], json!(home), "{host}");
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
            assert!(
                !text.contains("HCP_AGENT") && !text.contains("HCP_HOME"),
                "{host}: {text}"
            );
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

/// `--url` points a host that takes URL entries at a running `hcpx mcp --http`:
/// each in its own shape, minimal, idempotent and removable like a command entry;
/// a host that takes none, or a URL that carries a secret, is refused.
#[test]
fn url_entries_for_the_hosts_that_take_them() {
    const URL: &str = "http://127.0.0.1:8765/mcp";
    let shapes = [
        ("mcp", json!({ "url": URL })),
        ("claude-code", json!({ "type": "http", "url": URL })),
        ("cursor", json!({ "url": URL })),
        ("vscode", json!({ "type": "http", "url": URL })),
        ("windsurf", json!({ "serverUrl": URL })),
        ("gemini", json!({ "httpUrl": URL })),
        (
            "opencode",
            json!({ "type": "remote", "url": URL, "enabled": true }),
        ),
        (
            "copilot-cli",
            json!({ "type": "http", "url": URL, "tools": ["*"] }),
        ),
        ("codex", json!({ "url": URL })),
        ("qwen-code", json!({ "httpUrl": URL })),
        ("kiro", json!({ "url": URL })),
        ("cline", json!({ "type": "streamableHttp", "url": URL })),
        ("lm-studio", json!({ "url": URL })),
        ("antigravity", json!({ "serverUrl": URL })),
        ("amp", json!({ "url": URL })),
        ("crush", json!({ "type": "http", "url": URL })),
        ("factory", json!({ "type": "http", "url": URL })),
    ];
    for (host, shape) in shapes {
        let (_, scope, file, original) = CASES.iter().find(|case| case.0 == host).copied().unwrap();
        let env = TestEnv::new();
        let path = env.write(file, original);
        let adopt = ["adopt", host, "--scope", scope, "--url", URL, "--write", "--yes"];
        let (code, envelope) = env.json(&adopt);
        assert_eq!(code, 0, "{host}: {envelope}");
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(entry_of(host, &written), shape, "{host}: {written}");
        let (_, envelope) = env.json(&adopt);
        assert_eq!(envelope["data"]["changed"], json!(false), "{host}");
        let (code, _) = env.json(&["adopt", host, "--scope", scope, "--remove", "--write", "--yes"]);
        assert_eq!(code, 0, "{host}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original, "{host}");
    }
    let env = TestEnv::new();
    for host in ["claude-desktop", "zed"] {
        let (code, envelope) = env.json(&["adopt", host, "--url", URL, "--write", "--yes"]);
        assert_eq!(code, 2, "{host}: {envelope}");
        assert!(
            envelope["error"]["message"]
                .as_str()
                .unwrap()
                .contains("takes no URL entries"),
            "{host}: {envelope}"
        );
    }
    for url in [
        "http://me:secret@127.0.0.1:8765/mcp",
        "ftp://127.0.0.1/mcp",
        "http:///mcp",
    ] {
        let (code, envelope) = env.json(&["adopt", "cursor", "--url", url, "--write", "--yes"]);
        assert_eq!(code, 2, "{url}: {envelope}");
        assert_eq!(envelope["error"]["reason"], json!("invalid_arguments"), "{url}");
    }
    assert!(!env.work().join(".cursor").exists(), "nothing was written");
}

/// `--native` writes the hcpx skill as a whole file: a person's file at that path is
/// refused, kept as `SKILL.md.bak` when forced and given back byte for byte by
/// `--remove`; a skill a person edited after adopt wrote it stays on `--remove`.
#[test]
fn a_skill_file_adopt_did_not_write_is_refused_kept_and_restored() {
    let env = TestEnv::new();
    let mine = "---\nname: hcpx\ndescription: my own notes\n---\n\nDo not lose me.\n";
    let path = env.write("work/.claude/skills/hcpx/SKILL.md", mine);
    let shown = path.display().to_string();
    let (code, envelope) = env.json(&["adopt", "claude-code", "--native", "--write", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"],
        json!({
            "code": 2,
            "reason": "invalid_arguments",
            "message": format!("{shown} is there and hcpx did not write it; nothing was written. Replace it with --force (it is kept as {shown}.bak, and --remove puts it back), or move it"),
        })
    );
    assert_eq!(envelope["data"], json!({ "path": shown }));
    assert_eq!(
        envelope["next"],
        json!("hcpx adopt claude-code --native --write --force")
    );
    assert_eq!(read(&path), mine);
    assert!(
        !env.root.path().join("work/CLAUDE.md").exists(),
        "nothing else written"
    );
    // Forced: replaced, the person's file kept as the backup.
    let (code, envelope) = env.json(&["adopt", "claude-code", "--native", "--write", "--yes", "--force"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(read(&path).starts_with("---\nname: hcpx\ndescription: "));
    assert_ne!(read(&path), mine);
    assert_eq!(read(&bak(&path)), mine);
    // A second run is adopt's own file: nothing to force.
    let (code, envelope) = env.json(&["adopt", "claude-code", "--native", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["changed"], json!(false));
    // --remove gives the person's bytes back.
    let (code, envelope) = env.json(&["adopt", "claude-code", "--native", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(read(&path), mine);

    // Adopt's skill, then edited by a person: --remove leaves it and says so.
    let env = TestEnv::new();
    let (code, _) = env.json(&["adopt", "claude-code", "--native", "--write", "--yes"]);
    assert_eq!(code, 0);
    let path = env.root.path().join("work/.claude/skills/hcpx/SKILL.md");
    let edited = format!("{}\nMy addition.\n", read(&path));
    std::fs::write(&path, &edited).unwrap();
    let (code, envelope) = env.json(&["adopt", "claude-code", "--native", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(read(&path), edited);
    assert_eq!(
        envelope["data"]["warnings"],
        json!([format!(
            "{}: hcpx did not write this file (or it was changed since), so --remove leaves it",
            path.display()
        )])
    );
}
