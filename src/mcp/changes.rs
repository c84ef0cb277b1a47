//! [`Changes`]: who hears that the list of resources changed (a pack installed or
//! uninstalled), and the watch that notices such a change whoever made it: this
//! server's tool, a person's `hcpx install` in a terminal, or another replica that
//! shares `HCP_HOME`. Each change is told once: the tool and the watch both compare
//! the packs folder with what was last told.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::service::SubscriptionContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

/// How often the watch looks at the packs folder: one `stat` each time, and a
/// listing only when the folder changed.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// Who hears of changes: every open `subscriptions/listen` stream (protocol
/// 2026-07-28, which allows the notification nowhere else), and every session that
/// began with `initialize` (earlier protocols, which get the plain notification).
/// Shared by all the sessions of one server, so an install in one is heard in the
/// others.
pub struct Changes {
    packs: PathBuf,
    listeners: broadcast::Sender<()>,
    sessions: Mutex<Vec<Peer<RoleServer>>>,
    /// The packs folder as last told (or as first seen).
    told: Mutex<Option<Told>>,
    /// The watch runs from the first session or listener on, until `stop` fires or
    /// the server is gone.
    watching: std::sync::Once,
    stop: CancellationToken,
}

/// The packs folder's entries: each pack's folder by name and inode, so that a pack
/// replaced by another install (a new folder renamed in) is a change too.
type Listing = Vec<(std::ffi::OsString, u64)>;

/// The packs folder as clients know it: its listing, and its `stat` when that was
/// read.
#[derive(Debug)]
struct Told {
    listing: Listing,
    stamp: Option<Stamp>,
    at: std::time::SystemTime,
}

impl Told {
    fn now(packs: &Path) -> Self {
        Self {
            stamp: stamp(packs),
            listing: listing(packs),
            at: std::time::SystemTime::now(),
        }
    }

    /// Whether the folder must be listed again to know: its `stat` moved, or it
    /// changed so shortly before it was read that a change in the same tick of the
    /// file system's clock (which leaves the time as it was) could follow unseen.
    fn needs_look(&self, now: Option<Stamp>) -> bool {
        if self.stamp != now {
            return true;
        }
        self.stamp
            .and_then(|stamp| stamp.modified)
            .is_some_and(|modified| self.at.duration_since(modified).unwrap_or_default() < RECENT)
    }
}

/// A folder changed less than this before its `stat` was read may change again
/// without its modification time moving (file systems stamp with a coarse clock).
const RECENT: Duration = Duration::from_secs(1);

/// What a directory's `stat` says changes with its entries: an entry added,
/// removed or renamed sets its modification time, and a folder added or removed
/// its link count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<std::time::SystemTime>,
    links: u64,
    inode: u64,
}

impl Changes {
    /// Changes of the packs in `packs` (the server's `$HCP_HOME/packs`); the watch
    /// stops when `stop` fires.
    pub(crate) fn new(packs: PathBuf, stop: CancellationToken) -> Self {
        Self {
            packs,
            listeners: broadcast::channel(16).0,
            sessions: Mutex::default(),
            told: Mutex::default(),
            watching: std::sync::Once::new(),
            stop,
        }
    }

    /// A session that began with `initialize` hears of changes from now on.
    pub(crate) fn join(self: &Arc<Self>, peer: Peer<RoleServer>) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|peer| !peer.is_transport_closed());
            sessions.push(peer);
        }
        self.watch();
    }

    /// Tells every listener and every session when the packs differ from what was
    /// last told; nothing when they do not (the watch told it already, or the tool
    /// will).
    pub(crate) async fn announce_if_changed(&self) {
        let now = Told::now(&self.packs);
        let changed = match self.told.lock() {
            Ok(mut told) => {
                let changed = told.as_ref().is_none_or(|told| told.listing != now.listing);
                *told = Some(now);
                changed
            }
            // A poisoned record: better told twice than not at all.
            Err(_) => true,
        };
        if changed {
            self.announce().await;
        }
    }

    /// Tells every listener and every session; a session that is gone is forgotten.
    async fn announce(&self) {
        // No listener is not an error: nobody asked.
        let _ = self.listeners.send(());
        let sessions = self
            .sessions
            .lock()
            .map(|mut sessions| std::mem::take(&mut *sessions))
            .unwrap_or_default();
        let mut alive = Vec::with_capacity(sessions.len());
        for peer in sessions {
            if !peer.is_transport_closed() && peer.notify_resource_list_changed().await.is_ok() {
                alive.push(peer);
            }
        }
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.extend(alive);
        }
    }

    /// Serves one `subscriptions/listen` stream until the client ends it, it goes
    /// away, or `shutdown` fires (the stream then ends with its final result).
    pub(crate) async fn listen(
        self: &Arc<Self>,
        context: SubscriptionContext,
        shutdown: &CancellationToken,
    ) -> Result<(), McpError> {
        let mut changes = self.listeners.subscribe();
        self.watch();
        let wanted = context.accepted().resources_list_changed == Some(true);
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                // The server is going away: the stream ends with its final result.
                () = shutdown.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(RecvError::Lagged(_)) => {
                        if wanted && context.sink().notify_resource_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    /// Starts the watch, once: what the packs folder holds now is what clients know.
    fn watch(self: &Arc<Self>) {
        self.watching.call_once(|| {
            if let Ok(mut told) = self.told.lock()
                && told.is_none()
            {
                *told = Some(Told::now(&self.packs));
            }
            let changes = Arc::downgrade(self);
            let stop = self.stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = watch_packs(changes) => {}
                    () = stop.cancelled() => {}
                }
            });
        });
    }

    /// Whether the packs folder must be listed again (see [`Told::needs_look`]).
    fn needs_look(&self) -> bool {
        let now = stamp(&self.packs);
        self.told
            .lock()
            .map(|told| told.as_ref().is_none_or(|told| told.needs_look(now)))
            .unwrap_or(true)
    }
}

/// Looks at the packs folder every [`WATCH_EVERY`] while the server lives, and tells
/// a change it finds.
async fn watch_packs(changes: Weak<Changes>) {
    let mut every = tokio::time::interval(WATCH_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(changes) = changes.upgrade() else {
            return;
        };
        let packs = changes.packs.clone();
        let moved = {
            let changes = Arc::clone(&changes);
            tokio::task::spawn_blocking(move || changes.needs_look())
                .await
                .unwrap_or(false)
        };
        if moved {
            tracing::debug!(packs = %packs.display(), "the packs folder changed");
            changes.announce_if_changed().await;
        }
    }
}

/// The packs folder's pack folders (hidden entries, such as an install's work
/// folder, left out), sorted; empty when there is no such folder.
fn listing(packs: &Path) -> Listing {
    let Ok(entries) = std::fs::read_dir(packs) else {
        return Vec::new();
    };
    let mut listing: Listing = entries
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| (entry.file_name(), entry_inode(&entry)))
        .collect();
    listing.sort_unstable();
    listing
}

#[cfg(unix)]
fn entry_inode(entry: &std::fs::DirEntry) -> u64 {
    use std::os::unix::fs::DirEntryExt as _;
    entry.ino()
}

/// Off Unix a folder replaced in place shows only by its time (see [`stamp`]).
#[cfg(not(unix))]
fn entry_inode(_entry: &std::fs::DirEntry) -> u64 {
    0
}

fn stamp(packs: &Path) -> Option<Stamp> {
    let metadata = std::fs::metadata(packs).ok()?;
    #[cfg(unix)]
    let (links, inode) = {
        use std::os::unix::fs::MetadataExt as _;
        (metadata.nlink(), metadata.ino())
    };
    #[cfg(not(unix))]
    let (links, inode) = (0, 0);
    Some(Stamp {
        modified: metadata.modified().ok(),
        links,
        inode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_each_pack_folder_by_inode_and_leaves_hidden_entries_out() {
        let root = tempfile::tempdir().unwrap();
        let packs = root.path().join("packs");
        assert_eq!(listing(&packs), Vec::new());
        assert_eq!(stamp(&packs), None);
        std::fs::create_dir_all(packs.join("b")).unwrap();
        std::fs::create_dir_all(packs.join("a")).unwrap();
        std::fs::create_dir_all(packs.join(".work")).unwrap();
        let inode = |name: &str| {
            use std::os::unix::fs::MetadataExt as _;
            std::fs::metadata(packs.join(name)).unwrap().ino()
        };
        assert_eq!(
            listing(&packs),
            vec![("a".into(), inode("a")), ("b".into(), inode("b"))]
        );
        // A pack replaced by a new folder renamed in is another listing, even where
        // the folder's time and link count come out the same.
        let before = listing(&packs);
        std::fs::create_dir(packs.join(".work/a")).unwrap();
        std::fs::remove_dir(packs.join("a")).unwrap();
        std::fs::rename(packs.join(".work/a"), packs.join("a")).unwrap();
        assert_ne!(listing(&packs), before);
    }

    #[test]
    fn the_folder_is_listed_again_when_its_stat_moved_or_it_had_just_changed() {
        let second = |s: u64| std::time::UNIX_EPOCH + Duration::from_secs(s);
        let at = |modified: u64, links: u64| Stamp {
            modified: Some(second(modified)),
            links,
            inode: 7,
        };
        let told = |stamp: Option<Stamp>, read: u64| Told {
            listing: Vec::new(),
            stamp,
            at: second(read),
        };
        // Changed long before it was read, and still the same: nothing to look at.
        assert!(!told(Some(at(100, 3)), 200).needs_look(Some(at(100, 3))));
        // Its time or its link count moved, it appeared or went away.
        assert!(told(Some(at(100, 3)), 200).needs_look(Some(at(201, 3))));
        assert!(told(Some(at(100, 3)), 200).needs_look(Some(at(100, 4))));
        assert!(told(None, 200).needs_look(Some(at(100, 3))));
        assert!(told(Some(at(100, 3)), 200).needs_look(None));
        // Read in the second it changed: a change in the same clock tick would not
        // move its time, so it is listed again.
        assert!(told(Some(at(200, 3)), 200).needs_look(Some(at(200, 3))));
        assert!(!told(None, 200).needs_look(None));
    }
}
