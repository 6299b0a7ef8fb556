//! Every scenario key, defined once (after ripgrep's `flags/defs.rs`): its name, what an
//! editor shows for it, what value it takes, its default as the file would write it,
//! and the other keys its checks read. From this table come the JSON Schema
//! ([`crate::schema`]), the defaults validation falls back on ([`default`]), the words
//! a message uses for what a key takes ([`crate::keys::takes`]) and which keys a
//! check between keys reads ([`reads`]). The raw types ([`crate::raw`]) parse the
//! file; a test holds their fields and this table to the same keys.
//!
//! Adding a key: a field in its raw table, an entry here, its field in the model
//! ([`crate::model`]) and the line of validation that turns one into the other.

use crate::model::{ContextMode, DeviceType, MapsSampling, MemFlag, Strategy};
use serde::de::DeserializeOwned;

/// A key of a scenario file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key {
    /// As the file spells it: `allocation.size` (top-level keys have no dot).
    pub name: &'static str,
    /// What it is, for editors (the JSON Schema's descriptions).
    #[cfg_attr(not(feature = "schema"), allow(dead_code))]
    pub doc: &'static str,
    /// What value it takes.
    pub value: Value,
    /// Its default, as TOML would write it (`"1MiB"`, `1000`, `true`); `None` when
    /// leaving it out means something of its own (no pool size, no limit).
    pub default: Option<&'static str>,
    /// The other keys its checks read: a key left out, whose default stands in, is
    /// not blamed for a problem with this one.
    pub reads: &'static [&'static str],
}

/// What a key's value may be: its schema and its words derive from this.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value {
    /// One line of text, not blank, at most [`MAX_NAME_BYTES`].
    Name,
    /// Text of at most [`MAX_DESCRIPTION_BYTES`].
    Description,
    /// "auto", a platform's index, or a substring of its name or vendor.
    Platform,
    /// An integer in a range (`unit` names what it counts, `note` adds a bound the
    /// machine sets).
    Integer {
        min: i64,
        max: Option<i64>,
        unit: Option<&'static str>,
        note: Option<&'static str>,
    },
    /// One of a few words, each with what it means.
    Words(&'static [(&'static str, &'static str)]),
    /// true or false.
    Bool,
    /// A size in bytes (an integer, or a string with a unit) of at least `min`.
    Size { min: u64 },
    /// A size, or a percentage of RAM.
    SizeOrPercent,
    /// A number of seconds above 0, at most [`MAX_SECONDS`].
    Seconds,
    /// A positive count of buffers, or "until-failure".
    Count,
    /// "round-robin", or the index of one selected device.
    Placement,
    /// A list of device indices, each once.
    Indices,
    /// "equally", or a list of compute-unit counts.
    Partition,
    /// A list of memory flags.
    Flags,
    /// `[env]`: variables and their values.
    Env,
}

/// The longest `name`, bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// The longest `description`, bytes: prose, carried by every run of a grid.
pub const MAX_DESCRIPTION_BYTES: usize = 64 << 10;
/// The most shared contexts one run may create.
pub const MAX_CONTEXTS: u64 = 64;
/// The most devices `devices.indices` (or sub-devices `devices.partition`) may
/// name: more than any machine has, few enough that a long list costs nothing.
pub const MAX_DEVICE_LIST: usize = 4096;
/// The longest platform name or vendor substring, bytes.
pub(crate) const MAX_PLATFORM_NAME: usize = 256;
/// Default for `guards.max_seconds`.
pub const DEFAULT_MAX_SECONDS: f64 = 300.0;
/// The longest allowed `guards.max_seconds`: a week.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// Default sampling interval.
pub const DEFAULT_SAMPLE_EVERY: u64 = 1000;
/// The longest pause after a buffer, microseconds.
pub const MAX_PAUSE_US: i64 = 1_000_000;
/// The smallest `RLIMIT_AS` and `RLIMIT_DATA` under which clmulti itself starts
/// (below, not even the ICD loader loads).
pub(crate) const MIN_ADDRESS_SPACE: u64 = 64 << 20;
/// The smallest `RLIMIT_NOFILE`: the standard streams alone take 3 descriptors.
pub(crate) const MIN_NOFILE: u64 = 3;

/// `devices.type`.
pub(crate) const DEVICE_TYPES: [(&str, DeviceType); 4] = [
    ("gpu", DeviceType::Gpu),
    ("cpu", DeviceType::Cpu),
    ("accelerator", DeviceType::Accelerator),
    ("all", DeviceType::All),
];
/// `devices.fallback`: whether to fall back to devices of any type.
pub(crate) const FALLBACKS: [(&str, bool); 2] = [("any-type", true), ("none", false)];
/// `context.mode`.
pub(crate) const CONTEXT_MODES: [(&str, ContextMode); 2] = [
    ("shared", ContextMode::Shared),
    ("per-device", ContextMode::PerDevice),
];
/// `allocation.flags`, as written without `CL_MEM_`.
pub(crate) const MEM_FLAGS: [(&str, MemFlag); 6] = [
    ("READ_WRITE", MemFlag::ReadWrite),
    ("READ_ONLY", MemFlag::ReadOnly),
    ("WRITE_ONLY", MemFlag::WriteOnly),
    ("ALLOC_HOST_PTR", MemFlag::AllocHostPtr),
    ("USE_HOST_PTR", MemFlag::UseHostPtr),
    ("COPY_HOST_PTR", MemFlag::CopyHostPtr),
];
/// A memory flag as written, as [`MEM_FLAGS`] names it: spaces around it, the
/// `CL_MEM_` prefix and the case do not matter (`" cl_mem_read_write"`).
pub(crate) fn flag_name(written: &str) -> String {
    let upper = written.trim().to_ascii_uppercase();
    upper.strip_prefix("CL_MEM_").unwrap_or(&upper).to_owned()
}

/// Words (`devices.type`, `context.mode`, ...) are read in any case: `"GPU"` is
/// `"gpu"`. The schema's patterns are made from this too.
pub(crate) fn same_word(written: &str, word: &str) -> bool {
    written.eq_ignore_ascii_case(word)
}

/// `allocation.strategy`.
pub(crate) const STRATEGIES: [(&str, Strategy); 5] = [
    ("create", Strategy::Create),
    ("fill", Strategy::Fill),
    ("migrate", Strategy::Migrate),
    ("pin", Strategy::Pin),
    ("pool", Strategy::Pool),
];
/// `sampling.maps`.
pub(crate) const MAPS_SAMPLINGS: [(&str, MapsSampling); 2] = [
    ("budgeted", MapsSampling::Budgeted),
    ("every-sample", MapsSampling::EverySample),
];
/// `axpy.check`: none, a sample of pairs (`axpy.samples`), or every pair.
pub(crate) const AXPY_CHECKS: [&str; 3] = ["none", "sample", "all"];

/// The tables of a scenario, in documented order (`grid` last), each with what an
/// editor shows for it.
pub(crate) const TABLES: [(&str, &str); 9] = [
    ("devices", "Which devices."),
    ("context", "One context over all devices, or one per device."),
    ("allocation", "What to allocate, and how."),
    ("env", "Environment variables set before the OpenCL runtime loads. OPENCL_LAYERS, OCL_ICD_VENDORS and OCL_ICD_FILENAMES are paths, relative to this file; \"{clmulti-layer}\" names clmulti's emulation layer; \"{devices.count}\" in any value is the run's device count (e.g. CreateMultipleRootDevices for NEO). Names without '=', spaces or control characters; values one line of printable text."),
    ("limits", "Resource limits (soft) for the process that runs the scenario."),
    ("guards", "When to stop early; the run says which guard stopped it."),
    ("sampling", "When to read the resources."),
    ("axpy", "dAxpy after the allocation loop."),
    ("grid", "Keys to vary: \"table.key\" = [values]; the file expands to every combination."),
];

const fn key(name: &'static str, doc: &'static str, value: Value) -> Key {
    Key {
        name,
        doc,
        value,
        default: None,
        reads: &[],
    }
}

const fn integer(min: i64, max: Option<i64>) -> Value {
    Value::Integer {
        min,
        max,
        unit: None,
        note: None,
    }
}

impl Key {
    const fn default(self, default: &'static str) -> Key {
        Key {
            default: Some(default),
            ..self
        }
    }

    const fn reads(self, reads: &'static [&'static str]) -> Key {
        Key { reads, ..self }
    }
}

/// Every key, in documented order.
pub(crate) const KEYS: &[Key] = &[
    key("name", "The scenario's name (default: the file name; one line, at most 256 bytes); a grid appends its point.", Value::Name),
    key("description", "What the scenario shows (at most 64 KiB).", Value::Description),
    key("devices.platform", "\"auto\", a substring of the platform's name or vendor (\"NVIDIA\", \"Intel\"), or an index.", Value::Platform).default("\"auto\""),
    key("devices.type", "gpu | cpu | accelerator | all (default gpu).", Value::Words(&[
        ("gpu", "GPUs (default)"),
        ("cpu", "CPU devices"),
        ("accelerator", "accelerators"),
        ("all", "every device of the platform"),
    ])).default("\"gpu\""),
    key("devices.count", "The first N devices of that type (default 1).", integer(1, Some(MAX_DEVICE_LIST as i64))).default("1"),
    key("devices.indices", "These devices of that type, by index (instead of count; at most 4096).", Value::Indices).reads(&["devices.count"]),
    key("devices.fallback", "any-type (default: with no device of the type, use any type) | none.", Value::Words(&[
        ("any-type", "with no device of the type, use devices of any type (default)"),
        ("none", "with no device of the type, the run is skipped"),
    ])).default("\"any-type\""),
    key("devices.partition", "Split each device into sub-devices first: \"equally\" or compute-unit counts [1, 1].", Value::Partition),
    key("context.mode", "shared (default) | per-device.", Value::Words(&[
        ("shared", "one context over all devices (default; the seed's failing case)"),
        ("per-device", "one context per device"),
    ])).default("\"shared\""),
    key("context.count", "Shared contexts in the process (default 1; only with mode = \"shared\"): buffers take turns over them.", integer(1, Some(MAX_CONTEXTS as i64))).default("1").reads(&["context.mode", "allocation.strategy"]),
    key("allocation.size", "Bytes per buffer (default \"1MiB\").", Value::Size { min: 1 }).default("\"1MiB\""),
    key("allocation.count", "How many buffers (default 1000), or \"until-failure\".", Value::Count).default("1000"),
    key("allocation.flags", "READ_WRITE (default), READ_ONLY, WRITE_ONLY, ALLOC_HOST_PTR, USE_HOST_PTR, COPY_HOST_PTR.", Value::Flags).default("[\"READ_WRITE\"]").reads(&["allocation.strategy"]),
    key("allocation.placement", "\"round-robin\" (default) or the index of one selected device.", Value::Placement).default("\"round-robin\"").reads(&["devices.count", "devices.indices", "devices.partition"]),
    key("allocation.keep", "Keep every buffer (default true), or release each right after creating it.", Value::Bool).default("true").reads(&["allocation.strategy"]),
    key("allocation.strategy", "create (default) | fill | migrate | pin | pool.", Value::Words(&[
        ("create", "clCreateBuffer only (default; lazy runtimes back nothing yet)"),
        ("fill", "create, then clEnqueueFillBuffer: the buffer becomes resident"),
        ("migrate", "create, then clEnqueueMigrateMemObjects to its device"),
        ("pin", "clCreateBufferWithProperties with CL_MEM_DEVICE_ID_INTEL: allocated on its device only"),
        ("pool", "sub-buffers carved out of large pool buffers"),
    ])).default("\"create\""),
    key("allocation.pool_size", "Strategy pool: bytes per pool buffer (default the larger of size and 256MiB).", Value::Size { min: 1 }).reads(&["allocation.strategy", "allocation.size"]),
    key("allocation.release_every", "Release every live buffer after each N buffers, then go on (default: never).", integer(1, None)).reads(&["allocation.keep", "allocation.strategy", "allocation.count"]),
    key("allocation.pause_us", "Microseconds to wait after each buffer (default 0): a limit on time then fails sooner in buffers, a limit on buffers does not.", Value::Integer { min: 0, max: Some(MAX_PAUSE_US), unit: Some("microseconds"), note: None }).default("0"),
    key("allocation.release_pause_us", "Microseconds to wait after each release of every live buffer (default 0): capacity a runtime gives back some time after release then comes back.", Value::Integer { min: 0, max: Some(MAX_PAUSE_US * 10), unit: Some("microseconds"), note: None }).default("0").reads(&["allocation.release_every"]),
    key("limits.nofile", "RLIMIT_NOFILE: open file descriptors (at least 3, at most the hard limit).", Value::Integer { min: MIN_NOFILE as i64, max: None, unit: None, note: Some("at most this machine's hard limit") }),
    key("limits.as", "RLIMIT_AS: virtual address space (at least \"64MiB\").", Value::Size { min: MIN_ADDRESS_SPACE }),
    key("limits.memlock", "RLIMIT_MEMLOCK: locked memory (a size; root is exempt).", Value::Size { min: 0 }),
    key("limits.nproc", "RLIMIT_NPROC: processes and threads of this user (root is exempt).", Value::Integer { min: 1, max: None, unit: None, note: Some("at most this machine's hard limit") }),
    key("limits.data", "RLIMIT_DATA: data segment, heap and private mappings (at least \"64MiB\").", Value::Size { min: MIN_ADDRESS_SPACE }),
    key("guards.max_total", "Bytes requested at most.", Value::Size { min: 0 }),
    key("guards.max_rss", "Host RSS at most: a size or a percentage of the memory ceiling (\"50%\", the default).", Value::SizeOrPercent).default("\"50%\""),
    key("guards.max_seconds", "Seconds of allocation at most (default 300, at most a week).", Value::Seconds).default("300.0"),
    key("sampling.every", "Read every N buffers (default 1000), and at the end and at a failure.", integer(1, None)).default("1000"),
    key("sampling.maps", "budgeted (default) | every-sample: which samples count the process's mappings.", Value::Words(&[
        ("budgeted", "the first and last samples, either side of a release round, the 1st, 2nd, 4th, 8th..., and the others while the walks cost under 2 ms or 2% of the loop (default)"),
        ("every-sample", "every sample, whatever the walks cost the loop's rate"),
    ])).default("\"budgeted\""),
    key("axpy.check", "none (default) | sample | all: dAxpy over pairs of kept buffers.", Value::Words(&[
        ("none", "no check (default)"),
        ("sample", "dAxpy over a few pairs of kept buffers (axpy.samples)"),
        ("all", "dAxpy over every pair of kept buffers"),
    ])).default("\"none\"").reads(&["allocation.keep", "allocation.size", "allocation.strategy", "context.count"]),
    key("axpy.samples", "With check = \"sample\": how many pairs (default 8).", integer(1, None)).default("8").reads(&["axpy.check"]),
    key("axpy.split", "One dAxpy split over all the run's devices, in its context mode.", Value::Bool).default("false"),
    key("env", TABLES[3].1, Value::Env),
];

/// The key named `name`, if a scenario has one.
pub(crate) fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// The keys of a table, as the file spells them (`None` for `env`, whose keys are
/// any variable's name, and for anything that is not a table).
pub(crate) fn table_keys(table: &str) -> Option<Vec<&'static str>> {
    let prefix = format!("{table}.");
    let fields: Vec<&str> = KEYS
        .iter()
        .filter_map(|k| k.name.strip_prefix(prefix.as_str()))
        .collect();
    (!fields.is_empty()).then_some(fields)
}

/// The keys outside the tables (`name`, `description`).
pub(crate) fn top_level_values() -> impl Iterator<Item = &'static str> {
    KEYS.iter()
        .map(|k| k.name)
        .filter(|n| !n.contains('.') && TABLES.iter().all(|(t, _)| t != n))
}

/// Which keys a key's checks read (see [`Key::reads`]).
pub(crate) fn reads(key: &str, other: &str) -> bool {
    find(key).is_some_and(|k| k.reads.contains(&other))
}

/// A key's default, read as the raw type reads the file: what validation falls back
/// on when the key is left out.
///
/// # Panics
/// When the key has no default or the table's literal does not parse as `T`: a
/// mistake in [`KEYS`] (a test reads every default).
pub(crate) fn default<T: DeserializeOwned>(name: &str) -> T {
    // Each literal parsed once: a grid of 100 000 runs fills each default in each run.
    static PARSED: std::sync::OnceLock<std::collections::HashMap<&'static str, toml::Value>> =
        std::sync::OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        KEYS.iter()
            .filter_map(|key| {
                let literal = key.default?;
                let table: toml::Table = toml::from_str(&format!("v = {literal}"))
                    .unwrap_or_else(|e| panic!("{}'s default {literal}: {e}", key.name));
                Some((key.name, table["v"].clone()))
            })
            .collect()
    });
    find(name).unwrap_or_else(|| panic!("{name} is not in KEYS"));
    let value = parsed
        .get(name)
        .unwrap_or_else(|| panic!("{name} has no default in KEYS"));
    T::deserialize(value.clone()).unwrap_or_else(|e| panic!("{name}'s default {value}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TOML that writes `keys` at their defaults, each in its table.
    fn written(keys: &[&Key]) -> String {
        let mut text = String::new();
        let mut current = "";
        for key in keys {
            let (table, field) = key.name.split_once('.').expect("a table's key");
            if table != current {
                text.push_str(&format!("[{table}]\n"));
                current = table;
            }
            text.push_str(&format!("{field} = {}\n", key.default.unwrap()));
        }
        text
    }

    /// Every default written in the table is what validation falls back on: a file
    /// that writes each default out is the same scenario as one that leaves all out
    /// (and the schema offers editors these same literals).
    #[test]
    fn written_defaults_are_the_defaults_validation_falls_back_on() {
        let load = |text: &str| {
            let mut s = crate::load_str(text, "d.toml").unwrap_or_else(|e| panic!("{text}: {e}"));
            s.remove(0)
        };
        // axpy.samples applies with check = "sample" only: asked apart below.
        let defaults: Vec<&Key> = KEYS
            .iter()
            .filter(|k| k.default.is_some() && k.name != "axpy.samples")
            .collect();
        assert!(defaults.len() >= 15, "{}", defaults.len());
        assert_eq!(load(&written(&defaults)), load(""));
        let samples = find("axpy.samples").unwrap();
        assert_eq!(
            load(&format!(
                "[axpy]\ncheck = \"sample\"\nsamples = {}\n",
                samples.default.unwrap()
            )),
            load("[axpy]\ncheck = \"sample\"\n")
        );
    }

    #[test]
    fn every_default_reads_as_its_key_takes() {
        for key in KEYS.iter().filter(|k| k.default.is_some()) {
            let _: toml::Value = default(key.name);
        }
    }
}
