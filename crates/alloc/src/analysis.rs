//! What one run's measurements say: the first limit ahead, the cause of a failure
//! (only when a measured resource reached its limit), and statements each tagged with
//! where it comes from. Nothing here advises a fix: fixes are tested by `diagnose`.

use crate::report::{Cost, Report, StopReason};
use crate::resource::{Limit, Resource, Unit};
use clmulti_scenario::{format_bytes, Strategy};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A failure is attributed to a resource only when its reading at the failure was at
/// least this share of its limit.
pub const NEAR_LIMIT: f64 = 0.9;

/// Where a statement comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "basis", content = "from", rename_all = "snake_case")]
pub enum Basis {
    /// Read on this machine, in this run or these runs.
    Measured,
    /// Computed from measurements: which ones.
    Inferred(String),
    /// Documented elsewhere: the source.
    Known(String),
}

/// One sentence of a conclusion, with its basis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// Where it comes from.
    #[serde(flatten)]
    pub basis: Basis,
    /// The sentence.
    pub text: String,
}

impl Statement {
    /// A measured statement.
    pub fn measured(text: impl Into<String>) -> Self {
        Statement {
            basis: Basis::Measured,
            text: text.into(),
        }
    }

    /// An inferred statement, and from what.
    pub fn inferred(from: impl Into<String>, text: impl Into<String>) -> Self {
        Statement {
            basis: Basis::Inferred(from.into()),
            text: text.into(),
        }
    }

    /// A documented statement, and its source.
    pub fn known(source: impl Into<String>, text: impl Into<String>) -> Self {
        Statement {
            basis: Basis::Known(source.into()),
            text: text.into(),
        }
    }

    /// `measured`, `inferred` or `known`.
    pub fn tag(&self) -> &'static str {
        match self.basis {
            Basis::Measured => "measured",
            Basis::Inferred(_) => "inferred",
            Basis::Known(_) => "known",
        }
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.basis {
            Basis::Measured => write!(f, "[measured] {}", self.text),
            Basis::Inferred(from) => write!(f, "[inferred from {from}] {}", self.text),
            Basis::Known(source) => write!(f, "[known: {source}] {}", self.text),
        }
    }
}

/// The first limit a run heads for at its measured rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitAhead {
    /// The resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Its limit.
    pub limit: Limit,
    /// The buffer count at which the limit is reached.
    pub count: u64,
    /// Whether the resource's reading is an estimate.
    pub estimated: bool,
}

/// Why a failed run failed, as far as measurements say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum Cause {
    /// A measured resource was at its limit and growing.
    Resource {
        /// Which.
        #[serde(flatten)]
        resource: Resource,
        /// Its limit.
        limit: Limit,
        /// Its reading at the failure.
        reading: f64,
        /// Growth per buffer.
        per_buffer: f64,
        /// The count at which its fitted line meets the limit.
        predicted_count: u64,
        /// The count at which the run failed.
        observed_count: u64,
    },
    /// No measured resource was near its limit.
    NotExplained {
        /// What this machine could not measure.
        unmeasured: Vec<String>,
    },
}

/// One run's conclusions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunAnalysis {
    /// The first limit ahead at the measured rates.
    pub first_limit: Option<LimitAhead>,
    /// For a run that failed in its allocation loop: the cause.
    pub cause: Option<Cause>,
    /// The conclusions, each with its basis.
    pub statements: Vec<Statement>,
}

impl Cause {
    /// Relative error of the prediction against the observed failure count.
    pub fn prediction_error(&self) -> Option<f64> {
        match self {
            Cause::Resource {
                predicted_count,
                observed_count,
                ..
            } => Some(
                (*predicted_count as f64 - *observed_count as f64).abs()
                    / (*observed_count).max(1) as f64,
            ),
            Cause::NotExplained { .. } => None,
        }
    }
}

fn growing(cost: &Cost) -> bool {
    match cost.resource.unit() {
        Unit::Count => cost.per_buffer >= 0.01,
        Unit::Bytes => cost.per_buffer >= 1.0,
    }
}

/// The resource's reading when the run stopped, as its limit counts it.
fn reading_at_end(cost: &Cost) -> f64 {
    match &cost.limit {
        Some(l) if l.of_growth => cost.last - cost.first,
        _ => cost.last,
    }
}

/// What the run did not measure here: the candidates a "not explained" leaves open.
pub fn unmeasured(report: &Report) -> Vec<String> {
    let mut list = Vec::new();
    let has_device_readings = report
        .costs
        .iter()
        .any(|c| matches!(c.resource, Resource::DeviceMemory { .. }) && !c.estimated);
    let has_drm = report.samples.iter().any(|s| !s.drm.is_empty());
    if !has_device_readings && !has_drm {
        list.push(
            "device memory in use (no NVML, AMD query or DRM fdinfo for these devices)".to_owned(),
        );
    }
    if !has_drm {
        list.push(
            "GPU driver memory accounted per client (no DRM file descriptors in this process)"
                .to_owned(),
        );
    }
    list.push(
        "the runtime's own internal limits (handle tables, GPU virtual address space, pools)"
            .to_owned(),
    );
    if report.layers.is_some() {
        list.push("the state of the OpenCL layers named in OPENCL_LAYERS".to_owned());
    }
    list
}

/// Analyses one run's report.
pub fn analyze(report: &Report) -> RunAnalysis {
    let mut statements = Vec::new();
    let rss = report
        .costs
        .iter()
        .find(|c| c.resource == Resource::HostRss)
        .map_or(0.0, |c| c.per_buffer);
    let first_limit = report
        .costs
        .iter()
        .filter(|c| growing(c))
        // System memory in use grows with RSS and with every other process: it is a
        // limit of its own only when it grows well beyond RSS (memory outside RSS).
        .filter(|c| {
            c.resource != Resource::SystemMemoryUsed || c.per_buffer > (2.0 * rss).max(4096.0)
        })
        .filter_map(|c| Some((c, c.limit.clone()?, c.predicted_count?)))
        .min_by_key(|(_, _, n)| *n)
        .map(|(c, limit, count)| LimitAhead {
            resource: c.resource.clone(),
            limit,
            count,
            estimated: c.estimated,
        });
    let growth: Vec<String> = report
        .costs
        .iter()
        .filter(|c| growing(c) && !c.estimated)
        .map(|c| {
            format!(
                "{} +{} per buffer",
                c.resource.label(),
                c.resource.unit().format(c.per_buffer)
            )
        })
        .collect();
    if report.samples.len() >= 2 {
        statements.push(Statement::measured(if growth.is_empty() {
            "no measured resource grows per buffer".to_owned()
        } else {
            growth.join(", ")
        }));
    }
    if report.scenario.allocation.strategy == Strategy::Create && report.buffers > 0 {
        if let Some(rss) = report
            .costs
            .iter()
            .find(|c| c.resource == Resource::HostRss)
        {
            let size = report.scenario.allocation.size_bytes as f64;
            let device_growth = report.costs.iter().any(|c| {
                matches!(
                    c.resource,
                    Resource::DeviceMemory { .. } | Resource::Drm { .. }
                ) && !c.estimated
                    && growing(c)
            });
            if rss.per_buffer < 0.01 * size && !device_growth {
                statements.push(Statement::inferred(
                    "host RSS and device readings",
                    format!(
                        "created buffers hold no memory yet ({} of host RSS per {} buffer): the runtime allocates at first use, so strategy \"fill\" shows what residency costs",
                        format_bytes(rss.per_buffer),
                        format_bytes(size)
                    ),
                ));
            }
        }
    }
    // The first buffer refused for its size: say which device's limit it passed.
    if let StopReason::Failed {
        error, index: 0, ..
    } = &report.stop
    {
        let size = report.scenario.allocation.size_bytes;
        let over: Vec<String> = report
            .devices
            .iter()
            .filter_map(|d| {
                let max = *d.max_alloc_bytes.value()?;
                (size > max).then(|| format!("{} ({})", d.display_name(), format_bytes(max as f64)))
            })
            .collect();
        if error.code == clmulti_probe::ClCode::INVALID_BUFFER_SIZE.0 && !over.is_empty() {
            statements.push(Statement::measured(format!(
                "allocation.size ({}) is above CL_DEVICE_MAX_MEM_ALLOC_SIZE of {}: the runtime refuses any buffer that large; use a size at or below it",
                format_bytes(size as f64),
                over.join(", ")
            )));
        }
    }
    let cause = match &report.stop {
        StopReason::Failed { call, index, .. } if report.samples.len() >= 2 && *index > 0 => {
            let _ = call;
            Some(attribute(report, &mut statements))
        }
        _ => None,
    };
    if cause.is_none()
        && !matches!(
            report.stop,
            StopReason::Skipped { .. } | StopReason::Unsupported { .. }
        )
    {
        match &first_limit {
            Some(ahead) => statements.push(Statement::inferred(
                format!(
                    "{} growth{}",
                    ahead.resource.label(),
                    if ahead.estimated {
                        " (estimated from the strategy and declared capacity)"
                    } else {
                        ""
                    }
                ),
                format!(
                    "first limit ahead: {} ({}) at about {} buffers",
                    ahead.limit.name,
                    ahead.resource.unit().format(ahead.limit.value),
                    ahead.count
                ),
            )),
            None if report.samples.len() >= 2 => statements.push(Statement::inferred(
                "every measured resource",
                "no measured resource grows toward a limit",
            )),
            None => {}
        }
    }
    RunAnalysis {
        first_limit,
        cause,
        statements,
    }
}

/// The resource that was at its limit when the run failed, or "not explained".
fn attribute(report: &Report, statements: &mut Vec<Statement>) -> Cause {
    let near: Option<(&Cost, &Limit, f64)> = report
        .costs
        .iter()
        .filter(|c| growing(c))
        .filter_map(|c| {
            let limit = c.limit.as_ref()?;
            let share = reading_at_end(c) / limit.value;
            (share >= NEAR_LIMIT).then_some((c, limit, share))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2));
    match near {
        Some((cost, limit, share)) => {
            let unit = cost.resource.unit();
            let predicted = cost.predicted_count.unwrap_or(report.buffers);
            let cause = Cause::Resource {
                resource: cost.resource.clone(),
                limit: limit.clone(),
                reading: reading_at_end(cost),
                per_buffer: cost.per_buffer,
                predicted_count: predicted,
                observed_count: report.buffers,
            };
            let error = cause.prediction_error().unwrap_or(0.0);
            statements.push(Statement::inferred(
                format!("{} readings against {}", cost.resource.label(), limit.name),
                format!(
                    "{} was at {} of {} {} ({:.0}%) when the run failed, growing {} per buffer; its fitted line meets the limit at {} buffers, the run failed at {} ({:.1}% apart): this limit is the likely cause{}",
                    cost.resource.label(),
                    unit.format(reading_at_end(cost)),
                    limit.name,
                    unit.format(limit.value),
                    share * 100.0,
                    unit.format(cost.per_buffer),
                    predicted,
                    report.buffers,
                    error * 100.0,
                    if cost.estimated { " (device memory estimated from the strategy and declared capacity)" } else { "" }
                ),
            ));
            cause
        }
        None => {
            let unmeasured = unmeasured(report);
            statements.push(Statement::inferred(
                "every measured resource",
                format!(
                    "the failure is not explained by what was measured: no growing resource was within {:.0}% of its limit. Not measured here: {}",
                    (1.0 - NEAR_LIMIT) * 100.0,
                    unmeasured.join("; ")
                ),
            ));
            Cause::NotExplained { unmeasured }
        }
    }
}
