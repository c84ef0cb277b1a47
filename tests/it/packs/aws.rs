//! The `aws` catalog pack against the real AWS CLI, offline: what runs without AWS
//! (the version, the configuration), credentials from a profile under `~/.aws` and
//! from bindings, the failures without credentials or a reachable endpoint, the
//! argv of each command and the refusals.

use serde_json::{Value, json};

use super::{env, have, install, on_tools_path};
use crate::common::TestEnv;

fn aws_env() -> TestEnv {
    let env = env();
    install(&env, "aws");
    env
}

/// A profile `dev` in the user's ~/.aws, with its keys and region.
fn with_profile(env: &TestEnv) {
    env.write(
        "user/.aws/credentials",
        "[dev]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    );
    env.write("user/.aws/config", "[profile dev]\nregion = eu-west-3\n");
    env.bind("aws", "AWS_PROFILE", "dev");
}

fn plan(env: &TestEnv, command: &str, params: &[&str]) -> Value {
    super::plan(env, "aws", command, params)
}

#[test]
fn aws_version_runs_offline() {
    if !have("aws") {
        return;
    }
    let env = aws_env();
    let (code, envelope) = env.json(&["exec", "aws", "version"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"].as_str().unwrap().starts_with("aws-cli/2."),
        "{envelope}"
    );
    assert_eq!(plan(&env, "version", &[])["sandbox"]["network"], json!(false));
}

/// The profile's keys and region are read from ~/.aws; bound keys come first.
#[test]
fn aws_finds_credentials_in_the_profile_then_in_bindings() {
    if !have("aws") {
        return;
    }
    let env = aws_env();
    with_profile(&env);
    let output = env.run(&["exec", "aws", "config-list"]);
    assert_eq!(output.code, 0, "{output}");
    let rows: Vec<Vec<&str>> = output
        .stdout
        .lines()
        .skip(2)
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec![
                "profile",
                "dev",
                "env",
                "['AWS_PROFILE',",
                "'AWS_DEFAULT_PROFILE']"
            ],
            vec!["access_key", "****************MPLE", "shared-credentials-file"],
            vec!["secret_key", "****************EKEY", "shared-credentials-file"],
            vec!["region", "eu-west-3", "config-file", "~/.aws/config"],
        ],
        "{output}"
    );
    env.bind("aws", "AWS_ACCESS_KEY_ID", "AKIAZZZZZZZZZZZZ9876");
    env.bind("aws", "AWS_SECRET_ACCESS_KEY", "bound/secret/key/value/abcd");
    let output = env.run(&["exec", "aws", "config-list"]);
    let rows: Vec<Vec<&str>> = output
        .stdout
        .lines()
        .skip(3)
        .take(2)
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["access_key", "****************9876", "env"],
            vec!["secret_key", "****************abcd", "env"]
        ],
        "{output}"
    );
}

/// Without credentials the CLI says so (exit code 253); with them but no endpoint to
/// reach (a region that does not exist), it says that (exit code 255).
#[test]
fn aws_fails_with_its_own_messages_offline() {
    if !have("aws") {
        return;
    }
    let env = aws_env();
    let (code, envelope) = env.json(&["exec", "aws", "whoami", "--", "region=eu-west-3"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stderr"]),
        (
            1,
            &json!(253),
            &json!(
                "\nUnable to locate credentials. You can configure credentials by running \"aws configure\".\n"
            )
        ),
        "{envelope}"
    );
    with_profile(&env);
    let (code, envelope) = env.json(&["exec", "aws", "whoami", "--", "region=xx-nowhere-1"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stderr"]),
        (
            1,
            &json!(255),
            &json!("\nCould not connect to the endpoint URL: \"https://sts.xx-nowhere-1.amazonaws.com/\"\n")
        ),
        "{envelope}"
    );
}

#[test]
fn aws_commands_render_their_argv() {
    if !have("aws") {
        return;
    }
    let env = aws_env();
    let aws = on_tools_path("aws").unwrap().display().to_string();
    let base = [aws.as_str(), "--color", "off", "--cli-connect-timeout", "15"];
    let child = |command: &str, params: &[&str]| plan(&env, command, params)["child"].clone();
    let with = |rest: &[&str]| json!(base.iter().chain(rest).collect::<Vec<_>>());
    assert_eq!(
        child("whoami", &[]),
        with(&["sts", "get-caller-identity", "--output", "json"])
    );
    assert_eq!(
        child("s3-ls", &["uri=s3://my-bucket/reports/", "recursive=true"]),
        with(&["s3", "ls", "s3://my-bucket/reports/", "--recursive"])
    );
    assert_eq!(
        child("s3-upload", &["file=dist/app.zip", "to=s3://my-bucket/releases/"]),
        with(&[
            "s3",
            "cp",
            "./dist/app.zip",
            "s3://my-bucket/releases/",
            "--only-show-errors"
        ])
    );
    assert_eq!(
        child(
            "ec2-describe-instances",
            &[
                "filter=Name=instance-state-name,Values=running",
                "query=Reservations[].Instances[].InstanceId"
            ]
        ),
        with(&[
            "ec2",
            "describe-instances",
            "--filters=Name=instance-state-name,Values=running",
            "--max-items=100",
            "--query=Reservations[].Instances[].InstanceId",
            "--output",
            "json"
        ])
    );
    let data = plan(&env, "s3-download", &["from=s3://my-bucket/k.csv", "into=data"]);
    assert_eq!(
        data["child"],
        with(&[
            "s3",
            "cp",
            "s3://my-bucket/k.csv",
            "./data/",
            "--only-show-errors"
        ])
    );
    let grants: Vec<std::path::PathBuf> = data["sandbox"]["write"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            env.work()
                .join(entry.as_str().unwrap())
                .components()
                .filter(|c| *c != std::path::Component::CurDir)
                .collect()
        })
        .collect();
    assert_eq!(
        (&data["effect"], &data["sandbox"]["network"], grants),
        (&json!("write"), &json!(true), vec![env.work().join("data")])
    );
}

#[test]
fn aws_refuses_files_outside_and_values_read_as_options() {
    if !have("aws") {
        return;
    }
    let env = aws_env();
    let s3 = "s3://[a-z0-9][a-z0-9.-]{1,62}(/[^\\s]*)?";
    for (command, params, message) in [
        (
            "s3-upload",
            &["file=/etc/passwd", "to=s3://my-bucket/x"][..],
            "parameter `file` is not a relative path inside the working directory".to_owned(),
        ),
        (
            "s3-upload",
            &["file=../x", "to=s3://my-bucket/x"],
            "parameter `file` leaves the working directory".to_owned(),
        ),
        (
            "s3-upload",
            &["file=a.txt", "to=--endpoint-url=http://evil.example"],
            format!("parameter `to` does not match the pattern {s3}"),
        ),
        (
            "s3-download",
            &["from=file:///etc/passwd", "into=x"],
            format!("parameter `from` does not match the pattern {s3}"),
        ),
        (
            "s3-download",
            &["from=s3://my-bucket/k", "into=../up"],
            "parameter `into` leaves the working directory".to_owned(),
        ),
        (
            "s3-ls",
            &["uri=s3://my-bucket/", "region=--debug"],
            "parameter `region` does not match the pattern [a-z]{2}(-[a-z]+)+-[0-9]{1,2}".to_owned(),
        ),
        (
            "ec2-describe-instances",
            &["instance-id=i-1 --dry-run"],
            "parameter `instance-id` does not match the pattern i-[0-9a-f]{8,17}".to_owned(),
        ),
    ] {
        let mut args = vec!["exec", "aws", command, "--yes", "--"];
        args.extend_from_slice(params);
        let (code, envelope) = env.json(&args);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{params:?}: {envelope}"
        );
    }
}
