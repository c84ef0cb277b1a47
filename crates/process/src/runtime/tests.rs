//! Tests of the runtime: real children, their output, their end.

use super::*;

fn sh(script: &str) -> Spawn {
    Spawn {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: std::env::temp_dir(),
        confinement: None,
        control: None,
    }
}

async fn go(script: &str, timeout_ms: u64, cap: usize) -> Finished {
    run_child(
        sh(script),
        Duration::from_millis(timeout_ms),
        cap,
        &CancellationToken::new(),
        None,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn captures_both_streams_and_exit_code() {
    let done = go("echo out; echo err >&2; exit 3", 5000, MAX_OUTPUT).await;
    assert_eq!((done.ending, done.exit_code), (Ending::Exited, 3));
    assert_eq!(done.stdout, b"out\n");
    assert_eq!(done.stderr, b"err\n");
    assert!(!done.truncated());
}

#[tokio::test]
async fn signals_are_128_plus_n() {
    let done = go("kill -9 $$", 5000, MAX_OUTPUT).await;
    assert_eq!(done.exit_code, 137);
}

#[tokio::test]
async fn stdin_is_closed() {
    let done = go("cat; echo done", 5000, MAX_OUTPUT).await;
    assert_eq!(done.stdout, b"done\n");
}

#[tokio::test]
async fn timeout_kills_the_group() {
    // The grandchild shares the child's group but not its fate: only a signal to
    // the whole group ends it.
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild");
    let started = Instant::now();
    let script = format!(
        "sleep 30 >/dev/null 2>&1 & echo $! > '{}'; sleep 30",
        pid_file.display()
    );
    let done = go(&script, 200, MAX_OUTPUT).await;
    assert_eq!(done.ending, Ending::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let grandchild = std::fs::read_to_string(&pid_file).unwrap();
    let stat = format!("/proc/{}/stat", grandchild.trim());
    // Gone, or a zombie nobody reaps yet: either way it no longer runs.
    let running = || {
        std::fs::read_to_string(&stat)
            .ok()
            .and_then(|text| text.rsplit(") ").next().map(|rest| !rest.starts_with('Z')))
            .unwrap_or(false)
    };
    let until = Instant::now() + Duration::from_secs(2);
    while running() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !running(),
        "the grandchild {} outlived the call",
        grandchild.trim()
    );
}

#[tokio::test]
async fn term_is_followed_by_kill() {
    let started = Instant::now();
    let done = go(
        "trap '' TERM; echo ready; while :; do sleep 1; done",
        200,
        MAX_OUTPUT,
    )
    .await;
    assert_eq!(done.ending, Ending::TimedOut);
    assert_eq!(done.exit_code, 137);
    let elapsed = started.elapsed();
    assert!(
        elapsed >= KILL_GRACE && elapsed < KILL_GRACE + Duration::from_secs(2),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn overflow_is_cut_and_killed() {
    let done = go("head -c 10000000 /dev/zero; sleep 30", 20_000, 1000).await;
    assert_eq!(done.ending, Ending::Overflow);
    assert_eq!(done.stdout.len(), 1000);
    assert!(done.truncated());
}

#[tokio::test]
async fn an_escaped_grandchild_holding_stdout_cannot_hang_the_call() {
    let started = Instant::now();
    // setsid puts the grandchild outside the group: only the drain bound helps.
    let done = go("setsid sleep 30 & echo parent done", 10_000, MAX_OUTPUT).await;
    assert_eq!(done.ending, Ending::Exited);
    assert_eq!(done.stdout, b"parent done\n");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn cancellation_kills() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let done = run_child(sh("sleep 30"), Duration::from_secs(30), MAX_OUTPUT, &cancel, None)
        .await
        .unwrap();
    assert_eq!(done.ending, Ending::Cancelled);
}

#[tokio::test]
async fn missing_program_is_an_error() {
    let mut spawn = sh("");
    spawn.program = "/nonexistent/program".into();
    let error = run_child(
        spawn,
        Duration::from_secs(1),
        MAX_OUTPUT,
        &CancellationToken::new(),
        None,
    )
    .await
    .unwrap_err();
    assert!(error.to_string().starts_with("cannot start /nonexistent/program"));
}
