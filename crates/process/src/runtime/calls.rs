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
//! is taken for a process's parent only if it started no later than the process
//! (see [`parent_of`]); one gone, or a pid given again, sends the walk on to the
//! parent the process has now: a parent that exits during the walk cannot end it
//! short of the keeper.

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

/// Whether process `pid` is a keeper or has one among its ancestors, each process
/// read with `read`, up to the first one `clear` holds.
fn ancestry(
    read: &mut dyn FnMut(u32) -> Option<Status>,
    pid: u32,
    clear: Option<&Clear>,
) -> Result<Option<Tie>, String> {
    let gone = || format!("process {pid} cannot be read");
    let mut below = read(pid).ok_or_else(gone)?;
    let mut below_pid = pid;
    // The ancestors walked past, remembered as clear once the walk reaches the top
    // (or a process known to be clear): only then does it say none is in a call.
    let mut walked = Vec::new();
    // A bound in case the table keeps changing under the walk.
    for _ in 0..4096 {
        if below.name == KEEPER_NAME {
            return Ok(Some(Tie::InCall));
        }
        if below.parent <= 1 {
            return Ok(remembered(clear, &walked));
        }
        match parent_of(read, below_pid, &below, None) {
            Parent::Found(ancestor) => {
                // A process remembered clear has held its pid since before `below`
                // was read (the start time tells a reused pid apart).
                if ancestor.name != KEEPER_NAME
                    && let (Some(clear), Some(start)) = (clear, ancestor.start)
                    && clear.holds(below.parent, start)
                {
                    return Ok(remembered(Some(clear), &walked));
                }
                walked.extend(ancestor.start.map(|start| (below.parent, start)));
                (below_pid, below) = (below.parent, ancestor);
            }
            Parent::Moved(now) => below = now,
            // Still the parent, and hidden from this process: the walk stops there.
            Parent::Hidden => return Ok(None),
            // An ancestor exited: its descendants have other parents now, so the walk
            // starts again from the process itself.
            Parent::Gone => {
                below = read(pid).ok_or_else(gone)?;
                below_pid = pid;
                walked.clear();
            }
        }
    }
    Err(format!(
        "the ancestors of process {pid} kept changing while they were read"
    ))
}

/// No call's: `walked`, the ancestors passed on the way to the top, are remembered
/// so in `clear`.
fn remembered(clear: Option<&Clear>, walked: &[(u32, u64)]) -> Option<Tie> {
    if let Some(clear) = clear {
        clear.remember(walked);
    }
    None
}

/// What was read at the parent's pid of process `pid` (whose status was `status`).
enum Parent {
    /// Its parent, as read.
    Found(Status),
    /// It has another parent by now: its status, read again.
    Moved(Status),
    /// It still names that parent, which cannot be read here.
    Hidden,
    /// It is gone itself.
    Gone,
}

/// The parent of process `pid`, whose status was `status`: `known` (what a pass over
/// `/proc` read at the parent's pid) or else read with `read`. What is read there is
/// the parent only if it started no later than the process: a process that exits
/// hands its children on (to a subreaper, a keeper in a call, or to init) before its
/// pid can be given again, to a process that then starts after them (in the same
/// clock tick only if the whole pid space went round within it). Otherwise the
/// process is read again, and names the parent it has now.
fn parent_of(
    read: &mut dyn FnMut(u32) -> Option<Status>,
    pid: u32,
    status: &Status,
    known: Option<Status>,
) -> Parent {
    let parent = known
        .or_else(|| read(status.parent))
        .filter(|parent| parent.start.zip(status.start).is_none_or(|(up, own)| up <= own));
    if let Some(parent) = parent {
        return Parent::Found(parent);
    }
    match read(pid) {
        Some(now) if now.start == status.start && now.parent != status.parent => Parent::Moved(now),
        Some(now) if now.start == status.start => Parent::Hidden,
        _ => Parent::Gone,
    }
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
    tied_among(&pids, &mut |pid| status(proc, pid))
}

/// [`tied`] over `pids`, each read with `read`.
fn tied_among(pids: &[u32], read: &mut dyn FnMut(u32) -> Option<Status>) -> Vec<(u32, Tie)> {
    let table: std::collections::HashMap<u32, Status> =
        pids.iter().filter_map(|pid| Some((*pid, read(*pid)?))).collect();
    let mut in_call = |pid: u32| {
        let Some(mut below) = table.get(&pid).cloned() else {
            return false;
        };
        let mut below_pid = pid;
        for _ in 0..4096 {
            if below.name == KEEPER_NAME {
                return true;
            }
            if below.parent <= 1 {
                return false;
            }
            match parent_of(read, below_pid, &below, table.get(&below.parent).cloned()) {
                Parent::Found(parent) => (below_pid, below) = (below.parent, parent),
                Parent::Moved(now) => below = now,
                Parent::Hidden | Parent::Gone => return false,
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
#[path = "calls_tests.rs"]
mod tests;
