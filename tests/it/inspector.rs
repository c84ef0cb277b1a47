//! MCP Inspector's CLI (`@modelcontextprotocol/inspector`, pinned in
//! tests/interop/node/, installed under target/interop-node by scripts/test.sh), a
//! client nobody here wrote, on `hcpx mcp` over stdio and HTTP: it lists the skills
//! through the skills extension and checks each against the extension's rules and
//! digests (`--verify`), and on protocol 2026-07-28 it takes a long call as a task
//! and polls it to its result (the minute-long run is in `mcp_tasks`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{HttpServer, TestEnv, require};

/// Where scripts/test.sh installs the pinned Inspector.
const LAUNCHER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/target/interop-node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
);

/// The Inspector's CLI and the `node` that runs it.
pub(crate) struct Inspector {
    node: PathBuf,
}

/// The Inspector, or `None` (a skip; a failure under CI) when it or `node` is missing.
pub(crate) fn available() -> Option<Inspector> {
    let node = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("node"))
            .find(|node| node.is_file())
    });
    let found = node.filter(|_| Path::new(LAUNCHER).is_file());
    if !require(
        found.is_some(),
        "node and MCP Inspector's CLI (scripts/test.sh installs it under target/interop-node)",
    ) {
        return None;
    }
    found.map(|node| Inspector { node })
}

impl Inspector {
    /// `mcp-inspector --cli ARGS`, against `hcpx mcp` on stdio (`http` None) or
    /// the HTTP server, with `env`'s home; its exit code and stdout.
    fn run(&self, env: &TestEnv, http: Option<&HttpServer>, args: &[&str]) -> (i32, String) {
        let home = env.home().display().to_string();
        let url = http.map(|http| format!("http://{}/mcp", http.loopback()));
        let mut words = vec![LAUNCHER, "--cli", "--format", "json"];
        words.extend_from_slice(args);
        let hcp_home = format!("HCP_HOME={home}");
        let path = format!("PATH={}", env.path);
        match &url {
            Some(url) => words.extend(["--transport", "http", "--server-url", url.as_str()]),
            None => words.extend([
                "-e",
                hcp_home.as_str(),
                "-e",
                path.as_str(),
                crate::common::BIN,
                "mcp",
            ]),
        }
        let output = env.command_of(&self.node, &words).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("Error: Cannot find module"), "{stderr}");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned() + &stderr,
        )
    }
}

/// The Inspector runs the 65 s command on protocol 2026-07-28: it gets a task and
/// polls it past the minute its SDK waits for a plain result.
pub(crate) fn long_task(inspector: &Inspector, env: &TestEnv, http: Option<&HttpServer>) {
    let arguments = json!({ "argv": crate::mcp_tasks::LONG_ARGV }).to_string();
    let (code, output) = inspector.run(
        env,
        http,
        &[
            "--protocol-era",
            "modern",
            "--method",
            "tools/call",
            "--tool-name",
            "hcp",
            "--tool-args-json",
            &arguments,
        ],
    );
    assert_eq!(code, 0, "{output}");
    let line = output.lines().next().unwrap_or_default();
    let result: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("{output}"));
    assert_eq!(result["result"]["isError"], json!(false), "{output}");
    assert_eq!(
        result["result"]["structuredContent"]["stdout"],
        json!("sleeping 65\n"),
        "{output}"
    );
}

#[test]
fn the_inspector_verifies_every_skill_over_stdio_and_http() {
    let Some(inspector) = available() else {
        return;
    };
    let env = TestEnv::new();
    let http = HttpServer::start(&env, "127.0.0.1:0", &[]);
    for over in [None, Some(&http)] {
        for era in ["legacy", "modern"] {
            let (code, output) = inspector.run(
                &env,
                over,
                &[
                    "--protocol-era",
                    era,
                    "--method",
                    "skills/list",
                    "--verify",
                    "--require-digests",
                ],
            );
            assert_eq!(code, 0, "{era}: {output}");
            let reports: Vec<Value> = output
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect();
            let verified: Vec<(&str, &str, usize)> = reports
                .iter()
                .map(|report| {
                    (
                        report["uri"].as_str().unwrap(),
                        report["outcome"].as_str().unwrap(),
                        report["files"].as_array().unwrap().len(),
                    )
                })
                .collect();
            assert_eq!(
                verified,
                [
                    ("skill://git/SKILL.md", "verified", 2),
                    ("skill://jq/SKILL.md", "verified", 2),
                    ("skill://sqlite/SKILL.md", "verified", 2),
                    ("skill://transit/SKILL.md", "verified", 2),
                ],
                "{era}: {output}"
            );
            for report in &reports {
                assert_eq!(report["conformance"], json!([]), "{report}");
                assert_eq!(report["frontmatter"], json!([]), "{report}");
            }
        }
    }
}
