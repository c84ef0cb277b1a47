//! The sandbox (SPEC §6) as a transform: a [`ChildPlan`] (what the pack's CLI should
//! run, with which environment) becomes a [`Spawn`] for [`crate::runtime`], carrying a
//! [`Confinement`] prepared here in the parent: a Landlock ruleset (read anywhere but
//! `$HCP_HOME`, write only to the pack's `write` paths and its temporary folder)
//! built and held as a file descriptor, and whether to enter a new network
//! namespace. Between fork and exec, the child only makes raw system calls with what
//! was prepared (no allocation, no locks): core dumps off, death with its parent, the
//! namespace, then the ruleset. A layer that fails there fails the spawn: the pack's
//! CLI never runs without a layer that was meant to be on.
//!
//! Layers the kernel cannot enforce are reported as such, never claimed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::binding::Secret;

/// Environment names passed through from the caller (SPEC §6); TMPDIR is replaced.
pub const PASSED_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "LC_ALL", "TZ"];
/// PATH for the child when the caller has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

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

/// What this machine can enforce, found without changing this process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    pub landlock: Support,
    #[serde(rename = "networkNamespace")]
    pub network_namespace: Support,
}

/// One layer as shown by `doctor`, `--dry-run` and the exec envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerReport {
    pub layer: &'static str,
    pub enforced: bool,
    /// Whether this pack needs it (a needed layer that is not enforced makes the
    /// pack not runnable in strict mode).
    pub needed: bool,
    pub detail: String,
}

/// Probes the kernel: Landlock by creating (not applying) a ruleset; the network
/// namespace from the credentials and the kernel's user-namespace switches.
pub fn probe() -> Machine {
    // The kernel's answer cannot change while this process lives.
    static MACHINE: std::sync::OnceLock<Machine> = std::sync::OnceLock::new();
    MACHINE
        .get_or_init(|| Machine {
            landlock: probe_landlock(),
            network_namespace: probe_netns(),
        })
        .clone()
}

#[cfg(target_os = "linux")]
fn probe_landlock() -> Support {
    use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(Ruleset::create);
    match created {
        Ok(_) => Support {
            enforced: true,
            detail: "Landlock is enabled in this kernel".to_owned(),
        },
        Err(error) => Support {
            enforced: false,
            detail: format!("Landlock is not available here: {error}"),
        },
    }
}

#[cfg(not(target_os = "linux"))]
fn probe_landlock() -> Support {
    Support {
        enforced: false,
        detail: "Landlock exists only on Linux".to_owned(),
    }
}

#[cfg(target_os = "linux")]
fn probe_netns() -> Support {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    };
    if !Path::new("/proc/self/ns/net").exists() {
        return Support {
            enforced: false,
            detail: "this kernel has no network namespaces".to_owned(),
        };
    }
    let root_with_admin = rustix::process::geteuid().is_root()
        && read("/proc/self/status")
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("CapEff:").map(|caps| caps.trim().to_owned()))
            })
            .and_then(|caps| u64::from_str_radix(&caps, 16).ok())
            .is_some_and(|caps| caps & (1 << 21) != 0);
    if root_with_admin {
        return Support {
            enforced: true,
            detail: "a new network namespace (as root)".to_owned(),
        };
    }
    if read("/proc/sys/user/max_user_namespaces").is_some_and(|max| max == "0") {
        return Support {
            enforced: false,
            detail: "user namespaces are disabled (user.max_user_namespaces = 0)".to_owned(),
        };
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").is_some_and(|flag| flag == "0") {
        return Support {
            enforced: false,
            detail: "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
                .to_owned(),
        };
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").is_some_and(|flag| flag == "1") {
        return Support {
            enforced: false,
            detail: "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"
                .to_owned(),
        };
    }
    Support {
        enforced: true,
        detail: "a new user and network namespace".to_owned(),
    }
}

#[cfg(not(target_os = "linux"))]
fn probe_netns() -> Support {
    Support {
        enforced: false,
        detail: "network namespaces exist only on Linux".to_owned(),
    }
}

/// What the pack's CLI should run, before the sandbox is applied.
#[derive(Debug, Clone)]
pub struct ChildPlan {
    /// Absolute path of the program.
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The pack's bindings, by name.
    pub bindings: Vec<(String, Secret)>,
    /// Absolute paths the pack may write, besides its temporary folder.
    pub writes: Vec<PathBuf>,
    /// A folder the child may not read at all (`$HCP_HOME`: other packs' secrets).
    pub hide: Option<PathBuf>,
    /// Folders it may read even inside the hidden one (its own pack folder).
    pub reads: Vec<PathBuf>,
    pub network: bool,
}

/// What the child applies to itself between fork and exec, all prepared in the
/// parent so that the child needs no allocation.
#[derive(Debug, Default)]
pub struct Confinement {
    /// The Landlock ruleset, built and ready to be enforced.
    #[cfg(target_os = "linux")]
    pub ruleset: Option<std::os::fd::OwnedFd>,
    pub netns: bool,
    /// `uid_map` and `gid_map` contents for an unprivileged user namespace.
    pub uid_map: Vec<u8>,
    pub gid_map: Vec<u8>,
}

/// A ready-to-start process, for [`crate::runtime`].
#[derive(Debug)]
pub struct Spawn {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub confinement: Option<Confinement>,
}

/// The child's environment: the allowlist from the caller, the private TMPDIR, and
/// the bindings. Nothing else of the caller's environment reaches it.
pub fn child_env(
    caller: &BTreeMap<String, String>,
    tmpdir: &Path,
    bindings: &[(String, Secret)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = PASSED_ENV
        .iter()
        .filter_map(|name| caller.get(*name).map(|value| ((*name).to_owned(), value.clone())))
        .collect();
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".to_owned(), DEFAULT_PATH.to_owned()));
    }
    env.push(("TMPDIR".to_owned(), tmpdir.display().to_string()));
    env.extend(
        bindings
            .iter()
            .map(|(key, secret)| (key.clone(), secret.expose().to_owned())),
    );
    env.sort();
    env
}

/// The layers for one pack on this machine.
pub fn layers(machine: &Machine, network: bool, writes: &[String]) -> Vec<LayerReport> {
    let always = |layer: &'static str, detail: &str| LayerReport {
        layer,
        enforced: true,
        needed: true,
        detail: detail.to_owned(),
    };
    let write_detail = if writes.is_empty() {
        "writes only to its private temporary folder".to_owned()
    } else {
        format!(
            "writes only to {} and its private temporary folder",
            writes.join(", ")
        )
    };
    let network_detail = if network {
        "the pack declares network access, so none is set up".to_owned()
    } else {
        machine.network_namespace.detail.clone()
    };
    vec![
        always(
            "environment",
            "cleared: only PATH, HOME, LANG, LC_ALL, TZ, a private TMPDIR and the pack's bindings",
        ),
        always("stdin", "closed"),
        always(
            "process-group",
            "its own, killed as a whole (TERM, then KILL after 2 s)",
        ),
        always(
            "timeout",
            "the manifest's timeoutMs, or --timeout-ms up to 600000",
        ),
        always("output-cap", "8 MiB per call; past it the child is killed"),
        always("core-dumps", "off (RLIMIT_CORE = 0)"),
        LayerReport {
            layer: "landlock",
            enforced: machine.landlock.enforced,
            needed: cfg!(target_os = "linux"),
            detail: if machine.landlock.enforced {
                write_detail
            } else {
                machine.landlock.detail.clone()
            },
        },
        LayerReport {
            layer: "network-namespace",
            enforced: !network && machine.network_namespace.enforced,
            needed: !network && cfg!(target_os = "linux"),
            detail: network_detail,
        },
    ]
}

/// The needed layers this machine cannot enforce.
pub fn missing(layers: &[LayerReport]) -> Vec<&LayerReport> {
    layers
        .iter()
        .filter(|layer| layer.needed && !layer.enforced)
        .collect()
}

/// Prepares the plan's confinement with the layers this machine enforces.
pub fn transform(
    plan: &ChildPlan,
    env: Vec<(String, String)>,
    tmpdir: &Path,
    machine: &Machine,
) -> Result<Spawn, String> {
    let mut writes = plan.writes.clone();
    writes.push(tmpdir.to_path_buf());
    let netns = !plan.network && machine.network_namespace.enforced;
    #[cfg(unix)]
    let (uid_map, gid_map) = {
        let (uid, gid) = (
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw(),
        );
        (
            format!("{uid} {uid} 1").into_bytes(),
            format!("{gid} {gid} 1").into_bytes(),
        )
    };
    #[cfg(not(unix))]
    let (uid_map, gid_map) = (Vec::new(), Vec::new());
    let confinement = Confinement {
        #[cfg(target_os = "linux")]
        ruleset: if machine.landlock.enforced {
            Some(ruleset(&writes, &plan.reads, plan.hide.as_deref())?)
        } else {
            None
        },
        netns,
        uid_map,
        gid_map,
    };
    Ok(Spawn {
        program: plan.program.clone(),
        args: plan.args.clone(),
        env,
        cwd: plan.cwd.clone(),
        confinement: Some(confinement),
    })
}

/// Read roots that cover everything but `hidden`: every entry of each folder on the
/// way down to it, except the next step of the way. The folders on the way stay
/// listable (names are not secrets), their other entries fully readable.
#[cfg(target_os = "linux")]
fn read_roots_except(hidden: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let Ok(hidden) = hidden.canonicalize() else {
        return (vec![PathBuf::from("/")], Vec::new());
    };
    let chain: Vec<&Path> = hidden.ancestors().collect::<Vec<_>>().into_iter().rev().collect();
    let mut roots = Vec::new();
    let mut listable = Vec::new();
    for pair in chain.windows(2) {
        let (dir, next) = (pair[0], pair[1]);
        listable.push(dir.to_path_buf());
        if let Ok(entries) = std::fs::read_dir(dir) {
            roots.extend(
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| path != next),
            );
        }
    }
    (roots, listable)
}

/// Builds the Landlock ruleset in the parent: read anywhere but `hide` (except
/// `reads`), write `writes` and `/dev/null`.
#[cfg(target_os = "linux")]
fn ruleset(
    writes: &[PathBuf],
    reads: &[PathBuf],
    hide: Option<&Path>,
) -> Result<std::os::fd::OwnedFd, String> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        path_beneath_rules,
    };
    let abi = ABI::V5;
    let to_string = |error: landlock::RulesetError| format!("landlock: {error}");
    let (mut roots, listable) = match hide {
        Some(hidden) => read_roots_except(hidden),
        None => (vec![PathBuf::from("/")], Vec::new()),
    };
    roots.extend(reads.iter().cloned());
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(to_string)?
        .create()
        .map_err(to_string)?
        .add_rules(path_beneath_rules(&roots, AccessFs::from_read(abi)))
        .map_err(to_string)?
        .add_rules(path_beneath_rules(&listable, AccessFs::ReadDir))
        .map_err(to_string)?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_all(abi)))
        .map_err(to_string)?
        .add_rules(path_beneath_rules(
            writes.iter().filter(|path| path.exists()),
            AccessFs::from_all(abi),
        ))
        .map_err(to_string)?;
    let fd: Option<std::os::fd::OwnedFd> = created.into();
    fd.ok_or_else(|| "landlock: the kernel did not create the ruleset".to_owned())
}

impl Confinement {
    /// Applies the confinement to the calling process. Runs in the child between
    /// fork and exec, so it only makes system calls on prepared data: it must not
    /// allocate, lock or touch anything another thread of the parent could hold.
    #[cfg(target_os = "linux")]
    #[expect(
        unsafe_code,
        reason = "raw, async-signal-safe system calls between fork and exec"
    )]
    pub fn enter(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let check = |result: libc::c_long| {
            if result < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        let core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: each call below is a plain system call on values owned by `self` or
        // on the stack; none allocates, and all are async-signal-safe.
        unsafe {
            check(libc::c_long::from(libc::setrlimit(
                libc::RLIMIT_CORE,
                &raw const core,
            )))?;
            // Die with the parent, even if it is killed without a chance to clean up.
            check(libc::c_long::from(libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL,
            )))?;
            if self.netns && libc::unshare(libc::CLONE_NEWNET) != 0 {
                // Unprivileged: a user namespace that maps us to ourselves, then the network.
                check(libc::c_long::from(libc::unshare(
                    libc::CLONE_NEWUSER | libc::CLONE_NEWNET,
                )))?;
                write_proc(c"/proc/self/setgroups", b"deny")?;
                write_proc(c"/proc/self/uid_map", &self.uid_map)?;
                write_proc(c"/proc/self/gid_map", &self.gid_map)?;
            }
            if let Some(ruleset) = &self.ruleset {
                check(libc::c_long::from(libc::prctl(
                    libc::PR_SET_NO_NEW_PRIVS,
                    1,
                    0,
                    0,
                    0,
                )))?;
                check(libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    ruleset.as_raw_fd(),
                    0,
                ))?;
            }
        }
        Ok(())
    }

    #[cfg(all(unix, not(target_os = "linux")))]
    pub fn enter(&self) -> std::io::Result<()> {
        if self.netns {
            return Err(std::io::Error::from(std::io::ErrorKind::Unsupported));
        }
        rustix::process::setrlimit(
            rustix::process::Resource::Core,
            rustix::process::Rlimit {
                current: Some(0),
                maximum: Some(0),
            },
        )
        .map_err(std::io::Error::from)
    }
}

/// Writes a prepared buffer to a `/proc` file, with raw system calls only.
#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "raw, async-signal-safe system calls between fork and exec"
)]
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is a valid C string and `bytes` a valid buffer; open, write and
    // close are async-signal-safe and allocate nothing.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if usize::try_from(written).ok() == Some(bytes.len()) {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(enforced: bool) -> Machine {
        let support = Support {
            enforced,
            detail: "d".to_owned(),
        };
        Machine {
            landlock: support.clone(),
            network_namespace: support,
        }
    }

    #[test]
    fn child_env_is_the_allowlist_plus_tmpdir_and_bindings() {
        let caller: BTreeMap<String, String> = [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("AWS_SECRET_ACCESS_KEY", "leak"),
            ("LD_PRELOAD", "/evil.so"),
            ("TZ", "UTC"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let env = child_env(
            &caller,
            Path::new("/tmp/x"),
            &[("KEY".to_owned(), Secret::new("v".to_owned()))],
        );
        let names: Vec<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["HOME", "KEY", "PATH", "TMPDIR", "TZ"]);
    }

    #[test]
    fn missing_path_gets_a_default() {
        let env = child_env(&BTreeMap::new(), Path::new("/t"), &[]);
        assert!(env.contains(&("PATH".to_owned(), DEFAULT_PATH.to_owned())));
    }

    #[test]
    fn transform_keeps_argv_and_prepares_only_enforced_layers() {
        let plan = ChildPlan {
            program: "/usr/bin/git".into(),
            args: vec!["status".into()],
            cwd: "/w".into(),
            bindings: vec![("TOKEN".to_owned(), Secret::new("hunter22".to_owned()))],
            writes: vec!["/w/out".into()],
            hide: Some("/h".into()),
            reads: vec!["/h/packs/p".into()],
            network: false,
        };
        let spawn = transform(&plan, vec![], Path::new("/tmp/p"), &machine(false)).unwrap();
        assert_eq!(spawn.program, PathBuf::from("/usr/bin/git"));
        assert_eq!(spawn.args, ["status"]);
        let confinement = spawn.confinement.unwrap();
        assert!(!confinement.netns);
        #[cfg(target_os = "linux")]
        assert!(confinement.ruleset.is_none());
        let spawn = transform(&plan, vec![], Path::new("/tmp"), &probe()).unwrap();
        let confinement = spawn.confinement.unwrap();
        assert_eq!(confinement.netns, probe().network_namespace.enforced);
        #[cfg(target_os = "linux")]
        assert_eq!(confinement.ruleset.is_some(), probe().landlock.enforced);
    }

    #[test]
    fn layers_report_needs_and_gaps() {
        let reports = layers(&machine(false), false, &["out".to_owned()]);
        let gaps: Vec<&str> = missing(&reports).iter().map(|layer| layer.layer).collect();
        if cfg!(target_os = "linux") {
            assert_eq!(gaps, ["landlock", "network-namespace"]);
        }
        let reports = layers(&machine(true), true, &[]);
        assert!(missing(&reports).is_empty());
        let netns = reports
            .iter()
            .find(|layer| layer.layer == "network-namespace")
            .unwrap();
        assert!(!netns.enforced && !netns.needed);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn read_roots_skip_only_the_hidden_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for name in ["a", "home", "home/.hcp", "home/docs"] {
            std::fs::create_dir_all(root.join(name)).unwrap();
        }
        let (roots, listable) = read_roots_except(&root.join("home/.hcp"));
        assert!(roots.contains(&root.join("a")));
        assert!(roots.contains(&root.join("home/docs")));
        assert!(!roots.iter().any(|path| path.starts_with(root.join("home/.hcp"))));
        assert!(!roots.contains(&root.join("home")));
        assert!(listable.contains(&root.join("home")));
        assert_eq!(listable[0], PathBuf::from("/"));
    }
}
