//! The MCP tasks extension (`io.modelcontextprotocol/tasks`): a call on protocol
//! 2026-07-28 that declares it goes on as a task once its child has run a second.
//! In process with rmcp's client, and against `hcpx mcp` as a child process over
//! stdio and HTTP, where a command that runs longer than a minute completes (driven
//! by hand and by MCP Inspector's CLI). Checked against the extension's text,
//! whole values where the server decides them.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, TaskPayload,
    TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceError};
use serde_json::{Value, json};

use crate::common::{HttpServer, TestEnv, pids_of};
use crate::mcp::{Client, Process, params, probe_env};

/// `ttlMs` as the server gives it: the longest a command may run (10 min), then
/// the 10 min a finished task is kept.
const TTL_MS: u64 = 20 * 60 * 1000;

/// The parts of a new task the server decides; the id and times vary.
fn seed(created: &CreateTaskResult) -> Value {
    let mut value = serde_json::to_value(created).unwrap();
    let id = value["taskId"].as_str().unwrap().to_owned();
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    for key in ["taskId", "createdAt", "lastUpdatedAt"] {
        assert!(value[key].is_string(), "{value}");
        value.as_object_mut().unwrap().remove(key);
    }
    value
}

fn expected_seed() -> Value {
    json!({ "resultType": "task", "status": "working", "statusMessage": "running", "ttlMs": TTL_MS,
            "pollIntervalMs": 1000 })
}

async fn start_task(client: &RunningService<RoleClient, Client>, argv: Value) -> CreateTaskResult {
    match client.call_tool_once(params(argv)).await.unwrap() {
        CallToolResponse::Task(created) => created,
        other => panic!("not a task: {other:?}"),
    }
}

/// Polls `tasks/get` until the task ends, at most `limit`.
async fn settled(client: &RunningService<RoleClient, Client>, id: &str, limit: Duration) -> DetailedTask {
    let deadline = Instant::now() + limit;
    loop {
        let task = client.get_task(GetTaskParams::new(id)).await.unwrap().task;
        if task.status().is_terminal() {
            return task;
        }
        assert!(Instant::now() < deadline, "still {:?}", task.status());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn is_no_such_task(error: &ServiceError) -> bool {
    format!("{error}").contains("-32602") && format!("{error}").contains("no such task")
}

/// A tool result without what differs from one run to the next.
fn steady(result: &Value) -> Value {
    let mut result = result.clone();
    result["structuredContent"]
        .as_object_mut()
        .unwrap()
        .remove("durationMs");
    result
}

fn server(env: &TestEnv) -> hcpx::mcp::Server {
    let ctx = crate::mcp::context(env);
    let options = hcpx::mcp::Options::from_context(&ctx, false);
    hcpx::mcp::Server::new(ctx, options)
}

/// A client of `server` on a stream of its own: on protocol 2026-07-28 when
/// `modern`, else through `initialize` on 2025-11-25.
async fn connect_to(
    server: &hcpx::mcp::Server,
    client: Client,
    modern: bool,
) -> RunningService<RoleClient, Client> {
    use rmcp::{ClientLifecycleMode, ClientServiceExt as _, ServiceExt as _};
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = server.clone();
    let calls = crate::common::calls_here();
    tokio::spawn(async move {
        let _calls = calls;
        let (read, write) = tokio::io::split(server_io);
        hcpx::mcp::serve(server, read, write).await
    });
    if !modern {
        return client.serve(client_io).await.unwrap();
    }
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    client.serve_with_lifecycle(client_io, lifecycle).await.unwrap()
}

fn server_info() -> Value {
    json!({ "io.modelcontextprotocol/serverInfo": { "name": "hcpx", "version": env!("CARGO_PKG_VERSION") } })
}

#[tokio::test]
async fn a_long_call_becomes_a_task_that_only_its_client_sees_and_can_cancel() {
    let env = probe_env();
    // Four clients of one server (as an HTTP server's sessions are): its tasks are
    // held in one place.
    let server = server(&env);
    let client = connect_to(&server, Client::with_tasks(), true).await;
    let other = connect_to(&server, Client::with_tasks(), true).await;
    let plain = connect_to(&server, Client::default(), true).await;
    // A client on 2025-11-25 that names the extension in `initialize` (MCP
    // Inspector's CLI does) takes no task on that wire.
    let legacy = connect_to(&server, Client::with_tasks(), false).await;

    // A quick call is answered as usual, even to a client that takes tasks.
    let quick = client
        .call_tool_once(params(json!(["search", "journey"])))
        .await
        .unwrap();
    assert!(matches!(quick, CallToolResponse::Complete(_)), "{quick:?}");

    // A call whose child runs past a second becomes a task; the same call from a
    // client without the extension is answered as it always was. Both end with
    // one result.
    let argv = json!(["exec", "probe", "sleep", "--", "seconds=3"]);
    let created = start_task(&client, argv.clone()).await;
    let mut expected = expected_seed();
    expected["_meta"] = server_info();
    assert_eq!(seed(&created), expected);
    let id = created.task.task_id.clone();
    let (direct, old, task) = tokio::join!(
        plain.call_tool_once(params(argv.clone())),
        legacy.call_tool_once(params(argv.clone())),
        settled(&client, &id, Duration::from_secs(20))
    );
    let CallToolResponse::Complete(direct) = direct.unwrap() else {
        panic!("a client without the extension got a task")
    };
    assert!(matches!(old.unwrap(), CallToolResponse::Complete(_)));
    assert_eq!(task.status(), TaskStatus::Completed);
    assert_eq!(task.task.status_message.as_deref(), Some("completed"));
    let TaskPayload::Completed { result } = &task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(result["isError"], json!(false), "{result:?}");
    assert_eq!(result["structuredContent"]["stdout"], json!("sleeping 3\n"));
    assert_eq!(
        steady(&Value::Object(result.clone())),
        steady(&serde_json::to_value(&direct).unwrap()),
        "a task's result is the call's"
    );

    // Another connection learns nothing of it; a request that does not declare
    // the extension is told it must (-32021).
    let error = other.get_task(GetTaskParams::new(id.clone())).await.unwrap_err();
    assert!(is_no_such_task(&error), "{error}");
    let error = other
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert!(is_no_such_task(&error), "{error}");
    let error = legacy.get_task(GetTaskParams::new(id.clone())).await.unwrap_err();
    assert!(is_no_such_task(&error), "{error}");
    let error = plain.get_task(GetTaskParams::new(id.clone())).await.unwrap_err();
    assert!(format!("{error}").contains("-32021"), "{error}");

    // Cancelling a task kills its processes, as cancelling a request does.
    let created = start_task(&client, json!(["exec", "probe", "sleep", "--", "seconds=47"])).await;
    let id = created.task.task_id.clone();
    assert!(!pids_of("sleep 47").is_empty(), "the child runs");
    let error = other
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert!(is_no_such_task(&error), "{error}");
    assert_eq!(
        client
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .unwrap()
            .task
            .status(),
        TaskStatus::Working
    );
    client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    let task = settled(&client, &id, Duration::from_secs(10)).await;
    assert_eq!(
        serde_json::to_value(&task).unwrap()["status"],
        json!("cancelled"),
        "{task:?}"
    );
    assert!(pids_of("sleep 47").is_empty(), "{:?}", pids_of("sleep 47"));
}

/// The `_meta` of a 2026-07-28 request from a client that declares the extension.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "hcpx-tests", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } }
    })
}

/// A 2026-07-28 request: `params` with [`modern_meta`].
fn modern(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// The 65 s command, past the minute a TypeScript SDK client waits for a result.
pub(crate) const LONG_ARGV: [&str; 7] = [
    "exec",
    "probe",
    "sleep",
    "--timeout-ms",
    "90000",
    "--",
    "seconds=65",
];

/// Runs the 65 s command as a task through `request` (a JSON-RPC request in, its
/// response out), polling as the task asks, and checks the result.
fn a_minute_long_task(mut request: impl FnMut(Value) -> Value) {
    let started = Instant::now();
    let call = request(modern(
        2,
        "tools/call",
        json!({ "name": "hcp", "arguments": { "argv": LONG_ARGV } }),
    ));
    let created = call["result"].clone();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the task came at once"
    );
    assert_eq!(created["resultType"], json!("task"), "{call}");
    assert_eq!(created["status"], json!("working"), "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let poll = created["pollIntervalMs"].as_u64().unwrap();
    let mut n = 100;
    let task = loop {
        std::thread::sleep(Duration::from_millis(poll.max(5000)));
        n += 1;
        let got = request(modern(n, "tasks/get", json!({ "taskId": id })));
        let task = got["result"].clone();
        assert_eq!(task["resultType"], json!("complete"), "{got}");
        if task["status"] != json!("working") {
            break task;
        }
        assert!(started.elapsed() < Duration::from_secs(100), "{task}");
    };
    assert!(started.elapsed() > Duration::from_secs(60));
    assert_eq!(task["status"], json!("completed"), "{task}");
    assert_eq!(task["result"]["isError"], json!(false), "{task}");
    assert_eq!(
        task["result"]["structuredContent"]["stdout"],
        json!("sleeping 65\n")
    );
    assert_eq!(task["result"]["structuredContent"]["exitCode"], json!(0));
}

/// A command that runs longer than a minute (past the TypeScript SDK's request
/// timeout) completes as a task, over stdio and over HTTP, driven by hand and (when
/// the interop tools are installed) by MCP Inspector's CLI, all at once.
#[test]
fn a_task_of_more_than_a_minute_completes_over_stdio_and_http() {
    let env = probe_env();
    let http = HttpServer::start(&env, "127.0.0.1:0", &[]);
    let inspector = crate::inspector::available();
    std::thread::scope(|scope| {
        let stdio = scope.spawn(|| {
            let mut server = Process::start(&env);
            a_minute_long_task(|message| {
                let id = message["id"].as_u64().unwrap();
                server.send(&message);
                server.until(id).pop().unwrap()
            });
            let (code, _) = server.close();
            assert_eq!(code, 0);
        });
        let by_inspector: Vec<_> = inspector
            .iter()
            .flat_map(|inspector| {
                let (env, http) = (&env, &http);
                [
                    scope.spawn(move || crate::inspector::long_task(inspector, env, None)),
                    scope.spawn(move || crate::inspector::long_task(inspector, env, Some(http))),
                ]
            })
            .collect();
        a_minute_long_task(|message| over_http(&http, &message));
        // A session of 2025-11-25 (which gets no tasks, though it names the
        // extension) learns nothing of the tasks of 2026-07-28 requests.
        let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "clientInfo": { "name": "hcpx-tests", "version": "0" },
            "capabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } } } });
        let session = http
            .post(&[], &initialize)
            .header("mcp-session-id")
            .unwrap()
            .to_owned();
        let headers = [
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        let argv = json!(["exec", "probe", "sleep", "--", "seconds=2"]);
        let created = over_http(
            &http,
            &modern(
                3,
                "tools/call",
                json!({ "name": "hcp", "arguments": { "argv": argv } }),
            ),
        );
        let id = created["result"]["taskId"].as_str().unwrap();
        let get = json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": { "taskId": id } });
        let reply = http.post(&headers, &get).messages().pop().unwrap();
        assert_eq!(reply["error"]["code"], json!(-32602), "{reply}");
        stdio.join().unwrap();
        for run in by_inspector {
            run.join().unwrap();
        }
    });
}

/// A 2026-07-28 request over HTTP (stateless, with the headers that protocol
/// asks for), and its response.
fn over_http(http: &HttpServer, message: &Value) -> Value {
    let method = message["method"].as_str().unwrap();
    let name = match method {
        "tools/call" => message["params"]["name"].as_str().unwrap(),
        _ => message["params"]["taskId"].as_str().unwrap(),
    };
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    let response = http.post(&headers, message);
    response
        .messages()
        .into_iter()
        .find(|reply| reply["id"] == message["id"])
        .unwrap_or_else(|| panic!("{response:?}"))
}
