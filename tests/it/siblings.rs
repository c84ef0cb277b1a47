//! The keeper ends a call without signalling every process of the machine when it
//! has no child left: every process of the call is in its tree. These try the one
//! way to make a process whose parent is not its maker, `CLONE_PARENT` (with `clone`
//! and with `clone3`), each new process in a session of its own: its parent is the
//! maker's parent, still in the tree, and it ends with the call. (The processes that
//! leave the group and the tree by a double fork are in `sandbox.rs`.)

use serde_json::json;

use crate::common::{TestEnv, pids_of, require};
use crate::confine::without_landlock;

/// The attacker fixture's home, when python3 (which makes the clones) is here.
fn attacker_env() -> Option<TestEnv> {
    require(std::path::Path::new("/usr/bin/python3").exists(), "python3").then(crate::sandbox::attacker_env)
}

const MADE: &str = "clone made\nclone3 made\n";

/// The hcpx binary, every layer: both made, neither left running.
#[test]
fn processes_made_beside_their_maker_end_with_the_call() {
    let Some(env) = attacker_env() else { return };
    let (code, envelope) = env.json(&["exec", "attacker", "sibling", "--", "tag=4131"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!(MADE));
    assert_eq!(pids_of("sleep 4131"), Vec::<String>::new());
}

/// Without Landlock (so without the signal scope, where the keeper kills its
/// children one by one), in this process as a server runs calls.
#[test]
fn processes_made_beside_their_maker_end_with_the_call_without_landlock() {
    let Some(env) = attacker_env() else { return };
    let (code, envelope) = without_landlock(&env, &["exec", "attacker", "sibling", "--", "tag=4132"]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(envelope["stdout"], json!(MADE));
    assert_eq!(pids_of("sleep 4132"), Vec::<String>::new());
}
