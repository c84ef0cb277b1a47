//! adopt's entry starts this very binary: by the name `hcpx` only when the `hcpx`
//! on PATH is this file (and never for a desktop app), else by its path, with a
//! warning when PATH has another `hcpx`; what the host still needs from the person
//! comes after what was written; a project's `opencode.jsonc` is the file edited.

use serde_json::{Value, json};

use crate::common::{BIN, TestEnv};

/// A folder holding an `hcpx` for PATH: a link to this build, or another program.
fn path_with(env: &TestEnv, this: bool) -> String {
    let dir = env.root.path().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let hcpx = dir.join("hcpx");
    if this {
        std::os::unix::fs::symlink(BIN, &hcpx).unwrap();
    } else {
        std::fs::write(&hcpx, "#!/bin/sh\necho an older hcpx\n").unwrap();
        std::fs::set_permissions(&hcpx, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    format!("{}:/usr/bin:/bin", dir.display())
}

fn written_command(env: &TestEnv, relative: &str, pointer: &str) -> Value {
    let text = std::fs::read_to_string(env.root.path().join(relative)).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    value.pointer(pointer).cloned().unwrap_or(Value::Null)
}

#[test]
fn the_entry_is_this_binary_by_name_only_when_path_finds_this_very_file() {
    // PATH's hcpx is (a link to) this build: the name, for a host with a shell's PATH.
    let mut env = TestEnv::new();
    env.path = path_with(&env, true);
    let (code, envelope) = env.json(&["adopt", "claude-code", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["data"]["warnings"], json!([]));
    assert_eq!(
        written_command(&env, "work/.mcp.json", "/mcpServers/hcp/command"),
        json!("hcpx")
    );
    // A desktop app does not get that PATH: the path, always.
    let (code, envelope) = env.json(&["adopt", "claude-desktop", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        written_command(
            &env,
            "user/.config/Claude/claude_desktop_config.json",
            "/mcpServers/hcp/command"
        ),
        json!(BIN)
    );

    // PATH's hcpx is another program: this build's path, and a warning naming both.
    let mut env = TestEnv::new();
    env.path = path_with(&env, false);
    let other = env.root.path().join("bin/hcpx");
    let (code, envelope) = env.json(&["adopt", "claude-code", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        written_command(&env, "work/.mcp.json", "/mcpServers/hcp/command"),
        json!(BIN)
    );
    assert_eq!(
        envelope["data"]["warnings"],
        json!([format!(
            "the hcpx on PATH ({}) is not this hcpx, so the host is given this one: {BIN}",
            other.display()
        )])
    );
    // Native adopt's skill says the same command, not the other `hcpx`.
    let (code, envelope) = env.json(&["adopt", "claude-code", "--native", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    let skill = std::fs::read_to_string(env.work().join(".claude/skills/hcpx/SKILL.md")).unwrap();
    assert!(skill.contains(&format!("{BIN} search WORDS`")), "{skill}");
}

/// After what was written, what the host still needs from the person (from the
/// host's data), in the text and in `data.then`; nothing for a scope that needs
/// nothing, or for `--remove`.
#[test]
fn what_the_host_still_needs_follows_what_was_written() {
    let env = TestEnv::new();
    let output = env.run(&["adopt", "claude-code", "--write", "--yes"]);
    assert_eq!(output.code, 0, "{output}");
    let then = "Claude Code starts a server from .mcp.json only once you approve it: run `claude` in this \
                folder, trust the folder and approve `hcp` (or list \"hcp\" under enabledMcpjsonServers in \
                .claude/settings.local.json).";
    assert!(
        output
            .stdout
            .ends_with(&format!("Claude Code still needs you to: {then}\n")),
        "{output}"
    );
    let (_, envelope) = env.json(&["adopt", "claude-code", "--write", "--yes"]);
    assert_eq!(envelope["data"]["then"], json!(then), "{envelope}");
    let (_, envelope) = env.json(&["adopt", "claude-code", "--scope", "user"]);
    assert_eq!(envelope["data"]["then"], Value::Null, "{envelope}");
    let (_, envelope) = env.json(&["adopt", "qwen-code"]);
    assert!(
        envelope["data"]["then"]
            .as_str()
            .unwrap()
            .contains("qwen mcp approve hcp"),
        "{envelope}"
    );
    let (_, envelope) = env.json(&["adopt", "claude-code", "--remove", "--write", "--yes"]);
    assert_eq!(envelope["data"]["then"], Value::Null, "{envelope}");
}

/// opencode reads `opencode.json` or `opencode.jsonc`: a project with the second
/// gets it edited (comments kept), and no second file appears.
#[test]
fn a_project_with_opencode_jsonc_gets_that_file_edited() {
    let env = TestEnv::new();
    let original = "{\n  // the project's own\n  \"$schema\": \"https://opencode.ai/config.json\",\n}\n";
    let path = env.write("work/opencode.jsonc", original);
    let (code, envelope) = env.json(&["adopt", "opencode", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"]["files"][0]["path"],
        json!(path.display().to_string())
    );
    assert!(!env.work().join("opencode.json").exists());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("// the project's own") && text.contains("\"hcp\""),
        "{text}"
    );
    let (code, _) = env.json(&["adopt", "opencode", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    // Neither there: opencode.json is made.
    let env = TestEnv::new();
    let (code, _) = env.json(&["adopt", "opencode", "--write", "--yes"]);
    assert_eq!(code, 0);
    assert!(env.work().join("opencode.json").exists());
}
