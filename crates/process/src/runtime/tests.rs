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
        stdin: None,
        meanwhile: None,
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

async fn fed(script: &str, input: &str, timeout_ms: u64) -> Result<Finished, RuntimeError> {
    let mut spawn = sh(script);
    spawn.stdin = Some(Secret::new(input.to_owned()));
    run_child(
        spawn,
        Duration::from_millis(timeout_ms),
        MAX_OUTPUT,
        &CancellationToken::new(),
        None,
    )
    .await
}

#[tokio::test]
async fn stdin_bytes_reach_the_child_exactly_then_end() {
    let done = fed("wc -c; echo read", "pass word", 5000).await.unwrap();
    assert_eq!(done.stdout, b"9\nread\n");
    let done = fed("cat", "a\nb", 5000).await.unwrap();
    assert_eq!(
        (done.ending, done.stdout.as_slice()),
        (Ending::Exited, &b"a\nb"[..])
    );
    // An empty value is an empty stdin, closed at once.
    let done = fed("wc -c", "", 5000).await.unwrap();
    assert_eq!(done.stdout, b"0\n");
}

/// The largest value, read slowly, arrives whole: the parent writes as the pipe
/// takes it, in the loop that reads the output.
#[tokio::test]
async fn the_largest_stdin_arrives_whole_when_read_slowly() {
    let value = "x".repeat(Secret::MAX_LEN);
    let done = fed("sleep 0.2; wc -c", &value, 5000).await.unwrap();
    assert_eq!(done.stdout, format!("{}\n", Secret::MAX_LEN).as_bytes());
    let error = fed("wc -c", &format!("{value}y"), 5000).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the standard input for /bin/sh is 65537 bytes, more than the 65536 a bound value may hold"
    );
}

/// A child that exits (or closes its stdin) without reading it, or never reads and
/// runs on: the call ends as the child does, or at its timeout; the write that
/// found no reader (EPIPE) is no failure of the call.
#[tokio::test]
async fn a_child_that_never_reads_stdin_does_not_hang_the_call() {
    let value = "x".repeat(Secret::MAX_LEN);
    let started = Instant::now();
    let done = fed("echo gone", &value, 5000).await.unwrap();
    assert_eq!(
        (done.ending, done.exit_code, done.stdout.as_slice()),
        (Ending::Exited, 0, &b"gone\n"[..])
    );
    let done = fed("exec 0<&-; sleep 0.2; echo closed", &value, 5000)
        .await
        .unwrap();
    assert_eq!(
        (done.ending, done.stdout.as_slice()),
        (Ending::Exited, &b"closed\n"[..])
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    let done = fed("sleep 30", &value, 300).await.unwrap();
    assert_eq!(done.ending, Ending::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}
