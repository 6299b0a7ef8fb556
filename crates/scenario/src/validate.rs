//! Raw TOML values to the trusted [`Scenario`]: defaults, units, contradictions.

use crate::model::*;
use crate::raw::*;
use crate::size::parse_size;
use std::collections::BTreeMap;
use std::path::Path;

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
/// The longest time guard: a week.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// Default sampling interval.
pub const DEFAULT_SAMPLE_EVERY: u64 = 1000;
/// At most this many `[env]` variables (setting each one scans the environment).
pub const MAX_ENV_VARS: usize = 256;
/// `[env]` keys whose values are paths (`:`-separated lists for the first two):
/// relative entries are resolved against the scenario's folder, and each must exist.
pub const PATH_ENV_KEYS: [&str; 4] = [
    "OPENCL_LAYERS",
    "OCL_ICD_FILENAMES",
    "OCL_ICD_VENDORS",
    "LD_PRELOAD",
];
/// Linux refuses to start a process with one environment string (`KEY=VALUE`) longer
/// than this (MAX_ARG_STRLEN, with its NUL).
pub const MAX_ENV_ENTRY_BYTES: usize = 128 * 1024 - 1;
/// The file name of clmulti's emulation layer (crate `clmulti-layer`).
pub const LAYER_FILE_NAME: &str = "libclmulti_layer.so";
/// In a path-valued `[env]` entry: the emulation layer built beside the running
/// clmulti binary (`target/debug` or `target/release`).
pub const LAYER_TOKEN: &str = "{clmulti-layer}";
/// In any `[env]` value: the number of devices the run selects (`devices.count`, or how
/// many `devices.indices` name), so that a grid over `devices.count` can tell a runtime
/// how many devices to emulate (NEO's `CreateMultipleRootDevices = "{devices.count}"`).
pub const DEVICE_COUNT_TOKEN: &str = "{devices.count}";

/// What validation needs to know beyond the file: where relative paths start, and the
/// hard limits of the machine that will run it (`None`: not checked).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The scenario file's folder; `None` resolves relative paths against the
    /// current directory.
    pub base_dir: Option<std::path::PathBuf>,
    /// The hard `RLIMIT_NOFILE` a run's soft limit cannot exceed.
    pub nofile_hard: Option<u64>,
    /// The hard `RLIMIT_AS`, bytes.
    pub address_space_hard: Option<u64>,
    /// Where the emulation layer is ([`LAYER_TOKEN`] stands for it).
    pub layer: Option<std::path::PathBuf>,
}

pub(crate) fn validate(
    raw: RawScenario,
    file: &str,
    fallback_name: &str,
    grid_point: BTreeMap<String, String>,
    context: &Context,
) -> Result<Scenario, Problem> {
    let base_name = match raw.name {
        Some(n) if n.trim().is_empty() => return Err(problem("name", "must not be empty")),
        Some(n) if n.chars().any(char::is_control) => {
            return Err(problem(
                "name",
                "must be one line without control characters (it names files and table rows)",
            ))
        }
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

    let env = env(raw.env, devices.set.len(), context)?;
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
    let above_hard = |value: Option<u64>, hard: Option<u64>| value.zip(hard).filter(|(v, h)| v > h);
    if let Some((v, h)) = above_hard(limits.nofile, context.nofile_hard) {
        return Err(problem(
            "limits.nofile",
            format!("{v} is above this machine's hard RLIMIT_NOFILE ({h}); a process can raise its soft limit only up to the hard one (`ulimit -Hn`)"),
        ));
    }
    if let Some((v, h)) = above_hard(limits.address_space_bytes, context.address_space_hard) {
        return Err(problem(
            "limits.as",
            format!("{v} bytes is above this machine's hard RLIMIT_AS ({h} bytes)"),
        ));
    }

    let guards = guards(&raw.guards)?;
    let sample_every = raw
        .sampling
        .every
        .map(|n| positive("sampling.every", n))
        .transpose()?
        .unwrap_or(DEFAULT_SAMPLE_EVERY);

    let split = raw.axpy.split.unwrap_or(false);
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
    if axpy_check != AxpyCheck::None && allocation.strategy == Strategy::Pin {
        return Err(problem(
            "axpy.check",
            "the check runs over kept buffers of strategy create, fill, migrate or pool",
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
        env,
        limits,
        guards,
        sample_every,
        axpy: Axpy {
            check: axpy_check,
            split,
        },
    })
}

fn env(
    raw: BTreeMap<String, String>,
    device_count: usize,
    context: &Context,
) -> Result<BTreeMap<String, String>, Problem> {
    if raw.len() > MAX_ENV_VARS {
        return Err(problem(
            "env",
            format!(
                "{} variables; at most {MAX_ENV_VARS} are allowed",
                raw.len()
            ),
        ));
    }
    let mut env = BTreeMap::new();
    for (key, value) in raw {
        let at = format!("env.{key}");
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(problem(
                &at,
                "an environment variable name must be non-empty without '=' or NUL",
            ));
        }
        if value.contains('\0') {
            return Err(problem(
                &at,
                "an environment variable value cannot contain NUL",
            ));
        }
        let value = value.replace(DEVICE_COUNT_TOKEN, &device_count.to_string());
        if key.len() + 1 + value.len() > MAX_ENV_ENTRY_BYTES {
            return Err(problem(
                &at,
                format!(
                    "{} bytes as KEY=VALUE; Linux starts no process with an entry over {MAX_ENV_ENTRY_BYTES}",
                    key.len() + 1 + value.len()
                ),
            ));
        }
        let value = if PATH_ENV_KEYS.contains(&key.as_str()) {
            resolve_paths(&at, &value, context)?
        } else {
            value
        };
        env.insert(key, value);
    }
    crate::layer::LayerSettings::read(|k| env.get(k).cloned())
        .map_err(|(key, message)| problem(&format!("env.{key}"), message))?;
    let names_layer = env
        .get("OPENCL_LAYERS")
        .is_some_and(|l| l.split(':').any(|p| p.ends_with(LAYER_FILE_NAME)));
    if names_layer && !env.contains_key(crate::layer::POLICY) {
        let names: Vec<&str> = crate::layer::Policy::ALL.iter().map(|(n, _)| *n).collect();
        return Err(problem(
            "env.OPENCL_LAYERS",
            format!(
                "names clmulti's layer but no {} ({})",
                crate::layer::POLICY,
                names.join(", ")
            ),
        ));
    }
    Ok(env)
}

/// Resolves each `:`-separated path against the scenario's folder and checks it exists
/// (LD_PRELOAD: also space-separated, and a bare name is the dynamic linker's to find).
fn resolve_paths(key: &str, value: &str, context: &Context) -> Result<String, Problem> {
    let preload = key == "env.LD_PRELOAD";
    let mut resolved = Vec::new();
    for entry in value
        .split(|c| c == ':' || (preload && c == ' '))
        .filter(|e| !e.is_empty())
    {
        if preload && !entry.contains('/') {
            resolved.push(entry.to_owned());
            continue;
        }
        let path = if entry == LAYER_TOKEN {
            context.layer.clone().ok_or_else(|| {
                problem(key, format!("{LAYER_TOKEN} names the layer built beside clmulti; this tool does not know where that is"))
            })?
        } else {
            let path = Path::new(entry);
            match (&context.base_dir, path.is_relative()) {
                (Some(base), true) => base.join(path),
                _ => path.to_path_buf(),
            }
        };
        if !path.exists() {
            let hint = if path.file_name().is_some_and(|n| n == LAYER_FILE_NAME) {
                format!(
                    "; build it with `cargo build{} -p clmulti-layer` (`cargo xtask sweep` builds it too)",
                    if path.to_string_lossy().contains("/release/") { " --release" } else { "" }
                )
            } else if path.to_string_lossy().contains(".intel-opencl") {
                "; install Intel's CPU runtime there with scripts/setup-intel-opencl.sh".into()
            } else if path.to_string_lossy().contains(".intel-gpu") {
                "; install Intel's GPU runtime NEO and its vendors folder with scripts/setup-intel-gpu.sh"
                    .into()
            } else {
                String::new()
            };
            return Err(problem(
                key,
                format!("{} does not exist{hint}", path.display()),
            ));
        }
        resolved.push(path.to_string_lossy().into_owned());
    }
    Ok(resolved.join(":"))
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
    let partition = match &raw.partition {
        None => None,
        Some(RawPartition::Word(w)) if w == "equally" => Some(Partition::Equally(1)),
        Some(RawPartition::Word(w)) => {
            return Err(problem(
                "devices.partition",
                format!(
                    "expected \"equally\" or a list of compute-unit counts like [1, 1], got {w:?}"
                ),
            ))
        }
        Some(RawPartition::Counts(counts)) => {
            if counts.is_empty() {
                return Err(problem("devices.partition", "needs at least one count"));
            }
            let counts = counts
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    u32::try_from(*c).ok().filter(|c| *c > 0).ok_or_else(|| {
                        problem(
                            &format!("devices.partition[{i}]"),
                            format!("a compute-unit count must be a positive integer, got {c}"),
                        )
                    })
                })
                .collect::<Result<Vec<u32>, Problem>>()?;
            Some(Partition::ByCounts(counts))
        }
    };
    Ok(Devices {
        platform,
        device_type,
        set,
        fallback_to_any_type,
        partition,
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
        Some(s) if s > MAX_SECONDS => {
            return Err(problem(
                "guards.max_seconds",
                format!("must be at most {MAX_SECONDS} (a week), got {s}"),
            ))
        }
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
