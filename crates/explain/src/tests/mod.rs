//! The reasoning over hand-built reports: no OpenCL, no child process, milliseconds.

mod analysis;
mod diagnosis;
mod experiment;
mod reproduction;
mod rigor;
mod rounds;
mod time_or_count;

/// Every statement of a report's analysis, one a line, each with its evidence on the
/// next.
fn text(r: &crate::Report) -> String {
    r.analysis
        .statements
        .iter()
        .map(|s| match &s.detail {
            Some(d) => format!("{s}\n  evidence: {d}\n"),
            None => format!("{s}\n"),
        })
        .collect()
}

/// What a shape question's claim left: the keys of the alternatives no experiment
/// ruled out, in order, each once (`None` when it was not asked).
fn left(r: &crate::Report, question: crate::verdict::ShapeQuestion) -> Option<Vec<String>> {
    let claim = r
        .analysis
        .shape
        .iter()
        .find(|f| f.question == question)?
        .claim
        .as_ref()?;
    let mut keys: Vec<String> = claim.remaining().iter().map(|a| a.key.clone()).collect();
    keys.dedup();
    Some(keys)
}

/// `Some(["a", "b"])`.
fn keys(keys: &[&str]) -> Option<Vec<String>> {
    Some(keys.iter().map(|k| (*k).to_owned()).collect())
}

/// Every claim of a report names what it leaves: its sentence holds the words of each
/// alternative no experiment ruled out, and it names no mechanism it ruled out as the
/// only one left.
fn assert_claims_name_what_is_left(r: &crate::Report) {
    for claim in r.analysis.claims() {
        let sentence = claim.sentence();
        for a in claim.remaining() {
            assert!(
                sentence.contains(&a.words),
                "{sentence}\n leaves `{}` unnamed",
                a.words
            );
        }
    }
}
