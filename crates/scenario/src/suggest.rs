//! "Did you mean": the known name a mistyped one is closest to, by edit distance
//! (a swap of two neighbours counts as one edit, `cuont` -> `count`), for unknown
//! keys, tables, words and `[env]` names.

/// The candidate `word` most likely meant, when one is close enough: the same in
/// another case, or within about one edit per four characters (at least one, at
/// most three). Ties go to the first candidate.
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let limit = (word.chars().count() / 4).clamp(1, 3);
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == word {
            return None;
        }
        let distance = edits(&lower, &candidate.to_lowercase());
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// `; did you mean `count`?`, or nothing.
pub(crate) fn hint<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates).map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

/// Edits between `a` and `b` (insert, delete, replace, swap neighbours: the optimal
/// string alignment distance), over characters.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (last[j] + 1).min(row[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_the_key_meant_and_a_stranger_finds_none() {
        let keys = ["size", "count", "flags", "release_every", "strategy"];
        assert_eq!(closest("cuont", keys), Some("count"));
        assert_eq!(closest("sizee", keys), Some("size"));
        assert_eq!(closest("Size", keys), Some("size"));
        assert_eq!(closest("relase_every", keys), Some("release_every"));
        assert_eq!(closest("strategie", keys), Some("strategy"));
        assert_eq!(closest("colour", keys), None);
        assert_eq!(closest("size", keys), None);
        assert_eq!(hint("flag", keys), "; did you mean `flags`?");
        assert_eq!(edits("ab", "ba"), 1);
        assert_eq!(edits("", "abc"), 3);
    }
}
