//! The layout of `$HCP_HOME` (see README.md): the name of every file and folder hcpx
//! keeps there, in one place; the state lock that every writer there takes (which
//! sweeps the temporary files of writes cut short); and the generation token that
//! install bumps after each change to `packs/`. How a file is written is
//! [`crate::state`]'s business; what each file holds is its owner's.
//!
//! ```text
//! $HCP_HOME/                    (default ~/.hcp, mode 0700)
//!   packs/<id>/                 installed packs
//!   packs/.work/                a change in flight: journal.json, new/, old/
//!   packs.lock.json             what is installed, from where, with which digest
//!   packs.index                 the packs index (a cache)
//!   packs.generation            the token install bumps after every change
//!   .builtin/ID-VERSION-DIGEST/ built-in packs' CLIs, written to run
//!   .installed/ID-TAG/          the copies of installed CLIs that bound calls run
//!   bindings.json  policy.json  adopted.json  audit.log
//!   mcp/outputs/out-HEX         a stateless MCP server's kept outputs (shared by replicas)
//!   mcp/spent/HEX               confirmations used, with a state key file (shared by replicas)
//!   run/exec.sock  run/exec.lock  the resident server's socket and lock (`hcpx serve`, mode 0700)
//!   .lock  .append.lock         the state lock and the audit log's own
//! ```

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::state::{self, Lock, StateError, Wait};

/// `$HCP_HOME` when `HCP_HOME` is not set: this folder in the user's home.
pub(crate) const DEFAULT_HOME: &str = ".hcp";
/// A project's folder of hcpx settings, in the working folder or an ancestor.
pub(crate) const PROJECT_DIR: &str = ".hcp";

/// The installed packs' folder, and the two of CLI copies: named with the sandbox,
/// which lets a pack read its own files there and nothing else of `$HCP_HOME`.
pub(crate) use crate::sandbox::home::{BUILTIN_COPIES, INSTALLED_COPIES, PACKS};
/// Where installed packs are recorded (never inside `packs/`, whose times are part
/// of the packs index's key).
pub const LOCK_FILE: &str = "packs.lock.json";
/// The packs index, next to the lock file.
pub const INDEX_FILE: &str = "packs.index";
/// A token install and uninstall rewrite after every change to `packs/` (see
/// [`bump_generation`]).
pub(crate) const GENERATION_FILE: &str = "packs.generation";
pub(crate) const BINDINGS_FILE: &str = "bindings.json";
/// The user's policy in `$HCP_HOME`, and a project's in its [`PROJECT_DIR`].
pub(crate) const POLICY_FILE: &str = "policy.json";
/// What `adopt` wrote in host files.
pub(crate) const ADOPTED_FILE: &str = "adopted.json";
pub(crate) const AUDIT_LOG: &str = "audit.log";
/// The state lock, taken by every writer of `$HCP_HOME`.
const STATE_LOCK: &str = ".lock";
/// The audit log's lock, of its own so appending while holding the state lock can
/// never wait on itself.
const APPEND_LOCK: &str = ".append.lock";
/// Inside `packs/`: the work folder of a change in flight, and what it holds.
const WORK: &str = ".work";
const JOURNAL: &str = "journal.json";
const STAGED: &str = "new";
const SET_ASIDE: &str = "old";
/// Inside `packs/`: the prefixes of the staging and set-aside folders of older
/// versions of hcpx.
pub(crate) const LEGACY_WORK_PREFIXES: [&str; 2] = [".tmp-", ".old-"];
/// The longest generation token read (the file is hcpx's own, 32 hex digits).
const MAX_GENERATION: usize = 64;

pub(crate) fn packs(home: &Path) -> PathBuf {
    home.join(PACKS)
}

pub(crate) fn lock_file(home: &Path) -> PathBuf {
    home.join(LOCK_FILE)
}

pub(crate) fn index_file(home: &Path) -> PathBuf {
    home.join(INDEX_FILE)
}

pub(crate) fn generation_file(home: &Path) -> PathBuf {
    home.join(GENERATION_FILE)
}

pub(crate) fn bindings(home: &Path) -> PathBuf {
    home.join(BINDINGS_FILE)
}

pub(crate) fn user_policy(home: &Path) -> PathBuf {
    home.join(POLICY_FILE)
}

/// The policy a project in `dir` would have.
pub(crate) fn project_policy(dir: &Path) -> PathBuf {
    dir.join(PROJECT_DIR).join(POLICY_FILE)
}

/// The egress proxy's certificate authority (its key never leaves this folder,
/// which no pack reads).
pub(crate) fn egress(home: &Path) -> PathBuf {
    home.join("egress")
}

/// Where a `--stateless` MCP server keeps outputs for paging, so that every replica
/// sharing `$HCP_HOME` finds them.
pub(crate) fn mcp_outputs(home: &Path) -> PathBuf {
    home.join("mcp").join("outputs")
}

/// Where an MCP server with a state key file records the confirmations used, so
/// that replicas sharing `$HCP_HOME` accept each one once among them.
pub(crate) fn mcp_spent(home: &Path) -> PathBuf {
    home.join("mcp").join("spent")
}

/// The resident server's folder (mode 0700): its socket and its lock.
pub(crate) fn resident(home: &Path) -> PathBuf {
    home.join("run")
}

/// The socket `hcpx serve` listens on, which `hcpx exec` hands calls to.
pub(crate) fn resident_socket(home: &Path) -> PathBuf {
    resident(home).join("exec.sock")
}

/// The lock a resident server holds while it runs: one per `$HCP_HOME`.
pub(crate) fn resident_lock(home: &Path) -> PathBuf {
    resident(home).join("exec.lock")
}

pub(crate) fn audit_log(home: &Path) -> PathBuf {
    home.join(AUDIT_LOG)
}

/// The lock [`crate::state::append_line`] takes to append to the audit log.
pub(crate) fn append_lock(home: &Path) -> PathBuf {
    home.join(APPEND_LOCK)
}

/// The folder a built-in pack's CLI is written to, named `name`
/// (`ID-VERSION-DIGEST`, see [`crate::catalog::Pack::program`]).
pub(crate) fn builtin_copy(home: &Path, name: &str) -> PathBuf {
    home.join(BUILTIN_COPIES).join(name)
}

/// The folder of the copies of installed CLIs that bound calls run from (named by
/// [`crate::install::pinned_copy`]).
pub(crate) fn installed_copies(home: &Path) -> PathBuf {
    home.join(INSTALLED_COPIES)
}

/// The work folder of an install or uninstall in flight, in `packs/`.
pub(crate) fn work(home: &Path) -> PathBuf {
    packs(home).join(WORK)
}

/// The journal of the change in flight, in its work folder.
pub(crate) fn journal(home: &Path) -> PathBuf {
    work(home).join(JOURNAL)
}

/// Where the change in flight stages the version it installs.
pub(crate) fn staged(home: &Path) -> PathBuf {
    work(home).join(STAGED)
}

/// Where the change in flight keeps the version it replaces or removes.
pub(crate) fn set_aside(home: &Path) -> PathBuf {
    work(home).join(SET_ASIDE)
}

/// Takes the state lock (`$HCP_HOME/.lock`), waiting for it: every write in
/// `$HCP_HOME` happens under it. Taking it removes the temporary files that atomic
/// writes cut short by a kill left behind (see [`sweep_temporaries`]).
pub(crate) fn lock(home: &Path) -> Result<Lock, StateError> {
    let lock = Lock::take(&home.join(STATE_LOCK), Wait::Yes)?.ok_or_else(|| StateError::Lock {
        path: home.join(STATE_LOCK),
        source: std::io::ErrorKind::WouldBlock.into(),
    })?;
    sweep_temporaries(home);
    Ok(lock)
}

/// The state lock if no one holds it now, without waiting: for writes that may as
/// well not happen (a cache).
pub(crate) fn try_lock(home: &Path) -> Result<Option<Lock>, StateError> {
    let lock = Lock::take(&home.join(STATE_LOCK), Wait::No)?;
    if lock.is_some() {
        sweep_temporaries(home);
    }
    Ok(lock)
}

/// Removes the temporary files of atomic writes cut short in the folders written
/// under the state lock: `$HCP_HOME` itself and the folders of the CLIs hcpx writes
/// there (`.builtin/*/`, `.installed/*/`). The install work folder (`packs/.work`)
/// goes whole when a change ends or is recovered, and host files (`adopt`) are not
/// hcpx's folders: another `HCP_HOME`'s hcpx may be writing one. The caller holds the
/// state lock, and every writer of these folders writes under it, so none of them is
/// a write in flight.
fn sweep_temporaries(home: &Path) {
    state::remove_temporaries_in(home);
    for folder in [BUILTIN_COPIES, INSTALLED_COPIES] {
        for entry in std::fs::read_dir(home.join(folder))
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                state::remove_temporaries_in(&entry.path());
            }
        }
    }
}

/// The generation token now, empty when there is none.
pub(crate) fn generation(home: &Path) -> Vec<u8> {
    let mut token = std::fs::read(generation_file(home)).unwrap_or_default();
    token.truncate(MAX_GENERATION);
    token
}

/// Writes a new generation token: whoever changed `packs/` (install, uninstall,
/// recovery) calls it, holding the state lock, once the change is complete and
/// before its journal goes, so an index made before or during the change is never
/// taken for the packs after it, whatever the clocks say.
pub(crate) fn bump_generation(home: &Path) -> Result<(), StateError> {
    use std::hash::{BuildHasher as _, Hasher as _};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let mut token = String::with_capacity(32);
    for round in 0..2_u64 {
        // A hasher with a random key per process and per call.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u32(std::process::id());
        hasher.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        hasher.write_u64(round);
        token.push_str(&format!("{:016x}", hasher.finish()));
    }
    state::write_atomic(&generation_file(home), token.as_bytes(), 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taking_the_state_lock_removes_temporaries_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let program = installed_copies(home).join("probe-abc");
        std::fs::create_dir_all(&program).unwrap();
        let left = [
            home.join(".bindings.json.Ab3dE9.tmp"),
            program.join(".probe.x1y2z3.tmp"),
        ];
        let kept = [home.join("notes.tmp"), program.join("probe")];
        for path in left.iter().chain(&kept) {
            std::fs::write(path, "x").unwrap();
        }
        // A folder so named is not a temporary file.
        std::fs::create_dir(home.join(".adopted.json.qwerty.tmp")).unwrap();
        let held = lock(home).unwrap();
        assert!(left.iter().all(|path| !path.exists()));
        assert!(kept.iter().all(|path| path.exists()));
        assert!(home.join(".adopted.json.qwerty.tmp").is_dir());
        // Held: another taker does not wait, and takes nothing away.
        std::fs::write(&left[0], "in flight").unwrap();
        assert!(try_lock(home).unwrap().is_none());
        assert!(left[0].exists());
        drop(held);
        assert!(try_lock(home).unwrap().is_some());
        assert!(!left[0].exists());
    }

    #[test]
    fn appending_while_holding_the_state_lock_does_not_wait() {
        let dir = tempfile::tempdir().unwrap();
        let _held = lock(dir.path()).unwrap();
        state::append_line(&append_lock(dir.path()), &audit_log(dir.path()), "{}").unwrap();
    }

    #[test]
    fn generations_are_fresh_tokens() {
        let dir = tempfile::tempdir().unwrap();
        assert!(generation(dir.path()).is_empty());
        bump_generation(dir.path()).unwrap();
        let first = generation(dir.path());
        assert_eq!(first.len(), 32);
        bump_generation(dir.path()).unwrap();
        assert_ne!(generation(dir.path()), first);
    }
}
