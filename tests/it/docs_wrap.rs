//! The three packs of docs/packs.md's "Wrapping real CLIs without a script", taken
//! from the page as written: each passes `pack check`, installs from a folder with
//! no script, and runs its real program (rg, GNU tar, curl) under the full sandbox;
//! rg's walk-through is run step by step, from `pack new --bin` to the calls.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use serde_json::{Value, json};

use crate::builtins::have;
use crate::common::TestEnv;

/// The manifest under `<!-- pack: NAME -->` in docs/packs.md.
fn manifest(name: &str) -> Value {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/packs.md")).unwrap();
    let marker = format!("<!-- pack: {name} -->\n```json\n");
    let start = page.find(&marker).unwrap_or_else(|| panic!("no {marker}")) + marker.len();
    let end = start + page[start..].find("\n```").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

/// Writes the pack to a folder of its own (with a SKILL.md, its only other file),
/// checks it and installs it as a person would.
fn install(env: &TestEnv, manifest: &Value) {
    let id = manifest["id"].as_str().unwrap();
    let dir = env.root.path().join("authoring").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hcp.json"), manifest.to_string()).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {id}\ndescription: The {id} example of docs/packs.md.\n---\n\n# {id}\n"),
    )
    .unwrap();
    let folder = dir.to_str().unwrap();
    let output = env.run(&["pack", "check", folder]);
    assert_eq!(output.code, 0, "{output}");
    env.install_ok(folder, false);
}

/// The console blocks of the page's rg walk-through: each `$ hcpx ...` line's words
/// after `hcpx`, and the lines the page shows it print.
fn rg_walk_through() -> Vec<(Vec<String>, Vec<String>)> {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/packs.md")).unwrap();
    let start = page.find("### rg: an exit code that is not a failure").unwrap();
    let end = start + page[start..].find("\n### ").unwrap();
    let mut steps: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for block in page[start..end].split("```console\n").skip(1) {
        for line in block.split("\n```").next().unwrap().lines() {
            match line.strip_prefix("$ hcpx ") {
                Some(words) => steps.push((words.split(' ').map(str::to_owned).collect(), Vec::new())),
                None => steps.last_mut().unwrap().1.push(line.to_owned()),
            }
        }
    }
    steps
}

/// The rg walk-through as the page writes it, step by step, in one folder with a
/// `notes.txt`: `pack new --bin rg`, the page's manifest in place of the drafted one
/// (the drafted SKILL.md kept), `pack check`, `install`, and the two calls.
#[test]
fn rg_counts_no_match_as_an_answer() {
    if !have("rg") {
        return;
    }
    let env = TestEnv::new();
    env.write("work/notes.txt", "a TODO\nnothing\n");
    let steps = rg_walk_through();
    let said: Vec<&[String]> = steps.iter().map(|(words, _)| words.as_slice()).collect();
    assert_eq!(
        said,
        [
            &["pack", "new", "find", "--bin", "rg"][..],
            &["pack", "check", "find"],
            &["install", "./find", "--yes"],
            &["exec", "find", "lines", "--", "pattern=TODO"],
            &["exec", "find", "lines", "--", "pattern=nowhere"],
        ]
    );
    let work = env.work().display().to_string();
    for (words, shown) in &steps {
        if words[..2] == ["pack", "check"] {
            std::fs::write(env.work().join("find/hcp.json"), manifest("find").to_string()).unwrap();
        }
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let output = env.run(&words);
        assert_eq!(output.code, 0, "{words:?}: {output}");
        let printed = format!("{}{}", output.stdout, output.stderr);
        let printed: Vec<&str> = printed.lines().collect();
        assert_eq!(printed.len(), shown.len(), "{words:?}: {output}");
        for (printed, shown) in printed.iter().zip(shown) {
            let shown = shown.replace("/home/me", &work);
            // The version is this machine's ripgrep's.
            match shown.strip_prefix("  version:     ripgrep ") {
                Some(_) => assert!(printed.starts_with("  version:     ripgrep "), "{printed}"),
                None => assert_eq!(*printed, shown, "{words:?}"),
            }
        }
    }
    // The drafted SKILL.md stayed, with what to edit before sharing the pack.
    let skill = std::fs::read_to_string(env.work().join("find/SKILL.md")).unwrap();
    assert!(skill.contains("## What to edit"), "{skill}");
    let (code, envelope) = env.json(&["exec", "find", "lines", "--", "pattern=TODO"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"], &envelope["stdout"]),
        (0, &json!(true), &json!(0), &json!("notes.txt:1:a TODO\n")),
        "{envelope}"
    );
    let (code, envelope) = env.json(&["exec", "find", "lines", "--", "pattern=nowhere"]);
    assert_eq!(
        (code, &envelope["ok"], &envelope["exitCode"], &envelope["error"]),
        (0, &json!(true), &json!(1), &json!(null)),
        "{envelope}"
    );
    let output = env.run(&["exec", "find", "lines", "--", "pattern=nowhere"]);
    assert_eq!(
        (output.code, output.stdout.as_str(), output.stderr.as_str()),
        (0, "", "note: exit 1, which this command counts as success\n"),
        "{output}"
    );
}

#[test]
fn tar_extracts_into_the_named_folder_only() {
    if !have("tar") {
        return;
    }
    let env = TestEnv::new();
    install(&env, &manifest("archive"));
    let source = env.root.path().join("site");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(source.join("index.html"), "<p>hi</p>\n").unwrap();
    let status = std::process::Command::new("tar")
        .args(["--create", "--file"])
        .arg(env.work().join("site.tar"))
        .arg("--directory")
        .arg(&source)
        .arg("index.html")
        .status()
        .unwrap();
    assert!(status.success());
    let (code, envelope) = env.json(&["exec", "archive", "list", "--", "file=site.tar"]);
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("index.html\n")),
        "{envelope}"
    );
    let (code, envelope) = env.json(&[
        "exec",
        "archive",
        "extract",
        "--yes",
        "--",
        "file=site.tar",
        "into=out",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("out/index.html")).unwrap(),
        "<p>hi</p>\n"
    );
    let (_, plan) = env.json(&[
        "exec",
        "archive",
        "extract",
        "--dry-run",
        "--",
        "file=site.tar",
        "into=other",
    ]);
    assert_eq!(plan["data"]["sandbox"]["write"], json!(["other"]), "{plan}");
    let mut names: Vec<String> = std::fs::read_dir(env.work())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["out", "site.tar"]);
}

/// A one-request HTTP server on loopback that answers with the Authorization
/// header it received, as JSON.
fn echo_server() -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut authorization = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            if let Some(value) = line.strip_prefix("Authorization: ") {
                authorization = value.trim_end().to_owned();
            }
        }
        let body = json!({ "authorization": authorization }).to_string();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    });
    (port, handle)
}

#[test]
fn curl_sends_the_token_from_a_file_it_never_sees_in_argv() {
    if !have("curl") {
        return;
    }
    let env = TestEnv::new();
    let (port, server) = echo_server();
    // The page's pack, with its service pointed at the server here.
    let mut pack = manifest("api");
    let argv = pack["commands"]["get"]["argv"].as_array_mut().unwrap();
    let url = argv.last_mut().unwrap();
    *url = json!(
        url.as_str()
            .unwrap()
            .replace("https://api.example.com", &format!("http://127.0.0.1:{port}"))
    );
    install(&env, &pack);
    env.bind("api", "API_TOKEN", "tok-3f9a77c1e2");
    let (code, envelope) = env.json(&["exec", "api", "get", "--", "path=/v1/me"]);
    server.join().unwrap();
    assert_eq!(code, 0, "{envelope}");
    // The server got the header the format makes; the token is redacted on the way back.
    assert_eq!(
        envelope["stdout"],
        json!("{\"authorization\":\"Bearer [REDACTED:API_TOKEN]\"}"),
        "{envelope}"
    );
    let child = envelope["child"].to_string();
    assert!(
        !child.contains("tok-3f9a77c1e2") && child.contains("hcpx-binding-API_TOKEN"),
        "{child}"
    );
}
