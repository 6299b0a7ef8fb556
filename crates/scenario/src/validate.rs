//! Raw TOML values to the trusted [`Scenario`]: defaults, units, contradictions.

use crate::model::*;
use crate::raw::*;
use crate::size::parse_size;
use std::collections::BTreeMap;

/// A problem at a key path (`allocation.size`), before it is given a file location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted key path.
    pub key: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

fn problem(key: &str, message: impl Into<String>) -> Problem {
    Problem {
        key: key.to_owned(),
        message: message.into(),
    }
}

fn size(key: &str, raw: &RawSize) -> Result<u64, Problem> {
    match raw {
        RawSize::Bytes(b) => Ok(*b),
        RawSize::Text(t) => parse_size(t).map_err(|e| problem(key, e.to_string())),
    }
}

fn positive(key: &str, value: i64) -> Result<u64, Problem> {
    u64::try_from(value)
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| problem(key, format!("must be a positive integer, got {value}")))
}

fn one_of<T: Copy>(key: &str, value: &str, choices: &[(&str, T)]) -> Result<T, Problem> {
    choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(value))
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            problem(
                key,
                format!(
                    "unknown value {value:?}; expected one of: {}",
                    names.join(", ")
                ),
            )
        })
}

/// Default wall-clock guard for the allocation loop, seconds.
pub const DEFAULT_MAX_SECONDS: f64 = 300.0;
/// Default sampling interval.
pub const DEFAULT_SAMPLE_EVERY: u64 = 1000;

pub(crate) fn validate(
    raw: RawScenario,
    file: &str,
    fallback_name: &str,
    grid_point: BTreeMap<String, String>,
) -> Result<Scenario, Problem> {
    let base_name = match raw.name {
        Some(n) if n.trim().is_empty() => return Err(problem("name", "must not be empty")),
        Some(n) => n,
        None => fallback_name.to_owned(),
    };
    let name = if grid_point.is_empty() {
        base_name
    } else {
        let point: Vec<String> = grid_point.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{base_name}[{}]", point.join(","))
    };

    let devices = devices(&raw.devices)?;
    let context_mode = match raw.context.mode.as_deref() {
        None => ContextMode::Shared,
        Some(m) => one_of(
            "context.mode",
            m,
            &[
                ("shared", ContextMode::Shared),
                ("per-device", ContextMode::PerDevice),
            ],
        )?,
    };
    let allocation = allocation(&raw.allocation, &devices)?;

    for key in raw.env.keys() {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(problem(
                &format!("env.{key}"),
                "an environment variable name must be non-empty without '=' or NUL",
            ));
        }
    }
    let limits = Limits {
        nofile: raw
            .limits
            .nofile
            .map(|n| positive("limits.nofile", n))
            .transpose()?,
        address_space_bytes: raw
            .limits
            .address_space
            .as_ref()
            .map(|s| size("limits.as", s))
            .transpose()?,
    };
    if limits.address_space_bytes.is_some_and(|b| b < 64 << 20) {
        return Err(problem(
            "limits.as",
            "below 64MiB the process cannot even load the OpenCL runtime",
        ));
    }

    let guards = guards(&raw.guards)?;
    let sample_every = raw
        .sampling
        .every
        .map(|n| positive("sampling.every", n))
        .transpose()?
        .unwrap_or(DEFAULT_SAMPLE_EVERY);

    let axpy_check = match raw.axpy.check.as_deref() {
        None | Some("none") => {
            if raw.axpy.samples.is_some() {
                return Err(problem(
                    "axpy.samples",
                    "only applies with axpy.check = \"sample\"",
                ));
            }
            AxpyCheck::None
        }
        Some("all") => AxpyCheck::All,
        Some("sample") => AxpyCheck::Sample(
            raw.axpy
                .samples
                .map(|n| positive("axpy.samples", n))
                .transpose()?
                .unwrap_or(8),
        ),
        Some(other) => {
            return Err(problem(
                "axpy.check",
                format!("unknown value {other:?}; expected one of: none, sample, all"),
            ))
        }
    };
    if axpy_check != AxpyCheck::None && !allocation.keep {
        return Err(problem(
            "axpy.check",
            "dAxpy runs over kept buffers; allocation.keep = false releases each at once",
        ));
    }
    if axpy_check != AxpyCheck::None && allocation.size_bytes < 8 {
        return Err(problem(
            "axpy.check",
            "dAxpy needs buffers of at least 8 bytes (two floats)",
        ));
    }

    Ok(Scenario {
        name,
        description: raw.description.unwrap_or_default(),
        file: file.to_owned(),
        grid_point,
        devices,
        context_mode,
        allocation,
        env: raw.env,
        limits,
        guards,
        sample_every,
        axpy_check,
    })
}

fn devices(raw: &RawDevices) -> Result<Devices, Problem> {
    let platform = match &raw.platform {
        None => Platform::Auto,
        Some(RawNumberOrWord::Number(n)) => Platform::Index(
            usize::try_from(*n)
                .map_err(|_| problem("devices.platform", "a platform index must be >= 0"))?,
        ),
        Some(RawNumberOrWord::Word(w)) if w.eq_ignore_ascii_case("auto") => Platform::Auto,
        Some(RawNumberOrWord::Word(w)) if w.trim().is_empty() => {
            return Err(problem(
                "devices.platform",
                "must not be empty; use \"auto\"",
            ))
        }
        Some(RawNumberOrWord::Word(w)) => Platform::Name(w.clone()),
    };
    let device_type = match raw.device_type.as_deref() {
        None => DeviceType::Gpu,
        Some(t) => one_of(
            "devices.type",
            t,
            &[
                ("gpu", DeviceType::Gpu),
                ("cpu", DeviceType::Cpu),
                ("accelerator", DeviceType::Accelerator),
                ("all", DeviceType::All),
            ],
        )?,
    };
    let set = match (&raw.count, &raw.indices) {
        (Some(_), Some(_)) => {
            return Err(problem(
                "devices.indices",
                "give either devices.count or devices.indices, not both",
            ))
        }
        (Some(n), None) => DeviceSet::Count(positive("devices.count", *n)? as usize),
        (None, Some(list)) => {
            if list.is_empty() {
                return Err(problem("devices.indices", "must name at least one device"));
            }
            let mut seen = Vec::new();
            for (i, v) in list.iter().enumerate() {
                let index = usize::try_from(*v).map_err(|_| {
                    problem(
                        &format!("devices.indices[{i}]"),
                        "a device index must be >= 0",
                    )
                })?;
                if seen.contains(&index) {
                    return Err(problem(
                        &format!("devices.indices[{i}]"),
                        format!("device {index} is listed twice"),
                    ));
                }
                seen.push(index);
            }
            DeviceSet::Indices(seen)
        }
        (None, None) => DeviceSet::Count(1),
    };
    let fallback_to_any_type = match raw.fallback.as_deref() {
        None => true,
        Some(f) => one_of(
            "devices.fallback",
            f,
            &[("any-type", true), ("none", false)],
        )?,
    };
    Ok(Devices {
        platform,
        device_type,
        set,
        fallback_to_any_type,
    })
}

fn allocation(raw: &RawAllocation, devices: &Devices) -> Result<Allocation, Problem> {
    let size_bytes = raw
        .size
        .as_ref()
        .map(|s| size("allocation.size", s))
        .transpose()?
        .unwrap_or(1 << 20);
    if size_bytes == 0 {
        return Err(problem(
            "allocation.size",
            "a buffer must have at least 1 byte",
        ));
    }
    let count = match &raw.count {
        None => Count::Fixed(1000),
        Some(RawNumberOrWord::Number(n)) => Count::Fixed(positive("allocation.count", *n)?),
        Some(RawNumberOrWord::Word(w)) if w == "until-failure" => Count::UntilFailure,
        Some(RawNumberOrWord::Word(w)) => {
            return Err(problem(
                "allocation.count",
                format!("expected a positive integer or \"until-failure\", got {w:?}"),
            ))
        }
    };
    let mut flags = Vec::new();
    for (i, f) in raw.flags.iter().flatten().enumerate() {
        let key = format!("allocation.flags[{i}]");
        let name = f.trim().trim_start_matches("CL_MEM_").to_ascii_uppercase();
        let flag = one_of(
            &key,
            &name,
            &[
                ("READ_WRITE", MemFlag::ReadWrite),
                ("READ_ONLY", MemFlag::ReadOnly),
                ("WRITE_ONLY", MemFlag::WriteOnly),
                ("ALLOC_HOST_PTR", MemFlag::AllocHostPtr),
                ("USE_HOST_PTR", MemFlag::UseHostPtr),
                ("COPY_HOST_PTR", MemFlag::CopyHostPtr),
            ],
        )?;
        if flags.contains(&flag) {
            return Err(problem(&key, format!("{f} is listed twice")));
        }
        flags.push(flag);
    }
    if flags.is_empty() {
        flags.push(MemFlag::ReadWrite);
    }
    flags.sort();
    let has = |f| flags.contains(&f);
    let access = [MemFlag::ReadWrite, MemFlag::ReadOnly, MemFlag::WriteOnly];
    if access.iter().filter(|f| has(**f)).count() > 1 {
        return Err(problem(
            "allocation.flags",
            "READ_WRITE, READ_ONLY and WRITE_ONLY exclude each other (OpenCL spec)",
        ));
    }
    if has(MemFlag::UseHostPtr) && (has(MemFlag::AllocHostPtr) || has(MemFlag::CopyHostPtr)) {
        return Err(problem(
            "allocation.flags",
            "USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR (OpenCL spec)",
        ));
    }

    let placement = match &raw.placement {
        None => Placement::RoundRobin,
        Some(RawNumberOrWord::Word(w)) if w == "round-robin" => Placement::RoundRobin,
        Some(RawNumberOrWord::Word(w)) => {
            return Err(problem(
                "allocation.placement",
                format!("expected \"round-robin\" or a device index, got {w:?}"),
            ))
        }
        Some(RawNumberOrWord::Number(n)) => {
            let index = usize::try_from(*n)
                .map_err(|_| problem("allocation.placement", "a device index must be >= 0"))?;
            if index >= devices.set.len() {
                return Err(problem(
                    "allocation.placement",
                    format!(
                        "device {index} is not among the {} selected device(s) (indices start at 0)",
                        devices.set.len()
                    ),
                ));
            }
            Placement::Device(index)
        }
    };
    let strategy = match raw.strategy.as_deref() {
        None => Strategy::Create,
        Some(s) => one_of(
            "allocation.strategy",
            s,
            &[
                ("create", Strategy::Create),
                ("fill", Strategy::Fill),
                ("migrate", Strategy::Migrate),
                ("pin", Strategy::Pin),
                ("pool", Strategy::Pool),
            ],
        )?,
    };
    let pool_size_bytes = match (strategy, &raw.pool_size) {
        (Strategy::Pool, None) => Some(size_bytes.max(256 << 20)),
        (Strategy::Pool, Some(s)) => {
            let pool = size("allocation.pool_size", s)?;
            if pool < size_bytes {
                return Err(problem(
                    "allocation.pool_size",
                    format!("a pool of {pool} bytes cannot hold one {size_bytes}-byte buffer"),
                ));
            }
            Some(pool)
        }
        (_, Some(_)) => {
            return Err(problem(
                "allocation.pool_size",
                "only applies with allocation.strategy = \"pool\"",
            ))
        }
        (_, None) => None,
    };
    if strategy == Strategy::Pool
        && flags
            .iter()
            .any(|f| f.needs_host_memory() || *f == MemFlag::AllocHostPtr)
    {
        return Err(problem(
            "allocation.flags",
            "host-pointer flags apply to the pool buffer, not its sub-buffers: use strategy \"create\" with them",
        ));
    }
    let keep = raw.keep.unwrap_or(true);
    if !keep && strategy == Strategy::Pool {
        return Err(problem(
            "allocation.keep",
            "a pool keeps its memory until the end; keep = false contradicts strategy \"pool\"",
        ));
    }
    Ok(Allocation {
        size_bytes,
        count,
        flags,
        placement,
        keep,
        strategy,
        pool_size_bytes,
    })
}

fn guards(raw: &RawGuards) -> Result<Guards, Problem> {
    let max_rss = match &raw.max_rss {
        None => RssLimit::FractionOfRam(0.5),
        Some(RawSize::Text(t)) if t.trim_end().ends_with('%') => {
            let pct: f64 = t.trim().trim_end_matches('%').trim().parse().map_err(|_| {
                problem(
                    "guards.max_rss",
                    format!("{t:?} is not a percentage like \"50%\""),
                )
            })?;
            if !(pct > 0.0 && pct <= 100.0) {
                return Err(problem(
                    "guards.max_rss",
                    "a percentage of RAM must be in (0, 100]",
                ));
            }
            RssLimit::FractionOfRam(pct / 100.0)
        }
        Some(s) => RssLimit::Bytes(size("guards.max_rss", s)?),
    };
    let max_seconds = match raw.max_seconds {
        None => DEFAULT_MAX_SECONDS,
        Some(s) if s.is_finite() && s > 0.0 => s,
        Some(s) => {
            return Err(problem(
                "guards.max_seconds",
                format!("must be > 0, got {s}"),
            ))
        }
    };
    Ok(Guards {
        max_total_bytes: raw
            .max_total
            .as_ref()
            .map(|s| size("guards.max_total", s))
            .transpose()?,
        max_rss,
        max_seconds,
    })
}
