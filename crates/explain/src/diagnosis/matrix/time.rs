//! Time as a dimension across strategies: shared runs that failed at one time, far
//! apart in buffers.

use super::*;

/// Shared runs of different strategies that failed at about the same time and far
/// apart in buffers: a limit on time, not on buffers (inferred from their times).
pub(super) fn time_across_strategies(matrix: &Matrix<'_>) -> Option<Statement> {
    let failures: Vec<&Report> = matrix
        .strategies()
        .into_iter()
        .filter_map(|s| matrix.pick(Role::Shared, s))
        .filter(|r| matches!(r.stop, StopReason::Failed { .. }) && r.buffers > 0)
        .collect();
    if failures.len() < 2 {
        return None;
    }
    let seconds: Vec<f64> = failures.iter().map(|r| r.elapsed_seconds).collect();
    let (low, high) = seconds
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), s| (l.min(*s), h.max(*s)));
    let counts: Vec<u64> = failures.iter().map(|r| r.buffers).collect();
    let (fewest, most) = (
        *counts.iter().min().expect("two"),
        *counts.iter().max().expect("two"),
    );
    let same_time = high - low <= crate::thresholds::TIME_SHARE * high
        && low >= crate::thresholds::MIN_TIME_LIMIT_SECONDS;
    let apart = most > fewest.saturating_mul(3) / 2 + crate::thresholds::MIN_SLACK;
    (same_time && apart).then(|| {
        let each: Vec<String> = failures
            .iter()
            .map(|r| {
                format!(
                    "{} at {} buffers after {}",
                    r.scenario.allocation.strategy.name(),
                    r.buffers,
                    words::seconds(r.elapsed_seconds)
                )
            })
            .collect();
        Statement::inferred(
            "the shared runs' failure times and counts",
            format!(
                "the shared context's failure follows time, not buffers: {} (a time limit after about {})",
                each.join(", "),
                words::seconds((low + high) / 2.0)
            ),
        )
    })
}
