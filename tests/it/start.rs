//! How an `hcpx` process starts: every `hcpx exec` is one, so its start is most of
//! what hcpx adds to a call handed to `hcpx serve`. The binary loads the C library
//! alone and packs its relocations (see build.rs), and it starts at the C library's
//! entry rather than Rust's (see main.rs), doing itself what Rust's start-up did
//! that matters: closed standard streams opened on `/dev/null`, SIGPIPE ignored.

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use std::time::Duration;

use crate::common::{BIN, TestEnv, require, terminate, wait_until};

/// `readelf -d`'s lines for the binary's dynamic section.
fn dynamic_section() -> Option<String> {
    let output = Command::new("readelf").args(["-d", BIN]).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn the_binary_loads_no_libgcc_s_and_packs_its_relocations() {
    // What build.rs did: both, on this toolchain (glibc 2.36 and binutils 2.38 or
    // later). A build that fell back says why in its warnings.
    assert_eq!(
        env!("HCP_BUILD_LINK"),
        "unwinder relr",
        "build.rs fell back to a plain link (see cargo's warnings)"
    );
    let Some(dynamic) = require_dynamic() else {
        return;
    };
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| line.split('[').nth(1)?.split(']').next())
        .collect();
    // No libgcc_s: the unwinder is linked in. (The release binary needs libc alone,
    // but a test build has tokio's multi-threaded runtime, which calls libm.)
    assert!(needed.contains(&"libc.so.6"), "{dynamic}");
    assert!(
        !needed.iter().any(|library| library.starts_with("libgcc_s")),
        "{dynamic}"
    );
    assert!(
        dynamic.contains("(RELR)"),
        "relocations are not packed:\n{dynamic}"
    );
    assert!(
        !dynamic.contains("(RELACOUNT)"),
        "relative relocations are still listed one by one:\n{dynamic}"
    );
}

fn require_dynamic() -> Option<String> {
    let dynamic = dynamic_section();
    require(dynamic.is_some(), "readelf (binutils)").then_some(dynamic?)
}

/// The unwinder linked in from libgcc_eh catches a panic in a binary linked like
/// hcpx (this test binary is).
#[test]
fn a_panic_unwinds_and_is_caught() {
    let caught = std::panic::catch_unwind(|| {
        let words = ["unwinds"];
        std::panic::panic_any(words[0].to_owned())
    });
    let payload = caught.expect_err("the panic was caught");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some("unwinds")
    );
}

/// A standard stream that was closed when hcpx started is `/dev/null` while it
/// runs. Otherwise the next descriptor hcpx opens takes its number, and what is
/// printed lands there: today the runtime's event queue comes first (writes to it
/// fail), but a file opened earlier by any future code would receive the output.
/// A running `hcpx serve` shows its descriptors in `/proc`.
#[test]
fn closed_standard_streams_are_dev_null_while_hcpx_runs() {
    // Each stream alone (the others open on the test's `/dev/null`), then all three.
    for closed in ["0<&-", "1>&-", "2>&-", "0<&- 1>&- 2>&-"] {
        let env = TestEnv::new();
        let line = format!("exec \"$0\" serve --idle 20 {closed}");
        let mut server = env
            .command_of(Path::new("/bin/sh"), &["-c", &line, BIN])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let socket = env.home().join("run/exec.sock");
        assert!(
            wait_until(Duration::from_secs(10), || socket.exists()),
            "{closed}: hcpx serve did not start"
        );
        let streams: Vec<String> = (0..3)
            .map(|fd| {
                std::fs::read_link(format!("/proc/{}/fd/{fd}", server.id()))
                    .map(|target| target.display().to_string())
                    .unwrap_or_else(|error| format!("unreadable: {error}"))
            })
            .collect();
        terminate(&mut server);
        assert_eq!(streams, ["/dev/null", "/dev/null", "/dev/null"], "{closed}");
    }
}

/// A reader that went away (`hcpx … | head -1`) makes hcpx's writes fail; it does
/// not end hcpx by SIGPIPE, and the call's own exit code is kept.
#[test]
fn a_closed_pipe_is_an_error_to_hcpx_not_a_signal() {
    let env = TestEnv::new();
    env.install_fixture("probe", "probe");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = env
        .command(&["exec", "probe", "args", "--", "text=hello"])
        .stdout(Stdio::from(writer))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!((status.signal(), status.code()), (None, Some(0)), "{status:?}");
}
