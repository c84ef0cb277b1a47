//! What the Linux layers keep between calls: the base layer that hides `$HCP_HOME`,
//! the `/proc` namespace, the system folders opened once, the keeper's ruleset and
//! the seccomp programs.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::ruleset::keeper_ruleset;
use super::seccomp::seccomp_program;
use super::*;
use crate::confine::{Filters, ProcNamespace};
use crate::runtime::Spawner;
use crate::sandbox::hidden::{self, Hide, Shape};
use crate::sandbox::rules::{Opened, open_root};
use crate::sandbox::{DEVICES, HomeView, LINKED_CONFIG, Machine, SYSTEM_READS, SandboxError, Support};

/// A built base layer, for one `$HCP_HOME`, with the shape it was built from.
#[derive(Debug)]
struct BaseLayer {
    shape: Shape,
    ruleset: Arc<OwnedFd>,
}

#[derive(Debug, Default)]
pub(crate) struct Cache {
    base: Mutex<Option<BaseLayer>>,
    /// The mount namespace with a `/proc` of its own, made once when hcpx may.
    proc: OnceLock<Result<Arc<ProcNamespace>, String>>,
    /// What that namespace covers of the system's secrets (as root), when it could.
    covered: OnceLock<Option<Covered>>,
    /// The system folders, opened once: the call's layer names them in every call.
    system: OnceLock<System>,
    keeper: OnceLock<Result<Arc<OwnedFd>, String>>,
    /// By network, then declared sockets.
    filters: [OnceLock<Result<Arc<Filters>, String>>; 4],
    /// The filter that sends `connect` to hcpx, for packs that declare sockets.
    pub(super) notify: OnceLock<Arc<Vec<libc::sock_filter>>>,
    /// A server's spawner threads, by filter as `filters`; `None` where one could not
    /// be made (its calls then apply every layer themselves).
    spawners: [OnceLock<Option<Arc<Spawner>>>; 4],
}

impl Cache {
    /// The layer that hides `$HCP_HOME` (every path of it in `view`) and, as root, the
    /// system's secrets; built again when a folder on the way changes.
    pub(super) fn base(
        &self,
        view: &HomeView,
        hide: Hide,
        machine: &Machine,
    ) -> Result<Arc<OwnedFd>, SandboxError> {
        let mut slot = self
            .base
            .lock()
            .map_err(|_| SandboxError::Landlock("the base layer cache is poisoned".into()))?;
        if let Some(built) = slot.as_ref()
            && built.shape.holds(view, hide)
        {
            return Ok(Arc::clone(&built.ruleset));
        }
        let shape = Shape::of(view, hide);
        let proc = self.proc_root(machine);
        let ruleset = Arc::new(hidden::ruleset(
            &shape,
            view.real(),
            machine.landlock_abi,
            proc.as_ref(),
        )?);
        *slot = Some(BaseLayer {
            shape,
            ruleset: Arc::clone(&ruleset),
        });
        Ok(ruleset)
    }

    pub(in crate::sandbox) fn proc(&self) -> Result<Arc<ProcNamespace>, String> {
        self.proc
            .get_or_init(|| {
                // As root, the system's secrets are covered in the namespace; where
                // that cannot be done, the namespace is made without, and the base
                // layer hides them (see `covered_secrets`).
                if rustix::process::geteuid().is_root() {
                    let (secrets, stamps) = hidden::secret_covers();
                    let covers: Option<Vec<crate::runtime::Cover>> = secrets
                        .iter()
                        .map(|(path, folder)| crate::runtime::Cover::new(path, *folder).ok())
                        .collect();
                    // Opened before: any change to the mount table after it shows.
                    let table = std::fs::File::open("/proc/self/mountinfo").ok();
                    if let Some(covers) = covers
                        && let Some(table) = table
                    {
                        match crate::runtime::proc_namespace(&covers) {
                            Ok(namespace) => {
                                let _ = self.covered.set(Some(Covered {
                                    stamps,
                                    table,
                                    stale: std::sync::atomic::AtomicBool::new(false),
                                }));
                                return Ok(Arc::new(namespace));
                            }
                            Err(error) => {
                                tracing::debug!("the system's secrets could not be covered: {error}");
                            }
                        }
                    }
                }
                let _ = self.covered.set(None);
                crate::runtime::proc_namespace(&[])
                    .map(Arc::new)
                    .map_err(|error| error.to_string())
            })
            .clone()
    }

    /// Whether the namespace covers the system's secrets as they are now: none of
    /// the folders above them changed (a secret replaced by a rename, which takes
    /// its cover away in the namespace, or a new one), and nothing was mounted or
    /// unmounted since (a mount on the way would hide a cover). Once that is no
    /// longer so, it stays so for this process: the base layer hides the secrets
    /// again, as where they could not be covered.
    pub(super) fn covered_secrets(&self) -> bool {
        use std::sync::atomic::Ordering;
        let Some(Some(covered)) = self.covered.get() else {
            return false;
        };
        if covered.stale.load(Ordering::Relaxed) {
            return false;
        }
        let table_changed = {
            use rustix::event::{PollFd, PollFlags, poll};
            let mut fds = [PollFd::new(&covered.table, PollFlags::PRI)];
            let zero = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            poll(&mut fds, Some(&zero)).map_or(true, |ready| {
                ready > 0 && fds[0].revents().intersects(PollFlags::PRI | PollFlags::ERR)
            })
        };
        if table_changed || !hidden::stamps_hold(&covered.stamps) {
            covered.stale.store(true, Ordering::Relaxed);
            tracing::debug!("the secrets' covers may no longer hold; the base layer hides them");
            return false;
        }
        true
    }

    /// Whether the process list is hidden here: hcpx may mount, and the namespace
    /// could be made.
    pub(crate) fn process_list(&self, machine: &Machine) -> Support {
        if !machine.can_mount {
            return Support::no(
                "a /proc of the call's own takes root (CAP_SYS_ADMIN); other processes' command lines stay visible, as to any local user",
            );
        }
        match self.proc() {
            Ok(_) => Support::yes("a mount namespace with /proc mounted hidepid=2"),
            Err(error) => Support::no(format!(
                "the namespace for a /proc of its own could not be made: {error}"
            )),
        }
    }

    /// The `/proc` the pack sees: its namespace's when it has one.
    pub(super) fn proc_root(&self, machine: &Machine) -> Option<OwnedFd> {
        machine
            .process_list
            .enforced
            .then(|| self.proc().ok())
            .flatten()
            .and_then(|proc| proc.proc.try_clone().ok())
    }

    pub(super) fn system(&self, machine: &Machine) -> &System {
        self.system.get_or_init(|| {
            let proc = self.proc_root(machine);
            let root = rustix::process::geteuid().is_root();
            let secrets = hidden::hidden_paths(&HomeView::default(), root);
            let covered = |path: &Path| SYSTEM_READS.iter().any(|root| path.starts_with(root));
            // The folders that `/etc` files lead to when they are links (systemd-resolved
            // keeps `resolv.conf` in `/run/systemd/resolve`).
            let linked: Vec<PathBuf> = LINKED_CONFIG
                .iter()
                .filter_map(|file| crate::sandbox::home::real_path(Path::new(file)).ok())
                .filter_map(|real| real.parent().map(Path::to_path_buf))
                .filter(|dir| !covered(dir) && dir != Path::new("/"))
                .collect();
            let reads = SYSTEM_READS
                .iter()
                .chain(DEVICES.iter())
                .map(PathBuf::from)
                .chain(linked)
                .filter_map(|path| {
                    // Where it really is (`/bin` may be `/usr/bin`), from what was opened;
                    // `/proc` may be the namespace's own, which has no path here.
                    let (opened, real) = match path == Path::new("/proc") {
                        true => (open_root(&path, proc.as_ref())?, path),
                        false => {
                            let (opened, real) = Opened::with_real(&path)?;
                            (opened, real.unwrap_or(path))
                        }
                    };
                    let holds = secrets.iter().any(|secret| secret.starts_with(&real));
                    Some((opened, real, holds))
                })
                .collect();
            let writable = WRITABLE_DEVICES
                .iter()
                .filter_map(|path| Opened::path(Path::new(path)))
                .collect();
            System {
                secrets,
                reads,
                writable,
                root,
            }
        })
    }

    pub(super) fn keeper(&self) -> Result<Arc<OwnedFd>, SandboxError> {
        self.keeper
            .get_or_init(|| keeper_ruleset().map(Arc::new).map_err(|error| error.to_string()))
            .clone()
            .map_err(SandboxError::Landlock)
    }

    /// The spawner of calls with the filter `filters(network, sockets)` (see
    /// `runtime::Spawner`), dropping the bounding set when `drop_bounding`.
    pub(super) fn spawner(
        &self,
        network: bool,
        sockets: bool,
        drop_bounding: bool,
        cap_last: u32,
    ) -> Option<Arc<Spawner>> {
        self.spawners[kind(network, sockets)]
            .get_or_init(|| {
                let filters = self.filters(network, sockets).ok()?;
                Spawner::start(filters, drop_bounding, cap_last)
                    .map(Arc::new)
                    .map_err(|error| {
                        tracing::debug!("no spawner thread; each call loads its filter: {error}")
                    })
                    .ok()
            })
            .clone()
    }

    pub(super) fn filters(&self, network: bool, sockets: bool) -> Result<Arc<Filters>, SandboxError> {
        self.filters[kind(network, sockets)]
            .get_or_init(|| {
                seccomp_program(network, sockets)
                    .map(|program| Arc::new(Filters { program }))
                    .map_err(|error| error.to_string())
            })
            .clone()
            .map_err(SandboxError::Seccomp)
    }
}

/// The index of a seccomp program, and of its spawner: by network, then declared
/// sockets.
fn kind(network: bool, sockets: bool) -> usize {
    usize::from(network) + 2 * usize::from(sockets)
}

/// The system's secrets as the `/proc` namespace covers them (see
/// [`Cache::covered_secrets`]).
#[derive(Debug)]
struct Covered {
    /// The folders above the secrets, as they were when the covers were made.
    stamps: Vec<hidden::Landmark>,
    /// `/proc/self/mountinfo`, opened before the namespace was made: it polls
    /// `PRI` once the mount table changed.
    table: std::fs::File,
    /// A change was seen: the covers are no longer trusted.
    stale: std::sync::atomic::AtomicBool,
}

/// The system's folders and devices, opened once per process.
#[derive(Debug)]
pub(crate) struct System {
    /// [`SYSTEM_READS`], [`DEVICES`] and the folders linked configuration leads to,
    /// each with its real path and whether it holds a secret of the system (as root).
    pub(super) reads: Vec<(Opened, PathBuf, bool)>,
    /// [`WRITABLE_DEVICES`].
    pub(super) writable: Vec<Opened>,
    /// Whether hcpx runs as root, so the system's secrets are hidden too (by the
    /// base layer: `/etc` holds them).
    pub(super) root: bool,
    /// Those secrets (none but as root), to tell whether a grant holds one.
    pub(super) secrets: Vec<PathBuf>,
}
