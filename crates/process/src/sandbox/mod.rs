//! The sandbox (see docs/sandbox.md) as a transform: a [`ChildPlan`] (what the pack's CLI should
//! run, where, with which environment and grants) becomes a [`Spawn`] for
//! [`crate::runtime`], carrying a [`Confinement`] prepared here in the parent and a
//! [`Control`] for the runtime. Nothing is applied to this process.
//!
//! On Linux a call is two processes before the pack's CLI runs: the forked child
//! becomes the call's **keeper** (a child subreaper in its own session, inside a
//! Landlock domain that scopes its signals to the call), and the keeper forks the
//! **child**, which drops every capability, sets `no_new_privs`, keeps only
//! descriptors 0, 1 and 2, enters its Landlock layers (the call's reads, writes,
//! network and scopes; and one hiding `$HCP_HOME` when a granted folder holds it) and
//! a seccomp filter, then
//! execs. When the child ends, or the runtime says so, or hcpx dies, the keeper kills
//! every process of the call and reaps it. See [`enter`] for that code and
//! [`linux`] for how the layers are built.
//!
//! Layers the kernel cannot enforce are reported as such, never claimed, and in
//! strict mode a pack that needs one does not run (on every OS, not only Linux).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::Secret;
pub use crate::confine::{Confinement, NetJoin};
pub use crate::runtime::{Control, Spawn};

#[cfg(target_os = "linux")]
mod ahead;
mod bpf;
pub mod folders;
pub mod grants;
#[cfg(target_os = "linux")]
mod hidden;
pub mod home;
mod layers;
#[cfg(target_os = "linux")]
mod linux;
mod machine;
#[cfg(target_os = "linux")]
mod notify;
pub mod reads;
#[cfg(target_os = "linux")]
mod rules;
mod temp;

pub use ahead::CallFolder;
pub use folders::{CacheFolder, CacheInHome, FolderError};
pub use grants::{Assessment, Grants, Site, assess, env_names, with_declared_env};
#[cfg(target_os = "linux")]
pub use hidden::ROOT_SECRETS;
pub use home::HomeView;
pub use layers::{LayerReport, Needs, layers, missing};
pub use machine::{Machine, Mode, Support, probe};
pub use reads::Reads;

/// Environment names passed through from the caller (see docs/sandbox.md); TMPDIR is
/// replaced. Defined with the manifest, which refuses bindings that would shadow them.
pub use hcpx_pack::manifest::{PASSED_ENV, TMPDIR};
/// PATH for the child when the caller has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// The system folders every pack reads (docs/sandbox.md): what programs, their
/// libraries, locales, certificates and configuration need. Of `/dev` only the
/// harmless devices are read (see [`DEVICES`]); `$HOME`, `/tmp`, `/var` and `/run`
/// are not here.
pub const SYSTEM_READS: [&str; 17] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/nix/store",
    "/nix/var/nix/profiles",
    "/gnu/store",
    "/snap",
    "/run/current-system",
    "/home/linuxbrew/.linuxbrew",
];
/// The devices every pack may use; the rest of `/dev` (terminals, shared memory) is
/// hidden.
pub const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];
/// Files of `/etc` that are often links out of the system folders (systemd-resolved
/// keeps `resolv.conf` in `/run`): the folder each leads to is read too.
pub const LINKED_CONFIG: [&str; 3] = ["/etc/resolv.conf", "/etc/hosts", "/etc/localtime"];

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
    env.push((TMPDIR.to_owned(), tmpdir.display().to_string()));
    env.extend(
        bindings
            .iter()
            .map(|(key, secret)| (key.clone(), secret.expose().to_owned())),
    );
    env.sort();
    env
}

/// What the pack's CLI should run, before the sandbox is applied.
#[derive(Debug, Clone)]
pub struct ChildPlan {
    /// Absolute path of the program.
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// From [`child_env`].
    pub env: Vec<(String, String)>,
    /// The call's private temporary folder: always writable.
    pub tmpdir: PathBuf,
    /// Write grants relative to `cwd`, as the manifest has them; resolved without
    /// following links out of `cwd`.
    pub writes: Vec<String>,
    /// The write grants made (with their missing parents) beneath `cwd` before they
    /// are opened: the folders `path` parameters name ([`Grants::made`]).
    pub made: Vec<String>,
    /// The pack's cache folder, made when missing and granted like a write path.
    pub cache: Option<CacheFolder>,
    /// `$HCP_HOME` and every path of it: never readable nor writable, but for the
    /// pack's own files in [`Reads::pack`].
    pub home: HomeView,
    /// The allowlist beyond [`SYSTEM_READS`], [`DEVICES`] and the temporary folder
    /// (see [`reads::reads`]).
    pub reads: Reads,
    pub network: ChildNetwork,
    /// The unix sockets it may connect to (absolute, as declared).
    pub sockets: Vec<PathBuf>,
    /// The binding written to its standard input (`stdin` in the manifest's
    /// command); `None`: stdin is `/dev/null`.
    pub stdin: Option<Secret>,
}

/// The network a call's child gets.
#[derive(Debug, Clone, Default)]
pub enum ChildNetwork {
    /// None: no IPv4 or IPv6 socket opens.
    #[default]
    Off,
    /// IPv4 and IPv6 as the user has them.
    On,
    /// A namespace of its own (from [`Cache::net_namespace`]), where it may connect
    /// only to `ports` (hcpx's listeners: the proxy's and the forwards').
    Namespace {
        join: std::sync::Arc<NetJoin>,
        ports: Vec<u16>,
    },
}

impl ChildNetwork {
    /// Whether IPv4 and IPv6 sockets open at all.
    pub fn any(&self) -> bool {
        !matches!(self, Self::Off)
    }

    /// Whether the network is the user's own.
    pub fn full(&self) -> bool {
        matches!(self, Self::On)
    }

    /// The TCP ports it may connect to in its namespace (none otherwise).
    pub fn ports(&self) -> &[u16] {
        match self {
            Self::Namespace { ports, .. } => ports,
            _ => &[],
        }
    }
}

/// Why the sandbox could not be set up; nothing of the pack ran.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the pack's write path `{path}` leads out of the working directory through a link")]
    WriteOutside { path: String },
    #[error("the pack's write path `{path}` cannot be opened: {source}")]
    WriteUnusable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the working directory cannot be opened: {0}")]
    Cwd(#[source] std::io::Error),
    #[error("landlock: {0}")]
    Landlock(String),
    #[error("seccomp: {0}")]
    Seccomp(String),
    #[error("cannot set up the keeper's pipe: {0}")]
    Pipe(#[source] std::io::Error),
    #[error("cannot set up the check of the pack's unix sockets: {0}")]
    Sockets(String),
    #[error(transparent)]
    Folder(#[from] FolderError),
}

/// What the sandbox keeps between calls: the probe, the Landlock layer that hides
/// `$HCP_HOME` (rebuilt when a folder on its way changes), the keeper's ruleset and
/// the seccomp programs. The MCP server shares one across its calls.
#[derive(Debug, Default)]
pub struct Cache {
    machine: OnceLock<Machine>,
    /// A server's folder its calls' private temporary folders are made in (see
    /// [`Cache::private_temp`]), and the folder it is in.
    temp: std::sync::Mutex<Option<(PathBuf, tempfile::TempDir)>>,
    /// The folders of gone hcpx processes were swept (once a process).
    swept: std::sync::atomic::AtomicBool,
    /// The mount table, read again only when it changed.
    mounts: std::sync::Mutex<home::MountTable>,
    #[cfg(target_os = "linux")]
    linux: linux::Cache,
    /// Network namespaces made ahead of the calls that will take them, by the
    /// addresses of their listeners; each is taken by one call only.
    #[cfg(target_os = "linux")]
    nets: std::sync::Arc<std::sync::Mutex<Vec<Ahead>>>,
    /// Whether to make the next call's namespace and temporary folder ahead (a
    /// long-lived server).
    prefetch: bool,
    /// A prefetching cache's calls' folders: one made ahead, those of finished calls.
    folders: std::sync::Arc<ahead::Folders>,
}

/// What a call's network namespace is made for: the addresses of its listeners,
/// and what `/etc/hosts` reads in its mount namespace, when it has one.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, PartialEq, Eq)]
struct NetKey {
    addrs: Vec<std::net::SocketAddr>,
    hosts: Option<String>,
}

/// A network namespace made ahead, with what it was made for.
#[cfg(target_os = "linux")]
type Ahead = (NetKey, crate::runtime::NetNamespace);

/// A network namespace as `key` says, in a user namespace of its own when this
/// process lacks CAP_SYS_ADMIN; its mount namespace a copy of `base` when given.
#[cfg(target_os = "linux")]
fn make_net(
    key: &NetKey,
    base: Option<&crate::confine::ProcNamespace>,
) -> std::io::Result<crate::runtime::NetNamespace> {
    use std::os::fd::AsFd as _;
    let admin = rustix::thread::capabilities(None)
        .is_ok_and(|sets| sets.effective.contains(rustix::thread::CapabilitySet::SYS_ADMIN));
    crate::runtime::net_namespace(
        !admin,
        &key.addrs,
        key.hosts.as_deref().map(str::as_bytes),
        base.map(|base| base.mount.as_fd()),
    )
}

/// The most namespaces kept made ahead.
#[cfg(target_os = "linux")]
const NETS_AHEAD: usize = 4;

impl Cache {
    /// A cache for a machine given here rather than probed (tests of other OSes and
    /// older kernels).
    pub fn with_machine(machine: Machine) -> Self {
        let cache = Self::default();
        let _ = cache.machine.set(machine);
        cache
    }

    pub fn machine(&self) -> &Machine {
        self.machine.get_or_init(|| {
            #[cfg(target_os = "linux")]
            {
                let mut machine = probe();
                machine.process_list = self.linux.process_list(&machine);
                machine
            }
            #[cfg(not(target_os = "linux"))]
            probe()
        })
    }

    /// Whether this machine has been probed (or given): a server is ready to run
    /// packs without waiting for the probe.
    pub fn probed(&self) -> bool {
        self.machine.get().is_some()
    }

    /// `$HCP_HOME` and every other path of it, from the mount table as it is now.
    pub fn home_view(&self, home: &Path) -> HomeView {
        match self.mounts.lock() {
            Ok(mut mounts) => mounts.view(home),
            // A poisoned table is read afresh.
            Err(_) => home::MountTable::default().view(home),
        }
    }

    /// A cache that makes ahead what the next call will need (a long-lived server).
    pub fn prefetching() -> Self {
        Self {
            prefetch: true,
            ..Self::default()
        }
    }

    /// [`Cache::prefetching`], for a machine given here rather than probed (the
    /// benches' server without one layer or another).
    pub fn prefetching_with_machine(machine: Machine) -> Self {
        let cache = Self::prefetching();
        let _ = cache.machine.set(machine);
        cache
    }

    /// A network namespace for one call with listeners on `addrs` (see
    /// [`crate::runtime::net_namespace`]); in a user namespace of its own when hcpx
    /// cannot make one alone (it lacks CAP_SYS_ADMIN). With `hosts`, also a mount
    /// namespace whose `/etc/hosts` reads that (a copy of the `/proc` namespace,
    /// where the call would enter that). Never shared by two calls: a namespace made
    /// ahead is taken out of the cache by the call that gets it, and a prefetching
    /// cache then makes the next one for the same addresses on a thread of its own,
    /// off the call's path.
    #[cfg(target_os = "linux")]
    pub fn net_namespace(
        &self,
        addrs: &[std::net::SocketAddr],
        hosts: Option<&str>,
    ) -> std::io::Result<crate::runtime::NetNamespace> {
        let key = NetKey {
            addrs: addrs.to_vec(),
            hosts: hosts.map(str::to_owned),
        };
        let base = match hosts.is_some() && self.machine().process_list.enforced {
            true => Some(self.linux.proc().map_err(std::io::Error::other)?),
            false => None,
        };
        let (ahead, left) = match self.nets.lock() {
            Ok(mut nets) => {
                let ahead = nets
                    .iter()
                    .position(|(made, _)| *made == key)
                    .map(|index| nets.swap_remove(index).1);
                (ahead, nets.iter().any(|(made, _)| *made == key))
            }
            Err(_) => (None, true),
        };
        if self.prefetch && !left {
            let nets = std::sync::Arc::clone(&self.nets);
            let (key, base) = (key.clone(), base.clone());
            let _ = std::thread::Builder::new()
                .name("hcpx-netns".to_owned())
                .spawn(move || {
                    if let Ok(namespace) = make_net(&key, base.as_deref())
                        && let Ok(mut nets) = nets.lock()
                        && nets.len() < NETS_AHEAD
                    {
                        nets.push((key, namespace));
                    }
                });
        }
        match ahead {
            Some(namespace) => Ok(namespace),
            None => make_net(&key, base.as_deref()),
        }
    }

    /// Whether a call can get a network namespace here, found by making one (and
    /// dropping it at once), not only from the system's settings as the probe does: a
    /// container's seccomp filter, an LSM or `user.max_net_namespaces = 0` can forbid
    /// what the settings allow. For `hcpx doctor`; a call does not need it, since a
    /// call that cannot make its namespace fails and never runs with more network.
    /// An allowlist that names a host by name also needs the call's mount namespace
    /// (for its hosts file): tried too, and said when it fails, since such a call
    /// then fails (and runs nothing).
    pub fn egress_tried(&self) -> Support {
        let egress = &self.machine().egress;
        #[cfg(target_os = "linux")]
        if egress.enforced {
            let key = |hosts: Option<&str>| NetKey {
                addrs: Vec::new(),
                hosts: hosts.map(str::to_owned),
            };
            if let Err(error) = make_net(&key(None), None) {
                return Support::no(format!(
                    "the system's settings allow a network namespace, but making one failed: {error}"
                ));
            }
            let base = self
                .machine()
                .process_list
                .enforced
                .then(|| self.linux.proc().ok())
                .flatten();
            if let Err(error) = make_net(&key(Some("127.0.0.1 localhost\n")), base.as_deref()) {
                return Support::yes(format!(
                    "{}; but not the mount namespace a call needs when its allowlist names a host by name (for its hosts file): {error}, so such a call fails",
                    egress.detail
                ));
            }
        }
        egress.clone()
    }

    /// A call's private temporary folder (mode 0700), removed when dropped, in the
    /// user's `hcpx-UID` in `temp_dir` (see `sandbox/temp.rs`). A long-lived server's
    /// calls get folders in a folder of the server process's own, made once, one of
    /// them made ahead; any other process's call gets a folder named after the
    /// process right in the user's folder: one `mkdir` and one `rmdir` a call, which
    /// a terminal's one call spares a second of each (0.1 ms apiece on ext4 here).
    /// Either way `temp_dir` itself is left unchanged, which keeps the cached layer
    /// that hides `$HCP_HOME` valid when `$HCP_HOME` is beneath it. The first folder a
    /// process makes sweeps those of hcpx processes that are gone.
    pub fn private_temp(&self, temp_dir: &Path) -> std::io::Result<CallFolder> {
        if !self.prefetch {
            let sweep = !self.swept.swap(true, std::sync::atomic::Ordering::Relaxed);
            return temp::process_folder(temp_dir, sweep).map(CallFolder::inline);
        }
        let mut slot = self
            .temp
            .lock()
            .map_err(|_| std::io::Error::other("the temporary folder cache is poisoned"))?;
        let parent = match slot.as_ref() {
            // First use, or the folder was removed under us (a cleaner of old files).
            Some((dir, parent)) if dir == temp_dir && parent.path().is_dir() => parent.path().to_path_buf(),
            _ => {
                let sweep = !self.swept.swap(true, std::sync::atomic::Ordering::Relaxed);
                let parent = temp::process_folder(temp_dir, sweep)?;
                let path = parent.path().to_path_buf();
                *slot = Some((temp_dir.to_path_buf(), parent));
                path
            }
        };
        drop(slot);
        // A server makes the next call's folder ahead and removes this one behind.
        self.folders.take(&parent)
    }
}

/// The seccomp program of a pack without the network, with or without its System V
/// IPC and message queue rules: for `cargo bench --bench ipc`, which weighs them
/// against an IPC namespace per call.
#[doc(hidden)]
#[cfg(target_os = "linux")]
pub fn seccomp_program_for_bench(refuse_ipc: bool) -> Result<Vec<seccompiler::sock_filter>, String> {
    linux::program_for_bench(refuse_ipc)
}

/// Prepares the plan's confinement with the layers this machine enforces.
/// The folders the grants name are made first (see [`folders`]).
pub fn transform(plan: ChildPlan, cache: &Cache) -> Result<Spawn, SandboxError> {
    folders::make_writes(&plan.cwd, &plan.made)?;
    #[cfg(unix)]
    let kept = plan
        .cache
        .as_ref()
        .map(|folder| folders::open_cache(folder, &plan.home))
        .transpose()?;
    #[cfg(not(unix))]
    if let Some(folder) = &plan.cache {
        std::fs::create_dir_all(folder.path()).map_err(|source| FolderError::Cache {
            path: folder.path(),
            source,
        })?;
    }
    #[cfg(target_os = "linux")]
    let (confinement, control) = linux::prepare(&plan, cache.machine(), &cache.linux, kept, cache.prefetch)?;
    #[cfg(not(target_os = "linux"))]
    let (confinement, control) = {
        #[cfg(unix)]
        drop(kept);
        (Confinement::default(), None)
    };
    Ok(Spawn {
        program: plan.program,
        args: plan.args,
        env: plan.env,
        cwd: plan.cwd,
        confinement: Some(confinement),
        control,
        stdin: plan.stdin,
        meanwhile: None,
    })
}

/// The name of a file binding's file in the call's private temporary folder
/// (see [`binding_file`]).
pub fn binding_file_name(binding: &str) -> String {
    temp::binding_file_name(binding)
}

/// Writes a file binding's content to a new file of mode 0600 in the call's
/// private temporary folder `call_folder` (which goes, and the file with it, when
/// the call ends, or with the sweep of the next call after hcpx was killed), and
/// returns its path. It is made with `O_CREAT | O_EXCL | O_NOFOLLOW`: whatever is
/// at that path already (a link planted there included) is never written through.
pub fn binding_file(call_folder: &Path, binding: &str, content: &Secret) -> std::io::Result<PathBuf> {
    temp::binding_file(call_folder, binding, content)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_servers_calls_share_its_process_folder() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::prefetching();
        let first = cache.private_temp(dir.path()).unwrap();
        let second = cache.private_temp(dir.path()).unwrap();
        assert_ne!(first.path(), second.path());
        assert_eq!(first.path().parent(), second.path().parent());
        let parent = first.path().parent().unwrap().to_path_buf();
        assert!(parent.starts_with(dir.path()), "{}", parent.display());
        assert_eq!(parent.parent().unwrap().parent(), Some(dir.path()));
        // Removed under us (a cleaner of old files): made again.
        drop((first, second));
        std::fs::remove_dir_all(&parent).unwrap();
        let third = cache.private_temp(dir.path()).unwrap();
        assert!(third.path().is_dir());
        // And gone with the cache.
        let parent = third.path().parent().unwrap().to_path_buf();
        drop((third, cache));
        assert!(!parent.exists());
    }

    /// Any other process's call gets one folder, named after the process, right in
    /// the user's folder, gone with the call: a terminal's call makes one, not two.
    #[test]
    fn a_calls_folder_outside_a_server_is_one_folder_gone_with_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::default();
        let first = cache.private_temp(dir.path()).unwrap();
        let second = cache.private_temp(dir.path()).unwrap();
        assert_ne!(first.path(), second.path());
        let user = dir
            .path()
            .join(format!("hcpx-{}", rustix::process::geteuid().as_raw()));
        for call in [&first, &second] {
            assert_eq!(call.path().parent(), Some(user.as_path()));
            let name = call.path().file_name().unwrap().to_str().unwrap();
            let tag = format!("-{}-", std::process::id());
            assert!(name.contains(&tag), "{name}");
        }
        let paths = [first.path().to_path_buf(), second.path().to_path_buf()];
        drop((first, second));
        assert!(paths.iter().all(|path| !path.exists()));
        assert_eq!(std::fs::read_dir(&user).unwrap().count(), 0);
    }
}
