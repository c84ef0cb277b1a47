//! The conventions a person expects of a CLI: `help CMD`, `--version`, completions,
//! a man page, suggestions for mistyped commands and keys.

use serde_json::json;

use crate::common::TestEnv;

/// `hcpx help exec` is `hcpx exec --help`, for nested commands too.
#[test]
fn help_subcommand_shows_a_commands_help() {
    let env = TestEnv::new();
    let direct = env.run(&["exec", "--help"]);
    let output = env.run(&["help", "exec"]);
    assert_eq!(output.code, 0, "{output}");
    assert_eq!(output.stdout, direct.stdout);
    assert!(output.stdout.contains("hcpx exec transit plan"), "{output}");
    let output = env.run(&["help", "policy", "set"]);
    assert_eq!(output.code, 0, "{output}");
    assert!(
        output.stdout.contains("hcpx policy set git.commit deny"),
        "{output}"
    );
    // Over `--json` the help text is the envelope's `data.help`.
    let (code, envelope) = env.json(&["help", "skill"]);
    assert_eq!(code, 0);
    assert!(
        envelope["data"]["help"]
            .as_str()
            .unwrap()
            .contains("hcpx skill transit")
    );
}

/// The version is a field of its own, not a help text to cut apart.
#[test]
fn version_json_has_a_version_field() {
    let env = TestEnv::new();
    let (code, envelope) = env.json(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(
        envelope["data"],
        json!({ "name": "hcpx", "version": env!("CARGO_PKG_VERSION") })
    );
    let output = env.run(&["--version"]);
    assert_eq!(output.stdout, format!("hcpx {}\n", env!("CARGO_PKG_VERSION")));
}
