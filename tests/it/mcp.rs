//! MCP: in process (an rmcp client over `tokio::io::duplex`) and against `hcpx mcp`
//! as a real child process speaking raw JSON-RPC lines.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ReadResourceRequestParams, Request,
    ResourceContents,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::common::{TestEnv, pids_of};

/// A client that answers elicitation, or a plain one that declares none.
#[derive(Clone, Default)]
pub(crate) struct Client {
    pub(crate) elicit: Option<bool>,
    /// Declares the tasks extension.
    pub(crate) tasks: bool,
    /// The messages of the elicitations asked.
    pub(crate) asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// How many `notifications/resources/list_changed` arrived.
    pub(crate) list_changed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Client {
    /// A client that declares the tasks extension.
    pub(crate) fn with_tasks() -> Self {
        Self {
            tasks: true,
            ..Self::default()
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = match self.elicit {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        if self.tasks {
            capabilities.extensions = ClientCapabilities::builder().enable_tasks().build().extensions;
        }
        ClientConfig::new(capabilities, Implementation::new("hcpx-tests", "0"))
    }

    async fn on_resource_list_changed(&self, _ctx: rmcp::service::NotificationContext<RoleClient>) {
        self.list_changed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(
                serde_json::to_value(&request).unwrap()["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
        Ok(if self.elicit == Some(true) {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "confirm": true }))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        })
    }
}

pub(crate) fn context(env: &TestEnv) -> hcpx::Context {
    let vars = vec![
        ("PATH".to_owned(), env.path.clone()),
        (
            "HOME".to_owned(),
            env.root.path().join("user").display().to_string(),
        ),
        ("HCP_HOME".to_owned(), env.home().display().to_string()),
    ];
    hcpx::Context::new(vars.into_iter().chain(env.extra_env.clone()), env.work(), false).unwrap()
}

pub(crate) async fn connect(
    env: &TestEnv,
    client: Client,
    read_only: bool,
) -> RunningService<RoleClient, Client> {
    let ctx = context(env);
    let options = hcpx::mcp::Options::from_context(&ctx, read_only);
    let server = hcpx::mcp::Server::new(ctx, options);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let calls = crate::common::calls_here();
    tokio::spawn(async move {
        let _calls = calls;
        let (read, write) = tokio::io::split(server_io);
        hcpx::mcp::serve(server, read, write).await
    });
    client.serve(client_io).await.unwrap()
}

pub(crate) async fn call(client: &RunningService<RoleClient, Client>, arguments: Value) -> CallToolResult {
    let arguments = arguments.as_object().unwrap().clone();
    client
        .call_tool(CallToolRequestParams::new("hcp").with_arguments(arguments))
        .await
        .unwrap()
}

pub(crate) fn envelope(result: &CallToolResult) -> &Value {
    result.structured_content.as_ref().unwrap()
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

pub(crate) fn probe_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    env
}

#[tokio::test]
async fn lists_the_one_tool_and_runs_argv_and_args() {
    let env = TestEnv::new();
    let client = connect(&env, Client::default(), false).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(
        serde_json::to_value(&tools[0]).unwrap(),
        serde_json::to_value(hcpx::mcp::tool(false)).unwrap()
    );

    let result = call(
        &client,
        json!({ "argv": ["exec", "transit", "plan", "--", "from=Westgate", "to=North Park", "at=08:00"] }),
    )
    .await;
    assert_eq!(result.is_error, Some(false));
    let found = envelope(&result);
    assert_eq!(found["ok"], json!(true));
    assert_eq!(found["argv"][0], json!("--json"), "--json is implied");
    assert_eq!(found["data"]["arrive"], json!("08:31"));
    assert!(
        text(&result).contains("\"arrive\":\"08:31\""),
        "{}",
        text(&result)
    );

    let result = call(&client, json!({ "args": "search journey", "unknown": true })).await;
    assert_eq!(envelope(&result)["data"]["results"][0]["id"], json!("transit"));
    assert!(text(&result).starts_with("transit  1.0.0"), "{}", text(&result));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_refusal_reason_is_reachable() {
    let env = probe_env();
    env.install_fixture("locked", "locked");
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"probe.env","decision":"deny"}]}"#,
    );
    let client = connect(&env, Client::default(), false).await;
    let cases = [
        (
            json!({ "argv": ["search"], "args": "search" }),
            "invalid_arguments",
        ),
        (json!({ "args": "search a;b" }), "metacharacter"),
        (json!({ "argv": ["skill", "nosuch"] }), "unknown_pack"),
        (json!({ "argv": ["exec", "probe", "nosuch"] }), "unknown_command"),
        (
            json!({ "argv": ["exec", "probe", "args", "--", "nope=1"] }),
            "unknown_param",
        ),
        (json!({ "argv": ["exec", "probe", "write"] }), "missing_param"),
        (
            json!({ "argv": ["exec", "probe", "args", "--", "count=x"] }),
            "invalid_param",
        ),
        (json!({ "argv": ["exec", "probe", "env"] }), "denied_by_policy"),
        (
            json!({ "argv": ["exec", "probe", "write", "--", "target=x"] }),
            "needs_confirmation",
        ),
        (
            json!({ "argv": ["bind", "probe", "PROBE_TOKEN"] }),
            "access_refused",
        ),
        (
            json!({ "argv": ["policy", "set", "probe.*", "allow"] }),
            "access_refused",
        ),
        (json!({ "argv": ["mcp"] }), "access_refused"),
        (json!({ "argv": ["serve"] }), "access_refused"),
        (json!({ "argv": ["exec", "locked", "open"] }), "unbound"),
        (json!({ "args": "x".repeat(1024 * 1024 + 1) }), "too_large"),
        (
            json!({ "argv": ["exec", "probe", "sleep", "--timeout-ms", "300", "--", "seconds=5"] }),
            "timeout",
        ),
        (json!({ "argv": ["output", "out-999"] }), "unknown_output"),
    ];
    for (arguments, reason) in cases {
        let result = call(&client, arguments.clone()).await;
        assert_eq!(result.is_error, Some(true), "{arguments}");
        assert_eq!(
            envelope(&result)["error"]["reason"],
            json!(reason),
            "{arguments}: {}",
            text(&result)
        );
        assert!(
            envelope(&result)["next"]
                .as_str()
                .is_some_and(|next| !next.is_empty()),
            "{reason}: every refusal says what to do next"
        );
        assert!(
            text(&result).starts_with(&format!("error ({reason}):")),
            "{}",
            text(&result)
        );
    }
    // not_runnable: a pack whose program is not on PATH.
    let mut bare = TestEnv::new();
    bare.path = "/nonexistent".to_owned();
    let client = connect(&bare, Client::default(), false).await;
    let result = call(
        &client,
        json!({ "argv": ["exec", "jq", "filter", "--", "filter=.", "file=x"] }),
    )
    .await;
    assert_eq!(envelope(&result)["error"]["reason"], json!("not_runnable"));
    // declined: the host's user says no.
    let client = connect(
        &env,
        Client {
            elicit: Some(false),
            ..Client::default()
        },
        false,
    )
    .await;
    let result = call(
        &client,
        json!({ "argv": ["exec", "probe", "write", "--", "target=x"] }),
    )
    .await;
    assert_eq!(envelope(&result)["error"]["reason"], json!("declined"));
}

#[tokio::test]
async fn confirmation_by_flag_and_by_elicitation() {
    let env = probe_env();
    std::fs::create_dir_all(env.work().join("out")).unwrap();
    let plain = connect(&env, Client::default(), false).await;
    // `confirm` returns the plan; `confirm: true` on the same argv runs it.
    let argv = json!(["exec", "probe", "write", "--", "target=out/a.txt"]);
    let result = call(&plain, json!({ "argv": argv })).await;
    assert_eq!(envelope(&result)["data"]["child"][1], json!("write"));
    assert!(text(&result).contains("plan: {"), "{}", text(&result));
    // The text says what would run, as a person would be asked.
    let cwd = env.work().display().to_string();
    assert!(
        text(&result).contains(&format!(
            "Run probe write (write) in {cwd}?\n  target=out/a.txt\n"
        )),
        "{}",
        text(&result)
    );
    assert!(!env.work().join("out/a.txt").exists());
    let result = call(&plain, json!({ "argv": argv, "confirm": true })).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert!(env.work().join("out/a.txt").exists());
    // `confirm-human` never takes `confirm: true`...
    let result = call(
        &plain,
        json!({ "argv": ["exec", "probe", "wipe"], "confirm": true }),
    )
    .await;
    assert_eq!(envelope(&result)["error"]["reason"], json!("needs_confirmation"));
    // ...but the host's user can give it through elicitation.
    let client = Client {
        elicit: Some(true),
        ..Client::default()
    };
    let asked = client.asked.clone();
    let eliciting = connect(&env, client, false).await;
    let result = call(&eliciting, json!({ "argv": ["exec", "probe", "wipe"] })).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(envelope(&result)["stdout"], json!("wiped\n"));
    // The person saw what would run: every parameter, long ones shortened, none able
    // to draw a line of its own.
    let long = "x".repeat(200);
    let target = format!("target=out/{long}\nfake line");
    let result = call(
        &eliciting,
        json!({ "argv": ["exec", "probe", "write", "--", target] }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let asked = asked.lock().unwrap().clone();
    assert!(
        asked[0].starts_with(&format!(
            "Run probe wipe (destructive) in {cwd}? (confirm-human)\n"
        )),
        "{asked:?}"
    );
    let shown = format!("{}… (214 bytes)", &format!("out/{long}")[..120]);
    assert!(
        asked[1].starts_with(&format!(
            "Run probe write (write) in {cwd}? (confirm)\n  target={shown}\n"
        )),
        "{asked:?}"
    );
}

#[tokio::test]
async fn read_only_server_denies_everything_but_reads() {
    let env = probe_env();
    let client = connect(
        &env,
        Client {
            elicit: Some(true),
            ..Client::default()
        },
        true,
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].annotations.as_ref().unwrap().read_only_hint, Some(true));
    // Whatever writes is denied, confirmed or not and whoever could confirm it: a
    // pack's write and destructive commands, and hcpx's own that change files.
    for argv in [
        json!(["exec", "probe", "write", "--", "target=x"]),
        json!(["exec", "probe", "wipe"]),
        json!(["exec", "probe", "wipe", "--dry-run"]),
        json!(["install", "transit"]),
        json!(["uninstall", "probe"]),
        json!(["pack", "new", "fresh"]),
    ] {
        let result = call(&client, json!({ "argv": argv, "confirm": true })).await;
        let found = envelope(&result);
        assert_eq!(
            found["error"]["reason"],
            json!("denied_by_policy"),
            "{argv}: {found}"
        );
        assert_eq!(found["spawned"], json!(false), "{argv}: {found}");
    }
    // What only a person may do stays refused.
    for argv in [
        json!(["adopt", "mcp", "--write"]),
        json!(["policy", "set", "probe.wipe", "allow"]),
        json!(["bind", "probe", "KEY"]),
    ] {
        let result = call(&client, json!({ "argv": argv, "confirm": true })).await;
        let found = envelope(&result);
        assert_eq!(
            found["error"]["reason"],
            json!("access_refused"),
            "{argv}: {found}"
        );
    }
    // Nothing was written: no file, no pack, no host file.
    for path in ["x", "fresh", ".hcp/mcp.json"] {
        assert!(!env.work().join(path).exists(), "{path}");
    }
    assert!(env.home().join("packs/probe").is_dir());
    assert!(!env.home().join("packs/transit").exists());
    let result = call(&client, json!({ "argv": ["exec", "probe", "args"] })).await;
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn a_5_mb_argument_is_answered_cleanly() {
    let env = probe_env();
    let client = connect(&env, Client::default(), false).await;
    let big = format!("text={}", "x".repeat(5 * 1024 * 1024));
    let result = call(&client, json!({ "argv": ["exec", "probe", "args", "--", big] })).await;
    assert_eq!(envelope(&result)["error"]["reason"], json!("invalid_param"));
    assert!(text(&result).len() < 1024, "the refusal does not echo the value");
    // The session goes on.
    let result = call(&client, json!({ "argv": ["search", "journey"] })).await;
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn truncated_output_is_pageable_by_command_and_resource() {
    let env = probe_env();
    let client = connect(&env, Client::default(), false).await;
    let result = call(
        &client,
        json!({ "argv": ["exec", "probe", "flood", "--", "mib=1"] }),
    )
    .await;
    let found = envelope(&result).clone();
    assert_eq!(found["outputTruncated"], json!(true));
    assert_eq!(
        found["truncation"]["stdout"],
        json!({ "shown": 32768, "total": 1_048_576 })
    );
    let id = found["outputId"].as_str().unwrap().to_owned();
    assert!(found["stdout"].as_str().unwrap().len() < 33 * 1024);
    let page = call(
        &client,
        json!({ "argv": ["output", &id, "--offset", "1048000", "--limit", "1000"] }),
    )
    .await;
    let data = &page.structured_content.as_ref().unwrap()["data"];
    assert_eq!(
        (
            data["offset"].clone(),
            data["length"].clone(),
            data["total"].clone()
        ),
        (json!(1_048_000), json!(576), json!(1_048_576))
    );
    assert_eq!(data["nextOffset"], Value::Null);
    let resource = client
        .read_resource(ReadResourceRequestParams::new(format!("hcp://output/{id}")))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &resource.contents[0] else {
        panic!("not text")
    };
    assert_eq!(text.len(), 1_048_576);
}

/// Through the tool: an escaped token is redacted in `structuredContent` (stdout and
/// data) and the text; a token cut at the capture limit leaves no prefix in the
/// paged output or the resource.
#[tokio::test]
async fn escaped_and_cut_secrets_never_reach_the_host() {
    let env = probe_env();
    let secret = "tok-SECRET-9f8e7d6c";
    env.bind("probe", "PROBE_TOKEN", secret);
    let client = connect(&env, Client::default(), false).await;
    let result = call(&client, json!({ "argv": ["exec", "probe", "jsonsecret"] })).await;
    let found = envelope(&result);
    assert_eq!(found["data"]["token"], json!("[REDACTED:PROBE_TOKEN]"), "{found}");
    assert!(!serde_json::to_string(&result).unwrap().contains(secret));
    assert!(
        !text(&result).contains("\\u0074\\u006f\\u006b"),
        "{}",
        text(&result)
    );
    let result = call(&client, json!({ "argv": ["exec", "probe", "secretcut"] })).await;
    let found = envelope(&result).clone();
    let id = found["outputId"].as_str().unwrap().to_owned();
    // The capture kept 8 MiB less the token's first 5 bytes, which are cut too.
    let kept = 8 * 1024 * 1024 - 5;
    let offset = (kept - 100).to_string();
    let page = call(&client, json!({ "argv": ["output", &id, "--offset", &offset] })).await;
    let data = &page.structured_content.as_ref().unwrap()["data"];
    assert_eq!(data["total"], json!(kept));
    assert_eq!(data["text"], json!("x".repeat(100)));
    let resource = client
        .read_resource(ReadResourceRequestParams::new(format!("hcp://output/{id}")))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &resource.contents[0] else {
        panic!("not text")
    };
    // A whole capture is more than a message may hold: the resource gives its head
    // and says how to read on; nowhere a secret.
    assert!(text.ends_with("\"--offset\", \"N\"]}]\n") && !text.contains("tok-"));
}

#[tokio::test]
async fn fifty_concurrent_calls_and_a_slow_exec_never_blocks_a_search() {
    let env = probe_env();
    let client = connect(&env, Client::default(), false).await;
    let peer = client.peer().clone();
    let slow = {
        let peer = peer.clone();
        tokio::spawn(async move {
            let arguments = json!({ "argv": ["exec", "probe", "sleep", "--", "seconds=3"] })
                .as_object()
                .unwrap()
                .clone();
            peer.call_tool(CallToolRequestParams::new("hcp").with_arguments(arguments))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let calls: Vec<_> = (0..50)
        .map(|i| {
            let peer = peer.clone();
            tokio::spawn(async move {
                let argv = if i % 2 == 0 {
                    json!(["search", "journey"])
                } else {
                    json!(["exec", "probe", "args", "--", format!("count={i}")])
                };
                let arguments = json!({ "argv": argv }).as_object().unwrap().clone();
                peer.call_tool(CallToolRequestParams::new("hcp").with_arguments(arguments))
                    .await
            })
        })
        .collect();
    for (i, handle) in calls.into_iter().enumerate() {
        let result = handle.await.unwrap().unwrap();
        assert_eq!(result.is_error, Some(false), "call {i}");
        if i % 2 == 1 {
            assert_eq!(
                result.structured_content.as_ref().unwrap()["stdout"],
                json!(format!("[--count={i}]\n[--]\n"))
            );
        }
    }
    assert!(
        started.elapsed() < Duration::from_millis(2800),
        "blocked behind the slow exec: {:?}",
        started.elapsed()
    );
    assert_eq!(slow.await.unwrap().unwrap().is_error, Some(false));
}

#[tokio::test]
async fn cancellation_kills_the_running_child() {
    let env = probe_env();
    let client = connect(&env, Client::default(), false).await;
    let arguments = json!({ "argv": ["exec", "probe", "sleep", "--", "seconds=53"] })
        .as_object()
        .unwrap()
        .clone();
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(
                CallToolRequestParams::new("hcp").with_arguments(arguments),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids_of("sleep 53").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!pids_of("sleep 53").is_empty(), "the child started");
    handle.cancel(Some("test".into())).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(4);
    while !pids_of("sleep 53").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        pids_of("sleep 53"),
        Vec::<String>::new(),
        "the child and its grandchild are gone"
    );
}

#[tokio::test]
async fn resources_catalog_help_skills_and_template() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = TestEnv::new();
    let client = connect(&env, Client::default(), false).await;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|resource| resource.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "hcp://catalog",
            "hcp://help",
            "hcp://skill/git",
            "hcp://skill/jq",
            "hcp://skill/sqlite",
            "hcp://skill/transit",
            // The same skills through the skills extension (tests/it/mcp_skills.rs).
            "skill://git/SKILL.md",
            "skill://jq/SKILL.md",
            "skill://sqlite/SKILL.md",
            "skill://transit/SKILL.md"
        ]
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    let templates: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(templates, ["hcp://skill/{pack_id}", "hcp://output/{id}"]);
    for uri in uris {
        let read = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
            panic!("{uri}")
        };
        assert!(!text.is_empty(), "{uri}");
        if uri == "hcp://catalog" {
            let catalog: Value = serde_json::from_str(text).unwrap();
            let packs = catalog["packs"].as_array().unwrap();
            // The four built-ins, then the catalog's packs, not installed (and so
            // without a skill resource above).
            assert_eq!(packs.len(), 4 + crate::catalog::catalog_ids().len());
            assert_eq!(catalog["packs"][3]["ready"], json!(true));
            assert!(
                packs[4..]
                    .iter()
                    .all(|pack| pack["installed"] == json!(false) && pack["source"] == json!("catalog")),
                "{catalog}"
            );
        }
        if uri == "hcp://skill/transit" {
            assert!(text.contains("## Command reference"), "{text}");
        }
    }
    assert!(
        client
            .read_resource(ReadResourceRequestParams::new("hcp://skill/nosuch"))
            .await
            .is_err()
    );
    assert!(
        client
            .read_resource(ReadResourceRequestParams::new("hcp://nope"))
            .await
            .is_err()
    );
}

pub(crate) use crate::mcp_modern::{connect_modern, hears_list_changed, listen_for_list_changes, params};
pub(crate) use crate::mcp_process::Process;
