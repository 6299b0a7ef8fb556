//! The answer to the seed's question over a set of runs: one device, N devices in one
//! shared context, N per-device contexts (with `create`, and with a strategy that
//! forces residency), plus the fixes re-run on the shared case. What sharing a
//! context costs per buffer, where each run stopped, what caused a failure (only a
//! resource that was at its limit and grew more in the failing run than in the one
//! that did not fail), which fixes removed it, measured, and what is known from
//! documented sources. `clmulti diagnose` runs the matrix; the sweep's report builds
//! the same diagnosis from the runs it has.

use crate::analysis::{Basis, Cause, Statement, NEAR_LIMIT};
use crate::knowledge::{runtime_of, SEED_ANSWER_CORRECTIONS};
use crate::report::{Report, StopReason};
use crate::resource::{Resource, Unit};
use clmulti_probe::DeviceInfo;
use clmulti_scenario::{format_bytes, ContextMode, Strategy};
use serde::{Deserialize, Serialize};

/// Version of the [`Diagnosis`] JSON shape; bumped when a field changes meaning.
pub const DIAGNOSIS_SCHEMA_VERSION: u32 = 2;

/// Which of the seed's three cases a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// One device in one context.
    OneDevice,
    /// N devices in one shared context (the seed's failing case).
    Shared,
    /// N devices, one context each.
    PerDevice,
}

impl Role {
    /// The case in words.
    pub fn label(self, devices: usize) -> String {
        match self {
            Role::OneDevice => "1 device".into(),
            Role::Shared => format!("{devices} devices, one shared context"),
            Role::PerDevice => format!("{devices} devices, one context each"),
        }
    }

    /// The role of a run, from its scenario and devices.
    pub fn of(report: &Report) -> Role {
        let devices = report.devices.len().max(report.scenario.devices.set.len());
        match (devices, report.scenario.context_mode) {
            (0 | 1, _) => Role::OneDevice,
            (_, ContextMode::Shared) => Role::Shared,
            (_, ContextMode::PerDevice) => Role::PerDevice,
        }
    }
}

/// A fix for a failure of the shared case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fix", rename_all = "kebab-case")]
pub enum Fix {
    /// One context per device instead of one shared context.
    PerDeviceContexts,
    /// A higher soft `RLIMIT_NOFILE`.
    RaiseNofile {
        /// The soft limit tried.
        to: u64,
    },
    /// `CL_MEM_DEVICE_ID_INTEL`: each buffer allocated on its device only.
    Pin,
    /// Large buffers carved into sub-buffers: fewer runtime allocations.
    Pool,
    /// Runtime settings from a documented table.
    RuntimeKnob {
        /// Environment variables set.
        env: Vec<(String, String)>,
        /// Where the knob is documented.
        source: String,
    },
}

impl Fix {
    /// The fix in words.
    pub fn label(&self) -> String {
        match self {
            Fix::PerDeviceContexts => "one context per device".into(),
            Fix::RaiseNofile { to } => format!("soft open-file limit raised to {to}"),
            Fix::Pin => "buffers pinned to their device (CL_MEM_DEVICE_ID_INTEL)".into(),
            Fix::Pool => "pooled: 256 MiB buffers carved into sub-buffers".into(),
            Fix::RuntimeKnob { env, .. } => format!(
                "runtime settings {}",
                env.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }

    /// What a user does to apply it.
    pub fn how(&self) -> String {
        match self {
            Fix::PerDeviceContexts => "create one cl_context per device (clCreateContext with one device each) and keep each buffer in its device's context".into(),
            Fix::RaiseNofile { to } => format!("`ulimit -n {to}` in the shell that starts the program (or setrlimit(RLIMIT_NOFILE) in it; scenario: [limits] nofile = {to})"),
            Fix::Pin => "clCreateBufferWithProperties(ctx, {CL_MEM_DEVICE_ID_INTEL (0x4219), device, 0}, flags, size, NULL, &err)".into(),
            Fix::Pool => "allocate a few large buffers per device and hand out sub-buffers (clCreateSubBuffer at CL_DEVICE_MEM_BASE_ADDR_ALIGN)".into(),
            Fix::RuntimeKnob { env, .. } => format!(
                "set {} in the program's environment",
                env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
            ),
        }
    }
}

/// A fix and how it fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixOutcome {
    /// The fix.
    #[serde(flatten)]
    pub fix: Fix,
    /// Run or not, and what happened.
    pub outcome: Outcome,
}

/// What became of a fix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Re-run; the shared case no longer failed.
    Worked {
        /// Buffers the run reached.
        buffers: u64,
        /// How it ended.
        stop: String,
    },
    /// Re-run; it still failed or stopped.
    DidNotWork {
        /// Buffers the run reached.
        buffers: u64,
        /// How it ended.
        stop: String,
    },
    /// Not run, and why.
    Untested {
        /// Why not.
        reason: String,
    },
}

/// What sharing a context costs per buffer, for one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharingCost {
    /// The strategy of the runs compared.
    pub strategy: Strategy,
    /// The resource.
    #[serde(flatten)]
    pub resource: Resource,
    /// Per buffer with one device.
    pub one_device: Option<f64>,
    /// Per buffer with N devices in one context.
    pub shared: Option<f64>,
    /// Per buffer with one context per device.
    pub per_device: Option<f64>,
    /// Shared minus per-device (what sharing adds).
    pub extra: Option<f64>,
}

/// One run of the diagnosis, in brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunBrief {
    /// The case.
    pub role: Role,
    /// Its strategy.
    pub strategy: Strategy,
    /// The run's name.
    pub run_name: String,
    /// Buffers reached.
    pub buffers: u64,
    /// How it ended, in one line.
    pub headline: String,
    /// The outcome kind: completed, failed, guard, ...
    pub outcome: String,
    /// Driver messages, when there were any.
    pub driver_messages: Vec<String>,
}

/// The diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// See [`DIAGNOSIS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The platform.
    pub platform: String,
    /// The devices of the multi-device runs.
    pub devices: Vec<DeviceInfo>,
    /// Each run.
    pub runs: Vec<RunBrief>,
    /// What sharing a context costs, per strategy and resource (only resources that
    /// differ or grow).
    pub sharing_costs: Vec<SharingCost>,
    /// The fixes, tested or not.
    pub fixes: Vec<FixOutcome>,
    /// The conclusion, each statement with its basis.
    pub verdict: Vec<Statement>,
}

/// A run with its place in the matrix.
#[derive(Debug, Clone)]
pub struct Placed<'a> {
    /// The case.
    pub role: Role,
    /// The run.
    pub report: &'a Report,
}

fn failed(r: &Report) -> bool {
    matches!(
        r.stop,
        StopReason::Failed { .. } | StopReason::Crashed { .. } | StopReason::TimedOut { .. }
    )
}

fn cost_of(r: &Report, resource: &Resource) -> Option<f64> {
    r.costs
        .iter()
        .find(|c| &c.resource == resource && !c.estimated)
        .map(|c| c.per_buffer)
}

/// Whether two per-buffer costs differ beyond noise.
fn differs(resource: &Resource, a: f64, b: f64) -> bool {
    let d = (a - b).abs();
    match resource.unit() {
        Unit::Count => d >= 0.1,
        // 64 B a buffer over thousands of buffers is many pages: measurable.
        Unit::Bytes => d >= 64.0 && d >= 0.05 * a.abs().max(b.abs()),
    }
}

/// The fixes that apply to a failing (or limit-bound) shared case, and why the
/// others are not tried. `nofile_hard` is the hard limit a raised soft one can reach.
pub fn fixes_for(shared: &Report, nofile_hard: Option<u64>) -> Vec<(Fix, Option<String>)> {
    let mut fixes = vec![(Fix::PerDeviceContexts, None)];
    let fds_grow = cost_of(shared, &Resource::OpenFds).is_some_and(|c| c >= 0.01);
    let soft = shared.host_limits.nofile_soft;
    let target = nofile_hard.unwrap_or(1 << 20).min(1 << 20);
    fixes.push((
        Fix::RaiseNofile { to: target },
        if !fds_grow {
            Some("open fds do not grow per buffer in the shared case".into())
        } else if soft.is_some_and(|s| s >= target) {
            Some(format!(
                "the soft limit ({}) is already the hard limit; raising the hard one needs root",
                soft.unwrap_or(0)
            ))
        } else {
            None
        },
    ));
    let pin = "cl_intel_create_mem_object_properties";
    fixes.push((
        Fix::Pin,
        (!shared.devices.iter().all(|d| d.has_extension(pin)))
            .then(|| format!("the devices do not list {pin}")),
    ));
    fixes.push((
        Fix::Pool,
        (shared.scenario.allocation.strategy == Strategy::Pool)
            .then(|| "the run already pools".into()),
    ));
    match runtime_of(&shared.platform) {
        Some(r) if r.name.starts_with("Intel compute-runtime") => {
            for (key, value) in [
                ("ForceZeDeviceCanAccessPerReturnValue", "0"),
                ("EnableDeferBacking", "0"),
            ] {
                fixes.push((
                    Fix::RuntimeKnob {
                        env: vec![
                            ("NEOReadDebugKeys".into(), "1".into()),
                            (key.into(), value.into()),
                        ],
                        source: "intel/compute-runtime#980".into(),
                    },
                    None,
                ));
            }
        }
        _ => {}
    }
    fixes
}

impl Diagnosis {
    /// Builds the diagnosis from the matrix's runs and the fixes' runs (`None`: not
    /// run, with the reason).
    pub fn new(runs: &[Placed<'_>], fixes: &[(Fix, Result<&Report, String>)]) -> Self {
        let pick = |role: Role, strategy: Strategy| {
            runs.iter()
                .find(|p| p.role == role && p.report.scenario.allocation.strategy == strategy)
                .map(|p| p.report)
        };
        // The seed's own case (create) speaks for the shared context when it ran.
        let shared_any = pick(Role::Shared, Strategy::Create).or_else(|| {
            runs.iter()
                .find(|p| p.role == Role::Shared)
                .map(|p| p.report)
        });
        let first = shared_any.or_else(|| runs.first().map(|p| p.report));
        let platform = first.map_or_else(String::new, |r| r.platform.clone());
        let devices = shared_any.map_or_else(Vec::new, |r| r.devices.clone());
        let n = devices.len().max(2);
        let mut verdict = Vec::new();
        let mut sharing_costs = Vec::new();
        let strategies: Vec<Strategy> = [
            Strategy::Create,
            Strategy::Fill,
            Strategy::Migrate,
            Strategy::Pin,
            Strategy::Pool,
        ]
        .into_iter()
        .filter(|s| {
            runs.iter()
                .any(|p| p.report.scenario.allocation.strategy == *s)
        })
        .collect();
        for &strategy in &strategies {
            let (one, shared, per) = (
                pick(Role::OneDevice, strategy),
                pick(Role::Shared, strategy),
                pick(Role::PerDevice, strategy),
            );
            let stops: Vec<String> = [
                (Role::OneDevice, one),
                (Role::Shared, shared),
                (Role::PerDevice, per),
            ]
            .iter()
            .filter_map(|(role, r)| Some(format!("{}: {}", role.label(n), outcome(r.as_ref()?))))
            .collect();
            verdict.push(Statement::measured(format!(
                "strategy {}: {}",
                strategy.name(),
                stops.join("; ")
            )));
            let Some(shared) = shared else { continue };
            let mut extras = Vec::new();
            let resources: Vec<Resource> = shared
                .costs
                .iter()
                .filter(|c| !c.estimated)
                .map(|c| c.resource.clone())
                .filter(|r| !matches!(r, Resource::SystemMemoryUsed))
                .collect();
            for resource in resources {
                let (o, s, p) = (
                    one.and_then(|r| cost_of(r, &resource)),
                    cost_of(shared, &resource),
                    per.and_then(|r| cost_of(r, &resource)),
                );
                let extra = s.zip(p).map(|(s, p)| s - p);
                let grows = [o, s, p]
                    .iter()
                    .flatten()
                    .any(|v| differs(&resource, *v, 0.0));
                if !grows {
                    continue;
                }
                if let (Some(e), Some(s), Some(p)) = (extra, s, p) {
                    if differs(&resource, s, p) {
                        extras.push(format!(
                            "{} {}{} per buffer ({} shared vs {} per device)",
                            resource.label(),
                            if e >= 0.0 { "+" } else { "-" },
                            resource.unit().format(e.abs()),
                            resource.unit().format(s),
                            resource.unit().format(p)
                        ));
                    }
                }
                sharing_costs.push(SharingCost {
                    strategy,
                    resource,
                    one_device: o,
                    shared: s,
                    per_device: p,
                    extra,
                });
            }
            if per.is_some() {
                verdict.push(Statement::measured(if extras.is_empty() {
                    format!("with strategy {}, sharing one context over {n} devices adds no measurable cost per buffer over one context per device", strategy.name())
                } else {
                    format!("with strategy {}, sharing one context over {n} devices adds {}", strategy.name(), extras.join(", "))
                }));
            }
            verdict.extend(cause(shared, per, n));
        }
        let failing_shared = strategies
            .iter()
            .filter_map(|s| pick(Role::Shared, *s))
            .find(|r| failed(r));
        let mut outcomes = Vec::new();
        for (fix, result) in fixes {
            let outcome = match result {
                Err(reason) => Outcome::Untested {
                    reason: reason.clone(),
                },
                Ok(r) if failed(r) || !matches!(r.stop, StopReason::Completed) => {
                    Outcome::DidNotWork {
                        buffers: r.buffers,
                        stop: outcome(r),
                    }
                }
                Ok(r) => Outcome::Worked {
                    buffers: r.buffers,
                    stop: outcome(r),
                },
            };
            outcomes.push(FixOutcome {
                fix: fix.clone(),
                outcome,
            });
        }
        if failing_shared.is_none() && !runs.iter().any(|p| failed(p.report)) {
            verdict.push(Statement::measured("no run failed".to_owned()));
            if let Some(ahead) = shared_any.and_then(|r| r.analysis.first_limit.as_ref()) {
                verdict.push(Statement::inferred(
                    format!("{} growth in the shared context", ahead.resource.label()),
                    format!(
                        "first limit ahead for the shared context: {} at about {} buffers{}",
                        ahead.limit.name,
                        ahead.count,
                        if ahead.estimated {
                            " (estimated from declared capacity)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        if let Some(runtime) = runtime_of(&platform) {
            for fact in runtime.facts {
                verdict.push(Statement::known(
                    fact.source,
                    format!("{}: {}", runtime.name, fact.text),
                ));
            }
        }
        for fact in SEED_ANSWER_CORRECTIONS {
            verdict.push(Statement::known(fact.source, fact.text));
        }
        Diagnosis {
            schema_version: DIAGNOSIS_SCHEMA_VERSION,
            platform,
            devices,
            runs: runs
                .iter()
                .map(|p| RunBrief {
                    role: p.role,
                    strategy: p.report.scenario.allocation.strategy,
                    run_name: p.report.run_name.clone(),
                    buffers: p.report.buffers,
                    headline: p.report.headline(),
                    outcome: p.report.stop.kind().to_owned(),
                    driver_messages: p.report.driver_messages.clone(),
                })
                .collect(),
            sharing_costs,
            fixes: outcomes,
            verdict,
        }
    }

    /// The statements a person reads first: measured and inferred ones.
    pub fn headline(&self) -> Vec<&Statement> {
        self.verdict
            .iter()
            .filter(|s| !matches!(s.basis, Basis::Known(_)))
            .collect()
    }
}

/// How a run ended, without the analysis: `completed 10000 buffers`.
fn outcome(r: &Report) -> String {
    match &r.stop {
        StopReason::Completed => format!("completed {} buffers", r.buffers),
        StopReason::Failed { error, call, .. } => {
            format!(
                "FAILED after {} buffers with {error} in {}",
                r.buffers,
                call.c_name()
            )
        }
        other => format!("{} after {} buffers", other.summary(), r.buffers),
    }
}

/// The cause of the shared case's failure: a resource at its limit that grew more
/// there than in the per-device run; else "not explained".
fn cause(shared: &Report, per: Option<&Report>, n: usize) -> Vec<Statement> {
    if !failed(shared) {
        return Vec::new();
    }
    match &shared.analysis.cause {
        Some(Cause::Resource {
            resource,
            limit,
            reading,
            per_buffer,
            predicted_count,
            observed_count,
        }) => {
            // Device memory without a source (PoCL) is estimated, not read: say so.
            let readings = if shared
                .costs
                .iter()
                .any(|c| &c.resource == resource && c.estimated)
            {
                "estimates (from host RSS on host-unified devices and where each buffer was placed)"
            } else {
                "readings"
            };
            // Compared like with like: an estimate with the other run's estimate.
            let elsewhere = per
                .and_then(|p| p.costs.iter().find(|c| &c.resource == resource))
                .map_or(0.0, |c| c.per_buffer);
            let grew_more = differs(resource, *per_buffer, elsewhere) && *per_buffer > elsewhere;
            if per.is_none() || grew_more {
                let unit = resource.unit();
                vec![Statement::inferred(
                    format!("{} {} of the {n}-device runs against {}", resource.label(), readings, limit.name),
                    format!(
                        "the shared context failed because {} reached {} ({} of {}, {:.0}%): it grows {} per buffer there and {} per buffer with one context per device; the limit predicts {} buffers, the run failed at {}",
                        resource.label(),
                        limit.name,
                        unit.format(*reading),
                        unit.format(limit.value),
                        reading / limit.value * 100.0,
                        unit.format(*per_buffer),
                        unit.format(elsewhere),
                        predicted_count,
                        observed_count
                    ),
                )]
            } else if let Some(p) = per.filter(|p| {
                matches!(&p.analysis.cause, Some(Cause::Resource { resource: r, .. }) if r == resource)
            }) {
                let unit = resource.unit();
                vec![Statement::inferred(
                    format!("{} {} of the shared and per-device runs against {}", resource.label(), readings, limit.name),
                    format!(
                        "one context per device failed the same way: {} reached {} ({} of {}) growing {} per buffer in the shared context and {} with one context per device; the limit predicts {} buffers, the runs failed at {} (shared) and {} (per device): a limit of the process, not of sharing a context",
                        resource.label(),
                        limit.name,
                        unit.format(*reading),
                        unit.format(limit.value),
                        unit.format(*per_buffer),
                        unit.format(elsewhere),
                        predicted_count,
                        observed_count,
                        p.buffers
                    ),
                )]
            } else {
                vec![Statement::inferred(
                    "the shared and per-device runs",
                    format!(
                        "{} was near {} when the shared context failed, but grows as much per buffer with one context per device ({}), which {}: not taken as the cause",
                        resource.label(),
                        limit.name,
                        resource.unit().format(elsewhere),
                        match per {
                            Some(p) if failed(p) => format!("failed otherwise ({})", outcome(p)),
                            _ => "did not fail".to_owned(),
                        }
                    ),
                )]
            }
        }
        Some(Cause::NotExplained { unmeasured }) => vec![Statement::inferred(
            "every resource measured in the runs",
            format!(
                "the shared context's failure is not explained by what was measured: no resource that grows was within {:.0}% of its limit. Not measured here: {}",
                (1.0 - NEAR_LIMIT) * 100.0,
                unmeasured.join("; ")
            ),
        )],
        None => vec![Statement::measured(format!("the shared context stopped: {}", shared.stop.summary()))],
    }
}

/// Plain numbers for a resource's cost, for tables.
pub fn format_cost(resource: &Resource, value: Option<f64>) -> String {
    match (value, resource.unit()) {
        (None, _) => "-".into(),
        (Some(v), Unit::Bytes) => format_bytes(v),
        (Some(v), Unit::Count) => format!("{v:.2}"),
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Diagnosis {
    /// The devices in one line.
    pub fn devices_line(&self) -> String {
        if self.devices.is_empty() {
            return self.platform.clone();
        }
        format!(
            "{} device(s) of {}: {}",
            self.devices.len(),
            self.platform,
            self.devices
                .iter()
                .map(|d| format!("{} {}", d.selector, d.display_name()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// The cost table's rows: strategy, resource, 1 device, shared, per device, extra.
    pub fn cost_rows(&self) -> Vec<[String; 6]> {
        self.sharing_costs
            .iter()
            .map(|c| {
                [
                    c.strategy.name().to_owned(),
                    c.resource.label(),
                    format_cost(&c.resource, c.one_device),
                    format_cost(&c.resource, c.shared),
                    format_cost(&c.resource, c.per_device),
                    format_cost(&c.resource, c.extra),
                ]
            })
            .collect()
    }

    /// One line per fix, each re-run and measured: worked, did not work, or untested
    /// (and why).
    pub fn fix_lines(&self) -> Vec<String> {
        if !self.runs.iter().any(|r| r.role == Role::Shared) {
            return vec!["not assessed: no shared context ran".into()];
        }
        if self.fixes.is_empty() {
            return vec!["not needed: the shared context neither failed nor heads for a limit the per-device contexts do not".into()];
        }
        // What the fixes are measured against: the shared case that failed.
        let shared_failed = self
            .runs
            .iter()
            .find(|r| r.role == Role::Shared && r.outcome == "failed")
            .map(|r| r.buffers);
        self.fixes
            .iter()
            .map(|f| match &f.outcome {
                Outcome::Worked { stop, .. } => {
                    format!("worked: {} ({stop}). Apply: {}", f.fix.label(), f.fix.how())
                }
                Outcome::DidNotWork { stop, buffers } => match shared_failed {
                    Some(before) if *buffers > before && before > 0 => format!(
                        "did not work: {} ({stop}), though it reached {:.1}x the shared context's {before}",
                        f.fix.label(),
                        *buffers as f64 / before as f64
                    ),
                    _ => format!("did not work: {} ({stop})", f.fix.label()),
                },
                Outcome::Untested { reason } => format!("untested: {} ({reason})", f.fix.label()),
            })
            .collect()
    }

    /// The diagnosis as Markdown: the verdict first, then the numbers behind it.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# clmulti diagnose\n\n{}\n\n## Verdict\n\n",
            self.devices_line()
        );
        for s in self.headline() {
            out.push_str(&format!("- {s}\n"));
        }
        out.push_str("\n## Known from documented sources\n\n");
        for s in self
            .verdict
            .iter()
            .filter(|s| matches!(s.basis, Basis::Known(_)))
        {
            out.push_str(&format!("- {s}\n"));
        }
        out.push_str("\n## Cost per buffer\n\n| strategy | resource | 1 device | shared | per device | shared - per device |\n|---|---|---|---|---|---|\n");
        for row in self.cost_rows() {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        out.push_str("\n## Runs\n\n| case | strategy | buffers | result |\n|---|---|---|---|\n");
        let n = self.devices.len().max(2);
        for r in &self.runs {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                r.role.label(n),
                r.strategy.name(),
                r.buffers,
                r.headline.replace('|', "\\|")
            ));
            for m in &r.driver_messages {
                out.push_str(&format!(
                    "|  | driver says |  | {} |\n",
                    m.replace('|', "\\|")
                ));
            }
        }
        out.push_str("\n## Fixes\n\n");
        for line in self.fix_lines() {
            out.push_str(&format!("- {line}\n"));
        }
        out
    }

    /// The diagnosis as an HTML section (escaped), verdict first.
    pub fn html(&self) -> String {
        let mut out = format!(
            "<section class=\"verdict\"><h2>Verdict</h2><p class=\"devices\">{}</p><ul>",
            html_escape(&self.devices_line())
        );
        for s in self.headline() {
            out.push_str(&format!(
                "<li class=\"{}\"><span class=\"tag\">{}</span> {}</li>",
                s.tag(),
                html_escape(&match &s.basis {
                    Basis::Measured => "[measured]".to_owned(),
                    Basis::Inferred(from) => format!("[inferred from {from}]"),
                    Basis::Known(source) => format!("[known: {source}]"),
                }),
                html_escape(&s.text)
            ));
        }
        out.push_str("</ul><h3>Fixes</h3><ul>");
        for line in self.fix_lines() {
            out.push_str(&format!("<li>{}</li>", html_escape(&line)));
        }
        out.push_str("</ul><details><summary>Known from documented sources</summary><ul>");
        for s in self
            .verdict
            .iter()
            .filter(|s| matches!(s.basis, Basis::Known(_)))
        {
            out.push_str(&format!("<li>{}</li>", html_escape(&s.to_string())));
        }
        out.push_str("</ul></details><h3>Cost per buffer</h3><table><tr><th>strategy</th><th>resource</th><th>1 device</th><th>shared</th><th>per device</th><th>shared - per device</th></tr>");
        for row in self.cost_rows() {
            out.push_str("<tr>");
            for cell in row {
                out.push_str(&format!("<td>{}</td>", html_escape(&cell)));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table></section>\n");
        out
    }
}
