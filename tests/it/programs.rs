//! Packs that wrap a program of the machine: the program found under `bin[0]` or an
//! alias, the variant `availability` tells from its `versionArgs` (run once under the
//! sandbox), and how to get a missing program on this system.

use serde_json::json;

use crate::common::TestEnv;

/// A program on the test's PATH: a shell script in `root/bin`, which comes first.
pub(crate) fn fake_program(env: &mut TestEnv, name: &str, script: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = env.root.path().join("bin");
    let path = env.write(&format!("bin/{name}"), &format!("#!/bin/sh\n{script}\n"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prefix = format!("{}:", bin.display());
    if !env.path.starts_with(&prefix) {
        env.path = format!("{prefix}{}", env.path);
    }
    path
}

/// A pack folder in the working directory wrapping the program `bin`, with this
/// `program` block and one read command `run` (argv `args`).
pub(crate) fn wrapper_pack(env: &TestEnv, id: &str, bin: &str, program: serde_json::Value, args: &[&str]) {
    let manifest = json!({
        "hcp": 1, "id": id, "version": "1.0.0", "description": format!("The {id} wrapper"),
        "bin": [bin], "program": program,
        "commands": { "run": { "summary": "Run it", "effect": "read", "argv": args } }
    });
    env.write(&format!("work/{id}/hcp.json"), &manifest.to_string());
    env.write(
        &format!("work/{id}/SKILL.md"),
        &format!("---\nname: {id}\ndescription: Wraps {bin}.\n---\n"),
    );
}

/// A pack's program is found under `bin[0]`, else under each of `program.aliases`
/// (Debian's `fd` is `fdfind`); the child's argv names the one found.
#[test]
fn a_program_is_found_under_an_alias() {
    let mut env = TestEnv::new();
    let fake = fake_program(&mut env, "fakefind", "echo \"found: $*\"");
    wrapper_pack(
        &env,
        "finder",
        "fakefd-hcpx-missing",
        json!({ "aliases": ["fakefd2-hcpx-missing", "fakefind"] }),
        &["--all"],
    );
    env.install_ok("./finder", false);
    let (code, envelope) = env.json(&["availability", "finder"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["data"]["program"],
        json!({ "name": "fakefd-hcpx-missing", "aliases": ["fakefd2-hcpx-missing", "fakefind"],
                "path": fake, "variant": null, "version": null, "install": [], "homepage": null })
    );
    if !crate::common::require_kernel_layers() {
        return;
    }
    let (code, envelope) = env.json(&["exec", "finder", "run"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["child"], json!([fake, "--all"]));
    assert_eq!(envelope["stdout"], json!("found: --all\n"));
    // With none of its names on PATH, each is listed.
    env.path = "/usr/bin:/bin".to_owned();
    let (_, envelope) = env.json(&["availability", "finder"]);
    assert_eq!(
        envelope["data"]["problems"][0]["reason"],
        json!("`fakefd-hcpx-missing` is not on PATH, nor `fakefd2-hcpx-missing` nor `fakefind`")
    );
}

/// `availability` runs `program.versionArgs` once, under the sandbox, and reports a
/// program that does not match `versionPattern` as the wrong variant; exec does not
/// spend the run.
#[test]
fn availability_tells_the_wrong_variant() {
    if !crate::common::require_kernel_layers() {
        return;
    }
    let mut env = TestEnv::new();
    let marker = env.root.path().join("asked");
    let script = format!(
        "[ \"$1\" = --version ] && {{ echo \"fakeyq 4.44.3 (mikefarah)\"; touch {} 2>/dev/null; exit 0; }}\necho ran",
        marker.display()
    );
    let fake = fake_program(&mut env, "fakeyq", &script);
    wrapper_pack(
        &env,
        "yamlq",
        "fakeyq",
        json!({ "variant": "kislyuk/yq, the jq wrapper", "versionArgs": ["--version"],
                "versionPattern": "^fakeyq 3\\.", "install": { "pipx": "yq" } }),
        &[],
    );
    env.install_ok("./yamlq", false);
    let (code, envelope) = env.json(&["availability", "yamlq"]);
    assert_eq!(code, 0, "{envelope}");
    let data = &envelope["data"];
    assert_eq!(
        (&data["runnable"], &data["ready"]),
        (&json!(false), &json!(false))
    );
    let dir = fake.parent().unwrap().display().to_string();
    assert_eq!(
        data["problems"],
        json!([{
            "flag": "runnable",
            "reason": format!("found {}, but it is not kislyuk/yq, the jq wrapper: `fakeyq --version` printed \"fakeyq 4.44.3 (mikefarah)\"", fake.display()),
            "fix": format!("install kislyuk/yq, the jq wrapper (pipx install yq), ahead of {dir} on PATH"),
        }])
    );
    assert_eq!(data["program"]["version"], json!("fakeyq 4.44.3 (mikefarah)"));
    assert!(
        !marker.exists(),
        "the version check ran in the sandbox, which lets it write nowhere but its temporary folder"
    );
    // Exec does not run the check: the call runs the program once, as asked.
    let (code, envelope) = env.json(&["exec", "yamlq", "run"]);
    assert_eq!((code, &envelope["stdout"]), (0, &json!("ran\n")), "{envelope}");
    // The supported variant passes.
    fake_program(&mut env, "fakeyq", "echo 'fakeyq 3.1.0'");
    let (_, envelope) = env.json(&["availability", "yamlq"]);
    assert_eq!(
        (
            &envelope["data"]["runnable"],
            &envelope["data"]["program"]["version"]
        ),
        (&json!(true), &json!("fakeyq 3.1.0")),
        "{envelope}"
    );
    let output = env.run(&["availability", "yamlq"]);
    assert!(
        output.stdout.contains(&format!(
            "  program    {} (fakeyq 3.1.0); supports kislyuk/yq, the jq wrapper\n",
            fake.display()
        )),
        "{output}"
    );
}

/// On this Debian machine, a missing program's fix is the apt-get line the pack
/// declares (and its homepage), in availability and in exec's `next`.
#[test]
fn how_to_get_a_missing_program_on_this_debian() {
    let debian = std::fs::read_to_string("/etc/os-release").is_ok_and(|text| {
        text.lines()
            .any(|line| line == "ID=debian" || line.starts_with("ID_LIKE=") && line.contains("debian"))
    });
    if !crate::common::require(debian, "a Debian-like system (/etc/os-release)") {
        return;
    }
    let env = TestEnv::new();
    wrapper_pack(
        &env,
        "finder",
        "finder-hcpx-missing",
        json!({ "install": { "apt": "finder-tools", "brew": "finder" }, "homepage": "https://example.org/finder" }),
        &[],
    );
    env.install_ok("./finder", false);
    let fix = "sudo apt-get install finder-tools (see https://example.org/finder)";
    let (_, envelope) = env.json(&["availability", "finder"]);
    assert_eq!(
        envelope["data"]["problems"][0],
        json!({ "flag": "runnable", "reason": "`finder-hcpx-missing` is not on PATH", "fix": fix })
    );
    assert_eq!(
        envelope["data"]["program"]["install"],
        json!(["sudo apt-get install finder-tools"])
    );
    let (code, envelope) = env.json(&["exec", "finder", "run"]);
    assert_eq!(code, 2, "{envelope}");
    assert_eq!(
        (&envelope["error"]["reason"], &envelope["next"]),
        (
            &json!("not_runnable"),
            &json!(format!("{fix}, then run hcpx availability finder"))
        )
    );
}
