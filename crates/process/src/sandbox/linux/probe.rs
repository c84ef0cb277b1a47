//! What this kernel supports, probed once without changing this process.

use super::*;
use crate::sandbox::{Machine, Support};

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn landlock_abi() -> i32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only returns the
    // ABI version; nothing is created or changed.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0_usize,
            1_u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn probe_seccomp() -> Support {
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is given.
    let available = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0_u32,
            &raw const action,
        )
    };
    if available == 0 {
        Support::yes("seccomp filters")
    } else {
        Support::no(format!(
            "this kernel has no seccomp filters: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn probe_close_range() -> Support {
    // SAFETY: marks no descriptor at all (the range is past any open one) close-on-exec;
    // it only tells whether the kernel knows the flag.
    let result = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            u32::MAX - 1,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if result == 0 {
        Support::yes("close_range")
    } else {
        Support::no(format!(
            "this kernel has no close_range(CLOSE_RANGE_CLOEXEC) (Linux 5.11): {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[expect(unsafe_code, reason = "probing system calls that rustix does not wrap")]
fn probe_sockets(seccomp: &Support) -> Support {
    if !seccomp.enforced {
        return seccomp.clone();
    }
    let action: u32 = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is given.
    let notify = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0_u32,
            &raw const action,
        )
    };
    if notify != 0 {
        return Support::no(
            "this kernel has no seccomp user notification (Linux 5.5), which checks each unix socket a pack connects to",
        );
    }
    // SAFETY: pidfd_getfd on no descriptor only tells whether the call exists
    // (EBADF) or not (ENOSYS).
    let getfd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, -1_i32, 0_i32, 0_u32) };
    if getfd == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        return Support::no(
            "this kernel has no pidfd_getfd (Linux 5.6), which hcpx needs to connect a pack's socket",
        );
    }
    Support::yes("seccomp user notification")
}

fn probe_containment() -> Support {
    let pid = rustix::process::getpid();
    match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(_) => Support::yes("a keeper"),
        Err(error) => Support::no(format!(
            "this kernel has no pidfds (Linux 5.3), which the keeper needs: {error}"
        )),
    }
}

/// Whether a call can get a network namespace of its own: with CAP_SYS_ADMIN, or
/// else through a user namespace, which the system may forbid. Read from the
/// system's settings, without making one (a call that then cannot make one fails,
/// it never runs with more network).
fn probe_egress() -> Support {
    if holds(rustix::thread::CapabilitySet::SYS_ADMIN) {
        return Support::yes("a network namespace per call (CAP_SYS_ADMIN)");
    }
    let setting = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
    };
    if setting("/proc/sys/user/max_user_namespaces") == Some(0) {
        return Support::no(
            "user namespaces are off (user.max_user_namespaces = 0), and a network namespace takes one or root",
        );
    }
    if setting("/proc/sys/kernel/unprivileged_userns_clone") == Some(0) {
        return Support::no(
            "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0), and a network namespace takes one or root",
        );
    }
    if setting("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == Some(1) {
        return Support::no(
            "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1), and a network namespace takes one or root",
        );
    }
    Support::yes("a network namespace per call, in a user namespace of this user")
}

/// Whether this process holds these capabilities (CAP_SETPCAP drops the bounding
/// set; CAP_SYS_ADMIN and CAP_SYS_CHROOT make and enter a mount namespace).
fn holds(capabilities: rustix::thread::CapabilitySet) -> bool {
    rustix::thread::capabilities(None).is_ok_and(|sets| sets.effective.contains(capabilities))
}

pub(crate) fn probe() -> Machine {
    let abi = landlock_abi();
    let landlock = match abi {
        0 => Support::no("Landlock is not enabled in this kernel (Linux 5.13, lsm=landlock)"),
        abi if abi < MIN_FS_ABI => Support::no(format!(
            "Landlock ABI {abi} cannot stop truncation of files outside the grants; Linux 6.2 (ABI 3) can"
        )),
        abi => Support::yes(format!("Landlock ABI {abi}")),
    };
    let scopes = if abi >= SCOPE_ABI {
        Support::yes(format!("Landlock ABI {abi}"))
    } else {
        Support::no(format!(
            "Landlock scopes need ABI 6 (Linux 6.12); this kernel has ABI {abi}, so a pack could signal processes outside its call"
        ))
    };
    let descriptors = probe_close_range();
    let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(40);
    let seccomp = probe_seccomp();
    Machine {
        landlock,
        landlock_abi: abi,
        scopes,
        sockets: probe_sockets(&seccomp),
        egress: probe_egress(),
        seccomp,
        containment: if descriptors.enforced {
            probe_containment()
        } else {
            Support::no("the keeper needs close_range (Linux 5.11) to let go of the runtime's pipes")
        },
        descriptors,
        privileges: Support::yes("prctl and capset"),
        // Decided by the cache, which tries to make the namespace (see `process_list`).
        process_list: Support::no("not tried"),
        can_mount: holds(
            rustix::thread::CapabilitySet::SYS_ADMIN | rustix::thread::CapabilitySet::SYS_CHROOT,
        ),
        drop_bounding: holds(rustix::thread::CapabilitySet::SETPCAP),
        cap_last,
    }
}
