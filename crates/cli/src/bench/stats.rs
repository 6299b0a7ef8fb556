//! The bench's statistics: the median ratio's distribution-free interval, the
//! verdict it gives, and how many rounds an unresolved one would need.

use super::{Verdict, CONFIDENCE, MAX_ROUNDS};

/// log(n choose k).
fn ln_choose(n: u64, k: u64) -> f64 {
    (1..=k).map(|i| ((n - k + i) as f64 / i as f64).ln()).sum()
}

/// The distribution-free interval of the median of `sorted` (ascending): order
/// statistics k and n + 1 - k, with the largest k whose coverage, 1 - 2 P(B < k)
/// for B ~ Binomial(n, 1/2), is at least `confidence`; with that coverage. `None`
/// when even the extremes cover less (n < 6 at 95%).
pub(super) fn median_interval(sorted: &[f64], confidence: f64) -> Option<(f64, f64, f64)> {
    let n = sorted.len() as u64;
    let below = |k: u64| -> f64 {
        // P(B <= k - 1)
        (0..k)
            .map(|i| (ln_choose(n, i) - n as f64 * 2f64.ln()).exp())
            .sum()
    };
    let mut best = None;
    for k in 1..=n.div_ceil(2) {
        let coverage = 1.0 - 2.0 * below(k);
        if coverage >= confidence {
            best = Some((k, coverage));
        } else {
            break;
        }
    }
    best.map(|(k, coverage)| (sorted[k as usize - 1], sorted[(n - k) as usize], coverage))
}

pub(super) fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// About how many rounds would resolve an unresolved verdict: the interval's half-width
/// shrinks as one over the root of the rounds, and must come within the median's
/// distance from the target. `None` when the median sits on the target (no number of
/// rounds resolves it, as far as these tell) or past [`MAX_ROUNDS`].
pub(super) fn rounds_needed(sorted: &[f64], target: f64) -> Option<u32> {
    let n = sorted.len();
    let median = median(sorted);
    let distance = (median - target).abs();
    let half_width = match median_interval(sorted, CONFIDENCE) {
        Some((low, high, _)) => (high - low) / 2.0,
        // Fewer than 6 rounds: the extremes stand in for the interval.
        None => (sorted[n - 1] - sorted[0]) / 2.0,
    };
    if distance <= 0.0 {
        return None;
    }
    let needed = (n.max(6) as f64 * (half_width / distance).powi(2)).ceil();
    (needed <= f64::from(MAX_ROUNDS)).then(|| (needed as u32).max(n as u32 + 1))
}

pub(super) fn verdict(interval: Option<(f64, f64, f64)>, target: f64) -> Verdict {
    match interval {
        Some((low, _, _)) if low >= target => Verdict::Met,
        Some((_, high, _)) if high < target => Verdict::NotMet,
        _ => Verdict::NotResolved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_uses_the_order_statistics_that_cover_95_percent() {
        let sorted: Vec<f64> = (1..=11).map(f64::from).collect();
        // n = 11: P(B <= 1) = 12/2048, so k = 2 covers 98.8%; k = 3 only 93.5%.
        let (low, high, coverage) = median_interval(&sorted, 0.95).unwrap();
        assert_eq!((low, high), (2.0, 10.0));
        assert!((coverage - (1.0 - 24.0 / 2048.0)).abs() < 1e-12);
        // n = 6: only the extremes, 96.9%; n = 5: none.
        let (low, high, _) = median_interval(&sorted[..6], 0.95).unwrap();
        assert_eq!((low, high), (1.0, 6.0));
        assert!(median_interval(&sorted[..5], 0.95).is_none());
        assert_eq!(median(&sorted[..6]), 3.5);
    }

    #[test]
    fn rounds_needed_grow_as_the_square_of_spread_over_distance() {
        // 11 rounds, median 1.00, interval 0.90 to 1.10: half-width 0.10 against a
        // distance of 0.05 from 0.95 asks four times the rounds.
        let mut sorted: Vec<f64> = (0..11).map(|i| 0.9 + 0.02 * f64::from(i)).collect();
        sorted.sort_by(f64::total_cmp);
        let (low, high, _) = median_interval(&sorted, CONFIDENCE).unwrap();
        let half = (high - low) / 2.0;
        let expected = (11.0 * (half / 0.05_f64).powi(2)).ceil() as u32;
        assert_eq!(rounds_needed(&sorted, 0.95), Some(expected));
        assert!(expected > 11);
        // A median on the target: no number of rounds tells.
        assert_eq!(rounds_needed(&sorted, 1.0), None);
    }

    #[test]
    fn the_verdict_is_resolved_only_when_the_interval_clears_the_target() {
        assert_eq!(verdict(Some((0.96, 1.02, 0.98)), 0.95), Verdict::Met);
        assert_eq!(verdict(Some((0.80, 0.94, 0.98)), 0.95), Verdict::NotMet);
        assert_eq!(
            verdict(Some((0.90, 1.00, 0.98)), 0.95),
            Verdict::NotResolved
        );
        assert_eq!(verdict(None, 0.95), Verdict::NotResolved);
    }
}
