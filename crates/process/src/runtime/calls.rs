//! Whether a process belongs to a call hcpx runs, or acts for one: what an hcpx
//! server asks of the process at the other end of a connection, so that no pack
//! can drive hcpx. A pack's CLI runs as the user who runs hcpx, so the user id
//! alone cannot tell it from that user.
//!
//! Every call's processes descend from its keeper, which names itself
//! [`KEEPER_NAME`] before it starts the child and is the call's subreaper (a
//! process of the call that loses its parent comes to it; the child dies with it).
//! So a process with the keeper among its ancestors is in a call. hcpx connecting
//! for a call (a declared unix socket, the allowlist's proxy) is the keeper's
//! parent while the call runs. A pack cannot rename its keeper (only a thread
//! group's own threads write its `comm`, and Landlock keeps it from tracing the
//! keeper); naming itself so only marks itself.
//!
//! Everything is read from `/proc` (each process's `stat`), as this process sees it; a process gone
//! before it was read is reported as such (the caller refuses it). An ancestor read
//! is taken for a process's parent only if the process still names it afterwards:
//! a process that exits hands its children on before its pid can be given again, so
//! a parent that exits during the walk, its pid perhaps given to a process of no
//! call, cannot end the walk short of the keeper.

use std::path::Path;

/// The name (`comm`) of a call's keeper, which it gives itself first.
pub const KEEPER_NAME: &str = "hcpx-keeper";
/// [`KEEPER_NAME`] as the keeper passes it to the kernel.
pub(crate) const KEEPER_NAME_C: &std::ffi::CStr = c"hcpx-keeper";

/// How a process is tied to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tie {
    /// It runs in a call: a keeper is among its ancestors (or it is one).
    InCall,
    /// It starts calls: a keeper is its child (hcpx, connecting for a pack).
    ActsForCall,
}

/// How process `pid` is tied to a call, if at all; `Err` when it could not be read
/// (gone, or hidden from this process).
pub fn tie(pid: u32) -> Result<Option<Tie>, String> {
    tie_in(Path::new("/proc"), pid, None)
}

/// [`tie`], walking up only to the first ancestor `clear` holds, and remembering
/// there the ancestors it walked past: a server's clients share their shells and
/// agents, so each client costs two reads of `/proc` rather than one per ancestor.
pub fn tie_remembering(pid: u32, clear: &Clear) -> Result<Option<Tie>, String> {
    tie_in(Path::new("/proc"), pid, Some(clear))
}

/// Processes, by pid and start time, found in no call with all of their ancestors.
/// That stays true while they run: a process's ancestors only ever leave it (it is
/// handed to a living ancestor, a subreaper, when its parent dies), and a keeper
/// names itself before anything of its call runs. The start time tells a reused
/// pid apart.
#[derive(Debug, Default)]
pub struct Clear(std::sync::Mutex<Vec<(u32, u64)>>);

/// How many processes a [`Clear`] holds; beyond it, the oldest go first.
const CLEAR_KEPT: usize = 256;

impl Clear {
    fn holds(&self, pid: u32, start: u64) -> bool {
        self.0.lock().is_ok_and(|clear| clear.contains(&(pid, start)))
    }

    fn remember(&self, walked: &[(u32, u64)]) {
        if let Ok(mut clear) = self.0.lock() {
            for found in walked {
                if !clear.contains(found) {
                    clear.push(*found);
                }
            }
            let over = clear.len().saturating_sub(CLEAR_KEPT);
            clear.drain(..over);
        }
    }
}

fn tie_in(proc: &Path, pid: u32, clear: Option<&Clear>) -> Result<Option<Tie>, String> {
    if let Some(tie) = ancestry(&mut |pid| status(proc, pid), pid, clear)? {
        return Ok(Some(tie));
    }
    if children(proc, pid).into_iter().any(|child| {
        status(proc, child).is_some_and(|child| child.name == KEEPER_NAME && child.parent == pid)
    }) {
        return Ok(Some(Tie::ActsForCall));
    }
    Ok(None)
}

/// How many times a walk up from a process starts again because a process it passed
/// changed parent under it, before the process is refused.
const WALKS: usize = 8;

/// Whether process `pid` is a keeper or has one among its ancestors, each process
/// read with `read`.
fn ancestry(
    read: &mut dyn FnMut(u32) -> Option<Status>,
    pid: u32,
    clear: Option<&Clear>,
) -> Result<Option<Tie>, String> {
    for _ in 0..WALKS {
        if let Walked::Done(tie) = walk(read, pid, clear)? {
            return Ok(tie);
        }
    }
    Err(format!(
        "the ancestors of process {pid} kept changing while they were read"
    ))
}

/// How a walk up from a process ended.
enum Walked {
    Done(Option<Tie>),
    /// A process on the way changed parent (its parent exited): walk again.
    Moved,
}

fn walk(
    read: &mut dyn FnMut(u32) -> Option<Status>,
    pid: u32,
    clear: Option<&Clear>,
) -> Result<Walked, String> {
    let own = read(pid).ok_or_else(|| format!("process {pid} cannot be read"))?;
    if own.name == KEEPER_NAME {
        return Ok(Walked::Done(Some(Tie::InCall)));
    }
    // Up the tree to the first process (pid 1 has parent 0), or to one known to be
    // in no call; a bound in case the table changes under the walk.
    let (mut below, mut below_status) = (pid, own);
    let mut walked = Vec::new();
    let mut whole = false;
    for _ in 0..4096 {
        let parent = below_status.parent;
        if parent <= 1 {
            whole = true;
            break;
        }
        let ancestor = read(parent);
        if let Some(ancestor) = &ancestor {
            if ancestor.name == KEEPER_NAME {
                return Ok(Walked::Done(Some(Tie::InCall)));
            }
            // A process remembered clear has held its pid since before `below` was
            // read (the start time tells a reused pid apart): it is the parent read
            // there.
            if let (Some(clear), Some(start)) = (clear, ancestor.start)
                && clear.holds(parent, start)
            {
                whole = true;
                break;
            }
        }
        // What was read at `parent` is `below`'s parent only if `below` still has
        // it afterwards: a process that exits hands its children to a subreaper (a
        // keeper, in a call) or to init before its pid can be given again. One that
        // exited before it was read did so too.
        match read(below) {
            Some(now) if now.parent == parent && now.start == below_status.start => {}
            _ => return Ok(Walked::Moved),
        }
        // Still the parent, and hidden from this process: the walk stops there.
        let Some(ancestor) = ancestor else {
            break;
        };
        walked.extend(ancestor.start.map(|start| (parent, start)));
        (below, below_status) = (parent, ancestor);
    }
    // Only a walk that reached the top (or a process known to be clear) says that
    // none of these is in a call.
    if let Some(clear) = clear.filter(|_| whole) {
        clear.remember(&walked);
    }
    Ok(Walked::Done(None))
}

/// Who holds a socket, among the processes tied to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// No process tied to a call holds it.
    None,
    /// This process, tied to a call so, holds it.
    Tied(u32, Tie),
    /// This process is tied to a call and hides its descriptors (it made itself
    /// non-dumpable): it may hold the socket.
    Hidden(u32),
}

/// Whether a process tied to a call holds the socket with inode `inode` (one end
/// of a TCP connection, as the kernel names it), which user `owner` made. Only
/// the processes of calls and their starters are searched: on a machine that runs
/// no call, no descriptor is read at all. A call's process whose descriptors
/// cannot be listed counts as [`Holder::Hidden`] only when it runs as `owner`
/// (another user's calls, unreadable to a user's server, made no socket of its).
pub fn socket_holder(inode: u64, owner: u32) -> Holder {
    socket_holder_in(Path::new("/proc"), inode, owner)
}

fn socket_holder_in(proc: &Path, inode: u64, owner: u32) -> Holder {
    let wanted = format!("socket:[{inode}]");
    let mut hidden = None;
    for (pid, tie) in tied(proc) {
        match std::fs::read_dir(proc.join(pid.to_string()).join("fd")) {
            Ok(fds) => {
                let holds = fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|target| target.as_os_str() == std::ffi::OsStr::new(&wanted))
                });
                if holds {
                    return Holder::Tied(pid, tie);
                }
            }
            // Gone meanwhile: it holds nothing.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) if runs_as(proc, pid, owner) => hidden = Some(pid),
            Err(_) => {}
        }
    }
    hidden.map_or(Holder::None, Holder::Hidden)
}

/// Whether any of the uids of `pid` (real, effective, saved, file system) is `uid`;
/// `/proc/PID/status` stays readable when the process is not dumpable.
fn runs_as(proc: &Path, pid: u32, uid: u32) -> bool {
    super::procfs::read(proc.join(pid.to_string()).join("status")).is_ok_and(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .is_some_and(|uids| uids.split_whitespace().any(|one| one.parse() == Ok(uid)))
    })
}

/// Whether any of `pids` is named [`KEEPER_NAME`].
fn any_keeper(proc: &Path, pids: &[u32]) -> bool {
    use rustix::fs::{Mode, OFlags};
    let Ok(dir) = rustix::fs::open(
        proc,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let wanted = format!("{KEEPER_NAME}\n");
    pids.iter().any(|pid| {
        let Ok(file) = rustix::fs::openat(
            &dir,
            format!("{pid}/comm"),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return false;
        };
        let mut name = [0_u8; 32];
        rustix::io::read(&file, &mut name).is_ok_and(|read| name.get(..read) == Some(wanted.as_bytes()))
    })
}

/// Every process tied to a call, from one pass over `/proc`: the keepers, their
/// descendants, and the keepers' parents.
fn tied(proc: &Path) -> Vec<(u32, Tie)> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let pids: Vec<u32> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .collect();
    // Most often no call runs: then each process's `comm` (half the cost of its
    // `stat` for the kernel to write) is all that is read, with one `openat` and one
    // `read` each.
    if !any_keeper(proc, &pids) {
        return Vec::new();
    }
    let table: std::collections::HashMap<u32, Status> = pids
        .into_iter()
        .filter_map(|pid| Some((pid, status(proc, pid)?)))
        .collect();
    let in_call = |mut pid: u32| {
        for _ in 0..4096 {
            match table.get(&pid) {
                Some(status) if status.name == KEEPER_NAME => return true,
                Some(status) if status.parent > 1 => pid = status.parent,
                _ => return false,
            }
        }
        false
    };
    let starters: std::collections::HashSet<u32> = table
        .values()
        .filter(|status| status.name == KEEPER_NAME)
        .map(|status| status.parent)
        .collect();
    let mut tied: Vec<(u32, Tie)> = table
        .keys()
        .filter_map(|pid| {
            if in_call(*pid) {
                Some((*pid, Tie::InCall))
            } else {
                starters.contains(pid).then_some((*pid, Tie::ActsForCall))
            }
        })
        .collect();
    tied.sort_unstable_by_key(|(pid, _)| *pid);
    tied
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Status {
    name: String,
    parent: u32,
    /// When it started, in clock ticks since boot (`None` where the line is cut
    /// short).
    start: Option<u64>,
}

/// The name, the parent and the start time, from `/proc/PID/stat` (shorter for the
/// kernel to write than `status`, which matters when every process is read).
fn status(proc: &Path, pid: u32) -> Option<Status> {
    let text = super::procfs::read(proc.join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&text)
}

/// `PID (NAME) STATE PPID ...`: the name may hold spaces and parentheses, so it
/// ends at the last `)`.
fn parse_stat(text: &str) -> Option<Status> {
    let (head, rest) = text.rsplit_once(')')?;
    let (_, name) = head.split_once('(')?;
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    // Field 22; the state was field 3 and the parent field 4.
    let start = fields.nth(17).and_then(|start| start.parse().ok());
    Some(Status {
        name: name.to_owned(),
        parent,
        start,
    })
}

/// The children of every thread of `pid` (`/proc/PID/task/TID/children`); where
/// the kernel does not list them, every process whose parent is `pid`.
fn children(proc: &Path, pid: u32) -> Vec<u32> {
    let task = proc.join(pid.to_string()).join("task");
    let mut found = Vec::new();
    let mut listed = false;
    if let Ok(threads) = std::fs::read_dir(&task) {
        for thread in threads.flatten() {
            if let Ok(text) = super::procfs::read(thread.path().join("children")) {
                listed = true;
                found.extend(
                    text.split_whitespace()
                        .filter_map(|child| child.parse::<u32>().ok()),
                );
            }
        }
    }
    if !listed && let Ok(entries) = std::fs::read_dir(proc) {
        found.extend(
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
                .filter(|other| status(proc, *other).is_some_and(|status| status.parent == pid)),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/proc`: each process with its name and parent, and its threads'
    /// children files when `listed`.
    fn table(processes: &[(u32, &str, u32)], listed: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (pid, name, parent) in processes {
            let at = dir.path().join(pid.to_string());
            std::fs::create_dir_all(at.join("task").join(pid.to_string())).unwrap();
            std::fs::write(at.join("comm"), format!("{name}\n")).unwrap();
            std::fs::write(
                at.join("stat"),
                format!(
                    "{pid} ({name}) S {parent} {pid} {pid} 0 -1 4194560 107 0 0 0 0 0 0 0 20 0 1 0 {} 0\n",
                    start_of(*pid)
                ),
            )
            .unwrap();
            if listed {
                let kids: Vec<String> = processes
                    .iter()
                    .filter(|(_, _, of)| of == pid)
                    .map(|(kid, _, _)| kid.to_string())
                    .collect();
                std::fs::write(
                    at.join("task").join(pid.to_string()).join("children"),
                    kids.join(" "),
                )
                .unwrap();
            }
        }
        dir
    }

    /// The start time the fake `/proc` gives process `pid`.
    fn start_of(pid: u32) -> u64 {
        1000 + u64::from(pid)
    }

    const TREE: [(u32, &str, u32); 7] = [
        (1, "init", 0),
        (10, "bash", 1),
        (20, "hcpx", 10),
        (21, KEEPER_NAME, 20),
        (22, "python3", 21),
        (23, "sh", 22),
        (30, "claude", 10),
    ];

    /// How each process of [`TREE`] is tied to a call.
    const TIES: [(u32, Option<Tie>); 7] = [
        (1, None),
        (10, None),
        (20, Some(Tie::ActsForCall)),
        (21, Some(Tie::InCall)),
        (22, Some(Tie::InCall)),
        (23, Some(Tie::InCall)),
        (30, None),
    ];

    /// Each process of [`TREE`], tied as `clear` (if any) says with the table.
    fn ties(proc: &Path, clear: Option<&Clear>) -> Vec<(u32, Option<Tie>)> {
        TIES.iter()
            .map(|(pid, _)| (*pid, tie_in(proc, *pid, clear).unwrap()))
            .collect()
    }

    #[test]
    fn a_calls_processes_its_keeper_and_its_starter_are_told_apart_from_the_rest() {
        for listed in [true, false] {
            let proc = table(&TREE, listed);
            assert_eq!(ties(proc.path(), None), TIES, "children listed: {listed}");
            assert_eq!(
                tie_in(proc.path(), 99, None).unwrap_err(),
                "process 99 cannot be read"
            );
        }
    }

    /// Remembering the processes found clear gives the same answers, and a client
    /// whose ancestors were walked before is answered from its parent: with the
    /// grandparents gone from the table, only the cache can still say they are clear.
    #[test]
    fn a_remembered_ancestry_gives_the_same_answers_from_the_parent() {
        let proc = table(&TREE, true);
        let clear = Clear::default();
        // Twice: the second time, the walks stop at what the first remembered.
        assert_eq!(ties(proc.path(), Some(&clear)), TIES);
        assert_eq!(ties(proc.path(), Some(&clear)), TIES);
        // Only the processes walked past on the way up from a clear one: bash.
        assert_eq!(*clear.0.lock().unwrap(), vec![(10, start_of(10))]);
        // A new client of bash's: init's entry is gone, and the walk stops at bash.
        let proc = table(&[(10, "bash", 1), (40, "hcpx", 10)], true);
        assert_eq!(tie_in(proc.path(), 40, Some(&clear)), Ok(None));
        assert!(!proc.path().join("1").exists());
    }

    /// A pid used again by another process is not the one remembered: its start
    /// time differs, and its ancestors are walked again.
    #[test]
    fn a_reused_pid_is_walked_again() {
        let clear = Clear::default();
        clear.remember(&[(10, start_of(10) + 1)]);
        let proc = table(
            &[
                (1, "init", 0),
                (5, KEEPER_NAME, 1),
                (10, "sh", 5),
                (11, "hcpx", 10),
            ],
            true,
        );
        assert_eq!(tie_in(proc.path(), 11, Some(&clear)), Ok(Some(Tie::InCall)));
    }

    /// A walk cut short (an ancestor gone before it was read) says nothing about the
    /// processes it passed: none is remembered.
    #[test]
    fn a_walk_cut_short_remembers_nothing() {
        let clear = Clear::default();
        let proc = table(&[(10, "sh", 9), (11, "hcpx", 10)], true);
        assert_eq!(tie_in(proc.path(), 11, Some(&clear)), Ok(None));
        assert!(clear.0.lock().unwrap().is_empty());
    }

    /// A process's reads in turn: its name, parent and start time, or `None` (gone).
    type Reads = (u32, &'static [Option<(&'static str, u32, u64)>]);

    /// A process table that changes between reads: each pid gives its statuses in
    /// turn, the last from then on.
    fn changing(script: &[Reads]) -> impl FnMut(u32) -> Option<Status> + use<> {
        let mut script: std::collections::HashMap<u32, std::collections::VecDeque<Option<Status>>> = script
            .iter()
            .map(|(pid, reads)| {
                let reads = reads.iter().map(|read| {
                    read.map(|(name, parent, start)| Status {
                        name: name.to_owned(),
                        parent,
                        start: Some(start),
                    })
                });
                (*pid, reads.collect())
            })
            .collect();
        move |pid| {
            let reads = script.get_mut(&pid)?;
            if reads.len() > 1 {
                reads.pop_front()?
            } else {
                reads.front()?.clone()
            }
        }
    }

    const INIT: Reads = (1, &[Some(("init", 0, 1))]);
    const KEEPER: Reads = (5, &[Some((KEEPER_NAME, 1, 5))]);

    /// The attack: a pack's process connects, and its parent, the only process
    /// between it and the keeper, exits after the client was read and before the
    /// parent was. The client now has the keeper (the call's subreaper) for parent.
    #[test]
    fn a_parent_that_exits_during_the_walk_is_not_taken_for_the_top() {
        let mut read = changing(&[
            INIT,
            KEEPER,
            (10, &[None]),
            (11, &[Some(("hcpx", 10, 11)), Some(("hcpx", 5, 11))]),
        ]);
        assert_eq!(ancestry(&mut read, 11, None), Ok(Some(Tie::InCall)));
    }

    /// The attack with the parent's pid given again, to a process of no call, before
    /// it was read: the client's parent is the keeper by then.
    #[test]
    fn a_parents_pid_given_again_during_the_walk_is_not_taken_for_the_parent() {
        let clear = Clear::default();
        let mut read = changing(&[
            INIT,
            KEEPER,
            (10, &[Some(("bash", 1, 99))]),
            (11, &[Some(("hcpx", 10, 11)), Some(("hcpx", 5, 11))]),
        ]);
        assert_eq!(ancestry(&mut read, 11, Some(&clear)), Ok(Some(Tie::InCall)));
        assert!(clear.0.lock().unwrap().is_empty());
    }

    /// A process whose parent keeps changing under every walk is refused, not
    /// walked forever.
    #[test]
    fn an_ancestry_that_keeps_changing_is_refused() {
        let mut reads = 0_u32;
        let mut read = |pid: u32| {
            reads += 1;
            let parent = if pid == 11 { 20 + reads } else { 1 };
            Some(Status {
                name: "sh".to_owned(),
                parent,
                start: Some(u64::from(pid)),
            })
        };
        assert_eq!(
            ancestry(&mut read, 11, None),
            Err("the ancestors of process 11 kept changing while they were read".to_owned())
        );
    }

    #[test]
    fn a_clear_set_keeps_the_newest_processes() {
        let clear = Clear::default();
        let many: Vec<(u32, u64)> = (0..300).map(|pid| (pid, 7)).collect();
        clear.remember(&many);
        let kept = clear.0.lock().unwrap().clone();
        assert_eq!(kept, many[300 - CLEAR_KEPT..].to_vec());
    }

    #[test]
    fn the_keeper_gives_itself_the_name_looked_for() {
        assert_eq!(KEEPER_NAME_C.to_str(), Ok(KEEPER_NAME));
        // The kernel keeps 15 bytes of a name.
        assert!(KEEPER_NAME.len() <= 15);
    }

    #[test]
    fn stat_gives_the_name_and_the_parent_whatever_the_name_holds() {
        assert_eq!(
            parse_stat("4243 (hcpx-keeper) S 4242 4242 4242 0 -1 4194560 107 0 0 0\n"),
            Some(Status {
                name: KEEPER_NAME.to_owned(),
                parent: 4242,
                start: None
            })
        );
        // A pack may name itself anything: `) S 1 (` does not make pid 1 its parent.
        assert_eq!(
            parse_stat("4244 (a) S 1 (b) R 4243 4242 4242 0 -1\n"),
            Some(Status {
                name: "a) S 1 (b".to_owned(),
                parent: 4243,
                start: None
            })
        );
        assert_eq!(parse_stat("4245 (x\n"), None);
        // A whole line: the start time is field 22.
        assert_eq!(
            parse_stat(
                "4246 (s h) S 4242 4246 4242 34816 4246 4194304 120 0 0 0 0 0 0 0 20 0 1 0 987654 2555904 220\n"
            ),
            Some(Status {
                name: "s h".to_owned(),
                parent: 4242,
                start: Some(987_654)
            })
        );
    }

    #[test]
    fn the_calls_processes_are_found_in_one_pass() {
        let proc = table(&TREE, false);
        assert_eq!(
            tied(proc.path()),
            vec![
                (20, Tie::ActsForCall),
                (21, Tie::InCall),
                (22, Tie::InCall),
                (23, Tie::InCall)
            ]
        );
        let quiet = table(&TREE[..3], false);
        assert_eq!(tied(quiet.path()), Vec::new());
    }

    #[test]
    fn a_socket_is_found_with_the_call_process_that_holds_it() {
        let proc = table(&TREE, false);
        for pid in [20, 22, 23, 30] {
            std::fs::create_dir_all(proc.path().join(pid.to_string()).join("fd")).unwrap();
        }
        std::os::unix::fs::symlink("socket:[777]", proc.path().join("23/fd/3")).unwrap();
        std::os::unix::fs::symlink("socket:[888]", proc.path().join("30/fd/3")).unwrap();
        std::os::unix::fs::symlink("socket:[999]", proc.path().join("20/fd/7")).unwrap();
        assert_eq!(
            socket_holder_in(proc.path(), 777, 1000),
            Holder::Tied(23, Tie::InCall)
        );
        assert_eq!(
            socket_holder_in(proc.path(), 999, 1000),
            Holder::Tied(20, Tie::ActsForCall)
        );
        // Held by a process of no call (the user's host): not ours to refuse.
        assert_eq!(socket_holder_in(proc.path(), 888, 1000), Holder::None);
        // The keeper's descriptors cannot be listed here: as if it hid them. It may
        // hold a socket of its own user's, not one of another user's.
        std::fs::write(proc.path().join("21/fd"), "").unwrap();
        std::fs::write(
            proc.path().join("21/status"),
            "Name:\thcpx-keeper\nUid:\t1000\t1000\t1000\t1000\n",
        )
        .unwrap();
        assert_eq!(socket_holder_in(proc.path(), 555, 1000), Holder::Hidden(21));
        assert_eq!(socket_holder_in(proc.path(), 555, 65534), Holder::None);
    }

    #[test]
    fn this_test_is_in_no_call() {
        assert_eq!(tie(std::process::id()), Ok(None));
    }
}
