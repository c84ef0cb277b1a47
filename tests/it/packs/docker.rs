//! The `docker` catalog pack against the real docker client. There is no daemon
//! here: what runs without one, the argv of each command, the clean failure, the
//! refusals, and a stand-in daemon on the declared socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;

use serde_json::{Value, json};

use super::{env, have, install, on_tools_path};
use crate::common::{TestEnv, is_root, require};

const SOCKET: &str = "/var/run/docker.sock";

fn docker_env() -> TestEnv {
    let env = env();
    env.write("work/Dockerfile", "FROM alpine:3\nCOPY . /app\n");
    env.write("work/src/app.py", "print(1)\n");
    install(&env, "docker");
    env
}

fn plan(env: &TestEnv, command: &str, params: &[&str]) -> Value {
    super::plan(env, "docker", command, params)
}

#[test]
fn docker_version_runs_without_a_daemon() {
    if !have("docker") {
        return;
    }
    let env = docker_env();
    let (code, envelope) = env.json(&["exec", "docker", "version"]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap()
            .starts_with("Docker version "),
        "{envelope}"
    );
}

#[test]
fn docker_commands_render_their_argv() {
    if !have("docker") {
        return;
    }
    let env = docker_env();
    let docker = on_tools_path("docker").unwrap().display().to_string();
    let child = |command: &str, params: &[&str]| plan(&env, command, params)["child"].clone();
    assert_eq!(
        child("ps", &["all=true", "filter=status=exited"]),
        json!([
            docker,
            "ps",
            "--all",
            "--filter=status=exited",
            "--format",
            "json"
        ])
    );
    assert_eq!(
        child("inspect", &["name=web", "name=db", "type=container"]),
        json!([
            docker,
            "inspect",
            "--type=container",
            "--format",
            "json",
            "--",
            "web",
            "db"
        ])
    );
    assert_eq!(
        child(
            "run",
            &[
                "image=python:3.12-slim",
                "args=python",
                "args=-c",
                "args=print(1)",
                "mount=src",
                "workdir=/work",
                "publish=127.0.0.1:8080:80"
            ]
        ),
        json!([
            docker,
            "run",
            "--rm",
            "--publish=127.0.0.1:8080:80",
            "--volume=./src:/work",
            "--workdir=/work",
            "--",
            "python:3.12-slim",
            "python",
            "-c",
            "print(1)"
        ])
    );
    assert_eq!(
        child("build", &["tag=app:dev", "build-arg=V=1"]),
        json!([docker, "build", "--tag=app:dev", "--build-arg=V=1", "."])
    );
    assert_eq!(
        child("rm", &["container=web", "force=true"]),
        json!([docker, "rm", "--force", "--", "web"])
    );
    for (command, params, effect, decision) in [
        ("logs", &["container=web"][..], "read", "allow"),
        ("run", &["image=alpine"], "write", "confirm"),
        ("build", &["tag=a"], "write", "confirm"),
        ("rmi", &["image=a"], "destructive", "confirm-human"),
    ] {
        let data = plan(&env, command, params);
        assert_eq!(
            (
                &data["effect"],
                &data["decision"],
                &data["sandbox"]["network"],
                &data["sandbox"]["sockets"]
            ),
            (&json!(effect), &json!(decision), &json!(false), &json!([SOCKET])),
            "{command}: {data}"
        );
    }
}

/// What would give a container the host (privileges, its network, ports on every
/// interface, folders outside the working directory) is refused before docker runs.
#[test]
fn docker_refuses_what_would_reach_the_host() {
    if !have("docker") {
        return;
    }
    let env = docker_env();
    for (command, params, message) in [
        (
            "run",
            &["image=--privileged"][..],
            "parameter `image` does not match the pattern [a-z0-9][a-z0-9._/:@-]{0,254}",
        ),
        (
            "run",
            &["image=alpine", "network=host"],
            "parameter `network` contains what this parameter refuses (^host$)",
        ),
        (
            "run",
            &["image=alpine", "network=container:db"],
            "parameter `network` does not match the pattern [A-Za-z0-9][A-Za-z0-9_.-]{0,127}",
        ),
        (
            "run",
            &["image=alpine", "publish=8080:80"],
            "parameter `publish` does not match the pattern 127\\.0\\.0\\.1:[0-9]{1,5}:[0-9]{1,5}(/(tcp|udp))?",
        ),
        (
            "run",
            &["image=alpine", "mount=/"],
            "parameter `mount` is not a relative path inside the working directory",
        ),
        (
            "run",
            &["image=alpine", "mount=.."],
            "parameter `mount` leaves the working directory",
        ),
        (
            "build",
            &["tag=a", "file=/etc/Dockerfile"],
            "parameter `file` is not a relative path inside the working directory",
        ),
        (
            "build",
            &["tag=a", "context=../"],
            "parameter `context` leaves the working directory",
        ),
        (
            "rm",
            &["container=-f"],
            "parameter `container` does not match the pattern [A-Za-z0-9][A-Za-z0-9_.-]{0,127}",
        ),
    ] {
        let mut args = vec!["exec", "docker", command, "--yes", "--"];
        args.extend_from_slice(params);
        let (code, envelope) = env.json(&args);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["message"]),
            (2, &json!(false), &json!(message)),
            "{params:?}: {envelope}"
        );
    }
    // A container command that looks like an option is the container's.
    assert_eq!(
        plan(&env, "run", &["image=alpine", "args=--privileged"])["child"],
        json!([
            on_tools_path("docker").unwrap().display().to_string(),
            "run",
            "--rm",
            "--",
            "alpine",
            "--privileged"
        ])
    );
}

/// Removes the stand-in daemon's socket, also when the test fails.
struct Stand(&'static str);

impl Drop for Stand {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

/// Without a daemon on the socket, a command fails with the client's own message;
/// with a stand-in daemon there (only where none is, and as root), `ps --json`
/// reaches it through the declared socket and parses its answer. One test, so that
/// the two halves never see each other's socket.
#[test]
fn docker_talks_to_the_daemon_through_the_declared_socket() {
    if !have("docker") {
        return;
    }
    if Path::new(SOCKET).exists() {
        // A real daemon is there: neither half can be shown on this machine.
        return;
    }
    let env = docker_env();
    let (code, envelope) = env.json(&["exec", "docker", "ps"]);
    assert_eq!(
        (code, &envelope["exitCode"], &envelope["stderr"]),
        (
            1,
            &json!(1),
            &json!(
                "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"
            )
        ),
        "{envelope}"
    );
    if !require(is_root(), "root, to listen on /var/run/docker.sock") {
        return;
    }
    let listener = UnixListener::bind(SOCKET).unwrap();
    let _stand = Stand(SOCKET);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    let (code, envelope) = env.json(&["exec", "docker", "ps"]);
    assert_eq!(code, 0, "{envelope}");
    let container = &envelope["data"];
    assert_eq!(
        (
            &container["ID"],
            &container["Image"],
            &container["Names"],
            &container["State"],
            &container["Status"]
        ),
        (
            &json!("0123456789ab"),
            &json!("nginx:1.27"),
            &json!("web"),
            &json!("running"),
            &json!("Up 2 minutes")
        ),
        "{envelope}"
    );
}

/// The few answers of the Docker API that `docker ps` needs.
fn serve(stream: std::os::unix::net::UnixStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
        }
        let body = if request.contains("/containers/json") {
            json!([{
                "Id": "0123456789abcdef0123", "Names": ["/web"], "Image": "nginx:1.27", "ImageID": "sha256:1",
                "Command": "nginx", "Created": 1_772_359_920, "Ports": [], "Labels": {}, "State": "running",
                "Status": "Up 2 minutes", "HostConfig": {"NetworkMode": "bridge"}, "NetworkSettings": {"Networks": {}}, "Mounts": []
            }])
            .to_string()
        } else {
            "OK".to_owned()
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\nApi-Version: 1.45\r\nOstype: linux\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let mut answer = head.into_bytes();
        if !request.starts_with("HEAD ") {
            answer.extend_from_slice(body.as_bytes());
        }
        if stream.write_all(&answer).is_err() {
            return;
        }
    }
}
