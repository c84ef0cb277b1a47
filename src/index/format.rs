//! The binary format of the packs index file: a fixed header (magic, format, the
//! head's length and checksum); the head (the key, every entry, the broken packs,
//! the word list with each word's place and checksum); one record of stamps per
//! entry; the postings. Every part is checked against its checksum when read, and
//! only the parts a call needs are read.

use std::path::PathBuf;

use crate::catalog::BrokenPack;
use crate::manifest::Problem;
use crate::search::{Postings, SearchIndex};

use super::bytes::{Reader, Writer, checksum, read_at};
use super::key::{Key, PackStamp, Stamp};

const MAGIC: &[u8; 8] = b"HCPXIDX\n";
/// Bumped whenever the layout below changes: an index of another format is rebuilt.
/// 2: an entry's kind is one of three (a catalog pack that is not installed).
const FORMAT: u32 = 2;

/// The fixed start of the file: magic, format, the head's length and checksum.
pub(super) const HEADER: usize = 28;
/// One posting: the pack's position (u32) and its field bits.
const POSTING: usize = 5;
/// One installed pack's stamps (three of [`STAMP`] bytes) and their checksum.
pub(super) const RECORD: usize = 3 * STAMP + 8;
/// [`Stamp::put`]'s size.
const STAMP: usize = 1 + 3 * 8 + 2 * 16;

pub(super) fn get_pack_stamp(input: &mut Reader<'_>) -> Option<PackStamp> {
    Some([Stamp::get(input)?, Stamp::get(input)?, Stamp::get(input)?])
}

/// One pack, in id order, at the position the search index uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) kind: Kind,
}

/// Where an entry's pack is read from when it is a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The binary's built-in pack.
    Builtin = 0,
    /// Its folder under `packs/`.
    Installed = 1,
    /// The binary's catalog: not installed.
    Catalog = 2,
}

/// Which words of the stored search index a call decodes: a query looks only at
/// the words one of its terms begins, so a CLI run skips the postings of all the
/// others (most of the file) and ranks exactly as with all of them.
#[derive(Debug, Clone, Copy)]
pub(super) enum Wanted<'q> {
    /// Every word (tests compare the whole index).
    #[cfg(test)]
    All,
    Prefixed(&'q [String]),
}

impl Wanted<'_> {
    pub(super) fn wants(self, word: &str) -> bool {
        match self {
            #[cfg(test)]
            Self::All => true,
            Self::Prefixed(terms) => terms.iter().any(|term| word.starts_with(term.as_str())),
        }
    }
}

/// What [`encode`] writes.
pub(super) struct Contents<'a> {
    pub(super) entries: &'a [Entry],
    pub(super) broken: &'a [BrokenPack],
    /// For each broken pack installed in `packs/`, its folder's stamps.
    pub(super) broken_stamps: &'a [Option<PackStamp>],
    pub(super) search: &'a SearchIndex,
    /// Each installed entry's stamps, by position (none for a built-in).
    pub(super) held: &'a [Option<PackStamp>],
}

/// What [`decode`] read: the head, whole, and the wanted words' postings; the
/// records of stamps stay in `file`, from `stamps_at`, to be read with
/// [`read_record`] when a pack is a result.
pub(super) struct Decoded {
    pub(super) entries: Vec<Entry>,
    pub(super) broken: Vec<BrokenPack>,
    pub(super) broken_stamps: Vec<Option<PackStamp>>,
    pub(super) search: SearchIndex,
    pub(super) file: std::fs::File,
    pub(super) stamps_at: u64,
}

/// The record of stamps of the entry at `index`, checked against its checksum.
pub(super) fn read_record(file: &std::fs::File, stamps_at: u64, index: usize) -> Option<PackStamp> {
    let bytes = read_at(file, stamps_at + (index * RECORD) as u64, RECORD).ok()?;
    let (stamps, sum) = bytes.split_at(3 * STAMP);
    if checksum(stamps).to_le_bytes() != *sum {
        return None;
    }
    get_pack_stamp(&mut Reader { bytes: stamps, at: 0 })
}

pub(super) fn encode(contents: &Contents<'_>, key: &Key) -> Vec<u8> {
    let mut head = Writer::default();
    key.put(&mut head);
    head.len(contents.entries.len());
    for entry in contents.entries {
        head.str(&entry.id);
        head.u8(entry.kind as u8);
    }
    head.len(contents.broken.len());
    for (broken, stamp) in contents.broken.iter().zip(contents.broken_stamps) {
        head.str(&broken.id);
        head.str(&broken.dir.to_string_lossy());
        match stamp {
            None => head.u8(0),
            Some(stamps) => {
                head.u8(1);
                stamps.iter().for_each(|stamp| stamp.put(&mut head));
            }
        }
        head.len(broken.problems.len());
        for problem in &broken.problems {
            head.str(&problem.path);
            head.str(&problem.message);
        }
    }
    let (words, _) = contents.search.parts();
    let mut postings = Writer::default();
    head.len(words.len());
    for (word, list) in words {
        let start = postings.0.len();
        for (pack, fields) in list {
            postings.u32(*pack);
            postings.u8(*fields);
        }
        head.str(word);
        head.u64(start as u64);
        head.len(list.len());
        head.u64(checksum(&postings.0[start..]));
    }
    head.u64(postings.0.len() as u64);
    let mut stamps = Writer::default();
    for index in 0..contents.entries.len() {
        let start = stamps.0.len();
        let stamp = contents.held.get(index).copied().flatten().unwrap_or_default();
        stamp.iter().for_each(|stamp| stamp.put(&mut stamps));
        let sum = checksum(&stamps.0[start..]);
        stamps.u64(sum);
    }
    let head = head.0;
    let mut out = Vec::with_capacity(HEADER + head.len() + stamps.0.len() + postings.0.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&(head.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(&head).to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(&stamps.0);
    out.extend_from_slice(&postings.0);
    out
}

/// The index in `file`, if it is a whole index of this format for `key` and
/// holds together (ids valid and in order, words in order, postings inside the
/// id list). Only the head (ids, broken packs, the word list) is read now, and
/// the postings of the `wanted` words; a result's stamps are read when it is one.
/// Every part read is checked against its checksum.
pub(super) fn decode(file: std::fs::File, key: &Key, wanted: Wanted<'_>) -> Result<Decoded, &'static str> {
    let size = file.metadata().map_err(|_| "unreadable")?.len();
    let header = read_at(&file, 0, HEADER).map_err(|_| "truncated")?;
    if header[..8] != *MAGIC {
        return Err("not an index");
    }
    if header[8..12] != FORMAT.to_le_bytes() {
        return Err("another format");
    }
    let mut fixed = Reader {
        bytes: &header[12..],
        at: 0,
    };
    let malformed = "malformed";
    let head_len = fixed.u64().ok_or(malformed)?;
    let head_sum = fixed.u64().ok_or(malformed)?;
    if head_len > size.saturating_sub(HEADER as u64) {
        return Err("truncated or torn");
    }
    let head = read_at(
        &file,
        HEADER as u64,
        usize::try_from(head_len).map_err(|_| malformed)?,
    )
    .map_err(|_| "truncated")?;
    if checksum(&head) != head_sum {
        return Err("damaged (checksum)");
    }
    let mut input = Reader { bytes: &head, at: 0 };
    if Key::get(&mut input).ok_or(malformed)? != *key {
        return Err("stale");
    }
    let mut entries: Vec<Entry> = Vec::new();
    for _ in 0..input.len().ok_or(malformed)? {
        let id = input.str().ok_or(malformed)?;
        let kind = match input.u8().ok_or(malformed)? {
            0 => Kind::Builtin,
            1 => Kind::Installed,
            2 => Kind::Catalog,
            _ => return Err(malformed),
        };
        let in_order = entries.last().is_none_or(|last| *last.id < *id);
        if !crate::template::is_pack_id(id) || !in_order {
            return Err(malformed);
        }
        entries.push(Entry {
            id: id.to_owned(),
            kind,
        });
    }
    let mut broken = Vec::new();
    let mut broken_stamps = Vec::new();
    for _ in 0..input.len().ok_or(malformed)? {
        let id = input.str().ok_or(malformed)?.to_owned();
        let dir = PathBuf::from(input.str().ok_or(malformed)?);
        broken_stamps.push(match input.u8().ok_or(malformed)? {
            0 => None,
            1 => Some(get_pack_stamp(&mut input).ok_or(malformed)?),
            _ => return Err(malformed),
        });
        if broken_stamps.last().is_some_and(Option::is_some) && !crate::template::is_pack_id(&id) {
            return Err(malformed);
        }
        let mut problems = Vec::new();
        for _ in 0..input.len().ok_or(malformed)? {
            problems.push(Problem {
                path: input.str().ok_or(malformed)?.to_owned(),
                message: input.str().ok_or(malformed)?.to_owned(),
            });
        }
        broken.push(BrokenPack { id, dir, problems });
    }
    // The word list, whole; the wanted words' places in the postings.
    let mut chosen: Vec<(&str, u64, usize, u64)> = Vec::new();
    let mut previous: Option<&str> = None;
    for _ in 0..input.len().ok_or(malformed)? {
        let word = input.str().ok_or(malformed)?;
        let (start, count, sum) = (
            input.u64().ok_or(malformed)?,
            input.len().ok_or(malformed)?,
            input.u64().ok_or(malformed)?,
        );
        if previous.is_some_and(|last| last >= word) {
            return Err(malformed);
        }
        previous = Some(word);
        if wanted.wants(word) {
            chosen.push((word, start, count, sum));
        }
    }
    let postings_len = input.u64().ok_or(malformed)?;
    if input.at != head.len() {
        return Err(malformed);
    }
    let stamps_at = HEADER as u64 + head_len;
    let postings_at = stamps_at + entries.len() as u64 * RECORD as u64;
    if postings_at.checked_add(postings_len) != Some(size) {
        return Err("truncated or torn");
    }
    let mut words: Vec<(Box<str>, Postings)> = Vec::with_capacity(chosen.len());
    // The chosen words of one prefix are neighbours, and so are their postings:
    // read each run of them at once.
    let mut run = 0;
    while run < chosen.len() {
        let mut end = run + 1;
        while end < chosen.len()
            && chosen[end].1 == chosen[end - 1].1 + chosen[end - 1].2 as u64 * POSTING as u64
        {
            end += 1;
        }
        let from = chosen[run].1;
        let to = chosen[end - 1].1 + chosen[end - 1].2 as u64 * POSTING as u64;
        if to > postings_len || from > to {
            return Err(malformed);
        }
        let bytes = read_at(
            &file,
            postings_at + from,
            usize::try_from(to - from).map_err(|_| malformed)?,
        )
        .map_err(|_| "truncated")?;
        for &(word, start, count, sum) in &chosen[run..end] {
            let offset = usize::try_from(start - from).map_err(|_| malformed)?;
            let raw = bytes.get(offset..offset + count * POSTING).ok_or(malformed)?;
            if checksum(raw) != sum {
                return Err("damaged (checksum)");
            }
            let mut list = Vec::with_capacity(count);
            for posting in raw.chunks_exact(POSTING) {
                let pack = u32::from_le_bytes([posting[0], posting[1], posting[2], posting[3]]);
                if pack as usize >= entries.len() {
                    return Err(malformed);
                }
                list.push((pack, posting[4]));
            }
            words.push((word.into(), list));
        }
        run = end;
    }
    let ids = entries.iter().map(|entry| entry.id.clone()).collect();
    let off = entries.iter().map(|entry| entry.kind == Kind::Catalog).collect();
    Ok(Decoded {
        entries,
        broken,
        broken_stamps,
        search: SearchIndex::from_parts(words, ids, off),
        file,
        stamps_at,
    })
}
