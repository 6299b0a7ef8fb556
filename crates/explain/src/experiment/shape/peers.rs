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

pub(super) fn ask(report: &Report, runner: &mut dyn Runner, noise: Noise) -> ShapeFinding {
    let q = ShapeQuestion::PerPeer;
    let n = report.buffers;
    let d = report.devices.len().max(report.scenario.devices.set.len()) as u64;
    if d < 2 {
        return super::unasked(q, "a single device has no peers");
    }
    let mut runs: Vec<Ran> = Vec::new();
    let mut points: Vec<(u64, Reached)> = Vec::new();
    // Device counts whose run met a limit its own readings show: they say nothing here.
    let mut met: Vec<String> = Vec::new();
    for more in [1, 2] {
        let ran = run(
            report,
            runner,
            noise,
            change(Knob::Devices, d, d + more),
            &[],
            super::super::allowance(n),
        );
        match (ran.count(n, noise), &ran.experiment.met) {
            (Some(r), _) => points.push((d + more, r)),
            (None, Some(m)) => met.push(format!("{} devices: met {} first", d + more, m.words())),
            (None, None) => {}
        }
        runs.push(ran);
    }
    // Each device alone: a limit one device's contexts pay fails there.
    let mut alone: Vec<(u64, Reached)> = Vec::new();
    for device in 0..d {
        let ran = run(
            report,
            runner,
            noise,
            change(Knob::OnlyDevice, d, device),
            &[],
            super::super::allowance(n),
        );
        if let Some(r) = ran.count(n, noise) {
            alone.push((device, r));
        }
        runs.push(ran);
    }
    let mut alternatives: Vec<Alternative> = MODELS
        .iter()
        .map(|m| Alternative::new(m.key, m.words))
        .collect();
    alternatives.push(device_alternative());
    if points.is_empty() && alone.is_empty() {
        return no_answer(q, SUBJECT, alternatives, &runs);
    }
    let seen = points
        .iter()
        .map(|(k, r)| format!("{k} devices: {}", r.words()))
        .chain(met)
        .chain(
            alone
                .iter()
                .map(|(k, r)| format!("device {k} alone: {}", r.words())),
        )
        .collect::<Vec<_>>()
        .join(", ");
    let seen = format!("{d} devices: failed at {n}, {seen}");
    let failed_alone: Vec<u64> = alone
        .iter()
        .filter(|(_, r)| matches!(r, Reached::Failed(_)))
        .map(|(k, _)| *k)
        .collect();
    for (model, a) in MODELS.iter().zip(alternatives.iter_mut()) {
        let at = |k: u64| n as f64 * (model.cost)(d as f64) / (model.cost)(k as f64);
        let curve = points.iter().all(|(k, r)| r.fits(at(*k), noise));
        // Every model here is a cost of sharing: no device alone pays it, save the
        // constant one, which a context of one device pays too when it is not.
        let alone_fits =
            failed_alone.is_empty() || (model.key == "none" && failed_alone.len() == alone.len());
        *a = if curve && alone_fits && !points.is_empty() {
            a.clone().supported(seen.clone())
        } else if curve && alone_fits {
            a.clone().open(format!("{seen}: no other device count ran"))
        } else {
            a.clone().excluded(seen.clone())
        };
    }
    let one_device = failed_alone.len() == 1 && alone.len() as u64 == d;
    let device = alternatives.last_mut().expect("pushed above");
    let constant = points.iter().all(|(_, r)| r.fits(n as f64, noise));
    *device = if one_device && constant {
        device.clone().supported(seen.clone())
    } else if alone.len() as u64 == d {
        device.clone().excluded(seen.clone())
    } else {
        device
            .clone()
            .open(format!("{seen}: not every device ran alone"))
    };
    finding(q, Claim::new(q.topic(), SUBJECT, alternatives), &runs)
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
    let mut runs = Vec::new();
    let mut points = Vec::new();
    for more in [1, 2] {
        let ran = run(
            report,
            runner,
            noise,
            change(Knob::Devices, d, d + more),
            &[],
            super::super::allowance(n),
        );
        if let Some(c) = ran.report.as_ref().and_then(cost) {
            points.push((d + more, c));
        }
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
    let seen = std::iter::once((d, base))
        .chain(points.iter().copied())
        .map(|(k, (c, _))| {
            format!(
                "{k} devices: {} {label} per buffer",
                crate::words::figure(c)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
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
