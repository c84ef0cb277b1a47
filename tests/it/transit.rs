//! The transit pack's planner, run as a real child process, on journeys worked out
//! by hand from the timetable in `packs/transit/transit`.

use serde_json::{Value, json};

use crate::common::builtin;

fn transit(args: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new(builtin("transit").join("transit"))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn plan(from: &str, to: &str, at: &str) -> Value {
    let (code, stdout, stderr) = transit(&[
        "plan",
        &format!("--from={from}"),
        &format!("--to={to}"),
        &format!("--at={at}"),
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn direct_ride() {
    // Red from Westgate every 10 min from 05:30: 08:00 is a departure; Eastfield is
    // 19 minutes on.
    let journey = plan("Westgate", "Eastfield", "08:00");
    assert_eq!(journey["depart"], json!("08:00"));
    assert_eq!(journey["arrive"], json!("08:19"));
    assert_eq!(journey["changes"], json!(0));
    assert_eq!(journey["legs"][0]["stops"], json!(6));
}

#[test]
fn one_change_wins_a_tie_with_two() {
    // Red to Central 08:10; a change needs 2 min; Blue northbound leaves South Docks
    // at 05:45 + 12k and reaches Central 12 min later, so 08:21; North Park is 10 min
    // on: 08:31. Green via Old Town and Blue from University also reaches 08:31,
    // with two changes, and must lose the tie.
    let journey = plan("westgate", "north park", "08:00");
    assert_eq!(
        journey,
        json!({
            "from": "Westgate", "to": "North Park", "at": "08:00", "depart": "08:00", "arrive": "08:31",
            "durationMin": 31, "changes": 1,
            "legs": [
                { "line": "Red", "towards": "Eastfield", "from": "Westgate", "depart": "08:00", "to": "Central", "arrive": "08:10", "stops": 3 },
                { "line": "Blue", "towards": "North Park", "from": "Central", "depart": "08:21", "to": "North Park", "arrive": "08:31", "stops": 3 }
            ]
        })
    );
}

#[test]
fn two_changes_beat_a_slower_single_change() {
    // Green south from Airport at 07:00 reaches Old Town 07:15; Red east passes Old
    // Town at 05:37 + 10k, so 07:17, Harbour 07:26; Yellow towards Cannery passes
    // Harbour at 06:29 + 20k, so 07:29, Cannery 07:35. Staying on Green to Hospital
    // (07:27) and taking Yellow (07:39) arrives 07:55.
    let journey = plan("Airport", "Cannery", "07:00");
    assert_eq!(journey["arrive"], json!("07:35"));
    assert_eq!(journey["changes"], json!(2));
    let lines: Vec<&str> = journey["legs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|leg| leg["line"].as_str().unwrap())
        .collect();
    assert_eq!(lines, ["Green", "Red", "Yellow"]);
    assert_eq!(journey["legs"][1]["depart"], json!("07:17"));
    assert_eq!(journey["legs"][2]["depart"], json!("07:29"));
}

#[test]
fn waits_for_the_next_departure() {
    // Blue southbound from North Park runs 05:40 + 12k: after 08:01 the next is 08:04,
    // reaching Central (10 min) at 08:14.
    let journey = plan("North Park", "Central", "08:01");
    assert_eq!(journey["depart"], json!("08:04"));
    assert_eq!(journey["arrive"], json!("08:14"));
}

#[test]
fn no_journey_after_the_last_service() {
    let (code, _, stderr) = transit(&["plan", "--from=Zoo", "--to=Airport", "--at=23:50"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("no journey from Zoo to Airport at or after 23:50"),
        "{stderr}"
    );
}

#[test]
fn ambiguous_and_unknown_stops_exit_2_with_candidates() {
    let (code, _, stderr) = transit(&["plan", "--from=park", "--to=Zoo", "--at=09:00"]);
    assert_eq!(code, 2);
    assert_eq!(stderr, "transit: \"park\" could be North Park, Tech Park\n");
    let (code, _, stderr) = transit(&["plan", "--from=Atlantis", "--to=Zoo", "--at=09:00"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no stop called \"Atlantis\""));
    let (code, _, _) = transit(&["plan", "--from=Zoo", "--to=zoo", "--at=09:00"]);
    assert_eq!(code, 2);
    let (code, _, _) = transit(&["plan", "--from=Zoo", "--to=Airport", "--at=25:00"]);
    assert_eq!(code, 2);
}

#[test]
fn departures_from_central() {
    // Red east 05:40+10k, Blue south 05:50+12k, Red west 05:44+10k, Blue north 05:57+12k.
    let (code, stdout, _) = transit(&["departures", "--stop=Central", "--at=08:00"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "Departures from Central at or after 08:00:\n  08:00  Red line towards Eastfield\n  08:02  Blue line towards South Docks\n  \
         08:04  Red line towards Westgate\n  08:09  Blue line towards North Park\n  08:10  Red line towards Eastfield\n  \
         08:14  Red line towards Westgate\n  08:14  Blue line towards South Docks\n  08:20  Red line towards Eastfield\n"
    );
}

#[test]
fn network_has_22_stops_on_4_lines() {
    let (_, stdout, _) = transit(&["stops", "--json"]);
    let stops: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(stops.as_array().unwrap().len(), 22);
    let central = stops
        .as_array()
        .unwrap()
        .iter()
        .find(|stop| stop["name"] == "Central")
        .unwrap();
    assert_eq!(central["lines"], json!(["Red", "Blue"]));
    let (_, stdout, _) = transit(&["lines", "--json"]);
    let lines: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(lines.as_array().unwrap().len(), 4);
    assert_eq!(
        lines[2]["service"][0],
        json!({ "from": "Airport", "first": "06:00", "last": "22:45" })
    );
}

/// The CLI must run with whatever POSIX sh and awk a machine ships: mawk (Debian),
/// gawk, BWK awk (`original-awk`, the awk of macOS) and busybox, under dash, bash
/// and busybox sh. `.ci/run` installs them; each one present must give the very same
/// bytes as the default for every command.
#[test]
fn same_answers_under_every_awk_and_shell() {
    let script = builtin("transit").join("transit");
    let cases: [&[&str]; 5] = [
        &["plan", "--from=Airport", "--to=Cannery", "--at=07:00", "--json"],
        &["plan", "--from=westgate", "--to=north park", "--at=08:00"],
        &["departures", "--stop=Central", "--at=08:00", "--json"],
        &["stops", "--query=o", "--json"],
        &["lines"],
    ];
    let run = |shell: &[&str], path: &str, args: &[&str]| -> Vec<u8> {
        let output = std::process::Command::new(shell[0])
            .args(&shell[1..])
            .arg(&script)
            .args(args)
            .env_clear()
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{shell:?} {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    let expected: Vec<Vec<u8>> = cases
        .iter()
        .map(|args| run(&["/bin/sh"], "/usr/bin:/bin", args))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut combinations = 0;
    for (name, awk) in [
        ("mawk", "mawk"),
        ("gawk", "gawk"),
        ("bwk", "original-awk"),
        ("busybox", "busybox awk"),
    ] {
        let program = awk.split(' ').next().unwrap();
        // Missing here: said, and a failure in CI, which installs every one.
        if !crate::common::require(
            ["/usr/bin", "/bin"]
                .iter()
                .any(|d| std::path::Path::new(d).join(program).exists()),
            program,
        ) {
            continue;
        }
        let bin = dir.path().join(name);
        std::fs::create_dir_all(&bin).unwrap();
        let wrapper = bin.join("awk");
        std::fs::write(&wrapper, format!("#!/bin/sh\nexec {awk} \"$@\"\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = format!("{}:/usr/bin:/bin", bin.display());
        for shell in [&["dash"][..], &["bash"], &["busybox", "sh"]] {
            if !crate::common::require(
                std::path::Path::new("/bin").join(shell[0]).exists()
                    || std::path::Path::new("/usr/bin").join(shell[0]).exists(),
                shell[0],
            ) {
                continue;
            }
            for (args, want) in cases.iter().zip(&expected) {
                assert_eq!(&run(shell, &path, args), want, "{awk} under {shell:?}: {args:?}");
            }
            combinations += 1;
        }
    }
    assert!(combinations >= 1, "at least the default awk under dash or bash");
}

/// What packs/transit/SKILL.md says of exit codes is what an agent gets: hcpx exits 1
/// when transit fails, with transit's own code as `exitCode` (1 for no journey, 2
/// for a stop that matches none or several), and 2 when hcpx refuses before running.
#[test]
fn the_exit_codes_the_skill_states_hold() {
    let skill = std::fs::read_to_string(builtin("transit").join("SKILL.md")).unwrap();
    let stated = skill
        .split("## Exit codes\n\n")
        .nth(1)
        .unwrap()
        .replace('\n', " ");
    assert!(
        stated.starts_with(
            "`hcpx exec transit ...` exits 0 when transit answered; 1 when transit itself failed, with \
             transit's own code in the result's `exitCode` (1: no journey; 2: a stop that matches none or \
             several); 2 when hcpx refused before running it"
        ),
        "{stated}"
    );
    if !crate::common::require_kernel_layers() {
        return;
    }
    let env = crate::common::TestEnv::new();
    for (params, code, exit_code, reason) in [
        (
            &["from=Westgate", "to=Central", "at=08:00"][..],
            0,
            json!(0),
            json!(null),
        ),
        (
            &["from=Westgate", "to=Central", "at=23:59"],
            1,
            json!(1),
            json!("failed"),
        ),
        (
            &["from=park", "to=Central", "at=08:00"],
            1,
            json!(2),
            json!("failed"),
        ),
        (
            &["from=Westgate", "to=Nowhere", "at=08:00"],
            1,
            json!(2),
            json!("failed"),
        ),
        (
            &["from=Westgate", "to=Central", "at=25:00"],
            2,
            json!(2),
            json!("invalid_param"),
        ),
        (
            &["from=Westgate", "towards=Central"],
            2,
            json!(2),
            json!("unknown_param"),
        ),
    ] {
        let mut args = vec!["exec", "transit", "plan", "--"];
        args.extend_from_slice(params);
        let (got, envelope) = env.json(&args);
        assert_eq!(
            (got, &envelope["exitCode"], &envelope["error"]["reason"]),
            (code, &exit_code, &reason),
            "{params:?}: {envelope}"
        );
    }
}
