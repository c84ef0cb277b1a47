//! A running server tells its clients when the packs change, whoever changed them:
//! a person's `hcpx install` in a terminal, or another replica sharing `HCP_HOME`,
//! and not only a call through this server's own tool. Each change is told once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::TestEnv;
use crate::mcp::{
    Client, call, connect, connect_modern, envelope, hears_list_changed, listen_for_list_changes,
};

/// Waits up to 5 s for `seen` to reach `count`, then a little longer to see that it
/// stays there (a change told twice would show).
async fn heard_exactly(seen: &AtomicUsize, count: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.load(Ordering::SeqCst) < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.load(Ordering::SeqCst), count, "{what}: not heard in 5 s");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(seen.load(Ordering::SeqCst), count, "{what}: told more than once");
}

#[tokio::test]
async fn an_install_and_uninstall_in_a_terminal_are_announced_to_a_running_server() {
    let env = TestEnv::new();
    let client = Client::default();
    let seen = client.list_changed.clone();
    let session = connect(&env, client, false).await;
    // The session is up: a listing shows nothing installed.
    let result = call(&session, json!({ "argv": ["search", "transit"] })).await;
    assert_eq!(result.is_error, Some(false));

    let output = env.run(&["install", "transit", "--yes"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    heard_exactly(&seen, 1, "an install by another process").await;
    let output = env.run(&["uninstall", "transit", "--yes"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    heard_exactly(&seen, 2, "an uninstall by another process").await;

    // Through the tool as well: still once each, the watch and the tool together.
    let result = call(
        &session,
        json!({ "argv": ["install", "transit"], "confirm": true }),
    )
    .await;
    assert_eq!(envelope(&result)["ok"], json!(true), "{result:?}");
    heard_exactly(&seen, 3, "an install through the tool").await;
}

/// On 2026-07-28 the change travels on the `subscriptions/listen` stream.
#[tokio::test]
async fn a_listener_hears_an_install_made_by_another_process() {
    let env = TestEnv::new();
    let session = connect_modern(&env, Client::default()).await;
    let mut subscription = listen_for_list_changes(&session).await;

    let output = env.run(&["install", "transit", "--yes"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    hears_list_changed(&mut subscription).await;
}
