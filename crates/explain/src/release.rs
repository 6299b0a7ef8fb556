//! The leak check by readings: what did not come back after every buffer was
//! released, and what rounds (and their control) say about it: a cache the runtime
//! reuses, a leak that grows, or freed heap the C library keeps.

use crate::claim::{Alternative, Claim, Range, Topic};
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

/// What the leak check by readings found, as statements: what stayed (none without a
/// reading after release), and the claim each resource's rounds make, where rounds ran.
pub fn release_statements(report: &Report) -> Vec<Statement> {
    let mut out: Vec<Statement> = release_statement(report).into_iter().collect();
    if let Some(round) = &report.leak_check.second_round {
        out.extend(kept_claims(round).into_iter().map(kept_statement));
    }
    out
}

/// A rounds claim as a statement.
pub(crate) fn kept_statement(claim: Claim) -> Statement {
    Statement::claim(
        "what each round added, released in full, beside the C library's heap",
        "",
        claim,
    )
}

fn release_statement(report: &Report) -> Option<Statement> {
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
        let held = match report.samples.last().map_or(0, Sample::live) {
            0 => "with no buffer held at the end".to_owned(),
            n => format!("after all {n} buffers held at the end were released"),
        };
        return Some(Statement::measured(format!(
            "{held}, every reading came back to its start (within {:.0}% of its growth, {} or {} for counts)",
            RETURN_SHARE * 100.0,
            format_bytes(RETURN_BYTES),
            RETURN_COUNT,
        )));
    }
    let parts: Vec<String> = check.not_returned.iter().map(words::not_returned).collect();
    let mut detail = parts.join("; ");
    detail.push_str(&trim_words(report));
    match (&check.second_round, report.scenario.allocation.release_every) {
        (Some(round), _) => detail.push_str(&rounds_words(round)),
        (None, Some(every)) => detail.push_str(&own_rounds_words(report, every)),
        (None, None) => detail.push_str("; a second round (allocation.release_every) tells a cache it reuses from a leak that grows"),
    }
    Some(
        Statement::measured(format!(
            "every release call succeeded, yet {} stayed above the start after release",
            kept_list(&check.not_returned)
        ))
        .with_detail(detail),
    )
}

/// What stayed after release, each with how much: `host RSS 12.85 MiB, open fds 3`.
pub(crate) fn kept_list(kept: &[NotReturned]) -> String {
    kept.iter()
        .map(|n| {
            format!(
                "{} {}",
                n.resource.label(),
                n.resource.unit().format(n.after - n.before)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
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
/// resource, what each round added and the claim that makes (a cache, a leak, one
/// that stopped, with what the rounds cannot tell apart); host memory split by who
/// holds it; the one-device control.
pub(crate) fn rounds_words(round: &SecondRound) -> String {
    if round.readings.is_empty() {
        return format!(
            "; rounds could not tell a cache from a leak ({})",
            round.experiment.stop
        );
    }
    let rounds: Vec<String> = round
        .readings
        .iter()
        .filter(|r| r.resource != Resource::HeapFree)
        .map(above_words)
        .collect();
    let mut out = format!(
        "; in {} rounds of {} buffers, each released in full: {}",
        round.readings[0].after_rounds.len(),
        round.experiment.change.to,
        rounds.join("; ")
    );
    out.push_str(&holders_words(&round.readings));
    if let Some(control) = &round.control {
        out.push_str(&control_words(round, control));
    }
    out
}

/// The claims the rounds make, one per resource (the C library's kept-free heap is
/// part of the split, not a claim of its own).
pub(crate) fn kept_claims(round: &SecondRound) -> Vec<Claim> {
    let find = |r: Resource| round.readings.iter().find(|x| x.resource == r);
    let heap = find(Resource::HeapInUse).zip(find(Resource::HeapFree));
    round
        .readings
        .iter()
        .filter(|r| r.resource != Resource::HeapFree)
        .map(|r| {
            let mut claim = kept_claim(r);
            if let (Some(heap), Unit::Bytes, false) =
                (heap, r.resource.unit(), r.resource == Resource::HeapInUse)
            {
                weigh_freed_heap(&mut claim, r, heap);
            }
            claim
        })
        .collect()
}

/// Memory growing over the rounds set against the C library's heap: growth its
/// kept-free heap accounts for is freed memory it keeps and fragments, not a leak;
/// growth its live allocations or anything outside its heap account for is. Adds the
/// freed-heap alternative and judges both by what each accounts for.
fn weigh_freed_heap(
    claim: &mut Claim,
    r: &RoundReadings,
    (in_use, free): (&RoundReadings, &RoundReadings),
) {
    let g = growth(r);
    if g <= r.tolerance {
        return;
    }
    let (g_free, g_in) = (growth(free).max(0.0), growth(in_use).max(0.0));
    let held = (g - g_free).max(0.0);
    let said = format!(
        "over the rounds it grew {}: the C library's kept-free heap {}, its live allocations {}, the rest (outside its heap) {}",
        format_bytes(g),
        format_bytes(g_free),
        format_bytes(g_in),
        format_bytes((held - g_in).max(0.0))
    );
    let mut freed = Alternative::new(
        "freed-heap",
        "the C library's freed heap, kept and fragmenting (no live allocation holds it: not a leak)",
    );
    freed = if g_free >= 0.5 * g {
        freed.supported(said.clone())
    } else if g_free < 0.1 * g {
        freed.excluded(said.clone())
    } else {
        freed.open(said.clone())
    };
    let rounds = r.after_rounds.len().max(2) as f64 - 1.0;
    for a in &mut claim.alternatives {
        if a.key == "leak" && !a.is_excluded() {
            a.words = "live allocations or mappings that grow every round (a leak)".into();
            // What neither the freed heap nor noise accounts for: too little for a
            // leak that shows, but one under the noise stays possible.
            if held / rounds <= r.tolerance {
                *a = a
                    .clone()
                    .over(Range::between(0.0, r.tolerance))
                    .open(format!(
                        "{said}: a leak under {} a round would not show",
                        format_bytes(r.tolerance)
                    ));
            }
        }
    }
    claim.alternatives.push(freed);
}

/// `host RSS 1.00 MiB, 2.00 MiB above its start after each round`.
fn above_words(r: &RoundReadings) -> String {
    let unit = r.resource.unit();
    format!(
        "{} {} above its start after each round (each round added {})",
        r.resource.label(),
        r.after_rounds
            .iter()
            .map(|a| unit.format(a - r.before))
            .collect::<Vec<_>>()
            .join(", "),
        signed_list(unit, &r.increments())
    )
}

/// What one resource's rounds say: reused, grew and stopped, grows every round, or
/// grows unevenly; each with what the same readings would also fit (a leak that
/// stopped after the first round reads as a cache; one smaller than the noise shows
/// nothing; one that will stop after these rounds reads as a leak).
pub(crate) fn kept_claim(r: &RoundReadings) -> Claim {
    let unit = r.resource.unit();
    let increments = r.increments();
    let said = Said {
        added: signed_list(unit, &increments),
        noise: unit.format(r.tolerance),
        rounds: r.after_rounds.len(),
        tolerance: r.tolerance,
    };
    let gave_back = increments.iter().any(|d| *d < -r.tolerance);
    let flat = increments.iter().all(|d| *d <= r.tolerance);
    Claim::new(
        Topic::Kept,
        format!("what {} kept after release", r.resource.label()),
        evolution(r.kept(), gave_back, flat, &said),
    )
}

/// What the rounds added, in words, for the claim's evidence.
struct Said {
    added: String,
    noise: String,
    rounds: usize,
    tolerance: f64,
}

/// How memory kept after release may evolve over rounds.
fn evolutions() -> [Alternative; 4] {
    [
        Alternative::new("reused", "kept once and reused by later rounds (a cache)"),
        Alternative::new(
            "stopped",
            "grew for some rounds, then stopped (a cache that filled, or a leak that stopped)",
        ),
        Alternative::new("leak", "grows every round (a leak)"),
        Alternative::new("filling", "a cache still filling past these rounds"),
    ]
}

/// The alternatives of a resource's rounds, judged by how they grew.
fn evolution(kept: Kept, gave_back: bool, flat: bool, s: &Said) -> Vec<Alternative> {
    let [reused, stopped, leak, filling] = evolutions();
    // A leak under the noise adds nothing these readings see.
    let small_leak = leak
        .clone()
        .over(Range::between(0.0, s.tolerance))
        .open(format!("a leak under {} a round would not show", s.noise));
    let (added, noise) = (&s.added, &s.noise);
    match kept {
        Kept::TooFew => {
            let why = format!("only {} rounds ran (each added {added})", s.rounds);
            vec![
                reused.open(why.clone()),
                stopped.open(why.clone()),
                leak.open(why.clone()),
                filling.open(why),
            ]
        }
        Kept::Leak => {
            let by = format!(
                "every round added about as much again ({added}), each beyond the {noise} noise"
            );
            let why = format!(
                "one that stops after these {} rounds would read the same",
                s.rounds
            );
            vec![
                reused.excluded(by.clone()),
                stopped.excluded(by.clone()),
                leak.supported(by),
                filling.open(why),
            ]
        }
        Kept::Reused if gave_back => {
            let by = format!("rounds gave memory back as well as took it ({added})");
            vec![
                reused.supported(by.clone()),
                stopped.excluded(by.clone()),
                small_leak,
                filling.excluded(by),
            ]
        }
        Kept::Reused if flat => {
            let by =
                format!("no round after the first added more than the {noise} noise ({added})");
            let why = "a leak that stopped after the first round reads the same";
            vec![
                reused.supported(by.clone()),
                stopped.open(why),
                small_leak,
                filling.excluded(by),
            ]
        }
        Kept::Reused => {
            let by = format!("rounds added {added}, the last ones no more than the {noise} noise");
            let not_reused =
                format!("rounds after the first added beyond the {noise} noise ({added})");
            vec![
                reused.excluded(not_reused),
                stopped.supported(by.clone()),
                small_leak,
                filling.excluded(by),
            ]
        }
        Kept::Settling => {
            let why = format!("rounds added unevenly, never giving back ({added})");
            vec![
                reused.excluded(why.clone()),
                stopped.open(why.clone()),
                leak.open(why.clone()),
                filling.open(why),
            ]
        }
    }
}

/// Who holds host memory kept after the last round, as measured: the C library's live
/// allocations, its freed heap, and the rest outside its heap (what the runtime or a
/// layer mapped itself, or pages of files it loaded).
fn holders_words(readings: &[RoundReadings]) -> String {
    let find = |r: Resource| readings.iter().find(|x| x.resource == r);
    let (Some(rss), Some(in_use)) = (find(Resource::HostRss), find(Resource::HeapInUse)) else {
        return String::new();
    };
    let last = |r: &RoundReadings| r.after_rounds.last().map_or(0.0, |a| a - r.before).max(0.0);
    let free = find(Resource::HeapFree).map_or(0.0, last);
    let kept = last(rss);
    let outside = (kept - last(in_use) - free).max(0.0);
    format!(
        "; of the {} of RSS above the start after the last round, the C library's live allocations hold {}, it keeps {} of freed heap (resident or not), and at least {} is outside its heap (memory the runtime or a layer mapped itself, or pages of files it loaded)",
        format_bytes(kept),
        format_bytes(last(in_use)),
        format_bytes(free),
        format_bytes(outside)
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
    let kept = check
        .not_returned
        .iter()
        .find(|n| n.resource == Resource::HostRss);
    let (Some(trim), Some(kept)) = (check.after_trim, kept) else {
        return match (kept, check.after_release.heap_in_use_bytes) {
            (Some(_), None) => format!(
                "; whether it is freed heap the C library keeps, live allocations or memory outside its heap, the C library's heap after release and a trim tell: they are read in full mode ({}=full, as a diagnosis's replicate runs)",
                clmulti_contract::trace::MODE
            ),
            _ => String::new(),
        };
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
