//! Nothing of a call outlives it in the kernel's IPC tables: a pack that leaves a
//! System V shared memory segment, a message queue or a POSIX message queue behind
//! could pin memory after its call and hand data to a later call of another pack.
//! Each call is refused those system calls, as root and not.

use serde_json::json;

use crate::common::{TestEnv, copy_fixture_as};

/// The segments whose key is `tag`, from the kernel's table.
fn segments(tag: i64) -> Vec<String> {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap()
        .lines()
        .skip(1)
        .filter(|line| line.split_whitespace().next() == Some(&tag.to_string()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_call_leaves_no_ipc_object_for_the_next() {
    let env = TestEnv::new();
    env.install_fixture("attacker", "attacker");
    // Another pack, the same code: what it reads would have crossed between packs.
    copy_fixture_as("attacker", "other", &env.home().join("packs/other"));
    let tag = 0x4863_0000 + i64::from(std::process::id() % 0xffff);
    let (code, envelope) = env.json(&[
        "exec",
        "attacker",
        "ipc",
        "--",
        "mode=leave",
        &format!("tag={tag}"),
    ]);
    assert_eq!(code, 0, "{envelope}");
    assert_eq!(
        envelope["stdout"],
        json!("shmget -1 1\nmsgget -1 1\nmq_open -1 1\n"),
        "{envelope}"
    );
    assert_eq!(segments(tag), Vec::<String>::new());
    let (code, envelope) = env.json(&["exec", "other", "ipc", "--", "mode=read", &format!("tag={tag}")]);
    assert_eq!((code, &envelope["stdout"]), (0, &json!("done\n")), "{envelope}");
}
