//! The MCP tasks extension (`io.modelcontextprotocol/tasks`): a call from a client
//! that declared it goes on as a task once its child has run a second. In process
//! with rmcp's client (both protocol generations), and against `hcpx mcp` as a
//! child process over stdio and HTTP, where a command that runs longer than a
//! minute completes. Checked against the extension's text, whole values where the
//! server decides them.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, TaskPayload, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceError};
use serde_json::{Value, json};

use crate::common::{HttpServer, TestEnv, pids_of};
use crate::mcp::{Client, Process, call, connect, connect_modern, params, probe_env};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_becomes_a_task_that_only_its_client_sees_and_can_cancel() {
    let env = probe_env();
    let tasks = Client::with_tasks;
    let client = connect(&env, tasks(), false).await;
    let other = connect(&env, tasks(), false).await;
    let plain = connect(&env, Client::default(), false).await;

    // A quick call is answered as usual, even to a client that takes tasks.
    let quick = client.call_tool_once(params(json!(["search", "journey"]))).await.unwrap();
    assert!(matches!(quick, CallToolResponse::Complete(_)), "{quick:?}");

    // A call whose child runs past a second becomes a task; the same call from a
    // client without the extension is answered as it always was. Both end with
    // one envelope.
    let argv = json!(["exec", "probe", "sleep", "--", "seconds=3"]);
    let created = start_task(&client, argv.clone()).await;
    assert_eq!(seed(&created), expected_seed());
    let id = created.task.task_id.clone();
    let (direct, task) = tokio::join!(
        call(&plain, json!({ "argv": argv })),
        settled(&client, &id, Duration::from_secs(20))
    );
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

    // Another connection learns nothing of it; a client that did not declare the
    // extension is told it must (-32021).
    let error = other.get_task(GetTaskParams::new(id.clone())).await.unwrap_err();
    assert!(is_no_such_task(&error), "{error}");
    let error = other.cancel_task(CancelTaskParams::new(id.clone())).await.unwrap_err();
    assert!(is_no_such_task(&error), "{error}");
    let error = plain.get_task(GetTaskParams::new(id.clone())).await.unwrap_err();
    assert!(format!("{error}").contains("-32021"), "{error}");

    // Cancelling a task kills its processes, as cancelling a request does.
    let created = start_task(&client, json!(["exec", "probe", "sleep", "--", "seconds=47"])).await;
    let id = created.task.task_id.clone();
    assert!(!pids_of("sleep 47").is_empty(), "the child runs");
    let error = other.cancel_task(CancelTaskParams::new(id.clone())).await.unwrap_err();
    assert!(is_no_such_task(&error), "{error}");
    assert_eq!(
        client.get_task(GetTaskParams::new(id.clone())).await.unwrap().task.status(),
        TaskStatus::Working
    );
    client.cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    let task = settled(&client, &id, Duration::from_secs(10)).await;
    assert_eq!(
        serde_json::to_value(&task).unwrap()["status"],
        json!("cancelled"),
        "{task:?}"
    );
    assert!(pids_of("sleep 47").is_empty(), "{:?}", pids_of("sleep 47"));
}

/// On 2026-07-28 the client declares the extension in each request's own
/// capabilities; the flow is the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2026_07_28_a_task_is_made_for_a_request_that_declares_the_extension() {
    let env = probe_env();
    let client = connect_modern(&env, Client::with_tasks()).await;
    let created = start_task(&client, json!(["exec", "probe", "sleep", "--", "seconds=2"])).await;
    let mut expected = expected_seed();
    expected["_meta"] = json!({ "io.modelcontextprotocol/serverInfo": { "name": "hcpx", "version": env!("CARGO_PKG_VERSION") } });
    assert_eq!(seed(&created), expected);
    let task = settled(&client, &created.task.task_id, Duration::from_secs(20)).await;
    let TaskPayload::Completed { result } = &task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(result["structuredContent"]["stdout"], json!("sleeping 2\n"));
}

/// The extension's capability as a client declares it in `initialize`.
fn initialize_with_tasks(id: u64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
        "clientInfo": { "name": "hcpx-tests", "version": "0" } } })
}

/// Runs a 65 s command as a task through `request` (one JSON-RPC request in, its
/// response out), polling as the task asks, and checks the result.
fn a_minute_long_task(mut request: impl FnMut(Value) -> Value) {
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "hcp",
        "arguments": { "argv": ["exec", "probe", "sleep", "--timeout-ms", "90000", "--", "seconds=65"] } } });
    let started = Instant::now();
    let created = request(call)["result"].clone();
    assert!(started.elapsed() < Duration::from_secs(10), "the task came at once");
    assert_eq!(created["resultType"], json!("task"), "{created}");
    assert_eq!(created["status"], json!("working"), "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let poll = created["pollIntervalMs"].as_u64().unwrap();
    let mut n = 100;
    let task = loop {
        std::thread::sleep(Duration::from_millis(poll.max(5000)));
        n += 1;
        let got = request(json!({ "jsonrpc": "2.0", "id": n, "method": "tasks/get", "params": { "taskId": id } }));
        let task = got["result"].clone();
        assert!(task["status"].is_string(), "{got}");
        if task["status"] != json!("working") {
            break task;
        }
        assert!(started.elapsed() < Duration::from_secs(100), "{task}");
    };
    assert!(started.elapsed() > Duration::from_secs(60));
    assert_eq!(task["status"], json!("completed"), "{task}");
    assert_eq!(task["result"]["isError"], json!(false), "{task}");
    assert_eq!(task["result"]["structuredContent"]["stdout"], json!("sleeping 65\n"));
    assert_eq!(task["result"]["structuredContent"]["exitCode"], json!(0));
}

/// A command that runs longer than a minute (past the TypeScript SDK's request
/// timeout) completes as a task, over stdio and over HTTP at once; on HTTP, the
/// task belongs to its session.
#[test]
fn a_task_of_more_than_a_minute_completes_over_stdio_and_http() {
    let env = probe_env();
    std::thread::scope(|scope| {
        let stdio = scope.spawn(|| {
            let mut server = Process::start(&env);
            server.send(&initialize_with_tasks(1));
            server.until(1);
            server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
            a_minute_long_task(|message| {
                let id = message["id"].as_u64().unwrap();
                server.send(&message);
                server.until(id).pop().unwrap()
            });
            let (code, _) = server.close();
            assert_eq!(code, 0);
        });
        over_http(&env);
        stdio.join().unwrap();
    });
}

fn over_http(env: &TestEnv) {
    let http = HttpServer::start(env, "127.0.0.1:0", &[]);
    let session = |http: &HttpServer| {
        let response = http.post(&[], &initialize_with_tasks(1));
        let session = response.header("mcp-session-id").unwrap().to_owned();
        let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
        let initialized = http.post(&headers, &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        assert_eq!(initialized.status, 202);
        session
    };
    let (mine, theirs) = (session(&http), session(&http));
    let post = |session: &str, message: &Value| {
        let id = message["id"].clone();
        let headers = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-11-25")];
        http.post(&headers, message)
            .messages()
            .into_iter()
            .find(|reply| reply["id"] == id)
            .unwrap()
    };
    let mut seen = None;
    a_minute_long_task(|message| {
        let reply = post(&mine, &message);
        if seen.is_none()
            && let Some(id) = reply["result"]["taskId"].as_str()
        {
            seen = Some(id.to_owned());
            // Another session learns nothing of it.
            let get = json!({ "jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": { "taskId": id } });
            let other = post(&theirs, &get);
            assert_eq!(other["error"]["code"], json!(-32602), "{other}");
            let cancel = json!({ "jsonrpc": "2.0", "id": 9, "method": "tasks/cancel", "params": { "taskId": id } });
            let other = post(&theirs, &cancel);
            assert_eq!(other["error"]["code"], json!(-32602), "{other}");
        }
        reply
    });
}
