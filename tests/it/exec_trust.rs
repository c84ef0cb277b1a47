//! exec end to end, what a call must never give away or let an agent decide: a bound
//! value is never shown, logged or passed on, and a confirmation is a person's.

use std::io::Write as _;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::exec::probe_env;
/// A bound value that the caller passes as a parameter is redacted in the argv the
/// audit log records: the log keeps what was asked, never a credential.
#[test]
fn a_bound_value_given_as_a_parameter_is_redacted_in_the_audit_log() {
    let env = probe_env();
    let secret = "tok-AUDIT-4c2b1a09";
    env.bind("probe", "PROBE_TOKEN", secret);
    let output = env.run(&["exec", "probe", "args", "--", &format!("text={secret}")]);
    assert_eq!(output.code, 0, "{output}");
    let audit = std::fs::read_to_string(env.home().join("audit.log")).unwrap();
    let last: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["argv"],
        json!(["exec", "probe", "args", "--", "text=[REDACTED:PROBE_TOKEN]"]),
        "{audit}"
    );
}

#[test]
fn bound_secret_never_appears_anywhere() {
    let env = probe_env();
    let secret = "tok-SECRET-9f8e7d6c";
    env.bind("probe", "PROBE_TOKEN", secret);
    let bindings = std::fs::read_to_string(env.home().join("bindings.json")).unwrap();
    assert!(bindings.contains(secret), "stored for the pack");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.home().join("bindings.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // The probe prints it split across two writes 200 ms apart, and on stderr.
    let output = env.run(&["exec", "probe", "secret"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(output.stdout, "token=[REDACTED:PROBE_TOKEN]\n");
    assert_eq!(output.stderr, "err=[REDACTED:PROBE_TOKEN]\n");
    let (_, envelope) = env.json(&["exec", "probe", "secret"]);
    let (_, dry) = env.json(&["exec", "probe", "secret", "--dry-run"]);
    let (_, listing) = env.json(&["bindings"]);
    for text in [envelope.to_string(), dry.to_string(), listing.to_string()] {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(
        dry["data"]["env"]
            .as_array()
            .unwrap()
            .contains(&json!("PROBE_TOKEN")),
        "{dry}"
    );
    assert_eq!(listing["data"]["bindings"][0]["set"], json!(true));
    // Nothing in HCP_HOME but the store holds it (the audit log above all).
    for entry in walk(&env.home()) {
        if entry.file_name().unwrap() != "bindings.json" && entry.is_file() {
            let bytes = std::fs::read(&entry).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{}",
                entry.display()
            );
        }
    }
    // The pack's CLI cannot read the store itself: HCP_HOME is hidden from it.
    let store = env.home().join("bindings.json");
    let output = env.run(&[
        "exec",
        "probe",
        "read",
        "--",
        &format!("target={}", store.display()),
    ]);
    assert_eq!(output.code, 1, "{output}");
    assert!(output.stderr.contains("Permission denied"), "{output}");
    assert!(!output.stdout.contains(secret));
}

/// A pack that prints its token JSON-escaped gets it past no redaction: not in
/// stdout, not in the parsed `data`; and a token cut at the 8 MiB limit leaves none of
/// its first bytes behind.
#[test]
fn escaped_secrets_and_secrets_cut_at_the_limit_are_redacted() {
    let env = probe_env();
    let secret = "tok-SECRET-9f8e7d6c";
    env.bind("probe", "PROBE_TOKEN", secret);
    let (code, envelope) = env.json(&["exec", "probe", "jsonsecret"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["stdout"],
        json!("{\"token\": \"[REDACTED:PROBE_TOKEN]\", \"plain\": \"[REDACTED:PROBE_TOKEN]\"}\n")
    );
    assert_eq!(
        envelope["data"],
        json!({ "token": "[REDACTED:PROBE_TOKEN]", "plain": "[REDACTED:PROBE_TOKEN]" })
    );
    let (_, envelope) = env.json(&["exec", "probe", "secretcut"]);
    assert_eq!(envelope["outputTruncated"], json!(true), "{}", envelope["error"]);
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(stdout.ends_with("xxxx"), "{}", &stdout[stdout.len() - 20..]);
    assert!(!stdout.contains("tok-"), "{}", &stdout[stdout.len() - 20..]);
    assert_eq!(
        envelope["truncation"]["stdout"]["shown"],
        json!(8 * 1024 * 1024 - 5)
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn agents_cannot_change_access() {
    let env = probe_env().env("HCP_AGENT", "1");
    for args in [
        &["bind", "probe", "PROBE_TOKEN"][..],
        &["bind", "probe", "PROBE_TOKEN", "--from-env", "X"],
        &["unbind", "probe", "PROBE_TOKEN"],
        &["policy", "set", "probe.*", "allow"],
        &["adopt", "claude-code", "--native", "--remove", "--write", "--yes"],
        &["adopt", "cursor", "--write", "--yes"],
        &["adopt", "claude-code", "--native"],
    ] {
        let (code, envelope) = env.json(args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(envelope["error"]["reason"], json!("access_refused"), "{args:?}");
    }
    assert!(!env.home().join("bindings.json").exists());
    assert!(!env.home().join("policy.json").exists());
    assert!(!env.work().join(".cursor").exists());
    assert!(!env.work().join(".claude").exists());
    // Whatever an agent's configuration says, short of empty, 0 or false.
    for value in ["true", "yes", " 1", "01"] {
        let env = probe_env().env("HCP_AGENT", value);
        let (code, envelope) = env.json(&["policy", "set", "probe.*", "allow"]);
        assert_eq!(
            (code, envelope["error"]["reason"].clone()),
            (2, json!("access_refused")),
            "{value:?}"
        );
    }
}

#[test]
fn confirm_human_is_not_satisfied_by_an_agents_yes() {
    let env = probe_env().env("HCP_AGENT", "1");
    let (code, envelope) = env.json(&["exec", "probe", "wipe", "--yes"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("needs_confirmation"));
    assert_eq!(envelope["spawned"], json!(false));
    assert_eq!(envelope["data"]["decision"], json!("confirm-human"));
    // `confirm` is: the caller confirms with --yes.
    let (code, envelope) = env.json(&["exec", "probe", "write", "--", "target=out.txt"]);
    assert_eq!(code, 2);
    assert_eq!(envelope["error"]["reason"], json!("needs_confirmation"));
    assert_eq!(
        envelope["next"],
        json!("hcpx exec probe write --yes -- 'target=out.txt'")
    );
    assert_eq!(envelope["data"]["child"][1], json!("write"));
    assert!(!env.work().join("out.txt").exists());
    assert_eq!(
        crate::common::audit_decisions(&env),
        ["needs_confirmation", "needs_confirmation"]
    );
}

/// What a person is asked to confirm never shows a bound value, even when the
/// caller passes it as a parameter.
#[test]
fn a_confirmation_never_shows_a_bound_value() {
    let env = probe_env();
    env.bind("probe", "PROBE_TOKEN", "tok-SECRET-1a2b3c");
    let env = env.env("HCP_AGENT", "1");
    let (code, envelope) = env.json(&["exec", "probe", "write", "--", "target=out/tok-SECRET-1a2b3c"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(envelope["error"]["reason"], json!("needs_confirmation"));
    let summary = envelope["data"]["summary"].as_str().unwrap();
    assert!(
        summary.ends_with("\n  target=out/[REDACTED:PROBE_TOKEN]"),
        "{summary}"
    );
    assert_eq!(
        envelope["next"],
        json!("hcpx exec probe write --yes -- 'target=out/[REDACTED:PROBE_TOKEN]'")
    );
}

/// At a terminal the person sees what would run before answering, and "n" runs
/// nothing.
#[test]
fn the_terminal_prompt_shows_the_parameters() {
    let env = probe_env();
    std::fs::create_dir_all(env.work().join("out")).unwrap();
    let inner = format!("{} exec probe write -- target=out/x.txt", crate::common::BIN);
    let Some(mut script) = env.in_terminal(&inner) else {
        return;
    };
    let mut script = script
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    script.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let output = script.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    let cwd = env.work().display().to_string();
    assert!(
        text.contains(&format!(
            "Run probe write (write) in {cwd}? (confirm)\n  target=out/x.txt [y/N]"
        )),
        "{text}"
    );
    // Wording for the person who answered, not advice meant for an agent.
    assert!(text.contains("error: you answered no; nothing ran\n"), "{text}");
    assert!(!text.contains("ask the person"), "{text}");
    assert!(!text.contains("next:"), "{text}");
    assert!(!env.work().join("out/x.txt").exists());
}
