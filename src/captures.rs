//! Full captures of recent calls whose result showed only a view (see docs/mcp.md), kept so
//! they can be paged with `output ID` or read as `hcp://output/ID`: the most recent
//! 64 MiB in all, the oldest dropped first, each for at most an hour; in the
//! server's memory, or (a `--stateless` server) in `$HCP_HOME` ([`disk`]), where
//! replicas that share it find each other's. Also the view
//! itself: a
//! head and a tail around one line that says how much was left out, never cutting a
//! UTF-8 code point.
//!
//! A capture made for an OAuth caller belongs to its subject: only a call of the
//! same subject reads it, and to any other it is not there (the same answer as an
//! id that never was).

mod disk;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most all kept captures may hold.
pub(crate) const BUDGET: usize = 64 * 1024 * 1024;
/// Captures are dropped after this long even when the budget has room.
pub(crate) const FORGET: Duration = Duration::from_secs(60 * 60);

#[derive(Debug, Clone)]
pub struct Stored {
    pub id: String,
    pub stdout: String,
    pub stderr: String,
    /// The OAuth subject whose call made it; `None` for every other caller.
    owner: Option<String>,
    created: Instant,
}

impl Stored {
    fn size(&self) -> usize {
        self.stdout.len() + self.stderr.len()
    }
}

#[derive(Debug, Default)]
pub struct CaptureStore {
    entries: Mutex<(u64, VecDeque<Stored>)>,
    /// Where captures are kept instead of memory, if they are on disk.
    disk: Option<disk::DiskStore>,
}

impl CaptureStore {
    /// A store whose captures are files in `folder` (made when first written),
    /// shared with every store on the same folder.
    pub fn on_disk(folder: PathBuf) -> Self {
        Self {
            disk: Some(disk::DiskStore::new(folder)),
            ..Self::default()
        }
    }

    /// Whether captures are kept on disk (where other replicas may find them).
    pub fn is_on_disk(&self) -> bool {
        self.disk.is_some()
    }

    /// A fresh id for the next capture.
    pub fn new_id(&self) -> String {
        if self.disk.is_some()
            && let Some(id) = disk::DiskStore::new_id()
        {
            return id;
        }
        let Ok(mut guard) = self.entries.lock() else {
            return "out-0".to_owned();
        };
        guard.0 += 1;
        format!("out-{}", guard.0)
    }

    /// Keeps a capture of `owner`'s call and returns its id.
    pub fn put(&self, owner: Option<&str>, stdout: String, stderr: String) -> String {
        let id = self.new_id();
        self.insert(&id, owner, stdout, stderr);
        id
    }

    /// Keeps a capture of `owner`'s call under an id from [`Self::new_id`].
    pub fn insert(&self, id: &str, owner: Option<&str>, stdout: String, stderr: String) {
        self.insert_at(id, owner, stdout, stderr, Instant::now());
    }

    fn insert_at(&self, id: &str, owner: Option<&str>, stdout: String, stderr: String, now: Instant) {
        if let Some(disk) = &self.disk {
            return disk.insert(id, owner, &stdout, &stderr);
        }
        let Ok(mut guard) = self.entries.lock() else {
            return;
        };
        let entries = &mut guard.1;
        let entry = Stored {
            id: id.to_owned(),
            stdout,
            stderr,
            owner: owner.map(str::to_owned),
            created: now,
        };
        let mut held: usize = entries.iter().map(Stored::size).sum::<usize>() + entry.size();
        while held > BUDGET || entries.front().is_some_and(|old| expired(old, now)) {
            let Some(old) = entries.pop_front() else { break };
            held -= old.size();
        }
        entries.push_back(entry);
    }

    /// The capture kept under `id` for `owner`, unless it is gone, older than
    /// [`FORGET`], or another caller's.
    pub fn get(&self, id: &str, owner: Option<&str>) -> Option<Stored> {
        self.get_at(id, owner, Instant::now())
    }

    fn get_at(&self, id: &str, owner: Option<&str>, now: Instant) -> Option<Stored> {
        if let Some(disk) = &self.disk {
            return disk.get(id, owner);
        }
        let guard = self.entries.lock().ok()?;
        guard
            .1
            .iter()
            .find(|entry| entry.id == id && entry.owner.as_deref() == owner && !expired(entry, now))
            .cloned()
    }
}

fn expired(entry: &Stored, now: Instant) -> bool {
    now.saturating_duration_since(entry.created) > FORGET
}

/// The largest index `<= at` that is a char boundary of `text`.
pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest index `>= at` that is a char boundary of `text`.
pub(crate) fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// A view of at most about `limit` bytes: the head and the tail of `text` around one
/// line saying how many bytes were left out. Returns the view and the bytes shown,
/// or `None` when the text fits.
pub(crate) fn view(text: &str, limit: usize, output_id: &str) -> Option<(String, usize)> {
    if text.len() <= limit {
        return None;
    }
    let head_end = floor_boundary(text, limit / 2);
    let tail_start = ceil_boundary(text, text.len() - (limit - limit / 2));
    let left_out = tail_start - head_end;
    let shown = text.len() - left_out;
    let marker = format!(
        "\n[hcpx: {} left out here; all {}: `output {output_id} --offset N`, or hcp://output/{output_id}]\n",
        crate::render::count(left_out, "byte"),
        crate::render::count(text.len(), "byte")
    );
    Some((
        format!("{}{marker}{}", &text[..head_end], &text[tail_start..]),
        shown,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_keeps_head_and_tail_around_a_marker() {
        let text: String = (0..1000).map(|i| format!("{i:04}\n")).collect();
        let (shown, bytes) = view(&text, 100, "out-1").unwrap();
        assert!(shown.starts_with("0000\n0001\n"));
        assert!(shown.ends_with("0998\n0999\n"));
        assert!(shown.contains("[hcpx: 4900 bytes left out here; all 5000 bytes: `output out-1 --offset N`"));
        assert_eq!(bytes, 100);
        assert!(view("short", 100, "x").is_none());
    }

    #[test]
    fn one_byte_left_out_is_said_in_the_singular() {
        let (shown, bytes) = view("abc", 2, "out-2").unwrap();
        assert_eq!(bytes, 2);
        assert_eq!(
            shown,
            "a\n[hcpx: 1 byte left out here; all 3 bytes: `output out-2 --offset N`, or hcp://output/out-2]\nc"
        );
    }

    #[test]
    fn view_never_splits_a_code_point() {
        let text = "é".repeat(1000);
        for limit in [1, 2, 3, 99, 100, 101] {
            let (shown, bytes) = view(&text, limit, "o").unwrap();
            assert!(bytes <= limit, "{limit}");
            // Slicing already proved the boundaries; the halves are whole `é`s.
            assert!(
                shown.chars().filter(|c| *c == 'é').count() * 2 == bytes,
                "{limit}"
            );
        }
    }

    proptest::proptest! {
        /// A view never splits a character, shows at most `limit` bytes, keeps a
        /// head and a tail of the text, and names the part left out, from which
        /// paging reads the rest.
        #[test]
        fn a_view_is_head_marker_tail(text in "\\PC{0,120}", limit in 0_usize..200) {
            let Some((shown, bytes)) = view(&text, limit, "out-7") else {
                proptest::prop_assert!(text.len() <= limit);
                return Ok(());
            };
            proptest::prop_assert!(bytes <= limit);
            let marker_at = shown.find("\n[hcpx: ").unwrap();
            let head = &shown[..marker_at];
            let rest = &shown[marker_at + 1..];
            let marker_end = rest.find("]\n").unwrap() + 2;
            let tail = &rest[marker_end..];
            proptest::prop_assert!(text.starts_with(head) && text.ends_with(tail));
            proptest::prop_assert_eq!(head.len() + tail.len(), bytes);
            let left_out = text.len() - bytes;
            proptest::prop_assert!(
                rest.starts_with(&format!(
                    "[hcpx: {} left out here; all {}",
                    crate::render::count(left_out, "byte"),
                    crate::render::count(text.len(), "byte")
                )),
                "{}", rest
            );
        }
    }

    #[test]
    fn store_drops_oldest_past_the_budget() {
        let store = CaptureStore::default();
        let big = "x".repeat(BUDGET / 2 + 1);
        let first = store.put(None, big.clone(), String::new());
        let second = store.put(None, big.clone(), String::new());
        assert!(store.get(&first, None).is_none(), "over budget: the oldest goes");
        assert_eq!(store.get(&second, None).unwrap().stdout.len(), big.len());
        assert!(store.get("out-999", None).is_none());
    }

    /// An OAuth caller's capture is its subject's alone: to another subject, and to
    /// a caller without one, it is not there; and theirs are not its.
    #[test]
    fn a_capture_is_its_subjects_alone() {
        let store = CaptureStore::default();
        let alices = store.put(Some("alice"), "alice's".to_owned(), String::new());
        let anyones = store.put(None, "anyone's".to_owned(), String::new());
        assert_eq!(store.get(&alices, Some("alice")).unwrap().stdout, "alice's");
        assert!(store.get(&alices, Some("bob")).is_none());
        assert!(store.get(&alices, Some("Alice")).is_none());
        assert!(store.get(&alices, None).is_none());
        assert!(store.get(&anyones, Some("alice")).is_none());
        assert_eq!(store.get(&anyones, None).unwrap().stdout, "anyone's");
    }

    #[test]
    fn store_forgets_a_capture_after_an_hour() {
        let store = CaptureStore::default();
        let start = Instant::now();
        let id = store.new_id();
        store.insert_at(&id, None, "kept".to_owned(), String::new(), start);
        let within = start + FORGET;
        assert_eq!(store.get_at(&id, None, within).unwrap().stdout, "kept");
        let past = within + Duration::from_secs(1);
        assert!(store.get_at(&id, None, past).is_none(), "read after an hour");
        let later = store.new_id();
        store.insert_at(&later, None, "new".to_owned(), String::new(), past);
        assert_eq!(
            store.entries.lock().unwrap().1.len(),
            1,
            "dropped on the next insert"
        );
    }
}
