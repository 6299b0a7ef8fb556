//! Per-buffer costs (least-squares slopes), limits, and the predicted first limit.

use crate::report::{Cost, Prediction, Resource, Sample, StopReason};
use clmulti_probe::{DeviceInfo, HostLimits};

/// The reading of one resource in a sample.
fn reading(sample: &Sample, resource: Resource) -> Option<f64> {
    Some(match resource {
        Resource::HostRss => sample.host.rss_bytes as f64,
        Resource::VirtualSize => sample.host.virtual_bytes as f64,
        Resource::OpenFds => sample.host.open_fds as f64,
        Resource::MemoryMaps => sample.host.memory_maps as f64,
        Resource::DeviceMemory(d) => *sample.device_used_bytes.get(d)?.as_ref()? as f64,
    })
}

fn limit(resource: Resource, host: &HostLimits, devices: &[DeviceInfo]) -> Option<f64> {
    match resource {
        Resource::HostRss => host.ram_bytes.map(|v| v as f64),
        Resource::VirtualSize => host.address_space_soft.map(|v| v as f64),
        Resource::OpenFds => host.nofile_soft.map(|v| v as f64),
        Resource::MemoryMaps => host.max_map_count.map(|v| v as f64),
        Resource::DeviceMemory(d) => devices
            .get(d)
            .and_then(|dev| dev.global_mem_bytes.value().copied())
            .map(|v| v as f64),
    }
}

/// Least-squares slope of `y` over `x`; `None` with fewer than two distinct x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    Some(sxy / sxx)
}

/// Costs of every resource with readings in at least two samples.
pub fn costs(samples: &[Sample], host: &HostLimits, devices: &[DeviceInfo]) -> Vec<Cost> {
    let mut resources = vec![
        Resource::HostRss,
        Resource::VirtualSize,
        Resource::OpenFds,
        Resource::MemoryMaps,
    ];
    resources.extend((0..devices.len()).map(Resource::DeviceMemory));
    resources
        .into_iter()
        .filter_map(|resource| {
            let points: Vec<(f64, f64)> = samples
                .iter()
                .filter_map(|s| Some((s.allocations as f64, reading(s, resource)?)))
                .collect();
            let per_buffer = slope(&points)?;
            let (first, last) = (points.first()?.1, points.last()?.1);
            let last_count = points.last()?.0;
            let limit = limit(resource, host, devices);
            let predicted_count = limit.and_then(|l| predict(l, last, last_count, per_buffer));
            Some(Cost {
                resource,
                per_buffer,
                first,
                last,
                limit,
                predicted_count,
            })
        })
        .collect()
}

/// The count at which `limit` is reached growing `per_buffer` from `last` at `count`.
fn predict(limit: f64, last: f64, count: f64, per_buffer: f64) -> Option<u64> {
    // Below this, growth is noise (a page or a descriptor now and then).
    const MIN_GROWTH: f64 = 1e-3;
    if last >= limit {
        return Some(count as u64);
    }
    if per_buffer <= MIN_GROWTH {
        return None;
    }
    let at = count + (limit - last) / per_buffer;
    (at.is_finite() && at < u64::MAX as f64).then_some(at as u64)
}

/// The first limit reached, and whether it explains the run's failure.
pub fn prediction(costs: &[Cost], stop: &StopReason, buffers: u64) -> Option<Prediction> {
    let first = costs
        .iter()
        .filter_map(|c| Some((c, c.predicted_count?)))
        .min_by_key(|(_, n)| *n)?;
    let (cost, count) = first;
    let matches_failure = match stop {
        StopReason::Failed { .. } => {
            let n = buffers.max(1) as f64;
            Some(((count as f64 - n) / n).abs() <= 0.10)
        }
        _ => None,
    };
    let unit = |v: f64| match cost.resource {
        Resource::OpenFds | Resource::MemoryMaps => format!("{v:.2}"),
        _ if v.abs() >= (1u64 << 30) as f64 => format!("{:.2} GiB", v / (1u64 << 30) as f64),
        _ if v.abs() >= (1u64 << 20) as f64 => format!("{:.2} MiB", v / (1u64 << 20) as f64),
        _ => format!("{:.1} KiB", v / 1024.0),
    };
    let mut explanation = format!(
        "{} grows {} per buffer; {} ({}) is reached at about {} buffers",
        cost.resource.label(),
        unit(cost.per_buffer),
        cost.resource.limit_name(),
        cost.limit.map_or("?".into(), |l| match cost.resource {
            Resource::OpenFds | Resource::MemoryMaps => format!("{l:.0}"),
            _ => format!("{:.2} GiB", l / (1u64 << 30) as f64),
        }),
        count
    );
    if matches_failure == Some(true) {
        explanation.push_str(&format!(
            ", which matches where the run failed ({buffers} buffers): this limit is the likely cause"
        ));
    } else if matches_failure == Some(false) {
        explanation.push_str(&format!(
            "; the run failed at {buffers} buffers, so something else ran out first"
        ));
    }
    explanation.push_str(&format!(". Fix: {}", cost.resource.advice()));
    Some(Prediction {
        resource: cost.resource,
        count,
        matches_failure,
        explanation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clmulti_probe::ProcessUsage;

    fn sample(n: u64, fds: u64, rss: u64) -> Sample {
        Sample {
            allocations: n,
            bytes_requested: n << 20,
            elapsed_seconds: 0.0,
            host: ProcessUsage {
                rss_bytes: rss,
                virtual_bytes: 1 << 30,
                open_fds: fds,
                memory_maps: 100,
            },
            device_used_bytes: vec![],
        }
    }

    fn host(nofile: u64) -> HostLimits {
        HostLimits {
            ram_bytes: Some(192 << 30),
            nofile_soft: Some(nofile),
            nofile_hard: Some(nofile),
            address_space_soft: None,
            address_space_hard: None,
            max_map_count: Some(65530),
            page_size: 4096,
        }
    }

    #[test]
    fn slope_fits_a_line() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), Some(2.0));
        assert_eq!(slope(&[(1.0, 1.0)]), None);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 2.0)]), None);
    }

    /// The seed's case in numbers: one fd per buffer, 3 MiB of host memory per
    /// buffer; fds run out at ~1000, RAM at ~65000. The prediction must name fds.
    #[test]
    fn fds_are_predicted_before_ram_in_the_seed_case() {
        let samples: Vec<Sample> = (0..=9)
            .map(|i| sample(i * 100, 20 + i * 100, (100 << 20) + i * 100 * (3 << 20)))
            .collect();
        let costs = costs(&samples, &host(1024), &[]);
        let fds = costs
            .iter()
            .find(|c| c.resource == Resource::OpenFds)
            .unwrap();
        assert!((fds.per_buffer - 1.0).abs() < 1e-9);
        assert_eq!(fds.predicted_count, Some(1004));
        let stop = StopReason::Failed {
            error: clmulti_probe::ClCode(-6).into(),
            call: crate::report::Call::CreateBuffer,
            index: 1003,
        };
        let p = prediction(&costs, &stop, 1003).unwrap();
        assert_eq!(p.resource, Resource::OpenFds);
        assert_eq!(p.matches_failure, Some(true));
        assert!(p.explanation.contains("RLIMIT_NOFILE"), "{}", p.explanation);
        assert!(p.explanation.contains("ulimit -n"), "{}", p.explanation);
    }

    #[test]
    fn flat_resources_predict_nothing() {
        let samples: Vec<Sample> = (0..5).map(|i| sample(i * 10, 20, 100 << 20)).collect();
        let costs = costs(&samples, &host(1024), &[]);
        assert!(costs.iter().all(|c| c.predicted_count.is_none()));
        assert!(prediction(&costs, &StopReason::Completed, 40).is_none());
    }
}
