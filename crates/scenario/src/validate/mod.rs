//! Raw TOML values to the trusted [`Scenario`]: defaults, units, contradictions.
//! The process's environment and limits are checked in [`process`], the device
//! selection in [`devices`].

mod allocation;
mod devices;
mod process;

use crate::defs::*;
pub(crate) use crate::error::{problem, Problem};
use crate::model::*;
use crate::raw::*;
use crate::size::parse_size;
use std::collections::BTreeMap;

/// An integer key's value within the range its item gives it.
pub(crate) fn in_range(key: &Key, value: i64) -> Result<u64, Problem> {
    let Value::Integer { min, max, .. } = key.value else {
        return positive(key, value);
    };
    let max = max.unwrap_or(i64::MAX);
    if (min..=max).contains(&value) && value >= 0 {
        return Ok(value as u64);
    }
    Err(problem(
        key.name,
        format!(
            "{value} is not {}",
            crate::keys::takes(key.name).unwrap_or_default()
        ),
    ))
}

/// A key's value as written, or its default from the key's item: the one place a
/// default is written.
pub(crate) fn or_default<T: serde::de::DeserializeOwned>(value: Option<T>, key: &Key) -> T {
    value.unwrap_or_else(|| crate::defs::default(key))
}

pub(crate) fn size(key: &Key, raw: &RawSize) -> Result<u64, Problem> {
    match raw {
        RawSize::Bytes(b) => Ok(*b),
        RawSize::Text(t) => parse_size(t).map_err(|e| problem(key.name, e.to_string())),
    }
}

pub(crate) fn positive(key: &Key, value: i64) -> Result<u64, Problem> {
    u64::try_from(value)
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| problem(key.name, format!("must be a positive integer, got {value}")))
}

/// The value `table` gives the word written at `at` (a key's name, or a list's
/// item: `allocation.flags[1]`), in any case.
pub(crate) fn one_of<T: Copy>(at: &str, written: &str, table: &[Word<T>]) -> Result<T, Problem> {
    table
        .iter()
        .find(|(word, _, _)| crate::defs::same_word(written, word))
        .map(|(_, _, value)| *value)
        .ok_or_else(|| {
            let words: Vec<&str> = table.iter().map(|(w, _, _)| *w).collect();
            problem(
                at,
                format!(
                    "unknown value {written:?}; expected one of: {}{}",
                    words.join(", "),
                    crate::suggest::hint(written, words.iter().copied())
                ),
            )
        })
}

/// The value of a key that takes words, as written or its default.
pub(crate) fn word<T: Copy>(
    key: &Key,
    written: &Option<String>,
    table: &[Word<T>],
) -> Result<T, Problem> {
    one_of(key.name, &or_default(written.clone(), key), table)
}

/// Seconds for a time limit on the command line (`--timeout`): finite, above 0, at
/// most [`MAX_SECONDS`].
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= MAX_SECONDS)
        .ok_or_else(|| {
            format!("{text}: expected seconds above 0 and at most {MAX_SECONDS} (a week)")
        })
}
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
    /// The hard resource limits a run's soft ones cannot exceed (absent: unlimited
    /// or not checked).
    pub hard_limits: BTreeMap<Rlimit, u64>,
    /// The folder holding the project's libraries ([`PROJECT_LIBRARIES`]: what their
    /// placeholders stand for).
    pub libraries: Option<std::path::PathBuf>,
}

/// The `[env]` a run gets (paths resolved, placeholders filled): what validation
/// makes of its `[devices]` and `[env]` alone, the rest of the run not looked at.
pub(crate) fn env_only(
    raw: RawScenario,
    context: &Context,
) -> Result<BTreeMap<String, String>, Problem> {
    let devices = devices::devices(&raw.devices)?;
    process::env(raw.env, devices.set.len(), context)
}

pub(crate) fn validate(
    raw: RawScenario,
    file: &str,
    fallback_name: &str,
    grid_point: BTreeMap<String, toml::Value>,
    context: &Context,
) -> Result<Scenario, Problem> {
    let name = run_name(raw.name, fallback_name, &grid_point)?;
    let devices = devices::devices(&raw.devices)?;
    let (context_mode, context_count) = contexts(&raw.context)?;
    let allocation = allocation::allocation(&raw.allocation, &devices)?;
    if context_count > 1 && allocation.strategy == Strategy::Pool {
        return Err(problem(
            CONTEXT_COUNT.name,
            "a pool belongs to one context: use one context with strategy \"pool\"",
        ));
    }

    let env = process::env(raw.env, devices.set.len(), context)?;
    let limits = process::limits(&raw.limits, context)?;

    let guards = allocation::guards(&raw.guards)?;
    let sample_every = positive(
        &SAMPLING_EVERY,
        or_default(raw.sampling.every, &SAMPLING_EVERY),
    )?;
    let sample_maps = word(&SAMPLING_MAPS, &raw.sampling.maps, &MAPS_SAMPLINGS)?;

    let split: bool = or_default(raw.axpy.split, &AXPY_SPLIT);
    let axpy_check = axpy_check(&raw.axpy)?;
    axpy_check_fits(axpy_check, &allocation, context_count)?;
    let description = description(raw.description)?;

    Ok(Scenario {
        name,
        description,
        file: file.to_owned(),
        grid_point,
        devices,
        context_mode,
        context_count,
        allocation,
        env,
        limits,
        guards,
        sample_every,
        sample_maps,
        axpy: Axpy {
            check: axpy_check,
            split,
        },
    })
}

/// The run's name: the file's `name` (or `fallback_name`), then its grid point.
fn run_name(
    name: Option<String>,
    fallback_name: &str,
    grid_point: &BTreeMap<String, toml::Value>,
) -> Result<String, Problem> {
    let base_name = match name {
        Some(n) if n.trim().is_empty() => return Err(problem(NAME.name, "must not be empty")),
        Some(n) if n.len() > MAX_NAME_BYTES => {
            return Err(problem(
                NAME.name,
                format!(
                    "{} bytes; a name is at most {MAX_NAME_BYTES} (it names table rows and plots)",
                    n.len()
                ),
            ))
        }
        Some(n) if n.chars().any(char::is_control) => {
            return Err(problem(
                NAME.name,
                "must be one line without control characters (it names files and table rows)",
            ))
        }
        Some(n) => n,
        None => fallback_name.to_owned(),
    };
    if grid_point.is_empty() {
        return Ok(base_name);
    }
    let point: Vec<String> = grid_point
        .iter()
        .map(|(k, v)| format!("{k}={}", crate::keys::label(v)))
        .collect();
    Ok(format!("{base_name}[{}]", point.join(",")))
}

/// `[context]`: its mode and how many contexts.
fn contexts(raw: &RawContext) -> Result<(ContextMode, u64), Problem> {
    let context_mode = word(&CONTEXT_MODE, &raw.mode, &CONTEXT_MODES)?;
    let context_count = positive(&CONTEXT_COUNT, or_default(raw.count, &CONTEXT_COUNT))?;
    if context_count > 1 && context_mode != ContextMode::Shared {
        return Err(problem(
            CONTEXT_COUNT.name,
            "several contexts apply to mode = \"shared\" (per-device makes one per device)",
        ));
    }
    if context_count > MAX_CONTEXTS {
        return Err(problem(
            CONTEXT_COUNT.name,
            format!("{context_count} contexts; at most {MAX_CONTEXTS} are allowed"),
        ));
    }
    Ok((context_mode, context_count))
}

/// `axpy.check` and, with `sample`, `axpy.samples`.
fn axpy_check(raw: &RawAxpy) -> Result<AxpyCheck, Problem> {
    Ok(match word(&AXPY_CHECK, &raw.check, &AXPY_CHECKS)? {
        Check::None if raw.samples.is_some() => {
            return Err(problem(
                AXPY_SAMPLES.name,
                "only applies with axpy.check = \"sample\"",
            ))
        }
        Check::None => AxpyCheck::None,
        Check::All => AxpyCheck::All,
        Check::Sample => AxpyCheck::Sample(positive(
            &AXPY_SAMPLES,
            or_default(raw.samples, &AXPY_SAMPLES),
        )?),
    })
}

/// A dAxpy check needs kept buffers of two floats or more, of one context, and a
/// strategy whose buffers it can pair.
fn axpy_check_fits(
    check: AxpyCheck,
    allocation: &Allocation,
    context_count: u64,
) -> Result<(), Problem> {
    if check == AxpyCheck::None {
        return Ok(());
    }
    if !allocation.keep {
        return Err(problem(
            AXPY_CHECK.name,
            "dAxpy runs over kept buffers; allocation.keep = false releases each at once",
        ));
    }
    if allocation.size_bytes < 8 {
        return Err(problem(
            AXPY_CHECK.name,
            "dAxpy needs buffers of at least 8 bytes (two floats)",
        ));
    }
    if context_count > 1 {
        return Err(problem(AXPY_CHECK.name,
            "dAxpy pairs buffers of one context; with context.count > 1 a device's buffers span contexts",
        ));
    }
    if allocation.strategy == Strategy::Pin {
        return Err(problem(
            AXPY_CHECK.name,
            "the check runs over kept buffers of strategy create, fill, migrate or pool",
        ));
    }
    Ok(())
}

fn description(description: Option<String>) -> Result<String, Problem> {
    let description = description.unwrap_or_default();
    if description.len() > MAX_DESCRIPTION_BYTES {
        return Err(problem(
            DESCRIPTION.name,
            format!(
                "{} bytes; a description is at most {} KiB (every run of the grid carries it)",
                description.len(),
                MAX_DESCRIPTION_BYTES >> 10
            ),
        ));
    }
    Ok(description)
}
