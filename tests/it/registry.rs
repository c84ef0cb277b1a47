//! `server.json` (the MCP Registry's description of hcpx, in the repository root)
//! stays true of this build: its version is the crate's and the server's, its
//! description the crate's, its package a stdio server of this version, and each
//! variable it names one hcpx reads. Its validity against the registry's schema is
//! tests/schemas/validate.py's (with the schema kept in tests/schemas/). Also
//! `hcpx adopt plugin`: the folder it writes, idempotent and removable.

use serde_json::{Value, json};

use crate::common::TestEnv;
use crate::mcp::Process;

fn server_json() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("server.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn server_json_is_true_of_this_build() {
    let server = server_json();
    let version = env!("CARGO_PKG_VERSION");
    let schema: Value = serde_json::from_str(include_str!(
        "../schemas/mcp-registry-2025-12-11-server.schema.json"
    ))
    .unwrap();
    assert_eq!(
        server["$schema"], schema["$id"],
        "the schema kept in tests/schemas/"
    );
    assert_eq!(server["version"], json!(version));
    assert_eq!(server["description"], json!(env!("CARGO_PKG_DESCRIPTION")));
    assert_eq!(server["title"], json!("hcpx"));
    let packages = server["packages"].as_array().unwrap();
    assert_eq!(packages.len(), 1);
    let package = &packages[0];
    // A Rust program's package: an MCP Bundle of the binary, on the release of
    // this very version.
    assert_eq!(package["registryType"], json!("mcpb"));
    assert_eq!(package["version"], json!(version));
    assert_eq!(
        package["identifier"],
        json!(format!(
            "https://github.com/hcpx/hcpx/releases/download/v{version}/hcpx-{version}-linux-x86_64.mcpb"
        ))
    );
    assert_eq!(package["transport"], json!({ "type": "stdio" }));
    let names: Vec<&str> = package["environmentVariables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variable| variable["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["HCP_HOME"]);

    // HCP_HOME is where hcpx keeps its state.
    let env = TestEnv::new();
    let (code, _) = env.json(&["policy", "set", "transit.plan", "deny"]);
    assert_eq!(code, 0);
    assert!(env.home().join("policy.json").exists());
    // The server says the same name and version over MCP.
    let mut process = Process::start(&env);
    process.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
    let reply = process.until(1);
    assert_eq!(
        reply[0]["result"]["serverInfo"]["name"], server["title"],
        "{reply:?}"
    );
    assert_eq!(reply[0]["result"]["serverInfo"]["version"], server["version"]);
    process.close();
}

/// `adopt plugin` writes the folder (the format's checks are validate.py's), a
/// second run changes nothing, a file hcpx did not write is refused, and
/// `--remove` takes every file out, the packs' skills too, and the folder.
#[test]
fn adopt_plugin_writes_a_folder_it_can_take_away() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["adopt", "plugin", "--pack-skills", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    let root = env.work().join("hcpx-plugin");
    for file in [
        "plugin.json",
        "mcp.json",
        "bin/hcpx",
        "skills/hcpx/SKILL.md",
        "skills/transit/SKILL.md",
    ] {
        assert!(root.join(file).is_file(), "{file}: {envelope}");
    }
    let mcp: Value = serde_json::from_str(&std::fs::read_to_string(root.join("mcp.json")).unwrap()).unwrap();
    assert_eq!(
        mcp["mcpServers"]["hcp"],
        json!({ "type": "stdio", "command": "./bin/hcpx", "args": ["mcp"],
                "env": { "HCP_HOME": env.home().display().to_string() } })
    );
    let script = std::fs::read_to_string(root.join("bin/hcpx")).unwrap();
    assert!(
        script.ends_with(&format!("exec {} \"$@\"\n", crate::common::BIN)),
        "{script}"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(root.join("bin/hcpx")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o755);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("plugin.json")).unwrap()).unwrap();
    assert_eq!(manifest["version"], json!(env!("CARGO_PKG_VERSION")));
    let (_, envelope) = env.json(&["adopt", "plugin", "--pack-skills", "--write", "--yes"]);
    assert_eq!(envelope["data"]["changed"], json!(false), "{envelope}");
    // A plugin.json of the person's in another folder is refused, not replaced.
    let mine = env.write("work/theirs/plugin.json", "{\"name\": \"theirs\"}\n");
    let (code, envelope) = env.json(&["adopt", "plugin", "--dir", "theirs", "--write", "--yes"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["next"],
        json!("hcpx adopt plugin --dir theirs --write --force")
    );
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        "{\"name\": \"theirs\"}\n"
    );
    // --remove, without --pack-skills: every file adopt wrote there goes.
    let (code, envelope) = env.json(&["adopt", "plugin", "--remove", "--write", "--yes"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(!root.exists(), "{envelope}");
    // Flags of a host's configuration mean nothing here, and the reverse.
    for args in [
        &["adopt", "plugin", "--scope", "user"][..],
        &["adopt", "plugin", "--native"],
        &["adopt", "claude-code", "--dir", "x"],
        &["adopt", "claude-code", "--pack-skills"],
    ] {
        let (code, envelope) = env.json(args);
        assert_eq!(code, 2, "{args:?}: {envelope}");
        assert_eq!(
            envelope["error"]["reason"],
            json!("invalid_arguments"),
            "{args:?}"
        );
    }
}
