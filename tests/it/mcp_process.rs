//! `hcpx mcp` as a real child process, driven with raw JSON-RPC lines.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{BIN, TestEnv, pids_of};
use crate::mcp::probe_env;

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
