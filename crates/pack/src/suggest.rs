//! "Did you mean": the declared names closest to a mistyped one (a command, a
//! parameter key, a pack in a policy rule). Pure; the callers word the hint.

/// How alike two names must be (Jaro-Winkler) to be suggested on that alone.
const MIN_SIMILARITY: f64 = 0.7;

/// Edits (insert, delete, change, swap two neighbours) within which a name is
/// suggested however short: `lgo` is one swap from `log`, though too short for
/// Jaro-Winkler to find them alike. One edit per four characters, at least one.
fn max_edits(wanted: &str) -> usize {
    (wanted.chars().count() / 4).max(1)
}

/// Up to three of `candidates` closest to `wanted`, best first (fewest edits, then
/// most alike, then the candidates' order); none when nothing is alike.
pub fn closest<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let wanted = wanted.to_lowercase();
    let mut scored: Vec<(usize, f64, usize, &str)> = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(order, name)| {
            let other = name.to_lowercase();
            let edits = strsim::osa_distance(&wanted, &other);
            let mut similarity = strsim::jaro_winkler(&wanted, &other);
            if !wanted.is_empty() && (other.contains(&wanted) || wanted.contains(&other)) {
                similarity = similarity.max(0.85);
            }
            (edits <= max_edits(&wanted) || similarity >= MIN_SIMILARITY)
                .then_some((edits, similarity, order, name))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
    scored.into_iter().take(3).map(|(_, _, _, name)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn transpositions_and_near_misses_are_found() {
        let git = ["status", "log", "diff", "show", "commit", "push"];
        assert_eq!(closest("lgo", git), ["log"]);
        assert_eq!(closest("comit", git), ["commit"]);
        assert_eq!(closest("STATSU", git), ["status"]);
        assert_eq!(closest("frm", ["from", "to", "at"]), ["from"]);
        assert!(closest("zzzz", git).is_empty());
        assert!(closest("nope", ["text", "word", "count", "mode", "file", "rest"]).is_empty());
    }
}
