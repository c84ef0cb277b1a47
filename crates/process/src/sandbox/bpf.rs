//! The hand-written parts of the seccomp program (Linux), which go before the rules
//! `seccompiler` builds: each falls through to what follows, whose jumps are
//! relative, so they need no change. Both are a few instructions where a rule per
//! system call would be dozens: the kernel prepares the whole program at every load.

/// The architecture value of `seccomp_data.arch` for this build (`AUDIT_ARCH_*`).
const NATIVE_ARCH: u32 = if cfg!(target_arch = "x86_64") {
    0xC000_003E
} else if cfg!(target_arch = "aarch64") {
    0xC000_00B7
} else {
    0xC000_00F3
};

/// System V IPC and POSIX message queues: what they make outlives the call (a
/// segment stays pinned, and the next call of any pack can read it), so a pack gets
/// none. Refusing them costs less than an IPC namespace per call (`cargo bench
/// --bench ipc`), and works without root. `shmdt` is here only to keep the ranges
/// whole: without `shmat` nothing is attached.
const IPC: [i64; 18] = [
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmdt,
    libc::SYS_shmctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
];

fn code(parts: u32) -> u16 {
    u16::try_from(parts).unwrap_or(u16::MAX)
}

fn statement(parts: u32, k: u32) -> seccompiler::sock_filter {
    seccompiler::sock_filter {
        code: code(parts),
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(parts: u32, k: u32, jt: u8, jf: u8) -> seccompiler::sock_filter {
    seccompiler::sock_filter {
        code: code(parts),
        jt,
        jf,
        k,
    }
}

fn refuse() -> seccompiler::sock_filter {
    statement(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_ERRNO | u32::try_from(libc::EPERM).unwrap_or(1),
    )
}

/// Refuses every system call made through the x32 ABI (numbers with bit 30 set).
pub(super) fn x32_guard() -> seccompiler::BpfProgram {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    vec![
        // seccomp_data.nr is at offset 0.
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        jump(
            libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K,
            X32_SYSCALL_BIT,
            0,
            1,
        ),
        refuse(),
    ]
}

/// `numbers` as the fewest ranges of consecutive numbers.
fn ranges(numbers: &[i64]) -> Vec<(u32, u32)> {
    let mut sorted: Vec<u32> = numbers.iter().filter_map(|n| u32::try_from(*n).ok()).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for n in sorted {
        match out.last_mut() {
            Some((_, high)) if *high + 1 == n => *high = n,
            _ => out.push((n, n)),
        }
    }
    out
}

/// Refuses the [`IPC`] system calls of this architecture, checked as a few ranges
/// of numbers (four on x86_64, one on aarch64); another architecture's calls go on
/// to the rules, which refuse them all.
pub(super) fn ipc_guard() -> seccompiler::BpfProgram {
    let ranges = ranges(&IPC);
    let count = ranges.len();
    // Where the `ja` over the refusal stands, after two jumps per range; the
    // refusal follows it.
    let after = 3 + 2 * count;
    let mut program = vec![
        // seccomp_data.arch is at offset 4.
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4),
        jump(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            NATIVE_ARCH,
            0,
            u8::try_from(after).unwrap_or(u8::MAX),
        ),
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
    ];
    for (index, (low, high)) in ranges.into_iter().enumerate() {
        let at = 3 + 2 * index;
        // Below `low`: on to the next range. Up to `high`: to the refusal.
        program.push(jump(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, low, 0, 1));
        let to_refusal = after + 1 - (at + 2);
        program.push(jump(
            libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K,
            high,
            0,
            u8::try_from(to_refusal).unwrap_or(u8::MAX),
        ));
    }
    program.push(statement(libc::BPF_JMP | libc::BPF_JA, 1));
    program.push(refuse());
    program
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_become_whole_ranges() {
        assert_eq!(
            ranges(&[31, 29, 30, 64, 66, 65, 220, 240]),
            [(29, 31), (64, 66), (220, 220), (240, 240)]
        );
        assert_eq!(ranges(&[]), []);
    }

    /// Runs the guard as the kernel would for one call: `Some(true)` when it refuses,
    /// `Some(false)` when it falls through to the next program.
    fn verdict(program: &[seccompiler::sock_filter], arch: u32, nr: u32) -> Option<bool> {
        let (mut pc, mut acc) = (0_usize, 0_u32);
        loop {
            if pc == program.len() {
                return Some(false);
            }
            let op = &program[pc];
            let class = u32::from(op.code) & 0x07;
            pc += 1;
            match (class, u32::from(op.code)) {
                (0x00, _) => acc = if op.k == 4 { arch } else { nr },
                (0x06, _) => return Some(true),
                (0x05, c) if c == libc::BPF_JMP | libc::BPF_JA => pc += op.k as usize,
                (0x05, c) => {
                    let taken = match c & 0xf0 {
                        0x10 => acc == op.k,
                        0x20 => acc > op.k,
                        0x30 => acc >= op.k,
                        0x40 => acc & op.k != 0,
                        _ => return None,
                    };
                    pc += usize::from(if taken { op.jt } else { op.jf });
                }
                _ => return None,
            }
        }
    }

    #[test]
    fn the_ipc_guard_refuses_exactly_the_ipc_calls() {
        let program = ipc_guard();
        for nr in 0..500_u32 {
            let ipc = IPC.iter().any(|n| u32::try_from(*n) == Ok(nr));
            assert_eq!(verdict(&program, NATIVE_ARCH, nr), Some(ipc), "{nr}");
            assert_eq!(verdict(&program, 0x4000_0003, nr), Some(false), "foreign {nr}");
        }
        assert!(program.len() <= 16, "{}", program.len());
    }

    #[test]
    fn the_x32_guard_refuses_only_x32_numbers() {
        let program = x32_guard();
        assert_eq!(verdict(&program, NATIVE_ARCH, 39), Some(false));
        assert_eq!(verdict(&program, NATIVE_ARCH, 0x4000_0000 | 39), Some(true));
    }
}
