//! The `psql` catalog pack against a real PostgreSQL server that the test starts:
//! initdb into a temporary folder, then `postgres` on a free loopback port, as the
//! user `nobody` when the tests run as root (the server refuses root). The server is
//! stopped when the test ends, also when it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    env, have, held_for_a_person_then_lowered, install, install_reaching_only, off_the_allowlist, tools_path,
};
use crate::common::{TestEnv, is_root, require, terminate, wait_until};

const PASSWORD: &str = "pg-test-s3cret";

/// PostgreSQL's server programs: on PATH, or where Debian puts them.
fn server_bin(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = tools_path().split(':').map(PathBuf::from).collect();
    if let Ok(versions) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut found: Vec<PathBuf> = versions.flatten().map(|entry| entry.path().join("bin")).collect();
        found.sort();
        dirs.extend(found.into_iter().rev());
    }
    dirs.into_iter()
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// The name of the user the tests run as: the server's superuser role, so psql's
/// default user needs no binding.
fn user_name() -> String {
    let output = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A command run as `nobody` when the tests run as root, else as the test's user.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program);
        command
    } else {
        Command::new(program)
    }
}

struct Postgres {
    server: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Postgres {
    fn start() -> Option<Self> {
        let (initdb, postgres) = (server_bin("initdb"), server_bin("postgres"));
        if !require(
            initdb.is_some() && postgres.is_some(),
            "PostgreSQL's server (initdb, postgres)",
        ) {
            return None;
        }
        let dir = tempfile::Builder::new().prefix("hcpx-pg-").tempdir().unwrap();
        std::fs::write(dir.path().join("pw"), PASSWORD).unwrap();
        if is_root() {
            for path in [dir.path(), &dir.path().join("pw")] {
                std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
            }
        }
        let data = dir.path().join("data");
        let output = as_server_user(&initdb.unwrap())
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                &user_name(),
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", dir.path().join("pw").display()))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = as_server_user(&postgres.unwrap())
            .arg("-D")
            .arg(&data)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-p",
                &port.to_string(),
            ])
            .arg("-k")
            .arg(dir.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pg = Self {
            server,
            port,
            _dir: dir,
        };
        let ready = wait_until(Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(ready, "postgres did not start on port {port}");
        Some(pg)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if terminate(&mut self.server).is_none() {
            let _ = self.server.kill();
            let _ = self.server.wait();
        }
    }
}

/// A TestEnv with the pack installed and bound to the server, and a table `users`.
fn connected(pg: &Postgres) -> TestEnv {
    let env = env();
    install(&env, "psql");
    env.bind("psql", "PGHOST", "127.0.0.1");
    env.bind("psql", "PGPORT", &pg.port.to_string());
    env.bind("psql", "PGDATABASE", "postgres");
    env.bind("psql", "PGPASSWORD", PASSWORD);
    let create = "sql=CREATE TABLE users (id int PRIMARY KEY, email text NOT NULL); INSERT INTO users VALUES (1, 'ada@example.com'), (2, 'alan@example.com')";
    held_for_a_person_then_lowered(&env, "psql", "execute", &[create]);
    let (code, envelope) = exec(&env, "execute", &[create]);
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("CREATE TABLE\nINSERT 0 2\n")),
        "{envelope}"
    );
    env
}

fn exec(env: &TestEnv, command: &str, params: &[&str]) -> (i32, Value) {
    let mut args = vec!["exec", "psql", command, "--yes", "--"];
    args.extend_from_slice(params);
    env.json(&args)
}

fn emails(env: &TestEnv) -> Value {
    let (code, envelope) = exec(env, "select-json", &["sql=SELECT email FROM users ORDER BY id"]);
    assert_eq!(code, 0, "{envelope}");
    envelope["data"].clone()
}

#[test]
fn psql_queries_read_and_execute_writes() {
    if !have("psql") {
        return;
    }
    let Some(pg) = Postgres::start() else { return };
    let env = connected(&pg);
    let output = env.run(&[
        "exec",
        "psql",
        "query",
        "--",
        "sql=SELECT id, email FROM users ORDER BY id",
    ]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            0,
            " id |      email       \n----+------------------\n  1 | ada@example.com\n  2 | alan@example.com\n(2 rows)\n\n"
        ),
        "{output}"
    );
    let (code, envelope) = exec(
        &env,
        "query",
        &["sql=SELECT id, email FROM users WHERE id = 2", "csv=true"],
    );
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("id,email\n2,alan@example.com\n")),
        "{envelope}"
    );
    let (code, envelope) = exec(
        &env,
        "select-json",
        &["sql=SELECT id, email FROM users ORDER BY id"],
    );
    assert_eq!(
        (code, &envelope["data"]),
        (
            0,
            &json!([{"id": 1, "email": "ada@example.com"}, {"id": 2, "email": "alan@example.com"}])
        ),
        "{envelope}"
    );
    let (code, envelope) = exec(
        &env,
        "execute",
        &["sql=UPDATE users SET email = 'ada@lovelace.org' WHERE id = 1"],
    );
    assert_eq!(
        (code, &envelope["stdout"]),
        (0, &json!("UPDATE 1\n")),
        "{envelope}"
    );
    assert_eq!(
        emails(&env),
        json!([{"email": "ada@lovelace.org"}, {"email": "alan@example.com"}])
    );
    // An SQL error is exit code 1, with the server's message.
    let (code, envelope) = exec(&env, "query", &["sql=SELECT nope FROM users"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .starts_with("ERROR:  column \"nope\" does not exist\n"),
        "{envelope}"
    );
}

/// `query` is read-only: a write fails in the server, ending the transaction does
/// not help (the session is read-only), and SQL that would switch it back is
/// refused before psql runs. The table is unchanged after every attempt.
#[test]
fn psql_query_stays_read_only() {
    if !have("psql") {
        return;
    }
    let Some(pg) = Postgres::start() else { return };
    let env = connected(&pg);
    for sql in [
        "sql=INSERT INTO users VALUES (3, 'eve@example.com')",
        "sql=COMMIT; INSERT INTO users VALUES (3, 'eve@example.com')",
        "sql=END; BEGIN; DELETE FROM users",
    ] {
        let (code, envelope) = exec(&env, "query", &[sql]);
        assert_eq!((code, &envelope["exitCode"]), (1, &json!(1)), "{sql}: {envelope}");
        assert!(
            envelope["stderr"]
                .as_str()
                .unwrap()
                .contains("in a read-only transaction"),
            "{sql}: {envelope}"
        );
    }
    for sql in [
        "sql=SET default_transaction_read_only = off; DELETE FROM users",
        "sql=SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE FROM users",
        "sql=COMMIT; BEGIN READ WRITE; DELETE FROM users",
        "sql=RESET ALL; DELETE FROM users",
        "sql=SELECT set_config('default_transaction_read_only', 'off', false); DELETE FROM users",
        "sql=SET U&\"default_transaction_read_\\006Fnly\" = off; DELETE FROM users",
        "sql=DO $$ BEGIN DELETE FROM users; END $$",
        "sql=SELECT query_to_xml('SET default_transaction_' || 'read_only = off', true, false, '')",
        "sql=COPY users TO PROGRAM 'sh -c id'",
        "sql=\\! touch planted",
    ] {
        let (code, envelope) = exec(&env, "query", &[sql]);
        assert_eq!(
            (code, &envelope["spawned"], &envelope["error"]["reason"]),
            (2, &json!(false), &json!("invalid_param")),
            "{sql}: {envelope}"
        );
    }
    assert_eq!(
        emails(&env),
        json!([{"email": "ada@example.com"}, {"email": "alan@example.com"}])
    );
    assert!(!env.work().join("planted").exists());
}

#[test]
fn psql_lists_tables_and_describes_one() {
    if !have("psql") {
        return;
    }
    let Some(pg) = Postgres::start() else { return };
    let env = connected(&pg);
    let user = user_name();
    let (code, envelope) = exec(&env, "tables", &[]);
    assert_eq!(code, 0, "{envelope}");
    let stdout = envelope["stdout"].as_str().unwrap();
    assert!(
        stdout.contains(&format!(" public | users | table | {user}\n")),
        "{stdout}"
    );
    let (code, envelope) = exec(&env, "describe", &["table=users"]);
    assert_eq!(code, 0, "{envelope}");
    let stdout = envelope["stdout"].as_str().unwrap();
    for line in [
        " id     | integer |           | not null | \n",
        " email  | text    |           | not null | \n",
        "    \"users_pkey\" PRIMARY KEY, btree (id)\n",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let (code, envelope) = exec(&env, "databases", &[]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"].as_str().unwrap().contains(" template1 "),
        "{envelope}"
    );
}

/// A wrong or missing password is psql's exit code 2 with libpq's message; the
/// password never shows.
#[test]
fn psql_reports_connection_failures() {
    if !have("psql") {
        return;
    }
    let Some(pg) = Postgres::start() else { return };
    let env = env();
    install(&env, "psql");
    env.bind("psql", "PGHOST", "127.0.0.1");
    env.bind("psql", "PGPORT", &pg.port.to_string());
    let (code, envelope) = exec(&env, "query", &["sql=SELECT 1"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(2)), "{envelope}");
    assert!(
        envelope["stderr"]
            .as_str()
            .unwrap()
            .ends_with("fe_sendauth: no password supplied\n"),
        "{envelope}"
    );
    env.bind("psql", "PGPASSWORD", "wrong-password");
    let (code, envelope) = exec(&env, "query", &["sql=SELECT 1"]);
    assert_eq!((code, &envelope["exitCode"]), (1, &json!(2)), "{envelope}");
    assert!(
        envelope["stderr"].as_str().unwrap().contains(&format!(
            "password authentication failed for user \"{}\"",
            user_name()
        )),
        "{envelope}"
    );
    assert!(!envelope.to_string().contains("wrong-password"));
}

/// Offline: the version, and values that would reach another server or run psql
/// commands are refused.
#[test]
fn psql_refuses_connection_strings_and_backslash_commands() {
    if !have("psql") {
        return;
    }
    let env = env();
    install(&env, "psql");
    let (code, envelope) = exec(&env, "version", &[]);
    assert_eq!(code, 0, "{envelope}");
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap()
            .starts_with("psql (PostgreSQL) "),
        "{envelope}"
    );
    for (command, params, message) in [
        (
            "query",
            &["sql=SELECT 1", "db=host=evil.example dbname=x"][..],
            "parameter `db` does not match the pattern [A-Za-z_][A-Za-z0-9_$-]{0,62}",
        ),
        (
            "query",
            &["sql=SELECT 1", "db=postgresql://evil.example/x"],
            "parameter `db` does not match the pattern [A-Za-z_][A-Za-z0-9_$-]{0,62}",
        ),
        (
            "describe",
            &["table=users `touch x`"],
            "parameter `table` does not match the pattern [A-Za-z_][A-Za-z0-9_$]{0,62}(\\.[A-Za-z_][A-Za-z0-9_$]{0,62})?",
        ),
        (
            "select-json",
            &["sql=SELECT 1; DROP TABLE users"],
            "parameter `sql` does not match the pattern (?s)[^;]*",
        ),
        (
            "execute",
            &["sql=\\! sh"],
            "parameter `sql` contains what this parameter refuses ((?i-u)\\A\\s*\\\\|\\blo_import\\b|\\blo_export\\b)",
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

/// psql ignores proxy variables. With an allowlist naming only the server, it
/// reaches it through the port hcpx forwards inside the call's network namespace,
/// password and all; a server on any other port is out of reach (Landlock refuses
/// the connect), so the password cannot go there.
#[test]
fn psql_reaches_only_the_allowlisted_server_through_the_forward() {
    if !have("psql") {
        return;
    }
    let Some(pg) = Postgres::start() else { return };
    let env = env();
    install_reaching_only(
        &env,
        "psql",
        r#""sandbox": {"network": true, "sockets": ["/var/run/postgresql/.s.PGSQL.5432"], "#,
        pg.port,
    );
    env.bind("psql", "PGHOST", "127.0.0.1");
    env.bind("psql", "PGPORT", &pg.port.to_string());
    env.bind("psql", "PGDATABASE", "postgres");
    env.bind("psql", "PGPASSWORD", PASSWORD);
    let (code, envelope) = exec(&env, "select-json", &["sql=SELECT 1 AS one"]);
    assert_eq!((code, &envelope["data"]), (0, &json!([{"one": 1}])), "{envelope}");

    // A listener outside on another port stands for a server the pack may not reach.
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = elsewhere.local_addr().unwrap().port();
    env.bind("psql", "PGPORT", &port.to_string());
    let (code, envelope) = exec(&env, "select-json", &["sql=SELECT 1 AS one"]);
    off_the_allowlist(code, &envelope, &elsewhere);
}
