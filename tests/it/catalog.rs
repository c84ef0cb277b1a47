//! search, skill and availability against built-in, installed and catalog packs.

use serde_json::json;

use crate::common::{TestEnv, stable};

#[test]
fn search_journey_ranks_transit_first() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["search", "journey"]);
    assert_eq!(code, 0);
    assert_eq!(envelope["ok"], json!(true));
    assert_eq!(envelope["data"]["results"][0]["id"], json!("transit"));
    assert_eq!(envelope["data"]["results"][0]["ready"], json!(true));
}

#[test]
fn search_journey_human() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = TestEnv::new();
    insta::assert_snapshot!("search_journey", env.run(&["search", "journey"]).to_string());
}

#[test]
fn search_ranks_by_field_weight_across_builtins() {
    let env = TestEnv::new();
    let ids = |query: &str| -> Vec<String> {
        let (_, envelope) = env.json(&["search", query]);
        envelope["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids("sql"), ["sqlite", "psql"]);
    assert_eq!(ids("commit history")[0], "git");
    assert_eq!(ids("json")[0], "jq");
    assert!(ids("zebra").is_empty());
}

#[test]
fn empty_search_lists_every_pack_in_id_order_with_limit() {
    let env = TestEnv::new();
    let (_, envelope) = env.json(&["search"]);
    let ids: Vec<&str> = envelope["data"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    // The packs that run first, then the catalog's, each in id order.
    let mut expected: Vec<String> = ["git", "jq", "sqlite", "transit"].map(str::to_owned).to_vec();
    expected.extend(catalog_ids());
    expected.truncate(10);
    assert_eq!(ids, expected);
    let (_, envelope) = env.json(&["search", "--limit", "2"]);
    assert_eq!(envelope["data"]["results"].as_array().unwrap().len(), 2);
}

#[test]
fn installed_pack_overrides_builtin_and_broken_one_hides_nothing() {
    let env = TestEnv::new();
    let dir = env.install_fixture("probe", "probe");
    env.install_fixture("broken", "broken");
    // An installed `jq` replaces the built-in one.
    let jq = env.install_fixture("probe", "jq");
    let manifest = std::fs::read_to_string(jq.join("hcp.json")).unwrap();
    std::fs::write(
        jq.join("hcp.json"),
        manifest
            .replace("\"id\": \"probe\"", "\"id\": \"jq\"")
            .replace("0.1.0", "9.9.9"),
    )
    .unwrap();
    std::fs::write(
        jq.join("SKILL.md"),
        "---\nname: jq\ndescription: an override\n---\n",
    )
    .unwrap();
    let (code, envelope) = env.json(&["search"]);
    assert_eq!(code, 0);
    let results = envelope["data"]["results"].as_array().unwrap();
    let ids: Vec<&str> = results
        .iter()
        .filter(|r| r["installed"] == json!(true))
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["git", "jq", "probe", "sqlite", "transit"]);
    assert_eq!(results[1]["version"], json!("9.9.9"));
    assert_eq!(results[1]["source"], json!("installed"));
    assert_eq!(envelope["data"]["broken"][0]["id"], json!("broken"));
    assert_eq!(
        envelope["data"]["broken"][0]["problems"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
    // People see a warning with the fixing command.
    let output = env.run(&["search", "probe"]);
    assert_eq!(output.code, 0);
    assert!(output.stdout.starts_with("probe  0.1.0"), "{output}");
    assert!(
        output.stderr.contains(
            "warning: installed pack `broken` is broken and was skipped (8 problems); run `hcpx pack check"
        ),
        "{output}"
    );
    assert!(dir.join("probe").exists());
}

#[test]
fn skill_prints_skill_then_reference() {
    let env = TestEnv::new();
    let output = env.run(&["skill", "transit"]);
    assert_eq!(output.code, 0, "{output}");
    insta::assert_snapshot!("skill_transit", output.to_string());
}

#[test]
fn skill_json_has_text_and_reference() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["skill", "git"]);
    assert_eq!(code, 0);
    let data = &envelope["data"];
    assert!(data["skill"].as_str().unwrap().starts_with("---\nname: git\n"));
    let reference = data["reference"].as_str().unwrap();
    assert!(reference.contains("### reset-hard (destructive)"), "{reference}");
    assert!(
        reference.contains("| paths | array of path | yes |"),
        "{reference}"
    );
    assert!(reference.contains("| n | integer | no | 20 |"), "{reference}");
}

#[test]
fn unknown_pack_suggests_the_closest() {
    let env = TestEnv::new();
    let output = env.run(&["skill", "transt"]);
    insta::assert_snapshot!(output.to_string(), @r"
    exit_code: 2
    ----- stdout -----
    ----- stderr -----
    error: no pack is named `transt`; closest: transit, tar
    next: hcpx skill transit
    [EOF]
    ");
    let (code, envelope) = env.json(&["availability", "nothing-like-it"]);
    assert_eq!(code, 2);
    assert_eq!(
        stable(envelope, env.root.path()),
        json!({
            "ok": false, "argv": ["--json", "availability", "nothing-like-it"], "child": null, "spawned": false,
            "exitCode": 2, "stdout": "", "stderr": "", "data": { "suggestions": [] }, "outputTruncated": false,
            "durationMs": "[ms]",
            "error": { "code": 2, "reason": "unknown_pack", "message": "no pack is named `nothing-like-it`" },
            "next": "hcpx search"
        })
    );
}

/// A pack id the caller gave is named in the refusal, but made inert: an escape
/// sequence in it never reaches a terminal, nor does a long id at any length.
#[test]
fn an_unknown_pack_is_named_inert_and_short() {
    let env = TestEnv::new();
    let (_, envelope) = env.json(&["skill", "x\u{1b}]52;c;aGk=\u{7}"]);
    assert_eq!(
        envelope["error"]["message"],
        json!("no pack is named `x\\u{1b}]52;c;aGk=\\u{7}`")
    );
    let long = "a".repeat(100);
    let (_, envelope) = env.json(&["availability", &long]);
    assert_eq!(
        envelope["error"]["message"],
        json!(format!("no pack is named `{}…`", "a".repeat(64)))
    );
}

#[test]
fn availability_transit_is_ready() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["availability", "transit"]);
    assert_eq!(code, 0);
    assert_eq!(
        envelope["data"],
        json!({
            "id": "transit", "installed": true, "runnable": true, "bound": true, "permitted": true,
            "ready": true, "problems": [], "program": null, "update": null,
            "grants": {
                "commands": [
                    { "command": "plan", "network": false, "write": [] },
                    { "command": "stops", "network": false, "write": [] },
                    { "command": "lines", "network": false, "write": [] },
                    { "command": "departures", "network": false, "write": [] },
                ],
                "cache": null,
            },
        })
    );
}

#[test]
fn availability_reports_each_false_flag_with_a_fix() {
    let mut env = TestEnv::new();
    // No git on this PATH.
    env.path = "/nonexistent".to_owned();
    env.install_fixture("locked", "locked");
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"locked.*","decision":"deny"}]}"#,
    );
    let (_, envelope) = env.json(&["availability", "git"]);
    assert_eq!(envelope["data"]["runnable"], json!(false));
    assert_eq!(envelope["data"]["ready"], json!(false));
    assert_eq!(
        envelope["data"]["problems"],
        json!([{
            "flag": "runnable", "reason": "`git` is not on PATH",
            "fix": "install `git` (for example: apt-get install git, or brew install git)"
        }])
    );
    let output = env.run(&["availability", "locked"]);
    insta::assert_snapshot!(output.to_string().replace(&env.home().display().to_string(), "[HOME]"), @r"
    exit_code: 0
    ----- stdout -----
    locked: not ready
      installed  yes
      runnable   yes
      bound      NO 
      permitted  NO 
      grants     open: no network; writes only its temporary folder
      bound: required credential LOCKED_KEY is not bound
        fix: hcpx bind locked LOCKED_KEY
      permitted: every command is denied by rule `locked.*` (rules[0]) in [TEMP]/home/policy.json
        fix: hcpx policy set locked.* confirm
    ----- stderr -----
    [EOF]
    ");
}

#[test]
fn bound_flag_follows_the_binding_store() {
    let env = TestEnv::new().env("MY_KEY", "value-from-env");
    env.install_fixture("locked", "locked");
    let (code, envelope) = env.json(&["bind", "locked", "LOCKED_KEY", "--from-env", "MY_KEY"]);
    assert_eq!(code, 0, "{envelope}");
    let (_, envelope) = env.json(&["availability", "locked"]);
    assert_eq!(envelope["data"]["bound"], json!(true));
    env.write("home/bindings.json", "{ not json");
    let (_, envelope) = env.json(&["availability", "locked"]);
    assert_eq!(envelope["data"]["bound"], json!(false));
    let reason = envelope["data"]["problems"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("bindings.json cannot be parsed"), "{reason}");
}

#[test]
fn broken_install_is_reported_not_installed() {
    let env = TestEnv::new();
    env.install_fixture("broken", "broken");
    let (code, envelope) = env.json(&["availability", "broken"]);
    assert_eq!(code, 0);
    assert_eq!(envelope["data"]["installed"], json!(false));
    assert_eq!(envelope["data"]["problems"][0]["flag"], json!("installed"));
    let (code, envelope) = env.json(&["skill", "broken"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["error"]["message"],
        json!("the installed pack by that name is broken")
    );
}

#[test]
fn help_is_success_and_usage_errors_are_refusals() {
    let env = TestEnv::new();
    let output = env.run(&["--help"]);
    assert_eq!(output.code, 0);
    assert!(output.stdout.contains("hcpx search journey"), "{output}");
    let output = env.run(&["search", "--limit", "0"]);
    assert_eq!(output.code, 2);
    assert_eq!(
        output.stderr,
        "error: invalid value '0' for '--limit <LIMIT>': 0 is not in 1..=10000\nnext: hcpx search --help\n",
        "{output}"
    );
    // clap's words and tips reach the caller, its own words among them, with
    // control characters escaped and long words cut.
    let (code, envelope) = env.json(&["frob\u{7}\u{202e}nicate", "x"]);
    assert_eq!(code, 2);
    assert_eq!(
        envelope["error"],
        json!({
            "code": 2, "reason": "invalid_arguments",
            // clap drops terminal controls (the bell); hcpx escapes the rest.
            "message": "unrecognized subcommand 'frob\\u{202e}nicate'",
        })
    );
    assert_eq!(envelope["next"], json!("hcpx --help"));
    let long = "a".repeat(5000);
    let (_, envelope) = env.json(&[&long]);
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(
        message.chars().count() <= 301 && message.ends_with('…'),
        "{message}"
    );
}

/// The mistakes an agent makes most, with the exact words it gets back: a misspelt
/// command or option is named, and `next` is the same command corrected.
#[test]
fn usage_errors_keep_clap_detail_and_suggest_the_corrected_command() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["skil", "transit"]);
    assert_eq!(code, 2);
    assert_eq!(
        (&envelope["error"]["message"], &envelope["next"]),
        (
            &json!("unrecognized subcommand 'skil'; a similar subcommand exists: 'skill'"),
            &json!("hcpx skill transit")
        )
    );
    assert_eq!(
        envelope["data"],
        json!({
            "problem": "unrecognized subcommand 'skil'",
            "tips": ["a similar subcommand exists: 'skill'"],
            "usage": "hcpx [OPTIONS] <COMMAND>",
        })
    );
    let (_, envelope) = env.json(&["search", "--limt", "3", "journey"]);
    assert_eq!(
        (&envelope["error"]["message"], &envelope["next"]),
        (
            &json!("unexpected argument '--limt' found; a similar argument exists: '--limit'"),
            &json!("hcpx search --limit 3 journey")
        )
    );
    let (_, envelope) = env.json(&["exec", "transit"]);
    assert_eq!(
        envelope["error"]["message"],
        json!("the following required arguments were not provided: <COMMAND>")
    );
    let (_, envelope) = env.json(&["exec", "transit", "plan", "-x"]);
    assert_eq!(
        envelope["error"]["message"],
        json!("unexpected argument '-x' found; to pass '-x' as a value, use '-- -x'")
    );
    // The most likely mistake, no `--` before the parameters, is not one any more.
    let (code, envelope) = env.json(&[
        "exec",
        "transit",
        "plan",
        "from=Westgate",
        "to=Harbour",
        "at=08:00",
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["child"].as_array().unwrap()[1..],
        [
            json!("plan"),
            json!("--from=Westgate"),
            json!("--to=Harbour"),
            json!("--at=08:00"),
            json!("--json")
        ]
    );
}

/// A broken pack with one problem says `1 problem` wherever it is counted: doctor,
/// the warning of search, availability, and an install of it.
#[test]
fn one_problem_is_one_problem() {
    let env = TestEnv::new();
    let dir = env.install_fixture("probe", "probe");
    let manifest = dir.join("hcp.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    value["version"] = json!("one");
    std::fs::write(&manifest, value.to_string()).unwrap();
    let output = env.run(&["doctor"]);
    assert!(
        output.stdout.contains(&format!(
            "  broken: probe (1 problem): hcpx pack check {}\n",
            dir.display()
        )),
        "{output}"
    );
    let output = env.run(&["search", "probe"]);
    assert!(
        output.stderr.contains(&format!(
            "warning: installed pack `probe` is broken and was skipped (1 problem); run `hcpx pack check {}`",
            dir.display()
        )),
        "{output}"
    );
    let (_, envelope) = env.json(&["availability", "probe"]);
    assert_eq!(
        envelope["data"]["problems"][0]["reason"],
        json!("the installed manifest has 1 problem"),
        "{envelope}"
    );
    let copy = env.root.path().join("copy");
    crate::common::copy_dir(&dir, &copy);
    let (_, envelope) = env.json(&["install", copy.to_str().unwrap(), "--yes"]);
    assert_eq!(
        envelope["error"]["message"],
        json!("the pack is invalid (1 problem); nothing was installed"),
        "{envelope}"
    );
}

pub(crate) use crate::catalog_packs::catalog_ids;
