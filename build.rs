//! Two jobs before `hcpx` is compiled:
//!
//! - Rebuild when a built-in pack or host file changes: `include_dir!` embeds them
//!   but cannot tell cargo to watch them on stable Rust.
//! - Link the binary so that a process starts sooner: every `hcpx exec` is a new
//!   process, and its start is most of what hcpx adds to a call handed to
//!   `hcpx serve`. On Linux with glibc, where the toolchain can:
//!   - the unwinder comes from the static `libgcc_eh.a`, not `libgcc_s.so.1`. One
//!     shared library fewer to find, map and bind, and `libgcc_s`'s constructor
//!     (which asks the processor for its features, a trap to the hypervisor on a
//!     VM) never runs: about 0.1 ms a process. This is what `gcc -static-libgcc`
//!     does for C programs; Rust's standard library names `gcc_s` itself, so a
//!     linker script of that name, found first, reads the archive instead.
//!   - relative relocations are packed (`-z pack-relative-relocs`, glibc 2.36 and
//!     binutils 2.38 or later): the loader walks a 5 KB bitmap instead of 16,000
//!     entries in 380 KB, about 0.05 ms a process.
//!
//! Each is tried first on a small C program built and run with the same linker,
//! and left out (with a warning) when that fails. `HCP_BUILD_PLAIN_LINK=1` leaves
//! both out.

#![allow(
    clippy::disallowed_methods,
    reason = "a build script reads cargo's variables and runs the toolchain"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=packs");
    println!("cargo:rerun-if-changed=adopt");
    println!("cargo:rerun-if-env-changed=HCP_BUILD_PLAIN_LINK");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let done = link().unwrap_or_else(|why| {
        println!("cargo:warning=hcpx links as usual: {why}");
        Vec::new()
    });
    // What the tests check the binary for.
    println!("cargo:rustc-env=HCP_BUILD_LINK={}", done.join(" "));
}

/// Where the link is tried: the driver (as rustc calls it), the build's own
/// folder, and whether the binary is static.
struct Probe {
    driver: String,
    folder: PathBuf,
    static_pie: bool,
}

/// Sets up the link; what it did (`unwinder`, `relr`).
fn link() -> Result<Vec<&'static str>, String> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let mut done = Vec::new();
    if var("HCP_BUILD_PLAIN_LINK") == "1" {
        return Ok(done);
    }
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return Ok(done);
    }
    // The probe runs what it links: only where the build runs its own target.
    if var("HOST") != var("TARGET") {
        return Ok(done);
    }
    let out = PathBuf::from(var("OUT_DIR"));
    let probe = Probe {
        driver: std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned()),
        folder: out.join("link"),
        static_pie: var("CARGO_CFG_TARGET_FEATURE")
            .split(',')
            .any(|feature| feature == "crt-static"),
    };
    std::fs::create_dir_all(&probe.folder).map_err(|error| format!("{}: {error}", probe.folder.display()))?;
    std::fs::write(probe.folder.join("probe.c"), "int main(void) { return 0; }\n")
        .map_err(|error| format!("the probe cannot be written: {error}"))?;
    // A static binary has no libgcc_s to replace: it links libgcc_eh already.
    if !probe.static_pie {
        let archive = probe.output(&["-print-file-name=libgcc_eh.a"])?;
        let archive = Path::new(archive.trim());
        if !archive.is_absolute() || !archive.is_file() {
            return Err("the toolchain has no libgcc_eh.a".to_owned());
        }
        let script = format!("INPUT(\"{}\")\n", archive.display());
        std::fs::write(probe.folder.join("libgcc_s.so"), script)
            .map_err(|error| format!("the unwinder's linker script cannot be written: {error}"))?;
        let search = format!("-L{}", probe.folder.display());
        probe.try_link("unwinder", &[&search, "-lgcc_s"])?;
        println!("cargo:rustc-link-search=native={}", probe.folder.display());
        done.push("unwinder");
    }
    if let Err(why) = probe.try_link("relr", &["-Wl,-z,pack-relative-relocs"]) {
        println!("cargo:warning=hcpx links its relocations unpacked: {why}");
    } else {
        println!("cargo:rustc-link-arg=-Wl,-z,pack-relative-relocs");
        done.push("relr");
    }
    Ok(done)
}

impl Probe {
    /// What the driver prints for `args`.
    fn output(&self, args: &[&str]) -> Result<String, String> {
        let output = Command::new(&self.driver)
            .args(args)
            .output()
            .map_err(|error| format!("{} cannot be run: {error}", self.driver))?;
        if !output.status.success() {
            return Err(format!("{} {} failed", self.driver, args.join(" ")));
        }
        String::from_utf8(output.stdout).map_err(|_| format!("{} printed no text", self.driver))
    }

    /// Links the probe with `flags`, as the binary will be, and runs it.
    fn try_link(&self, name: &str, flags: &[&str]) -> Result<(), String> {
        let binary = self.folder.join(format!("probe-{name}"));
        let mut command = Command::new(&self.driver);
        command.arg(self.folder.join("probe.c")).arg("-o").arg(&binary);
        if self.static_pie {
            command.arg("-static-pie");
        }
        let linked = command
            .args(flags)
            .output()
            .map_err(|error| format!("{} cannot be run: {error}", self.driver))?;
        if !linked.status.success() {
            return Err(format!(
                "linking with {} fails: {}",
                flags.join(" "),
                String::from_utf8_lossy(&linked.stderr).trim()
            ));
        }
        match Command::new(&binary).status() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!(
                "a program linked with {} ends with {status}",
                flags.join(" ")
            )),
            Err(error) => Err(format!(
                "a program linked with {} cannot start: {error}",
                flags.join(" ")
            )),
        }
    }
}
