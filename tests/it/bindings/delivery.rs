//! Each binding reaches the pack's CLI as its manifest says (`as`): a variable, a
//! 0600 file in the call's temporary folder that goes with the call, or the
//! standard input of the commands that name it; the value itself never in argv,
//! output, audit or dry-run.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use super::hex;
use crate::common::{TestEnv, copy_dir, copy_fixture_as, fixture, require_kernel_layers, wait_until};

const FILE_TOKEN: &str = "tok-FILE-9f8e7d6c5b";
const API_TOKEN: &str = "api-PERSON-4d3c2b1a00";
const PASSWORD: &str = "pw-PERSON-0a1b2c3d";

/// A test environment with the vault and fetch fixtures installed and `TMPDIR` in
/// the test's own folder, so the calls' temporary folders can be looked at.
fn delivery_env() -> (TestEnv, PathBuf) {
    let env = TestEnv::new();
    env.install_fixture("vault", "vault");
    env.install_fixture("fetch", "fetch");
    let tmp = env.root.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let env = env.env("TMPDIR", &tmp.display().to_string());
    (env, tmp)
}

/// Every binding file under `tmp`: a terminal call's (`hcpx-UID/PROCESS/hcpx-binding-*`)
/// and a server call's (`hcpx-UID/PROCESS/call-XXXXXX/hcpx-binding-*`).
fn binding_files(tmp: &Path) -> Vec<PathBuf> {
    let entries = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect()
    };
    let is_binding = |path: &PathBuf| {
        path.file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("hcpx-binding-"))
    };
    let mut found = Vec::new();
    for user in entries(tmp) {
        for process in entries(&user) {
            for entry in entries(&process) {
                if is_binding(&entry) {
                    found.push(entry);
                } else {
                    found.extend(entries(&entry).into_iter().filter(is_binding));
                }
            }
        }
    }
    found
}

/// The value is nowhere hcpx writes: not in the envelope, nor in the audit log.
fn nowhere(env: &TestEnv, envelope: &Value, value: &str) {
    assert!(
        !envelope.to_string().contains(value),
        "the value leaked: {envelope}"
    );
    let audit = std::fs::read_to_string(env.home().join("audit.log")).unwrap_or_default();
    assert!(!audit.contains(value), "the value is in the audit log: {audit}");
}

/// `as: "file"`: the variable holds the path of a 0600 file in the call's own
/// temporary folder, whose content (printed by the pack) is redacted; the folder,
/// file and all, is gone when the call returns. Unbound, the optional binding gives
/// no variable and no file.
#[test]
fn a_file_binding_is_a_private_file_that_goes_with_the_call() {
    let (env, tmp) = delivery_env();
    let (code, envelope) = env.json(&["exec", "vault", "token"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!("no TOKEN variable\ntmpdir=\n"));

    env.bind("vault", "TOKEN", FILE_TOKEN);
    let (code, envelope) = env.json(&["exec", "vault", "token"]);
    assert_eq!(code, 0, "{envelope}");
    let stdout = envelope["stdout"].as_str().unwrap();
    let path = PathBuf::from(
        stdout
            .lines()
            .find_map(|line| line.strip_prefix("path="))
            .unwrap(),
    );
    assert_eq!(
        stdout,
        format!(
            "mode=600\npath={}\ncontent=[REDACTED:TOKEN]\ntmpdir=hcpx-binding-TOKEN \n",
            path.display()
        )
    );
    // A terminal's call has one folder, named after its process, in `hcpx-UID`.
    let call = path.parent().unwrap();
    assert!(
        !call.file_name().unwrap().to_string_lossy().starts_with("call-")
            && call.parent().unwrap().parent() == Some(tmp.as_path()),
        "{}",
        path.display()
    );
    assert!(!path.exists(), "the binding file outlived the call");
    assert!(!call.exists(), "the call's temporary folder outlived the call");
    nowhere(&env, &envelope, FILE_TOKEN);
    let (_, dry) = env.json(&["exec", "vault", "token", "--dry-run"]);
    assert_eq!(dry["data"]["env"], json!(["HOME", "PATH", "TMPDIR", "TOKEN"]));
    nowhere(&env, &dry, FILE_TOKEN);
}

/// `{API_TOKEN}` in argv is the file's path, curl's `-H @FILE`: the file holds the
/// manifest's `format` with the value in it. `--dry-run` shows where the file will
/// be (`[TMPDIR]`, for nothing is written for a dry run), the result the path that
/// ran; the value is in neither, nor in the output, nor in the audit log.
#[test]
fn a_file_bindings_path_in_argv_carries_its_format() {
    let (env, tmp) = delivery_env();
    env.bind("fetch", "API_TOKEN", API_TOKEN);
    let (code, dry) = env.json(&[
        "exec",
        "fetch",
        "get",
        "--dry-run",
        "--",
        "url=https://example.org",
    ]);
    assert_eq!(code, 0, "{dry}");
    let program = dry["data"]["child"][0].as_str().unwrap().to_owned();
    assert_eq!(
        dry["data"]["child"],
        json!([
            program,
            "get",
            "-H",
            "@[TMPDIR]/hcpx-binding-API_TOKEN",
            "--url=https://example.org"
        ])
    );
    assert_eq!(dry["data"]["env"], json!(["API_TOKEN", "HOME", "PATH", "TMPDIR"]));
    assert!(binding_files(&tmp).is_empty(), "a dry run wrote the credential");
    nowhere(&env, &dry, API_TOKEN);
    let text = env.run(&[
        "exec",
        "fetch",
        "get",
        "--dry-run",
        "--",
        "url=https://example.org",
    ]);
    assert!(
        text.stdout.contains(&format!(
            "child:    {program} get -H '@[TMPDIR]/hcpx-binding-API_TOKEN' '--url=https://example.org'\n"
        )),
        "{text}"
    );

    let (code, envelope) = env.json(&["exec", "fetch", "get", "--", "url=https://example.org"]);
    assert_eq!(code, 0, "{envelope}");
    let header = envelope["child"][3].as_str().unwrap().to_owned();
    let path = PathBuf::from(header.strip_prefix('@').unwrap());
    assert_eq!(path.file_name().unwrap(), "hcpx-binding-API_TOKEN");
    assert!(path.starts_with(&tmp), "{}", path.display());
    assert_eq!(
        envelope["stdout"],
        json!(format!(
            "[-H]\n[{header}]\n[--url=https://example.org]\nmode=600\nheader=Authorization: Bearer [REDACTED:API_TOKEN]\n"
        ))
    );
    assert!(!path.parent().unwrap().exists(), "the call's folder outlived it");
    nowhere(&env, &envelope, API_TOKEN);
}

/// A call that times out, and one whose hcpx is killed (no clean-up runs at all):
/// the first takes its binding file with it; the second's is removed by the next
/// call's sweep of the folders of hcpx processes that are gone.
#[test]
fn a_binding_file_goes_when_the_call_times_out_or_hcpx_is_killed() {
    let (env, tmp) = delivery_env();
    env.bind("vault", "TOKEN", FILE_TOKEN);
    let (code, envelope) = env.json(&["exec", "vault", "hold", "--timeout-ms", "500"]);
    assert_eq!(code, 124, "{envelope}");
    let path = envelope["stdout"]
        .as_str()
        .unwrap()
        .trim_end()
        .strip_prefix("path=")
        .unwrap();
    assert!(path.ends_with("/hcpx-binding-TOKEN"), "{envelope}");
    assert!(
        !Path::new(path).exists(),
        "the timed-out call left its binding file"
    );
    assert!(binding_files(&tmp).is_empty());

    let mut hcpx = env
        .command(&["exec", "vault", "hold", "--", "wait=60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || !binding_files(&tmp).is_empty()));
    let left = binding_files(&tmp).remove(0);
    hcpx.kill().unwrap();
    hcpx.wait().unwrap();
    assert!(
        left.exists(),
        "the killed call's file is left behind until the sweep"
    );
    let (code, envelope) = env.json(&["exec", "vault", "token"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        !left.exists(),
        "the next call did not sweep the killed call's binding file"
    );
    assert_eq!(binding_files(&tmp), Vec::<PathBuf>::new());
}

/// A server runs call after call in one process: each call's binding file goes
/// with that call, whether it ends or times out, and not only when the process
/// does (its own folder, which would take them all at exit, is still there).
#[test]
fn in_a_server_each_binding_file_goes_with_its_call() {
    let (env, tmp) = delivery_env();
    env.bind("vault", "TOKEN", FILE_TOKEN);
    let mut server = crate::mcp::Process::initialized(&env);
    let reply = server.call(2, json!(["exec", "vault", "token"]));
    let stdout = reply["result"]["structuredContent"]["stdout"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(stdout.starts_with("mode=600\npath="), "{reply}");
    let path = PathBuf::from(stdout.lines().nth(1).unwrap().strip_prefix("path=").unwrap());
    assert!(
        !path.exists() && !path.parent().unwrap().exists(),
        "{}",
        path.display()
    );
    assert!(
        path.parent().unwrap().parent().unwrap().is_dir(),
        "the server's folder is gone"
    );
    let reply = server.call(3, json!(["exec", "vault", "hold", "--timeout-ms", "300"]));
    let structured = &reply["result"]["structuredContent"];
    assert_eq!(structured["error"]["reason"], json!("timeout"), "{reply}");
    let held = structured["stdout"]
        .as_str()
        .unwrap()
        .trim_end()
        .strip_prefix("path=")
        .unwrap();
    assert!(
        held.ends_with("/hcpx-binding-TOKEN") && !Path::new(held).exists(),
        "{reply}"
    );
    assert_eq!(binding_files(&tmp), Vec::<PathBuf>::new());
    nowhere(&env, &reply, FILE_TOKEN);
    let (code, stderr) = server.close();
    assert_eq!(code, 0, "{stderr}");
}

/// The attack: while a call holds its binding file, another pack's call (same
/// user, same working directory) reads it by its path, in hex, past any redaction.
/// Each call reads only its own temporary folder: the other pack gets nothing.
#[test]
fn another_packs_call_cannot_read_a_binding_file() {
    if !require_kernel_layers() {
        return;
    }
    let (env, tmp) = delivery_env();
    let thief = env.home().join("packs/thief");
    copy_fixture_as("probe", "thief", &thief);
    std::fs::write(
        thief.join("probe"),
        "#!/bin/sh\nx=$(od -An -v -tx1 \"$2\") || exit 1\nprintf %s \"$x\" | tr -d ' \\n'\n",
    )
    .unwrap();
    env.bind("vault", "TOKEN", FILE_TOKEN);
    let hcpx = env
        .command(&["exec", "vault", "hold", "--", "wait=3"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || !binding_files(&tmp).is_empty()));
    let file = binding_files(&tmp).remove(0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), FILE_TOKEN);
    let target = format!("target={}", file.display());
    let (code, stolen) = env.json(&["exec", "thief", "read", "--", &target]);
    assert!(
        !stolen.to_string().contains(&hex(FILE_TOKEN)),
        "another pack read the binding file: {stolen}"
    );
    assert_eq!(code, 1, "{stolen}");
    assert!(
        stolen["stderr"]
            .as_str()
            .unwrap()
            .ends_with(": Permission denied\n"),
        "{stolen}"
    );
    let held = hcpx.wait_with_output().unwrap();
    assert!(held.status.success());
    assert!(!file.exists());
}

/// `as: "stdin"`: the value, and nothing added, is the standard input of the
/// commands that name it (`wc -c` counts it exactly); it is in no variable; its
/// echo is redacted. A command that does not name it reads end of input at once; a
/// command that never reads it ends as it would.
#[test]
fn a_stdin_binding_reaches_only_the_commands_that_name_it() {
    let (env, _tmp) = delivery_env();
    env.bind("vault", "PASSWORD", PASSWORD);
    let (code, envelope) = env.json(&["exec", "vault", "login"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["stdout"],
        json!(format!(
            "length={}\nsha256=a2f684a6630f4cd40935e39b8b56a9eb7433fa1e2d6ec8a8cee23ae34bd10c1a\necho=[REDACTED:PASSWORD]\nvariable=unset\n",
            PASSWORD.len()
        ))
    );
    nowhere(&env, &envelope, PASSWORD);
    let (_, dry) = env.json(&["exec", "vault", "login", "--dry-run"]);
    assert_eq!(dry["data"]["stdin"], json!("PASSWORD"));
    assert_eq!(dry["data"]["env"], json!(["HOME", "PATH", "TMPDIR"]));
    nowhere(&env, &dry, PASSWORD);
    let text = env.run(&["exec", "vault", "login", "--dry-run"]);
    assert!(
        text.stdout
            .contains("\nstdin:    the bound value of PASSWORD, nothing added\nsandbox:\n"),
        "{text}"
    );

    let (code, envelope) = env.json(&["exec", "vault", "noinput"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!("stdin=0 bytes\nvariable=unset\n"));
    let (_, dry) = env.json(&["exec", "vault", "noinput", "--dry-run"]);
    assert_eq!(dry["data"].get("stdin"), None, "{dry}");

    let started = std::time::Instant::now();
    for wait in ["wait=0", "wait=1"] {
        let (code, envelope) = env.json(&["exec", "vault", "ignore", "--", wait]);
        assert_eq!(
            (code, &envelope["stdout"]),
            (0, &json!("never read stdin\n")),
            "{envelope}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// A pack author who puts an env binding in argv is told why not and what to
/// declare, whole, by `pack check`.
#[test]
fn pack_check_says_why_an_env_binding_is_not_in_argv() {
    let env = TestEnv::new();
    let dir = env.work().join("leaky");
    copy_dir(&fixture("fetch"), &dir);
    let manifest = std::fs::read_to_string(dir.join("hcp.json")).unwrap().replace(
        "\"as\": \"file\",\n      \"format\": \"Authorization: Bearer {value}\",\n",
        "",
    );
    std::fs::write(dir.join("hcp.json"), manifest).unwrap();
    let output = env.run(&["pack", "check", "leaky"]);
    assert_eq!(
        format!("{output}"),
        "exit_code: 2\n----- stdout -----\n----- stderr -----\nerror: the pack is invalid: 1 problem\n  \
         commands.get.argv[2]: \"API_TOKEN\" is delivered as env: a value in argv can be read by any process of \
         the machine (ps, /proc), so only a file binding's path may appear here. Declare \"as\": \"file\" on the \
         binding (with a \"format\" if the CLI wants more than the value), and {API_TOKEN} renders the file's \
         path\nnext: fix each problem listed, then run hcpx pack check again\n[EOF]"
    );
}

/// `bindings` and `skill` say how each binding reaches the CLI.
#[test]
fn bindings_and_skill_say_how_each_binding_is_delivered() {
    let (env, _tmp) = delivery_env();
    env.bind("vault", "PASSWORD", PASSWORD);
    let output = env.run(&["bindings"]);
    assert_eq!(
        output.stdout,
        "fetch API_TOKEN (as file): NOT set (required)\nvault TOKEN (as file): not set\nvault PASSWORD (as stdin): set\n",
        "{output}"
    );
    let (_, listed) = env.json(&["bindings"]);
    let delivered: Vec<(&str, &str)> = listed["data"]["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["key"].as_str().unwrap(), row["as"].as_str().unwrap()))
        .collect();
    assert_eq!(
        delivered,
        [("API_TOKEN", "file"), ("TOKEN", "file"), ("PASSWORD", "stdin")]
    );
    let skill = env.run(&["skill", "vault"]).stdout;
    for line in [
        "Binding `TOKEN` (secret, optional, as file): a token the CLI reads from the file TOKEN names. The CLI gets a \
         file (mode 0600, in the call's temporary folder, removed with the call); the variable `TOKEN` holds its path. \
         A person binds it with `hcpx bind vault TOKEN`.\n",
        "Binding `PASSWORD` (secret, optional, as stdin): a password the CLI reads on stdin. The CLI reads the value, \
         and nothing more, on its standard input in: login, ignore. A person binds it with `hcpx bind vault PASSWORD`.\n",
    ] {
        assert!(skill.contains(line), "{line}\nnot in:\n{skill}");
    }
    let skill = env.run(&["skill", "fetch"]).stdout;
    let line = "Binding `API_TOKEN` (secret, required, as file): the API token, sent as a header from a file. The CLI \
                gets a file (mode 0600, in the call's temporary folder, removed with the call), holding \
                `Authorization: Bearer {value}` with the value in it; the variable `API_TOKEN` holds its path. A \
                person binds it with `hcpx bind fetch API_TOKEN`.\n";
    assert!(skill.contains(line), "{line}\nnot in:\n{skill}");
    env.install_fixture("probe", "probe");
    let skill = env.run(&["skill", "probe"]).stdout;
    let line = "Binding `PROBE_TOKEN` (secret, optional, as env): a token the probe can print. The CLI gets the value \
                in the variable `PROBE_TOKEN`. A person binds it with `hcpx bind probe PROBE_TOKEN`.\n";
    assert!(skill.contains(line), "{line}\nnot in:\n{skill}");
}

/// A bound value holds at most 64 KiB: `bind` refuses a longer one, and a value
/// read from a variable at exec that is longer is refused before it is written to
/// a file or a pipe.
#[test]
fn values_over_64_kib_never_reach_a_file_or_stdin() {
    let (env, tmp) = delivery_env();
    let long = "v".repeat(64 * 1024 + 1);
    let mut bind = env
        .command(&["--json", "bind", "vault", "PASSWORD"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut bind.stdin.take().unwrap(), long.as_bytes()).unwrap();
    let output = bind.wait_with_output().unwrap();
    let refused: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(2), "{refused}");
    assert_eq!(
        refused["error"]["message"],
        json!("the value is 65537 bytes; a binding holds at most 65536 (64 KiB); nothing was bound")
    );
    assert!(!env.home().join("bindings.json").exists());

    let env = env.env("BIG_SECRET", &long);
    let (code, _) = env.json(&["bind", "vault", "PASSWORD", "--from-env", "BIG_SECRET"]);
    assert_eq!(code, 0);
    let (code, envelope) = env.json(&["exec", "vault", "noinput"]);
    assert_eq!(code, 0, "a command that does not take it runs: {envelope}");
    let (code, envelope) = env.json(&["exec", "vault", "login"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        envelope["error"]["message"],
        json!(
            "PASSWORD is 65537 bytes, more than the 65536 a binding delivered as a file or on stdin may hold"
        )
    );
    assert_eq!(
        envelope["next"],
        json!("a person binds a shorter value: hcpx bind vault PASSWORD")
    );
    assert!(binding_files(&tmp).is_empty());
}

/// The `json` blocks of docs/bindings.md that hold commands, parsed.
fn doc_manifests() -> Vec<Value> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/bindings.md")).unwrap();
    doc.split("```json\n")
        .skip(1)
        .map(|block| serde_json::from_str::<Value>(block.split("```").next().unwrap()).unwrap())
        .filter(|block| block.get("commands").is_some())
        .collect()
}

/// Writes `manifest` as pack `id` in the working directory, with a SKILL.md.
fn doc_pack(env: &TestEnv, id: &str, manifest: &Value) -> PathBuf {
    let dir = env.work().join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hcp.json"),
        serde_json::to_string_pretty(manifest).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {id}\ndescription: An example from docs/bindings.md.\n---\n"),
    )
    .unwrap();
    dir
}

/// docs/bindings.md cannot drift from the code: its manifests pass `pack check`,
/// the refusal it quotes is the one `pack check` gives, and its worked example,
/// run with the real curl against a local server, sends the header from the file.
#[test]
fn the_examples_of_docs_bindings_md_hold() {
    let env = TestEnv::new();
    let manifests = doc_manifests();
    assert_eq!(manifests.len(), 2);
    let tickets = manifests[0].clone();
    let mut fragment = manifests[1].clone();
    for (key, value) in [
        ("hcp", json!(1)),
        ("id", json!("registry")),
        ("version", json!("1.0.0")),
        ("description", json!("An example")),
        ("bin", json!(["docker"])),
    ] {
        fragment[key] = value;
    }
    for (id, manifest) in [("tickets", &tickets), ("registry", &fragment)] {
        doc_pack(&env, id, manifest);
        let (code, checked) = env.json(&["pack", "check", id]);
        assert_eq!(code, 0, "{id}: {checked}");
    }
    let mut leaky = tickets.clone();
    leaky["id"] = json!("leaky");
    let token = leaky["bindings"]["TICKETS_TOKEN"].as_object_mut().unwrap();
    token.remove("as");
    token.remove("format");
    doc_pack(&env, "leaky", &leaky);
    let (_, refused) = env.json(&["pack", "check", "leaky"]);
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/bindings.md")).unwrap();
    let quoted = doc
        .lines()
        .find(|line| line.starts_with("commands.get.argv[1]"))
        .unwrap();
    let (path, message) = quoted.split_once(": ").unwrap();
    assert_eq!(
        refused["data"]["problems"],
        json!([{ "path": path, "message": message }]),
        "{refused}"
    );

    if !crate::common::require(Path::new("/usr/bin/curl").exists(), "curl") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        use std::io::{BufRead as _, Write as _};
        let (stream, _) = listener.accept().unwrap();
        let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim_end().is_empty() {
                break;
            }
            headers.push(line.trim_end().to_owned());
        }
        let body = "{\"id\": 42}\n";
        write!(
            &stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        headers
    });
    let local = serde_json::to_string(&tickets)
        .unwrap()
        .replace("https://tickets.example.com", &format!("http://127.0.0.1:{port}"));
    let installed = env.home().join("packs/tickets");
    std::fs::create_dir_all(&installed).unwrap();
    std::fs::write(installed.join("hcp.json"), local).unwrap();
    std::fs::copy(env.work().join("tickets/SKILL.md"), installed.join("SKILL.md")).unwrap();
    env.bind("tickets", "TICKETS_TOKEN", API_TOKEN);
    let (code, envelope) = env.json(&["exec", "tickets", "get", "--", "id=42"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!("{\"id\": 42}\n"));
    let headers = server.join().unwrap();
    assert_eq!(headers[0], "GET /api/tickets/42 HTTP/1.1");
    assert!(
        headers.contains(&format!("Authorization: Bearer {API_TOKEN}")),
        "{headers:?}"
    );
    nowhere(&env, &envelope, API_TOKEN);
}
