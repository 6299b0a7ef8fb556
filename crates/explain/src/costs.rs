//! Per-buffer costs: least-squares fits of each resource over the samples, the
//! buffer count at which each meets its limit, and device-memory estimates where
//! no reading exists.

use crate::report::{Cost, Sample};
use crate::resource::{Facts, Limit, Resource, Unit};
pub use crate::stats::{fit, Line};
use clmulti_scenario::{ContextMode, Strategy};

/// Growth below this per buffer is noise (a page or a descriptor now and then).
pub(crate) fn negligible(resource: &Resource, per_buffer: f64) -> bool {
    match resource.unit() {
        Unit::Count => per_buffer < 0.01,
        Unit::Bytes => per_buffer < 1.0,
    }
}

/// The count at which a line reaches `limit`; `None` when it does not grow
/// measurably.
fn predict(line: Line, limit: f64, resource: &Resource) -> Option<u64> {
    if negligible(resource, line.slope) || line.slope <= line.margin {
        return None;
    }
    let at = (limit - line.intercept) / line.slope;
    (at.is_finite() && at < u64::MAX as f64).then(|| at.max(0.0) as u64)
}

/// Costs of every resource with readings in at least two samples (against the
/// buffers held at each), then estimates of device memory for devices without
/// readings. A failed run's last sample, taken after the failure, holds what the
/// runtime did while failing: it is the reading at the failure, not a point of the
/// line.
pub fn costs(samples: &[Sample], facts: Facts<'_>) -> Vec<Cost> {
    let fitted = match samples {
        [rest @ .., _] if facts.failed && rest.len() >= 3 => rest,
        all => all,
    };
    let mut costs: Vec<Cost> = Resource::all_in(samples, facts.devices)
        .into_iter()
        .filter_map(|resource| {
            let reading = |s: &Sample| Some((s.live() as f64, resource.reading(s, facts.host)?));
            let points: Vec<(f64, f64)> = samples.iter().filter_map(reading).collect();
            let on_line: Vec<(f64, f64)> = fitted.iter().filter_map(reading).collect();
            let (line, samples) = match fit(&on_line) {
                Some(line) => (line, on_line.len()),
                None => (fit(&points)?, points.len()),
            };
            let limit = resource.limit(&facts);
            let first = points.first()?.1;
            let predicted_count = limit.as_ref().and_then(|l| {
                // A cap on growth counts what the buffers add: the slope alone (a
                // reading can also hold one-off setup, e.g. the layer's queues that NVML
                // counts at the first buffer, which the intercept absorbs).
                let line = if l.of_growth {
                    Line {
                        intercept: 0.0,
                        ..line
                    }
                } else {
                    line
                };
                predict(line, l.value, &resource)
            });
            Some(Cost {
                first,
                last: points.last()?.1,
                per_buffer: line.slope,
                margin: line.margin,
                resource,
                limit,
                predicted_count,
                estimated: false,
                samples,
            })
        })
        .collect();
    costs.extend(device_memory_estimates(&costs, facts));
    costs
}

/// Buffers the run holds resident on each device, estimated where no device reading
/// exists: `fill` and `migrate` make each buffer resident on its placed device; a
/// runtime that makes every buffer resident on every device of a shared context
/// (measured on host-unified devices, where device memory is host memory: RSS grows
/// by the size times the device count) holds a copy on each. Each estimate is set
/// against the device's declared global memory.
fn device_memory_estimates(measured: &[Cost], facts: Facts<'_>) -> Vec<Cost> {
    let scenario = facts.scenario;
    let size = scenario.allocation.size_bytes as f64;
    let n = facts.devices.len();
    // A run that releases each buffer at once holds one at a time: nothing grows;
    // emulated devices have no memory of their own.
    if n == 0 || size <= 0.0 || !scenario.allocation.keep || facts.emulated_devices {
        return Vec::new();
    }
    let rss = measured
        .iter()
        .find(|c| c.resource == Resource::HostRss)
        .map_or(0.0, |c| c.per_buffer);
    let host_unified = facts
        .devices
        .iter()
        .all(|d| d.host_unified_memory.value() == Some(&true));
    // Copies of each buffer the runtime keeps resident, as host RSS shows it.
    let copies = if host_unified {
        (rss / size).round()
    } else {
        0.0
    };
    let forced = matches!(
        scenario.allocation.strategy,
        Strategy::Fill | Strategy::Migrate
    );
    let every_device = scenario.context_mode == ContextMode::Shared && n > 1 && copies >= n as f64;
    (0..n)
        .filter(|d| {
            !measured
                .iter()
                .any(|c| c.resource == Resource::DeviceMemory { device: *d })
        })
        .filter_map(|device| {
            let share = scenario.allocation.placement.share(device, n);
            let per_buffer = if every_device {
                size
            } else if forced || copies >= 1.0 {
                size * share
            } else {
                return None;
            };
            if per_buffer <= 0.0 {
                return None;
            }
            let global = *facts.devices[device].global_mem_bytes.value()? as f64;
            let resource = Resource::DeviceMemory { device };
            let line = Line {
                slope: per_buffer,
                intercept: 0.0,
                margin: 0.0,
            };
            let predicted_count = predict(line, global, &resource);
            // An estimate the run itself disproves (more buffers reached than it
            // allows, without failing) is wrong: dropped.
            if predicted_count.is_some_and(|n| n < facts.buffers) && !facts.failed {
                return None;
            }
            Some(Cost {
                predicted_count,
                resource,
                per_buffer,
                margin: 0.0,
                first: 0.0,
                last: per_buffer * facts.buffers as f64,
                limit: Some(Limit {
                    value: global,
                    name: "device global memory (declared)".into(),
                    of_growth: false,
                }),
                estimated: true,
                samples: 0,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_finds_slope_and_intercept() {
        let line = fit(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]).unwrap();
        assert_eq!((line.slope, line.intercept, line.margin), (2.0, 1.0, 0.0));
        assert_eq!(fit(&[(1.0, 1.0)]), None);
        assert_eq!(fit(&[(1.0, 1.0), (1.0, 2.0)]), None);
    }

    #[test]
    fn prediction_extrapolates_the_line_to_the_limit() {
        let line = Line {
            slope: 1.0,
            intercept: 5.0,
            margin: 0.0,
        };
        assert_eq!(predict(line, 1024.0, &Resource::OpenFds), Some(1019));
        let flat = Line {
            slope: 1e-4,
            intercept: 5.0,
            margin: 0.0,
        };
        assert_eq!(predict(flat, 1024.0, &Resource::OpenFds), None);
        // A slope inside its own margin predicts nothing.
        let noisy = Line {
            slope: 100.0,
            intercept: 5.0,
            margin: 150.0,
        };
        assert_eq!(predict(noisy, 1e9, &Resource::HostRss), None);
    }

    #[test]
    fn the_margin_grows_with_scatter_and_shrinks_with_points() {
        let scattered: Vec<(f64, f64)> = (0..10)
            .map(|i| {
                (
                    i as f64,
                    100.0 * i as f64 + if i % 2 == 0 { 300.0 } else { -300.0 },
                )
            })
            .collect();
        let line = fit(&scattered).unwrap();
        assert!((line.slope - 100.0).abs() < 40.0, "{line:?}");
        assert!(line.margin > 20.0 && line.margin < 200.0, "{line:?}");
        let more: Vec<(f64, f64)> = (0..100)
            .map(|i| {
                (
                    i as f64,
                    100.0 * i as f64 + if i % 2 == 0 { 300.0 } else { -300.0 },
                )
            })
            .collect();
        assert!(fit(&more).unwrap().margin < line.margin / 5.0);
    }

    #[test]
    fn a_failed_runs_last_sample_is_a_reading_not_a_point() {
        let mut run = crate::testing::run(2, clmulti_scenario::ContextMode::Shared)
            .rss(100.0 * 1048576.0, 0.0)
            .failed_at(1000);
        // The failure's own jump: 200 KiB more than the line.
        run.samples.last_mut().unwrap().host.rss_bytes += 200 << 10;
        run.conclude();
        let rss = run
            .costs
            .iter()
            .find(|c| c.resource == Resource::HostRss)
            .unwrap();
        assert_eq!(rss.per_buffer, 0.0, "{rss:?}");
        assert_eq!(rss.last, (100.0 * 1048576.0) + (200 << 10) as f64);
    }
}
