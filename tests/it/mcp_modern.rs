//! MCP on the 2026-07-28 protocol, in process: sealed state, list changes through
//! `listen`, hints.

use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};

use crate::common::TestEnv;

use crate::mcp::{Client, call, connect, context, envelope, probe_env, text};

pub(crate) async fn connect_modern(env: &TestEnv, client: Client) -> RunningService<RoleClient, Client> {
    use rmcp::{ClientLifecycleMode, ClientServiceExt as _};
    let ctx = context(env);
    let options = hcpx::mcp::Options::from_context(&ctx, false);
    let server = hcpx::mcp::Server::new(ctx, options);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let calls = crate::common::calls_here();
    tokio::spawn(async move {
        let _calls = calls;
        let (read, write) = tokio::io::split(server_io);
        hcpx::mcp::serve(server, read, write).await
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    client.serve_with_lifecycle(client_io, lifecycle).await.unwrap()
}

pub(crate) fn params(argv: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("hcp").with_arguments(json!({ "argv": argv }).as_object().unwrap().clone())
}

#[tokio::test]
async fn sealed_state_confirmation_on_2026_07_28() {
    use rmcp::model::CallToolResponse;
    let env = probe_env();
    // The SDK's driver answers the InputRequiredResult through the client handler.
    let accepting = connect_modern(
        &env,
        Client {
            elicit: Some(true),
            ..Client::default()
        },
    )
    .await;
    let result = accepting
        .call_tool(params(json!(["exec", "probe", "wipe"])))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(envelope(&result)["stdout"], json!("wiped\n"));
    let declining = connect_modern(
        &env,
        Client {
            elicit: Some(false),
            ..Client::default()
        },
    )
    .await;
    let result = declining
        .call_tool(params(json!(["exec", "probe", "wipe"])))
        .await
        .unwrap();
    assert_eq!(envelope(&result)["error"]["reason"], json!("declined"));

    // One round by hand: the state is sealed, single use and bound to the argv.
    let CallToolResponse::InputRequired(asked) = accepting
        .call_tool_once(params(json!(["exec", "probe", "wipe"])))
        .await
        .unwrap()
    else {
        panic!("expected an InputRequiredResult");
    };
    let state = asked.request_state.clone().unwrap();
    assert!(asked.input_requests.as_ref().unwrap().contains_key("confirm"));
    let yes: rmcp::model::InputResponses = [(
        "confirm".to_owned(),
        json!({ "action": "accept", "content": { "confirm": true } }),
    )]
    .into();
    let retry = |argv: Value, state: String| {
        let mut request = params(argv);
        request.input_responses = Some(yes.clone());
        request.request_state = Some(state);
        request
    };
    let complete = |response: CallToolResponse| match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    };
    // Altered: one character changed.
    let mut altered = state.clone();
    let last = altered.pop().unwrap();
    altered.push(if last == 'A' { 'B' } else { 'A' });
    let result = complete(
        accepting
            .call_tool_once(retry(json!(["exec", "probe", "wipe"]), altered))
            .await
            .unwrap(),
    );
    assert_eq!(
        envelope(&result)["error"]["reason"],
        json!("needs_confirmation"),
        "{}",
        text(&result)
    );
    // Another command with this state.
    let result = complete(
        accepting
            .call_tool_once(retry(
                json!(["exec", "probe", "write", "--", "target=x"]),
                state.clone(),
            ))
            .await
            .unwrap(),
    );
    assert_eq!(envelope(&result)["error"]["reason"], json!("needs_confirmation"));
    assert!(!env.work().join("x").exists());
    // The genuine answer runs it, once.
    let result = complete(
        accepting
            .call_tool_once(retry(json!(["exec", "probe", "wipe"]), state.clone()))
            .await
            .unwrap(),
    );
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let result = complete(
        accepting
            .call_tool_once(retry(json!(["exec", "probe", "wipe"]), state))
            .await
            .unwrap(),
    );
    assert_eq!(
        envelope(&result)["error"]["reason"],
        json!("needs_confirmation"),
        "a replay is refused"
    );
}

#[tokio::test]
async fn install_and_uninstall_through_the_tool_announce_list_changed() {
    let env = TestEnv::new();
    let client = Client::default();
    let seen = client.list_changed.clone();
    let session = connect(&env, client, false).await;
    let count = || seen.load(std::sync::atomic::Ordering::SeqCst);
    let result = call(&session, json!({ "argv": ["install", "transit"] })).await;
    assert_eq!(
        envelope(&result)["error"]["reason"],
        json!("needs_confirmation"),
        "an agent confirms installs"
    );
    let result = call(
        &session,
        json!({ "argv": ["install", "transit"], "confirm": true }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let deadline = Instant::now() + Duration::from_secs(3);
    while count() < 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(count(), 1);
    // The same version again changes nothing, and says nothing.
    call(
        &session,
        json!({ "argv": ["install", "transit"], "confirm": true }),
    )
    .await;
    let result = call(
        &session,
        json!({ "argv": ["uninstall", "transit"], "confirm": true }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let deadline = Instant::now() + Duration::from_secs(3);
    while count() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(count(), 2);
}

/// A `subscriptions/listen` stream (2026-07-28) for changes of the list of
/// resources, acknowledged as asked.
pub(crate) async fn listen_for_list_changes(
    session: &RunningService<RoleClient, Client>,
) -> rmcp::service::Subscription {
    let mut filter = rmcp::model::SubscriptionFilter::new();
    filter.resources_list_changed = Some(true);
    let subscription = session.listen(filter).await.unwrap();
    assert_eq!(subscription.acknowledged().resources_list_changed, Some(true));
    subscription
}

/// The next thing `subscription` hears, within 5 s, is that the list changed.
pub(crate) async fn hears_list_changed(subscription: &mut rmcp::service::Subscription) {
    let heard = tokio::time::timeout(Duration::from_secs(5), subscription.next())
        .await
        .expect("the listener heard of the change in 5 s")
        .unwrap();
    assert!(
        matches!(
            heard,
            Some(rmcp::model::ServerNotification::ResourceListChangedNotification(
                _
            ))
        ),
        "{heard:?}"
    );
}

/// On 2026-07-28 a list change travels only on a `subscriptions/listen` stream:
/// the listener hears the install, and no bare notification reaches the client.
/// Results there name the server in `_meta`.
#[tokio::test]
async fn on_2026_07_28_list_changes_come_only_through_listen() {
    let env = TestEnv::new();
    let client = Client::default();
    let bare = client.list_changed.clone();
    let session = connect_modern(&env, client).await;
    let mut subscription = listen_for_list_changes(&session).await;
    let result = call(
        &session,
        json!({ "argv": ["install", "transit"], "confirm": true }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(
        result.meta.as_ref().unwrap().0["io.modelcontextprotocol/serverInfo"]["name"],
        json!("hcpx")
    );
    hears_list_changed(&mut subscription).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(bare.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// The mistakes a model makes most, and the exact words it gets back over MCP:
/// `next` is a tool call with the real values (never an ellipsis, never a flag the
/// tool does not take), and a read-only refusal says what the server is.
#[tokio::test]
async fn hints_are_tool_calls_an_agent_can_make() {
    let env = probe_env();
    let client = connect(&env, Client::default(), false).await;
    // No `--` before the parameters: it runs.
    let result = call(
        &client,
        json!({ "argv": ["exec", "transit", "plan", "from=Westgate", "to=Harbour", "at=08:00"] }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    // A misspelt command: clap's words, and the corrected call.
    let result = call(&client, json!({ "argv": ["skil", "transit"] })).await;
    assert_eq!(
        (&envelope(&result)["error"]["message"], &envelope(&result)["next"]),
        (
            &json!("unrecognized subcommand 'skil'; a similar subcommand exists: 'skill'"),
            &json!(r#"{"argv":["skill","transit"]}"#)
        )
    );
    assert_eq!(
        text(&result),
        "error (invalid_arguments): unrecognized subcommand 'skil'; a similar subcommand exists: 'skill'\n\
         next: {\"argv\":[\"skill\",\"transit\"]}\n"
    );
    // A misspelt pack command or key: the call with the closest one.
    let result = call(&client, json!({ "argv": ["exec", "git", "lgo", "--", "n=3"] })).await;
    assert_eq!(
        envelope(&result)["next"],
        json!(r#"{"argv":["exec","git","log","--","n=3"]}"#)
    );
    let result = call(
        &client,
        json!({ "argv": ["exec", "transit", "plan", "frm=Westgate", "to=Harbour"] }),
    )
    .await;
    assert_eq!(envelope(&result)["data"]["key"], json!("frm"));
    assert_eq!(
        envelope(&result)["next"],
        json!(r#"{"argv":["exec","transit","plan","--","from=Westgate","to=Harbour"]}"#)
    );
    // Needs confirmation: the same call with `confirm: true`, values and all.
    let result = call(
        &client,
        json!({ "argv": ["exec", "probe", "write", "--", "target=out/a b.txt"] }),
    )
    .await;
    assert_eq!(envelope(&result)["error"]["reason"], json!("needs_confirmation"));
    assert_eq!(
        envelope(&result)["next"],
        json!(r#"{"argv":["exec","probe","write","--","target=out/a b.txt"],"confirm":true}"#)
    );
    // A command the policy denies: the policy is what to look at.
    env.write(
        "home/policy.json",
        r#"{"rules":[{"match":"probe.wipe","decision":"deny"}]}"#,
    );
    let result = call(&client, json!({ "argv": ["exec", "probe", "wipe"] })).await;
    assert_eq!(envelope(&result)["next"], json!(r#"{"argv":["policy","show"]}"#));
    drop(client);
    // On a read-only server a write is not the policy's doing.
    let client = connect(&env, Client::default(), true).await;
    let result = call(
        &client,
        json!({ "argv": ["exec", "probe", "write", "--", "target=x"], "confirm": true }),
    )
    .await;
    assert_eq!(
        envelope(&result)["next"],
        json!(
            "this server is read-only (hcpx mcp --read-only): only commands that read run here; ask the user to run this one themselves"
        )
    );
}
