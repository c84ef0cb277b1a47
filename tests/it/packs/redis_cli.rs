//! The `redis-cli` catalog pack against a real `redis-server` that the test starts
//! on a free loopback port with a password, and always stops.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{env, have, held_for_a_person_then_lowered, install, install_reaching_only, off_the_allowlist};
use crate::common::{TestEnv, require, terminate, wait_until};

const PASSWORD: &str = "redis-test-pw-42";

struct Redis {
    server: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Redis {
    fn start() -> Option<Self> {
        if !require(
            Command::new("redis-server").arg("--version").output().is_ok(),
            "redis-server",
        ) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--requirepass",
                PASSWORD,
            ])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let redis = Self {
            server,
            port,
            _dir: dir,
        };
        let ready = wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(ready, "redis-server did not start on port {port}");
        Some(redis)
    }

    /// A command sent by the test itself, to seed data the pack only reads.
    fn seed(&self, args: &[&str]) {
        let status = Command::new("redis-cli")
            .args(["-e", "-p", &self.port.to_string()])
            .args(args)
            .env("REDISCLI_AUTH", PASSWORD)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "redis-cli {args:?}");
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if terminate(&mut self.server).is_none() {
            let _ = self.server.kill();
            let _ = self.server.wait();
        }
    }
}

fn bound(redis: &Redis) -> (TestEnv, String) {
    let env = env();
    install(&env, "redis-cli");
    env.bind("redis-cli", "REDISCLI_AUTH", PASSWORD);
    (env, format!("port={}", redis.port))
}

fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "redis-cli", command, "--yes", "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

/// The reply of a command that must succeed, as redis-cli printed it.
fn reply(env: &TestEnv, command: &str, params: &[&str]) -> String {
    let (code, envelope) = exec(env, command, params);
    assert_eq!(
        (code, &envelope["stderr"]),
        (0, &json!("")),
        "{command} {params:?}: {envelope}"
    );
    envelope["stdout"].as_str().unwrap().to_owned()
}

#[test]
fn redis_cli_reads_keys_of_every_type() {
    if !have("redis-cli") {
        return;
    }
    let Some(redis) = Redis::start() else { return };
    let (env, port) = bound(&redis);
    redis.seed(&["SET", "user:1", "ada"]);
    redis.seed(&["HSET", "profile:1", "name", "Ada", "visits", "3"]);
    redis.seed(&["RPUSH", "jobs", "a", "b", "c"]);
    redis.seed(&["SADD", "tags", "x"]);
    let port = port.as_str();
    assert_eq!(reply(&env, "ping", &[port]), "\"PONG\"\n");
    assert_eq!(reply(&env, "get", &[port, "key=user:1"]), "\"ada\"\n");
    assert_eq!(reply(&env, "get", &[port, "key=absent"]), "null\n");
    assert_eq!(reply(&env, "type", &[port, "key=profile:1"]), "\"hash\"\n");
    assert_eq!(reply(&env, "ttl", &[port, "key=user:1"]), "-1\n");
    assert_eq!(
        reply(&env, "hgetall", &[port, "key=profile:1"]),
        "{\"name\":\"Ada\",\"visits\":\"3\"}\n"
    );
    assert_eq!(
        reply(&env, "lrange", &[port, "key=jobs", "start=1"]),
        "[\"b\",\"c\"]\n"
    );
    assert_eq!(reply(&env, "smembers", &[port, "key=tags"]), "[\"x\"]\n");
    let mut keys: Vec<String> = reply(&env, "keys", &[port]).lines().map(str::to_owned).collect();
    keys.sort();
    assert_eq!(keys, ["jobs", "profile:1", "tags", "user:1"]);
    assert_eq!(reply(&env, "keys", &[port, "pattern=user:*"]), "user:1\n");
    assert!(reply(&env, "info", &[port, "section=keyspace"]).contains("db0:keys=4,expires=0"));
    // A command on a key of another type is Redis's error, and fails (-e).
    let (code, envelope) = exec(&env, "hgetall", &[port, "key=jobs"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stderr"]),
        (
            1,
            &json!(1),
            &json!("WRONGTYPE Operation against a key holding the wrong kind of value\n")
        ),
        "{envelope}"
    );
}

/// set and setex replace what a key held and del deletes it: destructive, each a
/// person's, or a person's policy's.
#[test]
fn redis_cli_sets_expires_and_deletes() {
    if !have("redis-cli") {
        return;
    }
    let Some(redis) = Redis::start() else { return };
    let (env, port) = bound(&redis);
    let port = port.as_str();
    held_for_a_person_then_lowered(&env, "redis-cli", "set", &[port, "key=feature:x", "value=on"]);
    held_for_a_person_then_lowered(
        &env,
        "redis-cli",
        "setex",
        &[port, "key=lock", "seconds=60", "value=w2"],
    );
    assert_eq!(
        reply(&env, "set", &[port, "key=feature:x", "value=on"]),
        "\"OK\"\n"
    );
    assert_eq!(reply(&env, "get", &[port, "key=feature:x"]), "\"on\"\n");
    assert_eq!(
        reply(&env, "setex", &[port, "key=lock", "seconds=60", "value=w2"]),
        "\"OK\"\n"
    );
    let ttl: i64 = reply(&env, "ttl", &[port, "key=lock"]).trim().parse().unwrap();
    assert!((1..=60).contains(&ttl), "{ttl}");
    held_for_a_person_then_lowered(&env, "redis-cli", "del", &[port, "keys=feature:x"]);
    assert_eq!(
        reply(&env, "del", &[port, "keys=feature:x", "keys=lock", "keys=absent"]),
        "2\n"
    );
    assert_eq!(reply(&env, "get", &[port, "key=feature:x"]), "null\n");
}

/// Without the password, with a wrong one, and without a server: redis-cli's own
/// messages, exit code 1.
#[test]
fn redis_cli_reports_auth_and_connection_failures() {
    if !have("redis-cli") {
        return;
    }
    let Some(redis) = Redis::start() else { return };
    let env = env();
    install(&env, "redis-cli");
    let port = format!("port={}", redis.port);
    let (code, envelope) = exec(&env, "ping", &[&port]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .ends_with("\nNOAUTH Authentication required.\n"),
        "{envelope}"
    );
    env.bind("redis-cli", "REDISCLI_AUTH", "not-the-password");
    let (code, envelope) = exec(&env, "ping", &[&port]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .ends_with("\nNOAUTH Authentication required.\n"),
        "{envelope}"
    );
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .starts_with("AUTH failed: WRONGPASS invalid username-password pair"),
        "{envelope}"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, envelope) = exec(&env, "ping", &[&format!("port={closed}")]);
    assert_eq!(
        (code, &envelope["stderr"]),
        (
            1,
            &json!(format!(
                "Could not connect to Redis at 127.0.0.1:{closed}: Connection refused\n"
            ))
        ),
        "{envelope}"
    );
}

/// Only servers on this machine, and no value read as an option.
#[test]
fn redis_cli_refuses_other_hosts_and_values_read_as_options() {
    if !have("redis-cli") {
        return;
    }
    let env = env();
    install(&env, "redis-cli");
    let (code, envelope) = exec(&env, "version", &[]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"].as_str().unwrap().starts_with("redis-cli 7"),
        "{envelope}"
    );
    for (command, params, message) in [
        (
            "ping",
            &["host=evil.example"][..],
            "parameter `host` is not one of: 127.0.0.1, localhost, ::1",
        ),
        (
            "get",
            &["key=--rdb"],
            "parameter `key` starts with `-`, which a positional value may not (it would read as an option)",
        ),
        (
            "set",
            &["key=k", "value=-a"],
            "parameter `value` starts with `-`, which a positional value may not (it would read as an option)",
        ),
        ("ping", &["port=6379 -a x"], "parameter `port` is not an integer"),
        (
            "keys",
            &["pattern=--eval"],
            "parameter `pattern` starts with `-`, which an option's value given as a separate argument may not (it would read as an option)",
        ),
    ] {
        let (code, envelope) = exec(&env, command, params);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{params:?}: {envelope}"
        );
    }
}

/// redis-cli ignores proxy variables. With an allowlist naming only the server, it
/// reaches it (and authenticates) through the port hcpx forwards inside the call's
/// network namespace; any other port is out of reach.
#[test]
fn redis_cli_reaches_only_the_allowlisted_server_through_the_forward() {
    if !have("redis-cli") {
        return;
    }
    let Some(redis) = Redis::start() else { return };
    let env = env();
    install_reaching_only(&env, "redis-cli", r#""sandbox": {"network": true, "#, redis.port);
    env.bind("redis-cli", "REDISCLI_AUTH", PASSWORD);
    let port = format!("port={}", redis.port);
    assert_eq!(reply(&env, "ping", &[&port]), "\"PONG\"\n");

    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = format!("port={}", elsewhere.local_addr().unwrap().port());
    let (code, envelope) = exec(&env, "ping", &[&other]);
    off_the_allowlist(code, &envelope, &elsewhere);
}
