//! The MCP skills extension (`io.modelcontextprotocol/skills`): in process with
//! rmcp's client, and against `hcpx mcp` as a child process over stdio and HTTP.
//! Each entry is checked against the extension's text: the whole value, every
//! file's size and SHA-256 digest against the bytes `resources/read` gives, and the
//! front matter against the `SKILL.md` it describes.

use std::time::{Duration, Instant};

use rmcp::model::{
    GetSkillRequestParams, ReadResourceRequestParams, ResourceContents, Skill, SkillResource, SkillResources,
};
use serde_json::{Value, json};

use crate::common::{HttpServer, TestEnv};
use crate::mcp::{Client, Process, call, connect, envelope, text};

/// The built-in packs, each a skill from the start.
const BUILT_IN: [&str; 4] = ["git", "jq", "sqlite", "transit"];

/// What the extension says `transit`'s entry is: its `SKILL.md` as written and the
/// reference `hcpx skill` generates, each with its digest and size, and the front
/// matter as YAML reads it.
fn transit_entry(env: &TestEnv) -> Value {
    let skill = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/packs/transit/SKILL.md")).unwrap();
    let output = env.command(&["--json", "skill", "transit"]).output().unwrap();
    let data: Value = serde_json::from_slice(&output.stdout).unwrap();
    let reference = data["data"]["reference"].as_str().unwrap().as_bytes().to_vec();
    json!({
        "uri": "skill://transit/SKILL.md",
        "frontmatter": {
            "name": "transit",
            "description": "Plans journeys on the offline demo transit network of the city of Riverton (22 stops, 4 \
                            lines), lists its stops and lines, and shows departures. Use it when asked how to get \
                            from one stop to another, when the next train leaves, or which lines serve a stop. It \
                            knows only this demo network, not real-world transit."
        },
        "resources": [
            { "uri": "skill://transit/SKILL.md", "digest": rmcp::model::sha256_digest(&skill), "size": skill.len() },
            {
                "uri": "skill://transit/references/commands.md",
                "digest": rmcp::model::sha256_digest(&reference),
                "size": reference.len()
            }
        ]
    })
}

/// The front matter of a `SKILL.md` read here, apart from hcpx's reading of it, as
/// a host would: every pack this test serves writes it as plain one-line
/// `key: value` pairs (checked), which YAML reads as those strings.
fn front_matter(text: &str) -> Value {
    let rest = text.strip_prefix("---\n").unwrap();
    let end = rest.find("\n---\n").unwrap();
    rest[..end]
        .lines()
        .map(|line| {
            let (key, value) = line.split_once(": ").unwrap();
            assert!(
                !value.starts_with(['"', '\'', '>', '|', '[', '{']) && !value.contains(": "),
                "not a plain scalar: {line}"
            );
            (key.to_owned(), Value::String(value.trim().to_owned()))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Checks a skill's files as the extension asks a host to: each file read is the
/// size and digest its entry says, and the `SKILL.md` front matter is the entry's.
fn verify(skill: &Skill, mut read: impl FnMut(&str) -> String) {
    let SkillResources::Files(files) = &skill.resources else {
        panic!("{} has no digests", skill.uri)
    };
    for file in files {
        let bytes = read(&file.uri);
        SkillResource::verify(file, bytes.as_bytes()).unwrap();
        if file.uri == skill.uri {
            assert_eq!(
                front_matter(&bytes),
                serde_json::to_value(&skill.frontmatter).unwrap(),
                "{}",
                skill.uri
            );
        }
    }
}

#[tokio::test]
async fn skills_are_listed_got_and_read_as_the_extension_says_and_follow_installs() {
    let env = TestEnv::new();
    let client = Client::default();
    let changes = client.list_changed.clone();
    let session = connect(&env, client, false).await;
    let info = session.peer_info().unwrap();
    assert_eq!(
        serde_json::to_value(&info.capabilities.extensions).unwrap(),
        json!({ "io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {} })
    );

    let skills = session.list_all_skills().await.unwrap();
    let uris: Vec<String> = skills.iter().map(|skill| skill.uri.clone()).collect();
    let built_in: Vec<String> = BUILT_IN
        .iter()
        .map(|id| format!("skill://{id}/SKILL.md"))
        .collect();
    assert_eq!(uris, built_in);
    assert_eq!(serde_json::to_value(&skills[3]).unwrap(), transit_entry(&env));
    for skill in &skills {
        let got = session
            .get_skill(GetSkillRequestParams::new(skill.uri.clone()))
            .await
            .unwrap();
        assert_eq!(&got.skill, skill);
        let mut contents = Vec::new();
        if let SkillResources::Files(files) = &skill.resources {
            for file in files {
                let read = session
                    .read_resource(ReadResourceRequestParams::new(file.uri.clone()))
                    .await
                    .unwrap();
                let ResourceContents::TextResourceContents { text, mime_type, .. } = &read.contents[0] else {
                    panic!("{}", file.uri)
                };
                assert_eq!(mime_type.as_deref(), Some("text/markdown"));
                contents.push((file.uri.clone(), text.clone()));
            }
        }
        verify(skill, |uri| {
            contents
                .iter()
                .find(|(file, _)| file == uri)
                .map(|(_, text)| text.clone())
                .unwrap()
        });
    }

    // Each SKILL.md is a resource as the extension describes it; the older
    // `hcp://skill/` resources stay for clients that know no skills.
    let resources = session.list_all_resources().await.unwrap();
    let transit = resources
        .iter()
        .find(|resource| resource.uri == "skill://transit/SKILL.md")
        .unwrap();
    assert_eq!(transit.name, "transit");
    assert_eq!(transit.mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(
        transit.description.as_deref(),
        skills[3].frontmatter.description.as_str().into()
    );
    assert!(
        resources
            .iter()
            .any(|resource| resource.uri == "hcp://skill/transit")
    );

    // What is not served: -32602, as the extension says.
    for uri in ["skill://rg/SKILL.md", "skill://nosuch/SKILL.md"] {
        let error = session
            .get_skill(GetSkillRequestParams::new(uri))
            .await
            .unwrap_err();
        assert!(format!("{error}").contains("-32602"), "{uri}: {error}");
    }
    assert!(
        session
            .read_resource(ReadResourceRequestParams::new("skill://transit/hcp.json"))
            .await
            .is_err()
    );

    // A catalog pack is a skill once installed, and no more once uninstalled; each
    // change is announced as a change of the resources.
    let count = || changes.load(std::sync::atomic::Ordering::SeqCst);
    let installed = call(&session, json!({ "argv": ["install", "rg"], "confirm": true })).await;
    assert_eq!(installed.is_error, Some(false), "{}", text(&installed));
    let deadline = Instant::now() + Duration::from_secs(3);
    while count() < 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(count(), 1);
    let skills = session.list_all_skills().await.unwrap();
    let rg = skills
        .iter()
        .find(|skill| skill.uri == "skill://rg/SKILL.md")
        .unwrap();
    assert_eq!(rg.frontmatter.name, "rg");
    let got = session
        .get_skill(GetSkillRequestParams::new("skill://rg/SKILL.md"))
        .await
        .unwrap();
    assert_eq!(&got.skill, rg);
    let removed = call(&session, json!({ "argv": ["uninstall", "rg"], "confirm": true })).await;
    assert_eq!(envelope(&removed)["ok"], json!(true), "{}", text(&removed));
    let deadline = Instant::now() + Duration::from_secs(3);
    while count() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(count(), 2);
    let uris: Vec<String> = session
        .list_all_skills()
        .await
        .unwrap()
        .into_iter()
        .map(|skill| skill.uri)
        .collect();
    assert_eq!(uris, built_in);
}

/// The skills list and a skill's files read from the real binary, the way a host
/// does it: one JSON-RPC request at a time, with `request(method, params)`.
fn check_over_the_wire(env: &TestEnv, mut request: impl FnMut(&str, Value) -> Value) {
    let listed = request("skills/list", json!({}));
    let skills: Vec<Skill> = serde_json::from_value(listed["result"]["skills"].clone()).unwrap();
    let uris: Vec<&str> = skills.iter().map(|skill| skill.uri.as_str()).collect();
    assert_eq!(
        uris,
        BUILT_IN
            .map(|id| format!("skill://{id}/SKILL.md"))
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    assert_eq!(listed["result"]["skills"][3], transit_entry(env));
    for skill in &skills {
        verify(skill, |uri| {
            let read = request("resources/read", json!({ "uri": uri }));
            read["result"]["contents"][0]["text"].as_str().unwrap().to_owned()
        });
    }
    let unknown = request("skills/get", json!({ "uri": "skill://nosuch/SKILL.md" }));
    assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
}

#[test]
fn skills_over_stdio_and_http_from_the_binary() {
    let env = TestEnv::new();
    let mut stdio = Process::initialized(&env);
    let mut id = 10;
    check_over_the_wire(&env, |method, params| {
        id += 1;
        stdio.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        stdio.until(id).pop().unwrap()
    });
    let (code, _) = stdio.close();
    assert_eq!(code, 0);

    let http = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let session = http.session(&[]);
    let mut id = 10;
    check_over_the_wire(&env, |method, params| {
        id += 1;
        let response = http.post(
            &[
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
        );
        response
            .messages()
            .into_iter()
            .find(|message| message["id"] == json!(id))
            .unwrap()
    });
}
