//! How the limit depends on the devices in the context: the failing case with one and
//! two more devices, set against models of what each buffer costs (the same whatever
//! the devices; once per peer or per device; per peer or per device squared), and
//! each device alone (a limit only one device's contexts pay). Two device counts tell
//! a per-peer cost from one growing with the square only as far as their noise
//! allows; the models left are said.

use super::{change, finding, no_answer, run, Noise, Ran, Reached, Runner};
use crate::claim::{Alternative, Claim};
use crate::report::Report;
use crate::resource::Resource;
use crate::verdict::{Knob, ShapeFinding, ShapeQuestion};

const SUBJECT: &str = "how the limit depends on the devices in the context";

/// A model of what a buffer costs with `d` devices, relative to nothing: the cost
/// that makes the count fall (or a reading grow) with the devices.
struct Model {
    key: &'static str,
    words: &'static str,
    cost: fn(f64) -> f64,
}

const MODELS: [Model; 5] = [
    Model {
        key: "none",
        words: "the same whatever the devices",
        cost: |_| 1.0,
    },
    Model {
        key: "linear",
        words: "once per peer (each other device in the context)",
        cost: |d| d - 1.0,
    },
    Model {
        key: "linear-devices",
        words: "once per device in the context",
        cost: |d| d,
    },
    Model {
        key: "quadratic",
        words: "per peer squared",
        cost: |d| (d - 1.0) * (d - 1.0),
    },
    Model {
        key: "quadratic-devices",
        words: "per device squared",
        cost: |d| d * d,
    },
];

fn device_alternative() -> Alternative {
    Alternative::new(
        "device",
        "paid only by contexts that hold one particular device",
    )
}

/// What the device runs found: the counts at more devices, the device counts whose
/// run met a limit of its own (they say nothing here), and each device alone.
#[derive(Default)]
struct Curve {
    points: Vec<(u64, Reached)>,
    met: Vec<String>,
    alone: Vec<(u64, Reached)>,
    runs: Vec<Ran>,
}

fn curve(report: &Report, runner: &mut dyn Runner, noise: Noise, d: u64) -> Curve {
    let n = report.buffers;
    let mut c = Curve::default();
    for more in [1, 2] {
        let moved = change(Knob::Devices, d, d + more);
        let ran = run(
            report,
            runner,
            noise,
            moved,
            &[],
            super::super::allowance(n),
        );
        match (ran.count(n, noise), &ran.experiment.met) {
            (Some(r), _) => c.points.push((d + more, r)),
            (None, Some(m)) => c
                .met
                .push(format!("{} devices: met {} first", d + more, m.words())),
            (None, None) => {}
        }
        c.runs.push(ran);
    }
    // Each device alone: a limit one device's contexts pay fails there. Only a count
    // that stayed with more devices leaves one device's limit (or one every context
    // pays) beside the models; any other count rules both out already.
    let constant = c.points.iter().all(|(_, r)| r.fits(n as f64, noise));
    if !constant {
        return c;
    }
    for device in 0..d {
        let alone = change(Knob::OnlyDevice, d, device);
        let ran = run(
            report,
            runner,
            noise,
            alone,
            &[],
            super::super::allowance(n),
        );
        if let Some(r) = ran.count(n, noise) {
            c.alone.push((device, r));
        }
        c.runs.push(ran);
    }
    c
}

pub(super) fn ask(report: &Report, runner: &mut dyn Runner, noise: Noise) -> ShapeFinding {
    let q = ShapeQuestion::PerPeer;
    let n = report.buffers;
    let d = report.devices.len().max(report.scenario.devices.set.len()) as u64;
    if d < 2 {
        return super::unasked(q, "a single device has no peers");
    }
    let c = curve(report, runner, noise, d);
    let mut alternatives: Vec<Alternative> = MODELS
        .iter()
        .map(|m| Alternative::new(m.key, m.words))
        .collect();
    alternatives.push(device_alternative());
    if c.points.is_empty() && c.alone.is_empty() {
        return no_answer(q, SUBJECT, alternatives, &c.runs);
    }
    let seen = c
        .points
        .iter()
        .map(|(k, r)| format!("{k} devices: {}", r.words()))
        .chain(c.met.iter().cloned())
        .chain(
            c.alone
                .iter()
                .map(|(k, r)| format!("device {k} alone: {}", r.words())),
        )
        .collect::<Vec<_>>()
        .join(", ");
    let seen = format!("{d} devices: failed at {n}, {seen}");
    judge_models(&mut alternatives, &c, n, d, noise, &seen);
    finding(q, Claim::new(q.topic(), SUBJECT, alternatives), &c.runs)
}

/// Each cost model against the device counts and the runs alone; the one-device
/// alternative (last) against the runs alone.
fn judge_models(
    alternatives: &mut [Alternative],
    c: &Curve,
    n: u64,
    d: u64,
    noise: Noise,
    seen: &str,
) {
    let failed_alone = c
        .alone
        .iter()
        .filter(|(_, r)| matches!(r, Reached::Failed(_)))
        .count();
    let all_alone = c.alone.len() as u64 == d;
    for (model, a) in MODELS.iter().zip(alternatives.iter_mut()) {
        let at = |k: u64| n as f64 * (model.cost)(d as f64) / (model.cost)(k as f64);
        let curve = c.points.iter().all(|(k, r)| r.fits(at(*k), noise));
        // Every model here is a cost of sharing: no device alone pays it, save the
        // constant one, which a context of one device pays too when it is not.
        let alone_fits =
            failed_alone == 0 || (model.key == "none" && failed_alone == c.alone.len());
        *a = match (curve && alone_fits, c.points.is_empty()) {
            (true, false) => a.clone().supported(seen),
            (true, true) => a.clone().open(format!("{seen}: no other device count ran")),
            (false, _) => a.clone().excluded(seen),
        };
    }
    let constant = c.points.iter().all(|(_, r)| r.fits(n as f64, noise));
    let device = alternatives.last_mut().expect("the one-device alternative");
    *device = if failed_alone == 1 && all_alone && constant {
        device.clone().supported(seen)
    } else if all_alone || !constant {
        device.clone().excluded(seen)
    } else {
        device
            .clone()
            .open(format!("{seen}: not every device ran alone"))
    };
}

/// For a confirmed cause on several devices: how its own cost per buffer grows with one
/// and two more devices, set against the same models (a per-peer cost doubles from one
/// peer to two, one growing with the square of the devices does more).
pub fn per_peer(
    report: &Report,
    runner: &mut dyn Runner,
    noise: Noise,
    cause: &Resource,
) -> Vec<ShapeFinding> {
    let q = ShapeQuestion::PerPeer;
    let n = report.buffers;
    let d = report.devices.len().max(report.scenario.devices.set.len()) as u64;
    let cost = |r: &Report| {
        r.costs
            .iter()
            .find(|c| &c.resource == cause && !c.estimated)
            .filter(|c| c.samples >= crate::thresholds::MIN_COST_SAMPLES)
            .map(|c| (c.per_buffer, c.margin))
    };
    let (Some(base), true) = (cost(report), d >= 2) else {
        return Vec::new();
    };
    if base.0 <= 0.0 {
        return Vec::new();
    }
    let (mut runs, mut points) = (Vec::new(), Vec::new());
    for more in [1, 2] {
        let moved = change(Knob::Devices, d, d + more);
        let ran = run(
            report,
            runner,
            noise,
            moved,
            &[],
            super::super::allowance(n),
        );
        points.extend(ran.report.as_ref().and_then(cost).map(|c| (d + more, c)));
        runs.push(ran);
    }
    let alternatives: Vec<Alternative> = MODELS
        .iter()
        .map(|m| Alternative::new(m.key, m.words))
        .collect();
    if points.is_empty() {
        return vec![no_answer(q, SUBJECT, alternatives, &runs)];
    }
    let label = cause.label();
    let seen = seen_words(
        cause,
        std::iter::once((d, base)).chain(points.iter().copied()),
    );
    let alternatives = MODELS
        .iter()
        .zip(alternatives)
        .map(|(m, a)| {
            let fits = points.iter().all(|(k, (c, margin))| {
                let predicted = base.0 * (m.cost)(*k as f64) / (m.cost)(d as f64);
                (c - predicted).abs() <= (margin + base.1).max(0.05 * predicted)
            });
            if fits {
                a.supported(seen.clone())
            } else {
                a.excluded(seen.clone())
            }
        })
        .collect();
    vec![finding(
        q,
        Claim::new(
            q.topic(),
            format!("how {label} per buffer depends on the devices"),
            alternatives,
        ),
        &runs,
    )]
}

/// `2 devices: 1.00 MiB system Shmem per buffer, 3 devices: ...`: bytes with their
/// unit, counts whole or to two decimals.
fn seen_words(cause: &Resource, points: impl Iterator<Item = (u64, (f64, f64))>) -> String {
    let label = cause.label();
    points
        .map(|(k, (c, _))| {
            let value = match cause.unit() {
                crate::Unit::Bytes => crate::Unit::Bytes.format(c),
                crate::Unit::Count => crate::words::figure(c),
            };
            format!("{k} devices: {value} {label} per buffer")
        })
        .collect::<Vec<_>>()
        .join(", ")
}
