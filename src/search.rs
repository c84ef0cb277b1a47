//! Ranked search over the catalog. An inverted index maps each word to the packs and
//! fields it occurs in; a query term scores a pack by the fields it hits (id and
//! keywords weigh most, then description and command summaries, then the skill
//! text), a whole-word hit counting double a prefix hit. Of two packs that score the
//! same, one that runs (built in or installed) comes before a catalog pack that is not
//! installed; then ties keep id order.

use std::collections::HashMap;

use crate::catalog::{Origin, Pack};

/// Where a word occurs, and what a hit there is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Field {
    Id = 0,
    Keyword = 1,
    Description = 2,
    Command = 3,
    Skill = 4,
}

impl Field {
    const ALL: [Self; 5] = [
        Self::Id,
        Self::Keyword,
        Self::Description,
        Self::Command,
        Self::Skill,
    ];

    fn weight(self) -> f64 {
        match self {
            Self::Id => 10.0,
            Self::Keyword => 8.0,
            Self::Description => 4.0,
            Self::Command => 3.0,
            Self::Skill => 1.0,
        }
    }
}

/// A prefix hit (`journ` in `journey`) is worth half a whole-word hit.
const PREFIX_FACTOR: f64 = 0.5;
/// Bonus when the whole query is exactly a pack's id.
const EXACT_ID_BONUS: f64 = 20.0;

/// A match scoring under this share of the best one is hidden: a pack that only
/// mentions a word in its skill text does not pad a list led by packs named for it.
pub const RELATIVE_FLOOR: f64 = 0.25;
/// A match scoring under this is hidden whatever the best: a lone prefix hit in a
/// skill text (0.5) says nothing about what a pack does.
pub const MIN_SCORE: f64 = 1.0;

/// The matches worth showing, and how many weaker ones the floor hid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranked {
    pub hits: Vec<Hit>,
    /// Matches under the relevance floor ([`RELATIVE_FLOOR`], [`MIN_SCORE`]), not in
    /// `hits`.
    pub below_floor: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index into the packs the index was built from.
    pub index: usize,
    pub score: f64,
}

/// The packs a word occurs in, each with its field bits.
pub(crate) type Postings = Vec<(u32, u8)>;

#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Every distinct word, sorted (so a prefix is a contiguous range), with the
    /// packs it occurs in and the fields, as bits, one entry per pack.
    words: Vec<(Box<str>, Postings)>,
    ids: Vec<String>,
    /// By position: the pack is a catalog pack that is not installed, ranked after
    /// one that runs and scores the same.
    off: Vec<bool>,
}

/// Lowercase words of letters and digits.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// Collects postings while the index is built; allocates once per distinct word.
#[derive(Default)]
struct Builder {
    ids: HashMap<Box<str>, usize>,
    postings: Vec<Postings>,
    buffer: String,
}

impl Builder {
    fn add(&mut self, text: &str, pack: u32, field: Field) {
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
        {
            self.buffer.clear();
            if word.is_ascii() {
                self.buffer
                    .extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
            } else {
                self.buffer.push_str(&word.to_lowercase());
            }
            let slot = match self.ids.get(self.buffer.as_str()) {
                Some(slot) => *slot,
                None => {
                    self.postings.push(Vec::new());
                    self.ids
                        .insert(self.buffer.as_str().into(), self.postings.len() - 1);
                    self.postings.len() - 1
                }
            };
            let postings = &mut self.postings[slot];
            match postings.last_mut() {
                Some((last, bits)) if *last == pack => *bits |= 1 << field as u8,
                _ => postings.push((pack, 1 << field as u8)),
            }
        }
    }
}

impl SearchIndex {
    pub fn build(packs: &[Pack]) -> Self {
        let mut builder = Builder::default();
        for (index, pack) in packs.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            let manifest = &pack.manifest;
            builder.add(&manifest.id, index, Field::Id);
            for keyword in &manifest.keywords {
                builder.add(keyword, index, Field::Keyword);
            }
            builder.add(&manifest.description, index, Field::Description);
            builder.add(&pack.skill.description, index, Field::Description);
            for command in &manifest.commands {
                builder.add(&command.name, index, Field::Command);
                builder.add(&command.summary, index, Field::Command);
            }
            builder.add(&pack.skill.body, index, Field::Skill);
        }
        let mut postings: Vec<Option<Postings>> = builder.postings.into_iter().map(Some).collect();
        let mut words: Vec<(Box<str>, Postings)> = builder
            .ids
            .into_iter()
            .map(|(word, slot)| (word, postings[slot].take().unwrap_or_default()))
            .collect();
        words.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Self {
            words,
            ids: packs.iter().map(|pack| pack.manifest.id.clone()).collect(),
            off: packs
                .iter()
                .map(|pack| matches!(pack.origin, Origin::Catalog))
                .collect(),
        }
    }

    /// The order of two hits: the higher score first; then one that runs before a
    /// catalog pack that is not installed; then id order.
    fn order(&self, a: &Hit, b: &Hit) -> std::cmp::Ordering {
        let off = |hit: &Hit| self.off.get(hit.index).copied().unwrap_or(false);
        b.score
            .total_cmp(&a.score)
            .then(off(a).cmp(&off(b)))
            .then(a.index.cmp(&b.index))
    }

    /// Packs matching `query`, best first, at most `limit`, every match however
    /// weak. An empty query lists every pack: those that run, then the catalog's that
    /// are not installed, each in id order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let mut hits = self.scored(query);
        hits.truncate(limit);
        hits
    }

    /// [`Self::search`] without the matches under the relevance floor, counted
    /// instead. An empty query lists every pack (none is below a floor).
    pub fn rank(&self, query: &str, limit: usize) -> Ranked {
        let mut hits = self.scored(query);
        // The best match's own score, without the bonus for naming a pack exactly:
        // `search git` should not hide every other pack that is about git.
        let exact = self.ids.binary_search(&query.trim().to_lowercase()).ok();
        let best = hits
            .iter()
            .map(|hit| {
                if Some(hit.index) == exact {
                    hit.score - EXACT_ID_BONUS
                } else {
                    hit.score
                }
            })
            .fold(0.0, f64::max);
        let floor = (best * RELATIVE_FLOOR).max(MIN_SCORE);
        let kept = if words(query).next().is_none() {
            hits.len()
        } else {
            hits.partition_point(|hit| hit.score >= floor)
        };
        let below_floor = hits.len() - kept;
        hits.truncate(kept.min(limit));
        Ranked { hits, below_floor }
    }

    /// Every match, best first.
    fn scored(&self, query: &str) -> Vec<Hit> {
        let mut terms: Vec<String> = words(query).collect();
        terms.sort();
        terms.dedup();
        if terms.is_empty() {
            let mut all: Vec<Hit> = (0..self.ids.len())
                .map(|index| Hit { index, score: 0.0 })
                .collect();
            all.sort_by(|a, b| self.order(a, b));
            return all;
        }
        let mut scores = vec![0.0_f64; self.ids.len()];
        // Per term, the best factor each field reached for each pack, so a word
        // repeated in one field counts once.
        let mut best = vec![[0.0_f64; 5]; self.ids.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in &terms {
            let first = self.words.partition_point(|(word, _)| **word < *term.as_str());
            for (word, postings) in &self.words[first..] {
                if !word.starts_with(term.as_str()) {
                    break;
                }
                let factor = if **word == *term.as_str() {
                    1.0
                } else {
                    PREFIX_FACTOR
                };
                for &(pack, bits) in postings {
                    let slot = &mut best[pack as usize];
                    if slot.iter().all(|value| *value == 0.0) {
                        touched.push(pack);
                    }
                    for field in Field::ALL {
                        if bits & (1 << field as u8) != 0 && slot[field as usize] < factor {
                            slot[field as usize] = factor;
                        }
                    }
                }
            }
            for pack in touched.drain(..) {
                let slot = &mut best[pack as usize];
                scores[pack as usize] += Field::ALL
                    .iter()
                    .map(|field| field.weight() * slot[*field as usize])
                    .sum::<f64>();
                *slot = [0.0; 5];
            }
        }
        let whole = query.trim().to_lowercase();
        if let Ok(index) = self.ids.binary_search(&whole)
            && scores[index] > 0.0
        {
            scores[index] += EXACT_ID_BONUS;
        }
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|(_, score)| **score > 0.0)
            .map(|(index, score)| Hit { index, score: *score })
            .collect();
        hits.sort_by(|a, b| self.order(a, b));
        hits
    }
}

/// How [`SearchIndex`] would score, for `query`, a pack with only this id, these
/// keywords and this description: a package the npm registry found
/// (`search --registry`, [`crate::registry`]), ranked among the local packs by the
/// same weights.
pub(crate) fn score_entry(query: &str, id: &str, keywords: &[String], description: &str) -> f64 {
    let mut builder = Builder::default();
    builder.add(id, 0, Field::Id);
    for keyword in keywords {
        builder.add(keyword, 0, Field::Keyword);
    }
    builder.add(description, 0, Field::Description);
    let mut words: Vec<(Box<str>, Postings)> = builder
        .ids
        .into_iter()
        .map(|(word, slot)| (word, std::mem::take(&mut builder.postings[slot])))
        .collect();
    words.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let index = SearchIndex {
        words,
        ids: vec![id.to_owned()],
        off: vec![true],
    };
    index.scored(query).first().map_or(0.0, |hit| hit.score)
}

/// The index as its parts and back, for the on-disk index of installed packs
/// (`crate::index`), which stores exactly what [`SearchIndex::build`] made, so a
/// query ranks the same from either.
impl SearchIndex {
    pub(crate) fn parts(&self) -> (&[(Box<str>, Postings)], &[String]) {
        (&self.words, &self.ids)
    }

    pub(crate) fn from_parts(words: Vec<(Box<str>, Postings)>, ids: Vec<String>, off: Vec<bool>) -> Self {
        Self { words, ids, off }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Origin, parse_pack};

    fn pack(id: &str, keywords: &[&str], description: &str, summary: &str, body: &str) -> Pack {
        let manifest = serde_json::json!({
            "hcp": 1, "id": id, "version": "1.0.0", "description": description, "keywords": keywords,
            "bin": ["tool"], "commands": { "run": { "summary": summary, "effect": "read", "argv": [] } }
        });
        let skill = format!("---\nname: {id}\ndescription: {description}\n---\n{body}\n");
        let (manifest, skill) = parse_pack(&manifest.to_string(), Some(&skill), |_| None).unwrap();
        Pack {
            manifest: manifest.into(),
            skill: skill.into(),
            origin: Origin::Builtin { bin: None },
        }
    }

    fn ranked(packs: &[Pack], query: &str) -> Vec<String> {
        let index = SearchIndex::build(packs);
        index
            .search(query, 10)
            .iter()
            .map(|hit| packs[hit.index].manifest.id.clone())
            .collect()
    }

    fn fixture() -> Vec<Pack> {
        vec![
            pack(
                "atlas",
                &["maps"],
                "World maps",
                "Show a map",
                "Mentions a journey once.",
            ),
            pack("journey", &["trips"], "Trip diary", "Write an entry", "Diary."),
            pack("ride", &["journey"], "Ride sharing", "Book a ride", "Cars."),
            pack(
                "trainline",
                &["rail"],
                "Plan a journey by train",
                "Search trains",
                "Rail.",
            ),
            pack("walker", &["hike"], "Walks", "List walks", "Walks."),
        ]
    }

    #[test]
    fn id_then_keyword_then_description_then_skill() {
        assert_eq!(
            ranked(&fixture(), "journey"),
            ["journey", "ride", "trainline", "atlas"]
        );
    }

    #[test]
    fn prefix_hits_count_less_than_whole_words() {
        let packs = vec![
            pack("aa", &["journeys"], "x", "x", "x"),
            pack("bb", &["journey"], "x", "x", "x"),
        ];
        assert_eq!(ranked(&packs, "journey"), ["bb", "aa"]);
    }

    #[test]
    fn more_terms_matched_rank_higher() {
        assert_eq!(ranked(&fixture(), "train journey")[0], "trainline");
    }

    #[test]
    fn ties_keep_id_order() {
        let packs = vec![
            pack("b", &["same"], "x", "x", "x"),
            pack("a", &["same"], "x", "x", "x"),
        ];
        let mut sorted = packs.clone();
        sorted.sort_by(|x, y| x.manifest.id.cmp(&y.manifest.id));
        assert_eq!(ranked(&sorted, "same"), ["a", "b"]);
    }

    #[test]
    fn empty_query_lists_all_in_id_order_within_limit() {
        let packs = fixture();
        let index = SearchIndex::build(&packs);
        let all: Vec<usize> = index.search("  ", 3).iter().map(|hit| hit.index).collect();
        assert_eq!(all, [0, 1, 2]);
    }

    #[test]
    fn no_match_is_empty_and_limit_applies() {
        assert!(ranked(&fixture(), "zebra").is_empty());
        let index = SearchIndex::build(&fixture());
        assert_eq!(index.search("a", 2).len(), 2);
    }

    /// A pack that only mentions the word in its skill text does not pad a list
    /// led by packs named for it; it is counted as hidden instead.
    #[test]
    fn weak_matches_fall_below_the_floor() {
        let index = SearchIndex::build(&fixture());
        let ranked = index.rank("journey", 10);
        let ids: Vec<&str> = ranked.hits.iter().map(|hit| fixture_id(hit.index)).collect();
        assert_eq!(ids, ["journey", "ride", "trainline"]);
        assert_eq!(ranked.below_floor, 1, "atlas mentions it only in its skill text");
        // `search` keeps every match.
        assert_eq!(index.search("journey", 10).len(), 4);
        // When every match is weak, the best of them still shows...
        let only = index.rank("once", 10);
        assert_eq!((only.hits.len(), only.below_floor), (1, 0));
        // ...unless it is a lone prefix hit in a skill text.
        let prefix = index.rank("onc", 10);
        assert_eq!((prefix.hits.len(), prefix.below_floor), (0, 1));
        // An empty query lists every pack; the limit still applies.
        let all = index.rank("", 2);
        assert_eq!((all.hits.len(), all.below_floor), (2, 0));
    }

    fn fixture_id(index: usize) -> &'static str {
        ["atlas", "journey", "ride", "trainline", "walker"][index]
    }

    /// A registry package scores as a pack with the same id, keywords and
    /// description would.
    #[test]
    fn a_registry_entry_scores_as_the_same_pack_would() {
        let packs = vec![pack("rt", &["bus", "journey"], "Plan a journey by bus", "x", "")];
        let index = SearchIndex::build(&packs);
        for query in ["journey", "bus", "rt", "plan journ", "zebra", ""] {
            let local = index.search(query, 1).first().map_or(0.0, |hit| hit.score);
            let keywords = ["bus".to_owned(), "journey".to_owned()];
            let description = "Plan a journey by bus";
            let entry = score_entry(query, "rt", &keywords, description);
            // The pack's skill and command text add to its score; these words are in neither.
            assert_eq!(entry, local, "{query}");
        }
        assert_eq!(score_entry("weather", "hcpx-pack-weather", &[], ""), 10.0);
    }

    /// Of two packs that match equally, the one that runs comes first; a catalog
    /// pack that is not installed still ranks by its score above weaker ones.
    #[test]
    fn an_installed_pack_ranks_above_an_uninstalled_one_that_matches_equally() {
        let off = |mut pack: Pack| {
            pack.origin = Origin::Catalog;
            pack
        };
        let packs = vec![
            off(pack("aaa", &["finder"], "x", "x", "x")),
            pack("bbb", &["finder"], "x", "x", "x"),
            off(pack("ccc", &["finder", "files"], "x", "x", "x")),
            pack("ddd", &["files"], "x", "x", "x"),
        ];
        assert_eq!(ranked(&packs, "finder"), ["bbb", "aaa", "ccc"]);
        assert_eq!(ranked(&packs, "finder files"), ["ccc", "bbb", "ddd", "aaa"]);
        // Every pack: those that run, then the others, each in id order.
        assert_eq!(ranked(&packs, ""), ["bbb", "ddd", "aaa", "ccc"]);
    }

    #[test]
    fn case_and_punctuation_do_not_matter() {
        assert_eq!(ranked(&fixture(), "JOURNEY!")[0], "journey");
    }
}
