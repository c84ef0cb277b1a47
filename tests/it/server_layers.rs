//! The layers of calls that one MCP server session runs, one after another: each
//! call gets the same kernel layers as a call of its own process, whatever the calls
//! before it were (a server prepares what it can once and reuses it).

use std::sync::Arc;

use crate::common::{TestEnv, copy_fixture_as, require_kernel_layers};

/// What `attacker status` prints under every layer (as `sandbox.rs` checks for a
/// call of its own process).
const STATUS: &str = "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n\
     CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n\
     Seccomp_filters:\t1\n0\n";

async fn stdout(ctx: &hcpx::Context, argv: &[&str]) -> String {
    let argv: Vec<String> = argv.iter().map(|arg| (*arg).to_owned()).collect();
    let mut sink = hcpx::BufferSink::default();
    let _calls = crate::common::calls_here();
    let outcome = hcpx::run_to_sink(argv.clone(), ctx, &mut sink).await;
    assert_eq!(outcome.exit_code, 0, "{argv:?}: {:?}", outcome.envelope.error);
    outcome.envelope.stdout.clone()
}

/// Calls of a pack without the network and of one with it, interleaved in one
/// server: the first never makes an internet socket, the second always may, and
/// every call has no capabilities, `no_new_privs` and exactly one seccomp filter.
#[tokio::test]
async fn a_server_gives_each_call_the_filter_of_its_own_pack() {
    if !require_kernel_layers() {
        return;
    }
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    let networked = env.home().join("packs/netattacker");
    copy_fixture_as("attacker", "netattacker", &networked);
    let manifest = networked.join("hcp.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("\"network\": false"));
    std::fs::write(
        &manifest,
        text.replacen("\"network\": false", "\"network\": true", 1),
    )
    .unwrap();
    let environment = vec![
        ("PATH".to_owned(), env.path.clone()),
        ("HCP_HOME".to_owned(), env.home().display().to_string()),
    ];
    let mut ctx = hcpx::Context::new(environment, env.work(), false).unwrap();
    ctx.session = Arc::new(hcpx::Session::server());
    for round in 0..3 {
        for pack in ["attacker", "netattacker"] {
            assert_eq!(
                stdout(&ctx, &["exec", pack, "status"]).await,
                STATUS,
                "{pack}, round {round}"
            );
        }
        assert_eq!(
            stdout(&ctx, &["exec", "attacker", "inet"]).await,
            "refused 1\n",
            "round {round}"
        );
        assert_eq!(
            stdout(&ctx, &["exec", "netattacker", "inet"]).await,
            "made\n",
            "round {round}"
        );
    }
}
