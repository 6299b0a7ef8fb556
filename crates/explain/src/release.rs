//! The leak check by readings: what did not come back after every buffer was
//! released, and what rounds (and their control) say about it: a cache the runtime
//! reuses, a leak that grows, or freed heap the C library keeps.

use crate::report::{Kept, NotReturned, Report, RoundReadings, RoundsControl, Sample, SecondRound};
use crate::resource::{Resource, Unit};
use crate::verdict::Statement;
use crate::words;
use clmulti_scenario::format_bytes;

/// After release, a reading counts as returned within this share of its growth...
pub const RETURN_SHARE: f64 = 0.10;
/// ...or within this many bytes (allocators keep a few MiB of freed heap)...
pub const RETURN_BYTES: f64 = 8.0 * 1024.0 * 1024.0;
/// ...or this many (descriptors, maps, threads).
pub const RETURN_COUNT: f64 = 2.0;

/// How far above `before` a reading may stay after release and still count as
/// returned: [`RETURN_SHARE`] of its growth, or [`RETURN_BYTES`] / [`RETURN_COUNT`].
pub fn return_tolerance(unit: Unit, growth: f64) -> f64 {
    let floor = match unit {
        Unit::Bytes => RETURN_BYTES,
        Unit::Count => RETURN_COUNT,
    };
    (growth * RETURN_SHARE).max(floor)
}

/// The leak check by readings: every resource that grew more than its tolerance
/// during the run must come back within it after release.
pub(crate) fn judge_release(report: &mut Report) {
    let check = &report.leak_check;
    let (Some(after), Some(first)) = (&check.after_release_sample, report.samples.first()) else {
        report.leak_check.clean = check.objects_released();
        return;
    };
    let host = &report.host_limits;
    let mut not_returned = Vec::new();
    for resource in Resource::all_in(&report.samples, &report.devices) {
        // System-wide figures move with every other process: not the run's to judge.
        if resource.system_wide() {
            continue;
        }
        let (Some(before), Some(after)) =
            (resource.reading(first, host), resource.reading(after, host))
        else {
            continue;
        };
        let peak = report
            .samples
            .iter()
            .filter_map(|s| resource.reading(s, host))
            .fold(before, f64::max);
        let tolerance = return_tolerance(resource.unit(), peak - before);
        if peak - before > tolerance && after - before > tolerance {
            not_returned.push(NotReturned {
                resource,
                before,
                peak,
                after,
                tolerance,
            });
        }
    }
    report.leak_check.clean = report.leak_check.objects_released() && not_returned.is_empty();
    report.leak_check.not_returned = not_returned;
}

/// What the leak check by readings found, as one statement (none without a reading
/// after release).
pub fn release_statement(report: &Report) -> Option<Statement> {
    let check = &report.leak_check;
    check.after_release_sample.as_ref()?;
    if !check.objects_released() {
        return Some(Statement::measured(format!(
            "release: {} of {} buffers, {} of {} contexts released{}",
            check.buffers_released,
            check.buffers_created,
            check.contexts_released,
            check.contexts_created,
            check
                .release_errors
                .first()
                .map_or(String::new(), |e| format!("; first error: {e}"))
        )));
    }
    if check.not_returned.is_empty() {
        return Some(Statement::measured(format!(
            "after all {} buffers held at the end were released, every reading came back to its start (within {:.0}% of its growth, {} or {} for counts)",
            report.samples.last().map_or(0, Sample::live),
            RETURN_SHARE * 100.0,
            format_bytes(RETURN_BYTES),
            RETURN_COUNT,
        )));
    }
    let parts: Vec<String> = check.not_returned.iter().map(words::not_returned).collect();
    let mut out = format!(
        "every release call succeeded, yet {}: what the runtime (or a layer) keeps after release",
        parts.join("; ")
    );
    out.push_str(&trim_words(report));
    match (&check.second_round, report.scenario.allocation.release_every) {
        (Some(round), _) => out.push_str(&rounds_words(round)),
        (None, Some(every)) => out.push_str(&own_rounds_words(report, every)),
        (None, None) => out.push_str("; a second round (allocation.release_every) tells a cache it reuses from a leak that grows"),
    }
    Some(Statement::measured(out))
}

/// What a run's own release rounds read right after each release, for the
/// resources that did not come back.
fn own_rounds_words(report: &Report, every: u64) -> String {
    let after_releases: Vec<&Sample> = report
        .samples
        .iter()
        .filter(|s| s.live == Some(0) && s.allocations > 0)
        .collect();
    let readings: Vec<String> = report
        .leak_check
        .not_returned
        .iter()
        .filter_map(|n| {
            let unit = n.resource.unit();
            let after: Vec<String> = after_releases
                .iter()
                .filter_map(|s| n.resource.reading(s, &report.host_limits))
                .map(|v| unit.format(v - n.before))
                .collect();
            (!after.is_empty()).then(|| format!("{} {}", n.resource.label(), after.join(", ")))
        })
        .collect();
    if readings.is_empty() {
        return String::new();
    }
    format!(
        "; its own rounds (allocation.release_every = {every}) read, above the start, right after each release: {}",
        readings.join("; ")
    )
}

/// What the rounds of a run that kept memory after release found, as a clause: per
/// resource, what each round added and what that means; the C library's heap beside
/// host memory; the one-device control.
pub(crate) fn rounds_words(round: &SecondRound) -> String {
    if round.readings.is_empty() {
        return format!(
            "; rounds could not tell a cache from a leak ({})",
            round.experiment.stop
        );
    }
    let find = |r: Resource| round.readings.iter().find(|x| x.resource == r);
    let heap = find(Resource::HeapInUse).zip(find(Resource::HeapFree));
    let rounds: Vec<String> = round
        .readings
        .iter()
        .filter(|r| r.resource != Resource::HeapFree)
        .map(|r| round_words(r, heap))
        .collect();
    let mut out = format!(
        "; in {} rounds of {} buffers, each released in full: {}",
        round.readings[0].after_rounds.len(),
        round.experiment.change.to,
        rounds.join("; ")
    );
    out.push_str(&allocator_words(&round.readings));
    if let Some(control) = &round.control {
        out.push_str(&control_words(round, control));
    }
    out
}

/// One resource over the rounds; memory that grows is set against the C library's
/// heap (in use, kept free) where it was read.
fn round_words(r: &RoundReadings, heap: Option<(&RoundReadings, &RoundReadings)>) -> String {
    let unit = r.resource.unit();
    let above: Vec<f64> = r.after_rounds.iter().map(|a| a - r.before).collect();
    let added = signed_list(unit, &r.increments());
    let noise = unit.format(r.tolerance);
    let meaning = match r.kept() {
        Kept::Leak | Kept::Settling if fragments(r, heap) => format!(
            "rounds added {added} while the C library's live allocations grew less than a quarter of that and its kept-free heap at least half as much: freed heap the C library keeps and fragments, not a leak of live allocations"
        ),
        Kept::TooFew => format!(
            "only {} rounds ran, too few to tell a cache from a leak (each round added {added})",
            r.after_rounds.len()
        ),
        Kept::Reused if r.increments().iter().any(|d| *d < -r.tolerance) => format!(
            "rounds gave memory back as well as took it ({added}): reused, a cache, however single rounds swing"
        ),
        Kept::Reused => format!(
            "the last rounds added no more than the {noise} noise ({added}): reused, a cache (a leak under {noise} a round would not show)"
        ),
        Kept::Settling => format!(
            "rounds added unevenly, never giving back ({added}): not a steady leak, not yet a settled cache"
        ),
        Kept::Leak => format!(
            "every round added about as much again ({added}, each beyond the {noise} noise): it keeps growing, a leak"
        ),
    };
    format!(
        "{} {} above its start after each round: {meaning}",
        r.resource.label(),
        above
            .iter()
            .map(|v| unit.format(*v))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Signed values in a unit: `+1.00 MiB, -4.00 KiB`.
fn signed_list(unit: Unit, values: &[f64]) -> String {
    values
        .iter()
        .map(|v| {
            let sign = if *v < 0.0 { "-" } else { "+" };
            format!("{sign}{}", unit.format(v.abs()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a reading grew over the rounds, first to last.
fn growth(r: &RoundReadings) -> f64 {
    match r.after_rounds.as_slice() {
        [first, .., last] => last - first,
        _ => 0.0,
    }
}

/// Whether memory growing over the rounds is the C library's kept-free heap: its live
/// allocations grew less than a quarter as much, what it keeps free at least half.
fn fragments(r: &RoundReadings, heap: Option<(&RoundReadings, &RoundReadings)>) -> bool {
    let Some((in_use, free)) = heap else {
        return false;
    };
    if r.resource.unit() != Unit::Bytes || r.resource == Resource::HeapInUse {
        return false;
    }
    growth(in_use) < 0.25 * growth(r) && growth(free) >= 0.5 * growth(r)
}

/// The C library's part of what stayed after the last round: live allocations, and
/// the freed heap it keeps.
fn allocator_words(readings: &[RoundReadings]) -> String {
    let find = |r: Resource| readings.iter().find(|x| x.resource == r);
    let (Some(rss), Some(in_use)) = (find(Resource::HostRss), find(Resource::HeapInUse)) else {
        return String::new();
    };
    let last = |r: &RoundReadings| r.after_rounds.last().map_or(0.0, |a| a - r.before);
    if last(in_use) < 0.5 * last(rss) {
        let free = find(Resource::HeapFree).map_or(String::new(), |f| {
            format!(", and it keeps {} of freed heap", format_bytes(last(f)))
        });
        format!(
            "; of the {} of RSS above the start after the last round, the C library's live allocations hold {}{free}: most of what stays is not held by any live allocation",
            format_bytes(last(rss)),
            format_bytes(last(in_use).max(0.0))
        )
    } else {
        String::new()
    }
}

/// What the one-device control kept, against the run: each resource's growth per
/// round in both, set side by side.
fn control_words(round: &SecondRound, control: &RoundsControl) -> String {
    if control.readings.is_empty() {
        return format!(
            "; with one device (the control), the rounds ended: {}",
            control.experiment.stop
        );
    }
    let per_round = |r: &RoundReadings| growth(r) / (r.after_rounds.len().max(2) - 1) as f64;
    let parts: Vec<String> = round
        .readings
        .iter()
        .filter(|r| r.resource != Resource::HeapFree)
        .map(|r| {
            let unit = r.resource.unit();
            let Some(c) = control.readings.iter().find(|c| c.resource == r.resource) else {
                return format!("{} came back there", r.resource.label());
            };
            let (here, there) = (per_round(r), per_round(c));
            let meaning = if r.kept() != Kept::Leak {
                "the same question there"
            } else if there <= r.tolerance.max(0.25 * here) {
                "it does not grow there: the growth comes with sharing the context"
            } else if there >= 0.5 * here {
                "it grows there too: not a cost of sharing"
            } else {
                "it grows less there: part of the growth comes with sharing"
            };
            format!(
                "{} {} a round there against {} here ({meaning})",
                r.resource.label(),
                signed_list(unit, &[there]),
                signed_list(unit, &[here])
            )
        })
        .collect();
    format!("; with one device (the control): {}", parts.join(", "))
}

/// What `malloc_trim(0)` gave back after release, for host RSS that stayed up: freed
/// heap the C library kept, or memory live allocations still hold.
pub(crate) fn trim_words(report: &Report) -> String {
    let check = &report.leak_check;
    let (Some(trim), Some(kept)) = (
        check.after_trim,
        check
            .not_returned
            .iter()
            .find(|n| n.resource == Resource::HostRss),
    ) else {
        return String::new();
    };
    let stayed = kept.after - kept.before;
    let given = check.after_release.rss_bytes as f64 - trim.rss_bytes as f64;
    if given >= 0.5 * stayed {
        format!(
            "; malloc_trim(0) then gave back {} of the {} RSS that stayed: freed heap the C library kept, which no allocation holds",
            format_bytes(given.max(0.0)),
            format_bytes(stayed)
        )
    } else {
        format!(
            "; malloc_trim(0) then gave back only {} of the {} RSS that stayed: live allocations (or mappings outside the C library's heap) hold the rest",
            format_bytes(given.max(0.0)),
            format_bytes(stayed)
        )
    }
}
