//! The sandbox (SPEC §6) as a transform: a [`ChildPlan`] (what the pack's CLI should
//! run, with which environment) becomes a [`Spawn`] for [`crate::runtime`], which
//! starts hcpx's own sandbox helper. The helper is a fresh single-threaded process:
//! it turns core dumps off, ties itself to its parent, enters a new network namespace
//! when the pack has no network, applies Landlock (read anywhere, write only to the
//! pack's `write` paths and its temporary folder), then replaces itself with the
//! pack's CLI. Doing this in a helper rather than between fork and exec keeps every
//! step free to allocate and to report errors.
//!
//! Layers the kernel cannot enforce are reported as such, never claimed; a required
//! layer that fails at run time stops the call (the helper exits 125 with a marker
//! line) rather than running the CLI without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::binding::Secret;

/// The argv[1] that makes `hcpx` the sandbox helper. `main.rs` checks for it before
/// the command tree runs, so no caller (nor the MCP tool) can reach it as a command.
pub const HELPER_ARG: &str = "__hcpx_sandbox_helper";
/// The helper's exit code when a layer could not be applied.
pub const HELPER_FAILED: i32 = 125;
/// The first words of the helper's error line on stderr.
pub const HELPER_MARKER: &str = "hcpx-sandbox:";
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
    Machine {
        landlock: probe_landlock(),
        network_namespace: probe_netns(),
    }
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

/// The Landlock rules: read anywhere but `hide` (except `reads`), write `writes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockSpec {
    pub writes: Vec<PathBuf>,
    pub reads: Vec<PathBuf>,
    pub hide: Option<PathBuf>,
}

/// What the helper receives in argv (no secret is ever in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperSpec {
    /// Present when Landlock is applied.
    pub landlock: Option<LandlockSpec>,
    pub netns: bool,
}

/// A ready-to-start process, for [`crate::runtime`].
#[derive(Debug, Clone)]
pub struct Spawn {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
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

/// Wraps the plan in the helper, applying the layers this machine enforces.
pub fn transform(
    plan: &ChildPlan,
    env: Vec<(String, String)>,
    tmpdir: &Path,
    machine: &Machine,
    helper: &Path,
) -> Spawn {
    let mut writes = plan.writes.clone();
    writes.push(tmpdir.to_path_buf());
    let spec = HelperSpec {
        landlock: machine.landlock.enforced.then(|| LandlockSpec {
            writes,
            reads: plan.reads.clone(),
            hide: plan.hide.clone(),
        }),
        netns: !plan.network && machine.network_namespace.enforced,
    };
    let mut args = vec![
        HELPER_ARG.to_owned(),
        serde_json::to_string(&spec).unwrap_or_default(),
        "--".to_owned(),
        plan.program.display().to_string(),
    ];
    args.extend(plan.args.iter().cloned());
    Spawn {
        program: helper.to_path_buf(),
        args,
        env,
        cwd: plan.cwd.clone(),
    }
}

/// The helper: applies the layers in this (fresh, single-threaded) process, then
/// replaces it with the pack's CLI. Returns only on failure, with the exit code.
pub fn helper_main(args: &[String]) -> (i32, String) {
    let fail = |message: String| (HELPER_FAILED, format!("{HELPER_MARKER} {message}\n"));
    let (Some(spec), Some("--"), Some(program)) =
        (args.first(), args.get(1).map(String::as_str), args.get(2))
    else {
        return fail("usage: the helper is started by hcpx exec only".to_owned());
    };
    let spec: HelperSpec = match serde_json::from_str(spec) {
        Ok(spec) => spec,
        Err(error) => return fail(format!("bad spec: {error}")),
    };
    if let Err(message) = apply(&spec) {
        return fail(message);
    }
    let error = crate::runtime::exec_replace(Path::new(program), &args[3..]);
    (127, format!("{HELPER_MARKER} cannot run {program}: {error}\n"))
}

#[cfg(target_os = "linux")]
fn apply(spec: &HelperSpec) -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, Signal, set_parent_process_death_signal, setrlimit};
    setrlimit(
        Resource::Core,
        Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    )
    .map_err(|error| format!("core dumps: {error}"))?;
    // Die with hcpx, even if it is killed without a chance to clean up.
    set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|error| format!("parent death signal: {error}"))?;
    if spec.netns {
        enter_network_namespace()?;
    }
    if let Some(landlock) = &spec.landlock {
        restrict(landlock)?;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn apply(spec: &HelperSpec) -> Result<(), String> {
    #[cfg(unix)]
    rustix::process::setrlimit(
        rustix::process::Resource::Core,
        rustix::process::Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    )
    .map_err(|error| format!("core dumps: {error}"))?;
    if spec.netns || spec.landlock.is_some() {
        return Err("this OS has neither Landlock nor network namespaces".to_owned());
    }
    Ok(())
}

/// `unshare(2)`, for the helper only.
#[cfg(target_os = "linux")]
#[expect(
    unsafe_code,
    reason = "unshare(2) of the network (and user) namespace in the sandbox helper"
)]
fn unshare(flags: rustix::thread::UnshareFlags) -> rustix::io::Result<()> {
    // SAFETY: the helper is single-threaded and never passes UnshareFlags::FILES, the
    // one flag whose misuse `unshare_unsafe` guards against.
    unsafe { rustix::thread::unshare_unsafe(flags) }
}

#[cfg(target_os = "linux")]
fn enter_network_namespace() -> Result<(), String> {
    use rustix::thread::UnshareFlags;
    let plain = unshare(UnshareFlags::NEWNET);
    if plain.is_ok() {
        return Ok(());
    }
    // Unprivileged: a new user namespace that maps us to ourselves, then the network.
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    let user = unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNET);
    user.map_err(|error| format!("network namespace: {error}"))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|error| format!("setgroups: {error}"))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|error| format!("uid_map: {error}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|error| format!("gid_map: {error}"))?;
    Ok(())
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

#[cfg(target_os = "linux")]
fn restrict(spec: &LandlockSpec) -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, path_beneath_rules,
    };
    let abi = ABI::V5;
    let to_string = |error: landlock::RulesetError| format!("landlock: {error}");
    let (mut roots, listable) = match &spec.hide {
        Some(hidden) => read_roots_except(hidden),
        None => (vec![PathBuf::from("/")], Vec::new()),
    };
    roots.extend(spec.reads.iter().cloned());
    let status = Ruleset::default()
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
            spec.writes.iter().filter(|path| path.exists()),
            AccessFs::from_all(abi),
        ))
        .map_err(to_string)?
        .restrict_self()
        .map_err(to_string)?;
    match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err("landlock: the kernel did not enforce the ruleset".to_owned()),
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
    fn transform_wraps_in_the_helper_without_secrets_in_argv() {
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
        let spawn = transform(
            &plan,
            vec![],
            Path::new("/tmp/p"),
            &machine(true),
            Path::new("/bin/hcpx"),
        );
        assert_eq!(spawn.program, PathBuf::from("/bin/hcpx"));
        assert_eq!(spawn.args[0], HELPER_ARG);
        let spec: HelperSpec = serde_json::from_str(&spawn.args[1]).unwrap();
        assert_eq!(
            spec,
            HelperSpec {
                landlock: Some(LandlockSpec {
                    writes: vec!["/w/out".into(), "/tmp/p".into()],
                    reads: vec!["/h/packs/p".into()],
                    hide: Some("/h".into()),
                }),
                netns: true
            }
        );
        assert_eq!(&spawn.args[2..], ["--", "/usr/bin/git", "status"]);
        assert!(!spawn.args.concat().contains("hunter22"));
        // Layers the machine lacks are not applied (and reported missing).
        let spawn = transform(
            &plan,
            vec![],
            Path::new("/tmp/p"),
            &machine(false),
            Path::new("/bin/hcpx"),
        );
        let spec: HelperSpec = serde_json::from_str(&spawn.args[1]).unwrap();
        assert_eq!(
            spec,
            HelperSpec {
                landlock: None,
                netns: false
            }
        );
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

    #[test]
    fn helper_refuses_bad_arguments() {
        let (code, message) = helper_main(&["nope".to_owned()]);
        assert_eq!(code, HELPER_FAILED);
        assert!(message.starts_with(HELPER_MARKER));
    }
}
