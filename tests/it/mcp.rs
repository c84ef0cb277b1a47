//! MCP: in process (an rmcp client over `tokio::io::duplex`) and against `hcpx mcp`
//! as a real child process speaking raw JSON-RPC lines.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ReadResourceRequestParams, Request,
    ResourceContents,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::common::{BIN, TestEnv, pids_of};

/// A client that answers elicitation, or a plain one that declares none.
#[derive(Clone, Default)]
pub(crate) struct Client {
    elicit: Option<bool>,
    /// Declares the tasks extension.
    pub(crate) tasks: bool,
    /// The messages of the elicitations asked.
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
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

/// `hcpx mcp` as a real child process, driven with raw JSON-RPC lines.
pub(crate) struct Process {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: BufReader<ChildStdout>,
    /// The longest line read from the server, in bytes: one whole message.
    pub(crate) largest: usize,
}

impl Process {
    pub(crate) fn start(env: &TestEnv) -> Self {
        Self::spawn(env.command(&["mcp"]))
    }

    /// `command` (an `hcpx mcp`, or what runs one) with its stdio piped.
    pub(crate) fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            largest: 0,
        }
    }

    /// A server past `initialize` (2025-06-18) and `notifications/initialized`.
    pub(crate) fn initialized(env: &TestEnv) -> Self {
        Self::initialized_from(env.command(&["mcp"]))
    }

    /// [`Self::initialized`] for the server `command` starts.
    pub(crate) fn initialized_from(command: Command) -> Self {
        let mut server = Self::spawn(command);
        server.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
        server.until(1);
        server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        server
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Every line read until the response to `id`; each must be JSON-RPC.
    pub(crate) fn until(&mut self, id: u64) -> Vec<Value> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "stdout closed early"
            );
            self.largest = self.largest.max(line.len());
            let value: Value =
                serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
            assert_eq!(value["jsonrpc"], json!("2.0"), "{line}");
            let done = value["id"] == json!(id);
            lines.push(value);
            if done {
                return lines;
            }
        }
    }

    /// Calls the `hcp` tool with `argv` and returns the response.
    pub(crate) fn call(&mut self, id: u64, argv: Value) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "hcp", "arguments": { "argv": argv } } }));
        self.until(id).pop().unwrap()
    }

    pub(crate) fn close(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        assert!(rest.trim().is_empty(), "nothing after the last response: {rest}");
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut self.child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status.code().unwrap_or(-1), stderr)
    }
}

#[test]
fn child_process_initialize_progress_and_clean_exit() {
    let env = probe_env();
    let mut server = Process::start(&env);
    server.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
    let reply = server.until(1);
    assert_eq!(reply[0]["result"]["protocolVersion"], json!("2025-06-18"));
    assert_eq!(reply[0]["result"]["serverInfo"]["name"], json!("hcpx"));
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    server.send(
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "argv": ["exec", "probe", "sleep", "--", "seconds=3"] },
        "_meta": { "progressToken": "p1" } } }),
    );
    let lines = server.until(2);
    let progress: Vec<&Value> = lines
        .iter()
        .filter(|line| line["method"] == json!("notifications/progress"))
        .collect();
    assert!(!progress.is_empty(), "{lines:#?}");
    assert_eq!(progress[0]["params"]["progressToken"], json!("p1"));
    assert_eq!(lines.last().unwrap()["result"]["isError"], json!(false));
    let (code, _) = server.close();
    assert_eq!(code, 0);
}

/// The four ways a message grew past 9.5 MiB (escaping makes control characters
/// six times longer): a page asked for 8 MiB, the resource of a whole capture, an
/// 8 MiB view, and 1,000 words of 10 KB echoed back. Each message, measured on the
/// wire, stays under the bound and says it was trimmed.
#[test]
fn no_message_passes_9_5_mib_on_the_wire() {
    const LIMIT: usize = 9 * 1024 * 1024 + 512 * 1024;
    // 7 MiB of output: more than a message may carry.
    let seven_mib = |server: &mut Process| {
        let reply = server.call(2, json!(["exec", "probe", "controls", "--", "mib=7"]));
        let found = reply["result"]["structuredContent"].clone();
        assert_eq!(found["outputTruncated"], json!(true));
        found
    };
    let env = probe_env();
    let mut server = Process::initialized(&env);
    let found = seven_mib(&mut server);
    let id = found["outputId"].as_str().unwrap().to_owned();
    // (1) A page of 8 MiB asked for: at most 2 MiB of it as JSON, and where to go on.
    let reply = server.call(3, json!(["output", id, "--limit", "8388608"]));
    let data = &reply["result"]["structuredContent"]["data"];
    assert!(
        data["length"].as_u64().unwrap() < 400 * 1024,
        "{}",
        data["length"]
    );
    assert_eq!(data["nextOffset"], data["length"]);
    // (2) The whole capture as a resource.
    server.send(&json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/read",
        "params": { "uri": format!("hcp://output/{id}") } }));
    let reply = server.until(4).pop().unwrap();
    let text = reply["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.ends_with(&format!(
        "read on with {{\"argv\": [\"output\", \"{id}\", \"--offset\", \"N\"]}}]\n"
    )));
    // (4) 1,000 words of 10 KB, echoed in argv.
    let mut words = vec![json!("search")];
    words.extend((0..1000).map(|_| json!("w".repeat(10_000))));
    let reply = server.call(5, Value::Array(words));
    let argv = reply["result"]["structuredContent"]["argv"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        argv.last()
            .unwrap()
            .as_str()
            .unwrap()
            .ends_with("more words not shown]"),
        "{:?}",
        argv.last()
    );
    assert!(server.largest <= LIMIT, "{} bytes", server.largest);
    let largest = server.largest;
    server.close();
    // (3) A view as big as the capture.
    let env = probe_env().env("HCP_MCP_VIEW_BYTES", "8388608");
    let mut server = Process::initialized(&env);
    let found = seven_mib(&mut server);
    let stdout = found["stdout"].as_str().unwrap();
    assert!(
        stdout.ends_with("--offset\", \"N\"]}]\n"),
        "{}",
        &stdout[stdout.len() - 100..]
    );
    assert_eq!(found["truncation"]["stdout"]["total"], json!(7 * 1024 * 1024));
    assert!(server.largest <= LIMIT, "{} bytes", server.largest);
    eprintln!("largest MCP message: {} bytes", largest.max(server.largest));
    server.close();
}

/// A line that is not JSON, a lone surrogate, a message that is not MCP and a
/// 20 MiB line each get an answer from `hcpx mcp` itself, and the next request is
/// answered as ever.
#[test]
fn child_process_answers_every_bad_line_and_keeps_serving() {
    let env = probe_env();
    let mut server = Process::initialized(&env);
    let stdin = server.stdin.as_mut().unwrap();
    stdin.write_all(b"this is not json\n").unwrap();
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\\ud800\"}}\n",
        )
        .unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":17}\n")
        .unwrap();
    let big = vec![b'a'; 20 * 1024 * 1024];
    stdin.write_all(&big).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
    server.send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }));
    let lines = server.until(2);
    let errors: Vec<(Value, Value)> = lines
        .iter()
        .filter(|line| line.get("error").is_some())
        .map(|line| (line["id"].clone(), line["error"]["code"].clone()))
        .collect();
    assert_eq!(
        errors,
        [
            (Value::Null, json!(-32700)),
            (Value::Null, json!(-32700)),
            (json!(6), json!(-32600)),
            (Value::Null, json!(-32600)),
        ]
    );
    assert_eq!(lines.last().unwrap()["result"]["tools"][0]["name"], json!("hcp"));
    let (code, _) = server.close();
    assert_eq!(code, 0);
}

#[test]
fn child_process_2026_discover_flow() {
    let env = TestEnv::new();
    let mut server = Process::start(&env);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" }
    });
    server.send(
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": meta } }),
    );
    let reply = server.until(1);
    assert!(
        reply[0]["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{reply:?}"
    );
    server.send(
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "hcp", "arguments": { "argv": ["search", "journey"] }, "_meta": meta } }),
    );
    let reply = server.until(2);
    assert_eq!(
        reply[0]["result"]["structuredContent"]["data"]["results"][0]["id"],
        json!("transit")
    );
    let (code, _) = server.close();
    assert_eq!(code, 0);
}

#[test]
fn end_of_input_before_initialize_is_a_clean_exit() {
    let env = TestEnv::new();
    let server = Process::start(&env);
    let (code, stderr) = server.close();
    assert_eq!((code, stderr.as_str()), (0, ""));
}

#[test]
fn rss_at_rest_is_small() {
    let env = TestEnv::new();
    let mut server = Process::start(&env);
    server.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
    server.until(1);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let kib = |field: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in\n{status}"))
    };
    // What the server itself holds: its heap and stacks. The binary's own pages
    // (RssFile, about 18 MiB of a debug build) are shared and vary with the page
    // cache, so they are not counted; a cold cache once put VmRSS over a bound on them.
    let anonymous = kib("RssAnon:");
    assert!(anonymous < 8 * 1024, "RssAnon {anonymous} KiB\n{status}");
    assert_eq!(server.close().0, 0);
    let _ = BIN;
}

pub(crate) async fn connect_modern(env: &TestEnv, client: Client) -> RunningService<RoleClient, Client> {
    use rmcp::{ClientLifecycleMode, ClientServiceExt as _};
    let ctx = context(env);
    let options = hcpx::mcp::Options::from_context(&ctx, false);
    let server = hcpx::mcp::Server::new(ctx, options);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let calls = crate::common::calls_here();
    tokio::spawn(async move {
        let _calls = calls;
        let (read, write) = tokio::io::split(server_io);
        hcpx::mcp::serve(server, read, write).await
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    client.serve_with_lifecycle(client_io, lifecycle).await.unwrap()
}

pub(crate) fn params(argv: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("hcp").with_arguments(json!({ "argv": argv }).as_object().unwrap().clone())
}

#[tokio::test]
async fn sealed_state_confirmation_on_2026_07_28() {
    use rmcp::model::CallToolResponse;
    let env = probe_env();
    // The SDK's driver answers the InputRequiredResult through the client handler.
    let accepting = connect_modern(
        &env,
        Client {
            elicit: Some(true),
            ..Client::default()
        },
    )
    .await;
    let result = accepting
        .call_tool(params(json!(["exec", "probe", "wipe"])))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(envelope(&result)["stdout"], json!("wiped\n"));
    let declining = connect_modern(
        &env,
        Client {
            elicit: Some(false),
            ..Client::default()
        },
    )
    .await;
    let result = declining
        .call_tool(params(json!(["exec", "probe", "wipe"])))
        .await
        .unwrap();
    assert_eq!(envelope(&result)["error"]["reason"], json!("declined"));

    // One round by hand: the state is sealed, single use and bound to the argv.
    let CallToolResponse::InputRequired(asked) = accepting
        .call_tool_once(params(json!(["exec", "probe", "wipe"])))
        .await
        .unwrap()
    else {
        panic!("expected an InputRequiredResult");
    };
    let state = asked.request_state.clone().unwrap();
    assert!(asked.input_requests.as_ref().unwrap().contains_key("confirm"));
    let yes: rmcp::model::InputResponses = [(
        "confirm".to_owned(),
        json!({ "action": "accept", "content": { "confirm": true } }),
    )]
    .into();
    let retry = |argv: Value, state: String| {
        let mut request = params(argv);
        request.input_responses = Some(yes.clone());
        request.request_state = Some(state);
        request
    };
    let complete = |response: CallToolResponse| match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    };
    // Altered: one character changed.
    let mut altered = state.clone();
    let last = altered.pop().unwrap();
    altered.push(if last == 'A' { 'B' } else { 'A' });
    let result = complete(
        accepting
            .call_tool_once(retry(json!(["exec", "probe", "wipe"]), altered))
            .await
            .unwrap(),
    );
    assert_eq!(
        envelope(&result)["error"]["reason"],
        json!("needs_confirmation"),
        "{}",
        text(&result)
    );
    // Another command with this state.
    let result = complete(
        accepting
            .call_tool_once(retry(
                json!(["exec", "probe", "write", "--", "target=x"]),
                state.clone(),
            ))
            .await
            .unwrap(),
    );
    assert_eq!(envelope(&result)["error"]["reason"], json!("needs_confirmation"));
    assert!(!env.work().join("x").exists());
    // The genuine answer runs it, once.
    let result = complete(
        accepting
            .call_tool_once(retry(json!(["exec", "probe", "wipe"]), state.clone()))
            .await
            .unwrap(),
    );
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let result = complete(
        accepting
            .call_tool_once(retry(json!(["exec", "probe", "wipe"]), state))
            .await
            .unwrap(),
    );
    assert_eq!(
        envelope(&result)["error"]["reason"],
        json!("needs_confirmation"),
        "a replay is refused"
    );
}

#[tokio::test]
async fn install_and_uninstall_through_the_tool_announce_list_changed() {
    let env = TestEnv::new();
    let client = Client::default();
    let seen = client.list_changed.clone();
    let session = connect(&env, client, false).await;
    let count = || seen.load(std::sync::atomic::Ordering::SeqCst);
    let result = call(&session, json!({ "argv": ["install", "transit"] })).await;
    assert_eq!(
        envelope(&result)["error"]["reason"],
        json!("needs_confirmation"),
        "an agent confirms installs"
    );
    let result = call(
        &session,
        json!({ "argv": ["install", "transit"], "confirm": true }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let deadline = Instant::now() + Duration::from_secs(3);
    while count() < 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(count(), 1);
    // The same version again changes nothing, and says nothing.
    call(
        &session,
        json!({ "argv": ["install", "transit"], "confirm": true }),
    )
    .await;
    let result = call(
        &session,
        json!({ "argv": ["uninstall", "transit"], "confirm": true }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let deadline = Instant::now() + Duration::from_secs(3);
    while count() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(count(), 2);
}

/// A `subscriptions/listen` stream (2026-07-28) for changes of the list of
/// resources, acknowledged as asked.
pub(crate) async fn listen_for_list_changes(
    session: &RunningService<RoleClient, Client>,
) -> rmcp::service::Subscription {
    let mut filter = rmcp::model::SubscriptionFilter::new();
    filter.resources_list_changed = Some(true);
    let subscription = session.listen(filter).await.unwrap();
    assert_eq!(subscription.acknowledged().resources_list_changed, Some(true));
    subscription
}

/// The next thing `subscription` hears, within 5 s, is that the list changed.
pub(crate) async fn hears_list_changed(subscription: &mut rmcp::service::Subscription) {
    let heard = tokio::time::timeout(Duration::from_secs(5), subscription.next())
        .await
        .expect("the listener heard of the change in 5 s")
        .unwrap();
    assert!(
        matches!(
            heard,
            Some(rmcp::model::ServerNotification::ResourceListChangedNotification(
                _
            ))
        ),
        "{heard:?}"
    );
}

/// On 2026-07-28 a list change travels only on a `subscriptions/listen` stream:
/// the listener hears the install, and no bare notification reaches the client.
/// Results there name the server in `_meta`.
#[tokio::test]
async fn on_2026_07_28_list_changes_come_only_through_listen() {
    let env = TestEnv::new();
    let client = Client::default();
    let bare = client.list_changed.clone();
    let session = connect_modern(&env, client).await;
    let mut subscription = listen_for_list_changes(&session).await;
    let result = call(
        &session,
        json!({ "argv": ["install", "transit"], "confirm": true }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(
        result.meta.as_ref().unwrap().0["io.modelcontextprotocol/serverInfo"]["name"],
        json!("hcpx")
    );
    hears_list_changed(&mut subscription).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(bare.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// The mistakes a model makes most, and the exact words it gets back over MCP:
/// `next` is a tool call with the real values (never an ellipsis, never a flag the
/// tool does not take), and a read-only refusal says what the server is.
#[tokio::test]
async fn hints_are_tool_calls_an_agent_can_make() {
    let env = probe_env();
    let client = connect(&env, Client::default(), false).await;
    // No `--` before the parameters: it runs.
    let result = call(
        &client,
        json!({ "argv": ["exec", "transit", "plan", "from=Westgate", "to=Harbour", "at=08:00"] }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    // A misspelt command: clap's words, and the corrected call.
    let result = call(&client, json!({ "argv": ["skil", "transit"] })).await;
    assert_eq!(
        (&envelope(&result)["error"]["message"], &envelope(&result)["next"]),
        (
            &json!("unrecognized subcommand 'skil'; a similar subcommand exists: 'skill'"),
            &json!(r#"{"argv":["skill","transit"]}"#)
        )
    );
    assert_eq!(
        text(&result),
        "error (invalid_arguments): unrecognized subcommand 'skil'; a similar subcommand exists: 'skill'\n\
         next: {\"argv\":[\"skill\",\"transit\"]}\n"
    );
    // A misspelt pack command or key: the call with the closest one.
    let result = call(&client, json!({ "argv": ["exec", "git", "lgo", "--", "n=3"] })).await;
    assert_eq!(
        envelope(&result)["next"],
        json!(r#"{"argv":["exec","git","log","--","n=3"]}"#)
    );
    let result = call(
        &client,
        json!({ "argv": ["exec", "transit", "plan", "frm=Westgate", "to=Harbour"] }),
    )
    .await;
    assert_eq!(envelope(&result)["data"]["key"], json!("frm"));
    assert_eq!(
        envelope(&result)["next"],
        json!(r#"{"argv":["exec","transit","plan","--","from=Westgate","to=Harbour"]}"#)
    );
    // Needs confirmation: the same call with `confirm: true`, values and all.
    let result = call(
        &client,
        json!({ "argv": ["exec", "probe", "write", "--", "target=out/a b.txt"] }),
    )
    .await;
    assert_eq!(envelope(&result)["error"]["reason"], json!("needs_confirmation"));
    assert_eq!(
        envelope(&result)["next"],
        json!(r#"{"argv":["exec","probe","write","--","target=out/a b.txt"],"confirm":true}"#)
    );
    // A command the policy denies: the policy is what to look at.
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"probe.wipe","decision":"deny"}]}"#,
    );
    let result = call(&client, json!({ "argv": ["exec", "probe", "wipe"] })).await;
    assert_eq!(envelope(&result)["next"], json!(r#"{"argv":["policy","show"]}"#));
    drop(client);
    // On a read-only server a write is not the policy's doing.
    let client = connect(&env, Client::default(), true).await;
    let result = call(
        &client,
        json!({ "argv": ["exec", "probe", "write", "--", "target=x"], "confirm": true }),
    )
    .await;
    assert_eq!(
        envelope(&result)["next"],
        json!(
            "this server is read-only (hcpx mcp --read-only): only commands that read run here; ask the user to run this one themselves"
        )
    );
}

/// SIGTERM (or SIGINT, SIGHUP) to `hcpx mcp` on stdio while a call runs: the call's
/// processes are killed and the server exits 0 by itself, as over HTTP, with and
/// without the kernel layers (and so without the keeper that kills a call when
/// hcpx dies).
#[test]
fn sigterm_on_stdio_stops_cleanly_and_leaves_no_child() {
    for (mode, marker) in [("best-effort", "4203"), ("strict", "4202")] {
        let mut env = TestEnv::new();
        env.install_fixture("probe", "probe");
        if mode == "best-effort" {
            env.extra_env
                .push(("HCP_SANDBOX".to_owned(), "best-effort".to_owned()));
        } else if !crate::common::require_kernel_layers() {
            continue;
        }
        let mut server = Process::initialized(&env);
        server.send(&json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "hcp", "arguments": { "argv": ["exec", "probe", "sleep", "--", format!("seconds={marker}")] } } }));
        let pattern = format!("sleep {marker}");
        assert!(
            crate::common::wait_until(Duration::from_secs(10), || !pids_of(&pattern).is_empty()),
            "{mode}: the call started"
        );
        let status = crate::common::terminate(&mut server.child)
            .unwrap_or_else(|| panic!("{mode}: the server stopped within 8 s of SIGTERM"));
        assert!(
            crate::common::wait_until(Duration::from_secs(2), || pids_of(&pattern).is_empty()),
            "{mode}: left behind: {:?}",
            pids_of(&pattern)
        );
        assert_eq!(status.code(), Some(0), "{mode}: {status:?}");
    }
}
