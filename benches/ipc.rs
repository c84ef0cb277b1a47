//! `cargo bench -p hcpx --bench ipc`: what keeping System V IPC and POSIX message queues
//! from crossing calls costs, two ways, measured in one run with the variants
//! interleaved: refusing their system calls in the seccomp filter (what hcpx does),
//! against giving each call an IPC namespace of its own (root only). Each variant
//! starts `/bin/true` with `no_new_privs` set; the seccomp variants load hcpx's own
//! filter for a pack without the network, with and without the IPC rules.
//!
//! Prints p50 and p99 and the difference; never asserts on time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "benchmarks start processes, print, and stop loudly on failure"
)]

mod common;

use std::os::unix::process::CommandExt as _;
use std::process::Command;

use common::{interleaved, ms};

const RUNS: usize = 1000;

/// What the child does before it execs `/bin/true`.
#[derive(Clone, Copy)]
struct Setup {
    namespace: bool,
    filter: Option<&'static [seccompiler::sock_filter]>,
}

#[expect(unsafe_code, reason = "pre_exec runs between fork and exec")]
fn run(setup: Setup) {
    let mut command = Command::new("/bin/true");
    // SAFETY: only system calls on integers and on the leaked, immutable filter;
    // no allocation, no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if setup.namespace && libc::unshare(libc::CLONE_NEWIPC) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(filter) = setup.filter {
                let prog = libc::sock_fprog {
                    len: u16::try_from(filter.len()).unwrap_or(u16::MAX),
                    filter: filter.as_ptr().cast::<libc::sock_filter>().cast_mut(),
                };
                if libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &raw const prog,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let status = command.status().unwrap();
    assert!(status.success());
}

fn main() {
    let leak = |refuse_ipc: bool| -> &'static [seccompiler::sock_filter] {
        Vec::leak(hcpx::sandbox::seccomp_program_for_bench(refuse_ipc).unwrap())
    };
    let (without, with) = (leak(false), leak(true));
    let root = rustix::process::geteuid().is_root();
    let mut setups = vec![
        (
            "no filter, no namespace",
            Setup {
                namespace: false,
                filter: None,
            },
        ),
        (
            "hcpx's filter without the IPC rules",
            Setup {
                namespace: false,
                filter: Some(without),
            },
        ),
        (
            "hcpx's filter with the IPC rules",
            Setup {
                namespace: false,
                filter: Some(with),
            },
        ),
    ];
    if root {
        setups.push((
            "an IPC namespace, filter without IPC rules",
            Setup {
                namespace: true,
                filter: Some(without),
            },
        ));
    }
    let mut variants: Vec<Box<dyn FnMut()>> = setups
        .iter()
        .map(|(_, setup)| {
            let setup = *setup;
            Box::new(move || run(setup)) as Box<dyn FnMut()>
        })
        .collect();
    let mut refs: Vec<&mut dyn FnMut()> = variants
        .iter_mut()
        .map(|run| run.as_mut() as &mut dyn FnMut())
        .collect();
    let results = interleaved(RUNS, &mut refs);
    println!(
        "IPC isolation, {RUNS} interleaved starts of /bin/true (p50 / p99); filter {} instructions without the IPC rules, {} with:",
        without.len(),
        with.len()
    );
    for ((label, _), (p50, p99)) in setups.iter().zip(&results) {
        println!("  {label:<44}{:>7.3} ms / {:>7.3} ms", ms(*p50), ms(*p99));
    }
    println!(
        "  the IPC rules add                           {:>7.3} ms p50",
        ms(results[2].0) - ms(results[1].0)
    );
    if root {
        println!(
            "  an IPC namespace adds                       {:>7.3} ms p50",
            ms(results[3].0) - ms(results[1].0)
        );
    } else {
        println!("  (an IPC namespace needs root: not measured)");
    }
}
