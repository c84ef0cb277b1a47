//! What this machine can enforce ([`Machine`], probed once per process) and how
//! strictly a layer it cannot enforce is treated ([`Mode`]).

use std::sync::OnceLock;

use serde::Serialize;

/// How strictly missing layers are treated (`HCP_SANDBOX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// A pack that needs a layer this machine cannot enforce does not run.
    #[default]
    Strict,
    /// Run with every layer that is enforced; the rest are reported as missing.
    BestEffort,
}

/// Whether this machine can enforce a layer, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Support {
    pub enforced: bool,
    pub detail: String,
}

impl Support {
    pub(crate) fn yes(detail: impl Into<String>) -> Self {
        Self {
            enforced: true,
            detail: detail.into(),
        }
    }

    pub(crate) fn no(detail: impl Into<String>) -> Self {
        Self {
            enforced: false,
            detail: detail.into(),
        }
    }
}

/// What this machine can enforce, found without changing this process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    /// Landlock filesystem rules (ABI 3 or later: writes, truncation included).
    pub landlock: Support,
    /// The Landlock ABI version, 0 without Landlock.
    pub landlock_abi: i32,
    /// Landlock scopes (ABI 6): no signals to, and no abstract unix sockets of,
    /// processes outside the call; ptrace and `/proc/PID/{environ,mem}` of them are
    /// refused by Landlock with capabilities dropped.
    pub scopes: Support,
    /// seccomp filters, for the network and the syscall filter.
    pub seccomp: Support,
    /// A network namespace per call for packs with `network.allow` (root, or user
    /// namespaces for others), whose only way out is hcpx's proxy.
    pub egress: Support,
    /// seccomp user notification and `pidfd_getfd`: a pack connects only to the
    /// unix sockets it declares.
    pub sockets: Support,
    /// The keeper: pidfds and child subreapers, so every process of a call ends.
    pub containment: Support,
    /// `close_range(CLOSE_RANGE_CLOEXEC)`, so only descriptors 0, 1 and 2 reach a pack.
    pub descriptors: Support,
    /// Capabilities dropped and `no_new_privs`.
    pub privileges: Support,
    /// A `/proc` of the call's own, showing no other process (root only: it takes a
    /// mount namespace).
    pub process_list: Support,
    /// hcpx may mount (CAP_SYS_ADMIN and CAP_SYS_CHROOT): the process list can be
    /// hidden.
    pub can_mount: bool,
    /// hcpx holds CAP_SETPCAP (root, as in containers and CI): the child also empties
    /// its capability bounding set.
    pub drop_bounding: bool,
    /// The highest capability number this kernel knows.
    pub cap_last: u32,
}

impl Machine {
    /// A machine that enforces none of the kernel layers: every OS but Linux.
    pub fn without_kernel_layers(why: &str) -> Self {
        Self {
            landlock: Support::no(why),
            landlock_abi: 0,
            scopes: Support::no(why),
            seccomp: Support::no(why),
            egress: Support::no(why),
            sockets: Support::no(why),
            containment: Support::no(why),
            descriptors: Support::no(why),
            privileges: Support::no(why),
            process_list: Support::no(why),
            can_mount: false,
            drop_bounding: false,
            cap_last: 0,
        }
    }
}

impl Machine {
    /// A machine that enforces every layer: for tests of what callers decide from a
    /// machine, on any machine.
    pub fn all_enforced() -> Self {
        let yes = Support::yes("enforced");
        Self {
            landlock: yes.clone(),
            landlock_abi: 7,
            scopes: yes.clone(),
            seccomp: yes.clone(),
            egress: yes.clone(),
            sockets: yes.clone(),
            containment: yes.clone(),
            descriptors: yes.clone(),
            privileges: yes.clone(),
            process_list: yes,
            can_mount: true,
            drop_bounding: false,
            cap_last: 40,
        }
    }
}

/// Probes the kernel once per process: what it supports cannot change while we run.
pub fn probe() -> Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(probe_now).clone()
}

#[cfg(target_os = "linux")]
fn probe_now() -> Machine {
    super::linux::probe()
}

#[cfg(not(target_os = "linux"))]
fn probe_now() -> Machine {
    Machine::without_kernel_layers(
        "hcpx enforces this layer only on Linux; this OS has no Landlock, seccomp or pidfds",
    )
}
