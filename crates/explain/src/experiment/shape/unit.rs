//! Buffers, bytes, or bytes charged in granules: the failing case at three more
//! buffer sizes, one of them not a power of two. Each model predicts a failing count at
//! each size; a model is ruled out by a size it misses. Granules coarser than every
//! size tried charge each buffer one granule and look like a count of buffers: that
//! stays open, said with the smallest granule that would still fit.

use super::{change, finding, no_answer, run, Noise, Ran, Reached, Runner};
use crate::claim::{Alternative, Claim, Range};
use crate::report::Report;
use crate::verdict::{Knob, ShapeFinding, ShapeQuestion};
use clmulti_scenario::format_size;

const SUBJECT: &str = "what the limit counts";

/// The sizes tried beside the failing one: two, three and four times it (granules up
/// to four times show), or a half, three quarters and a quarter when those do not fit
/// the devices' largest allocation.
fn sizes(size: u64, max_alloc: u64) -> Vec<u64> {
    if size.saturating_mul(4) <= max_alloc {
        vec![size * 2, size * 3, size * 4]
    } else {
        [size / 2, size * 3 / 4, size / 4]
            .into_iter()
            .filter(|s| *s >= 1)
            .collect()
    }
}

/// Bytes a buffer of `size` is charged in granules of `granule`.
fn charged(size: u64, granule: f64) -> f64 {
    (size as f64 / granule).ceil() * granule
}

/// The granules tried: every multiple of 4 KiB up to twice the largest size (a
/// granule of 192 KiB is as likely as one of 256 KiB), then doubling to well past it.
fn granules(largest: u64) -> impl Iterator<Item = f64> {
    let step = 4096.0_f64.max((2 * largest) as f64 / 4096.0).round();
    let fine = (1..=4096)
        .map(move |k| k as f64 * step)
        .take_while(move |g| *g <= 2.0 * largest as f64);
    let coarse = (2..=4).map(move |k| 2f64.powi(k) * largest as f64);
    fine.chain(coarse)
}

pub(super) fn ask(report: &Report, runner: &mut dyn Runner, noise: Noise) -> ShapeFinding {
    let q = ShapeQuestion::CountOrBytes;
    let n = report.buffers;
    let size = report.scenario.allocation.size_bytes;
    let max_alloc = report
        .devices
        .iter()
        .filter_map(|d| d.max_alloc_bytes.value().copied())
        .min()
        .unwrap_or(u64::MAX);
    let tried = sizes(size, max_alloc);
    if tried.is_empty() || n < 2 {
        return super::unasked(
            q,
            "no other buffer size fits the devices' largest allocation",
        );
    }
    let mut points: Vec<(u64, Reached)> = Vec::new();
    let mut ran: Vec<Ran> = Vec::new();
    for s in tried {
        // Room for every answer: the same count, or the same bytes.
        let asked = super::super::allowance(n.max(n.saturating_mul(size) / s));
        let r = run(
            report,
            runner,
            noise,
            change(Knob::BufferSize, size, s),
            &[],
            asked,
        );
        points.extend(r.count(n, noise).map(|reached| (s, reached)));
        ran.push(r);
    }
    let buffers = Alternative::new("buffers", "buffers");
    let bytes = Alternative::new("bytes", "bytes");
    if points.len() < 2 {
        let coarse = Alternative::new("granules", "bytes in granules");
        return no_answer(q, SUBJECT, vec![buffers, bytes, coarse], &ran);
    }
    let seen = points
        .iter()
        .map(|(s, r)| format!("{}: {}", format_size(*s), r.words()))
        .collect::<Vec<_>>()
        .join(", ");
    let models = Models {
        n,
        size,
        points: &points,
        noise,
    };
    let seen = format!("{}: failed at {n}, {seen}", format_size(size));
    let judge = |a: Alternative, fit: bool| {
        if fit {
            a.supported(seen.clone())
        } else {
            a.excluded(seen.clone())
        }
    };
    let nf = n as f64;
    let alternatives = vec![
        judge(buffers, models.fits(&|_| nf)),
        judge(bytes, models.fits(&|s| nf * size as f64 / s as f64)),
        models.granules(&seen),
    ];
    finding(q, Claim::new(q.topic(), SUBJECT, alternatives), &ran)
}

/// The counts the runs reached, set against what each model predicts at each size
/// from the failing count at the failing size.
struct Models<'a> {
    n: u64,
    size: u64,
    points: &'a [(u64, Reached)],
    noise: Noise,
}

impl Models<'_> {
    fn fits(&self, predict: &dyn Fn(u64) -> f64) -> bool {
        self.points
            .iter()
            .all(|(s, r)| r.fits(predict(*s), self.noise))
    }

    /// What a granule of `g` predicts at size `s`.
    fn by_granule(&self, g: f64, s: u64) -> f64 {
        self.n as f64 * charged(self.size, g) / charged(s, g)
    }

    /// A granule that charges every size in the same proportion to its bytes gives
    /// the counts bytes give; one whose counts are those of bytes within the noise at
    /// every size tried is bytes as far as these runs see. Neither is a model of its own.
    fn distinct(&self, g: f64, sizes: &[u64]) -> bool {
        let ratios = sizes.iter().map(|s| charged(*s, g) / *s as f64);
        let (low, high) = ratios.fold((f64::MAX, 0.0f64), |(l, h), r| (l.min(r), h.max(r)));
        let like_bytes = self.points.iter().all(|(s, _)| {
            let by_granule = self.by_granule(g, *s).round() as u64;
            let by_bytes = (self.n as f64 * self.size as f64 / *s as f64).round() as u64;
            // Within the tolerance either way round: what `fits` allows a point.
            super::super::near(by_granule, by_bytes, self.noise)
                || super::super::near(by_bytes, by_granule, self.noise)
        });
        high > 1.05 * low && !like_bytes
    }

    /// The granules that fit every size, as one alternative with their range (past
    /// the largest size every buffer is one granule: unbounded above).
    fn granules(&self, seen: &str) -> Alternative {
        let sizes: Vec<u64> = std::iter::once(self.size)
            .chain(self.points.iter().map(|p| p.0))
            .collect();
        let largest = sizes.iter().copied().max().unwrap_or(self.size);
        let fitting: Vec<f64> = granules(largest)
            .filter(|g| self.distinct(*g, &sizes) && self.fits(&|s| self.by_granule(*g, s)))
            .collect();
        let (Some(low), Some(high)) = (fitting.first(), fitting.last()) else {
            return Alternative::new("granules", "bytes charged in granules").excluded(format!(
                "{seen}: no granule from 4 KiB to {} fits",
                format_size(16 * largest)
            ));
        };
        let range = if *high >= largest as f64 {
            Range::at_least(*low)
        } else {
            Range::between(*low, *high)
        };
        let bytes = |b: f64| clmulti_scenario::format_bytes(b);
        let words = match range.max {
            None => format!("bytes charged in granules of at least {}", bytes(*low)),
            Some(max) if max <= *low * 1.01 => {
                format!("bytes charged in granules of about {}", bytes(*low))
            }
            Some(max) => format!(
                "bytes charged in granules of {} to {}",
                bytes(*low),
                bytes(max)
            ),
        };
        Alternative::new("granules", words)
            .over(range)
            .supported(seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granules_of_two_sizes_charge_one_and_two_buffers_alike() {
        let mib = 1048576.0;
        assert_eq!(charged(1 << 20, 2.0 * mib), 2.0 * mib);
        assert_eq!(charged(2 << 20, 2.0 * mib), 2.0 * mib);
        assert_eq!(charged(3 << 20, 2.0 * mib), 4.0 * mib);
        assert_eq!(sizes(1 << 20, 1 << 30), vec![2 << 20, 3 << 20, 4 << 20]);
        assert_eq!(sizes(1 << 20, 2 << 20), vec![1 << 19, 3 << 18, 1 << 18]);
    }
}
