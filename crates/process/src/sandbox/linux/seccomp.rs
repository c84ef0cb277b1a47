//! The seccomp programs: the guard of foreign architectures and IPC, then the
//! syscall and network rules.

use crate::sandbox::bpf;

/// The bits of `socket(2)`'s type argument that are the type (`SOCK_TYPE_MASK`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// The seccomp program: on x86_64 first a guard that refuses the x32 ABI (its
/// system call numbers would slip past the rules), then the rules: no kernel
/// keyrings, no io_uring (it would make sockets past the filter), no terminal input
/// injection, no System V IPC or POSIX message queues (kept by the kernel after the
/// call, and readable by the next one), no socket but unix stream and seqpacket
/// socket pairs without the network, and with it only IPv4 and IPv6 sockets (no unix
/// socket by path or name, no netlink, no raw packets); no unix datagram socket,
/// paired or not.
pub(crate) fn seccomp_program(
    network: bool,
    sockets: bool,
) -> Result<seccompiler::BpfProgram, seccompiler::BackendError> {
    program(network, sockets, true)
}

/// The program without the network and declared sockets, with or without the
/// IPC guard ([`bpf::ipc_guard`]): what `cargo bench --bench ipc` weighs.
pub(crate) fn program_for_bench(refuse_ipc: bool) -> Result<seccompiler::BpfProgram, String> {
    program(false, false, refuse_ipc).map_err(|error| error.to_string())
}

pub(crate) fn program(
    network: bool,
    sockets: bool,
    refuse_ipc: bool,
) -> Result<seccompiler::BpfProgram, seccompiler::BackendError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let arch = if cfg!(target_arch = "x86_64") {
        seccompiler::TargetArch::x86_64
    } else if cfg!(target_arch = "aarch64") {
        seccompiler::TargetArch::aarch64
    } else {
        seccompiler::TargetArch::riscv64
    };
    let when = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
            .and_then(|condition| SeccompRule::new(vec![condition]))
    };
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ]
    .into_iter()
    .map(|nr| (nr, Vec::new()))
    .collect();
    rules.insert(
        libc::SYS_ioctl,
        vec![
            when(1, SeccompCmpOp::Eq, u64::from(libc::TIOCSTI as u32))?,
            when(1, SeccompCmpOp::Eq, u64::from(libc::TIOCLINUX as u32))?,
        ],
    );
    // The families a socket may have: IPv4 and IPv6 with the network, unix stream
    // and seqpacket sockets when the pack declares sockets (each connect is then
    // checked, see `notify`).
    let family = |op, value: i32| SeccompCondition::new(0, SeccompCmpArgLen::Dword, op, value as u64);
    let mut open: Vec<i32> = Vec::new();
    if network {
        open.extend([libc::AF_INET, libc::AF_INET6]);
    }
    if sockets {
        open.push(libc::AF_UNIX);
    }
    let mut socket_rules = Vec::new();
    if !open.is_empty() {
        socket_rules.push(SeccompRule::new(
            open.iter()
                .map(|value| family(SeccompCmpOp::Ne, *value))
                .collect::<Result<_, _>>()?,
        )?);
    }
    // A unix datagram names its target in each send, where no connect is there to
    // check: none from a socket of the pack's own, nor from one end of a socketpair
    // (a send may still address a path elsewhere). The type's low bits are the
    // type; the rest are SOCK_NONBLOCK and SOCK_CLOEXEC.
    let datagram = || {
        SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            libc::SOCK_DGRAM as u64,
        )
    };
    if sockets {
        socket_rules.push(SeccompRule::new(vec![
            family(SeccompCmpOp::Eq, libc::AF_UNIX)?,
            datagram()?,
        ])?);
    }
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(
        libc::SYS_socketpair,
        vec![
            when(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?,
            SeccompRule::new(vec![datagram()?])?,
        ],
    );
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let main: seccompiler::BpfProgram = filter.try_into()?;
    // One program, not two: the kernel compiles each program it loads, per call.
    let mut program = if cfg!(target_arch = "x86_64") {
        bpf::x32_guard()
    } else {
        Vec::new()
    };
    if refuse_ipc {
        program.extend(bpf::ipc_guard());
    }
    program.extend(main);
    Ok(program)
}
