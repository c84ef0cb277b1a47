//! The Linux layers, prepared in the parent: what the kernel supports (probed once,
//! without changing this process), the Landlock rulesets, the seccomp programs and
//! the write grants, opened without following links out of the working directory.
//!
//! A call's Landlock domain has two or three layers: the keeper's (signal scope only,
//! so its final `kill(-1)` reaches exactly the call's processes), the call's own (its
//! read allowlist, writes, TCP and scopes) and, only when a folder the call is
//! granted holds a hidden path (`$HCP_HOME`, or as root a secret of the system),
//! the base layer (everything but the hidden paths; cached, as listing the folders on
//! the way is most of the cost). Layers intersect: a pack gets what every layer
//! allows.

mod cache;
mod probe;
mod ruleset;
mod seccomp;

use std::sync::Arc;

pub(super) use cache::Cache;
pub(super) use probe::probe;
use ruleset::{call_ruleset, open_writes};
pub(super) use seccomp::program_for_bench;

use super::hidden::Hide;
use super::{ChildPlan, Control, Machine, SandboxError};
use crate::confine::{Confinement, KeeperEnd};

/// Truncation (ABI 3) is the last write path Landlock closes: below it a pack could
/// truncate files it was never granted.
pub(super) const MIN_FS_ABI: i32 = 3;
/// TCP bind and connect rules.
pub(super) const NET_ABI: i32 = 4;
/// Signal and abstract unix socket scopes.
pub(super) const SCOPE_ABI: i32 = 6;
/// Devices every pack may write.
pub(super) const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// Prepares everything the forked processes apply, with the layers this machine
/// enforces. A `server` (a long-lived process) starts its keepers from a spawner
/// thread that holds the filter and the dropped bounding set already.
pub(super) fn prepare(
    plan: &ChildPlan,
    machine: &Machine,
    cache: &Cache,
    kept: Option<std::os::fd::OwnedFd>,
    server: bool,
) -> Result<(Confinement, Option<Control>), SandboxError> {
    let landlock = machine.landlock.enforced;
    let mut writes = open_writes(&plan.cwd, &plan.writes)?;
    // The pack's cache folder, as opened where it was made: granted as a write path.
    writes.extend(kept);
    // The child enters the `/proc` namespace when it has a keeper (the fork path
    // enters none); as root the namespace covers the system's secrets, which then
    // need no Landlock layer of their own.
    let namespace = machine.process_list.enforced && machine.containment.enforced;
    let proc = namespace.then(|| cache.proc().ok()).flatten();
    let covered = proc.is_some() && cache.covered_secrets();
    crate::mark("covers checked");
    let (call, hide) = match landlock {
        true => {
            let (call, hide) = call_ruleset(plan, machine, cache, writes, covered)?;
            (Some(call), hide)
        }
        false => (None, Hide::default()),
    };
    crate::mark("call ruleset");
    let base = hide
        .any()
        .then(|| cache.base(&plan.home, hide, machine))
        .transpose()?;
    crate::mark("base ruleset");
    let sockets = !plan.sockets.is_empty();
    let filters = machine
        .seccomp
        .enforced
        .then(|| cache.filters(plan.network.any(), sockets))
        .transpose()?;
    let notify = (sockets && machine.sockets.enforced)
        .then(|| {
            let program = Arc::clone(cache.notify.get_or_init(|| Arc::new(super::notify::program())));
            super::notify::prepare(&plan.sockets, plan.network.any(), program)
        })
        .transpose()?;
    let spawner = (server && filters.is_some() && machine.containment.enforced)
        .then(|| {
            cache.spawner(
                plan.network.any(),
                sockets,
                machine.privileges.enforced && machine.drop_bounding,
                machine.cap_last,
            )
        })
        .flatten();
    let (keeper, control) = if machine.containment.enforced {
        let scope = machine.scopes.enforced.then(|| cache.keeper()).transpose()?;
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|error| SandboxError::Pipe(error.into()))?;
        (Some(KeeperEnd { control: read, scope }), Some(Control(write)))
    } else {
        (None, None)
    };
    let confinement = Confinement {
        proc,
        net: match &plan.network {
            super::ChildNetwork::Namespace { join, .. } => Some(std::sync::Arc::clone(join)),
            _ => None,
        },
        keeper,
        base,
        call,
        filters,
        notify,
        spawner,
        close_descriptors: machine.descriptors.enforced,
        drop_privileges: machine.privileges.enforced,
        drop_bounding: machine.drop_bounding,
        cap_last: machine.cap_last,
    };
    Ok((confinement, control))
}

#[cfg(test)]
mod tests {
    use super::seccomp::seccomp_program;
    use super::*;

    #[test]
    fn write_grants_stay_beneath_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join("out")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), cwd.join("away")).unwrap();
        std::os::unix::fs::symlink("out", cwd.join("inside")).unwrap();
        assert_eq!(
            open_writes(&cwd, &["out".into(), "inside".into()]).unwrap().len(),
            2
        );
        assert_eq!(open_writes(&cwd, &["missing".into()]).unwrap().len(), 0);
        let error = open_writes(&cwd, &["away".into()]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the pack's write path `away` leads out of the working directory through a link"
        );
        assert!(matches!(
            open_writes(&cwd, &["../outside".into()]),
            Err(SandboxError::WriteOutside { .. })
        ));
    }

    #[test]
    fn seccomp_program_builds_for_both_network_settings() {
        for (network, sockets) in [(false, false), (true, false), (false, true), (true, true)] {
            let program = seccomp_program(network, sockets).unwrap();
            // The x32 guard, then seccompiler's rules, which start with the arch check.
            let guard = if cfg!(target_arch = "x86_64") { 3 } else { 0 };
            assert_eq!(program[guard].k, 4, "the arch check loads seccomp_data.arch");
        }
    }
}
