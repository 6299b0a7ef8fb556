//! Every scenario key, defined once (after ripgrep's `flags/defs.rs`): one named item
//! per key ([`table`]: `ALLOCATION_SIZE`, `LIMITS_NOFILE`, ...) with its name, what an
//! editor shows for it, what value it takes (with its bounds, or its table of
//! words), its default, and the other keys its checks read. Validation names a key
//! by its item, never by a string, so a misspelt key is a compile error. From the
//! items come the JSON Schema ([`crate::schema`]), the defaults validation falls back
//! on ([`default`]), the words a message uses for what a key takes
//! ([`crate::keys::takes`]) and which keys a check between keys reads ([`reads`]).
//! A key that takes words has one typed table ([`words`]): each word, what it means
//! and the value it stands for; its schema, its description's list of words and its
//! validation all read that table.
//!
//! The raw types ([`crate::raw`]) parse the file with serde's derive; a test holds
//! each of their fields to exactly one key item and each item to a field.
//!
//! Adding a key: its item in [`table`] (and in [`table::KEYS`]), its field in its raw
//! table and in the model ([`crate::model`]), and the line of validation that turns
//! one into the other, naming the item.

mod table;
mod words;

pub(crate) use table::*;
pub(crate) use words::*;

use serde::de::DeserializeOwned;

/// A key of a scenario file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key {
    /// As the file spells it: `allocation.size` (top-level keys have no dot).
    pub name: &'static str,
    /// What it is, for editors; a key that takes words has them listed after it
    /// ([`Key::description`]).
    #[cfg_attr(not(feature = "schema"), allow(dead_code))]
    pub doc: &'static str,
    /// What value it takes.
    pub value: Value,
    /// Its default; `None` when leaving it out means something of its own (no pool
    /// size, no limit).
    pub default: Option<Literal>,
    /// The other keys its checks read: a key left out, whose default stands in, is
    /// not blamed for a problem with this one.
    pub reads: &'static [&'static Key],
}

/// A default as a file would write it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Literal {
    Integer(i64),
    Float(f64),
    Bool(bool),
    Text(&'static str),
    List(&'static [&'static str]),
}

impl Literal {
    /// As TOML reads it.
    pub(crate) fn to_toml(self) -> toml::Value {
        match self {
            Literal::Integer(n) => toml::Value::Integer(n),
            Literal::Float(x) => toml::Value::Float(x),
            Literal::Bool(b) => toml::Value::Boolean(b),
            Literal::Text(t) => toml::Value::String(t.to_owned()),
            Literal::List(items) => toml::Value::Array(
                items
                    .iter()
                    .map(|i| toml::Value::String((*i).to_owned()))
                    .collect(),
            ),
        }
    }

    /// The words it names (a word, or a list of them).
    fn words(&self) -> &[&'static str] {
        match self {
            Literal::Text(t) => std::slice::from_ref(t),
            Literal::List(items) => items,
            _ => &[],
        }
    }
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
    /// One of a few words ([`words`]).
    Words(&'static dyn Words),
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
    /// A list of some of a few words ([`MEM_FLAGS`]).
    Flags(&'static dyn Words),
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

impl Key {
    /// `allocation.flags[2]`: the place of a list's item, as a problem names it.
    pub(crate) fn item(&self, index: usize) -> String {
        format!("{}[{index}]", self.name)
    }

    /// The words the key takes, each with what it means (`(default)` after the
    /// default's); `None` for a key that takes no words.
    pub(crate) fn words(&self) -> Option<Vec<(&'static str, String)>> {
        let (Value::Words(table) | Value::Flags(table)) = self.value else {
            return None;
        };
        Some(
            table
                .each()
                .into_iter()
                .map(|(word, means)| (word, format!("{means}{}", self.default_mark(word))))
                .collect(),
        )
    }

    /// " (default)" after the default's word (or one of its list), else nothing.
    fn default_mark(&self, word: &str) -> &'static str {
        let defaults = self.default.as_ref().map_or(&[][..], Literal::words);
        if defaults.contains(&word) {
            " (default)"
        } else {
            ""
        }
    }

    /// What an editor shows for the key: its doc, and the words it takes after it
    /// (`... : gpu (default) | cpu | accelerator | all.`).
    #[cfg_attr(not(feature = "schema"), allow(dead_code))]
    pub(crate) fn description(&self) -> String {
        let between = match self.value {
            Value::Words(_) => " | ",
            Value::Flags(_) => ", ",
            _ => return self.doc.to_owned(),
        };
        let listed: Vec<String> = self
            .words()
            .unwrap_or_default()
            .into_iter()
            .map(|(word, _)| format!("{word}{}", self.default_mark(word)))
            .collect();
        format!("{}: {}.", self.doc, listed.join(between))
    }
}

/// The key named `name` (as a file or a problem names it), if a scenario has one.
pub(crate) fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// The keys of a table, each with its name in the table (`None` for `env`, whose
/// keys are any variable's name, and for anything that is not a table).
pub(crate) fn table_of(table: &str) -> Option<Vec<(&'static str, &'static Key)>> {
    let prefix = format!("{table}.");
    let fields: Vec<(&str, &Key)> = KEYS
        .iter()
        .filter_map(|k| Some((k.name.strip_prefix(prefix.as_str())?, k)))
        .collect();
    (!fields.is_empty()).then_some(fields)
}

/// The keys of a table, as the file spells them (see [`table_of`]).
pub(crate) fn table_keys(table: &str) -> Option<Vec<&'static str>> {
    Some(table_of(table)?.into_iter().map(|(f, _)| f).collect())
}

/// The keys outside the tables (`name`, `description`).
pub(crate) fn top_level_values() -> impl Iterator<Item = &'static str> {
    KEYS.iter()
        .map(|k| k.name)
        .filter(|n| !n.contains('.') && TABLES.iter().all(|(t, _)| t != n))
}

/// Whether the checks of the key named `key` read the key named `other` (see
/// [`Key::reads`]); both as a problem names them.
pub(crate) fn reads(key: &str, other: &str) -> bool {
    find(key).is_some_and(|k| k.reads.iter().any(|r| r.name == other))
}

/// A key's default, read as the raw type reads the file: what validation falls back
/// on when the key is left out.
///
/// # Panics
/// When the key has no default or its default does not read as `T`: a mistake in
/// the key's item (the tests read every default as validation does).
pub(crate) fn default<T: DeserializeOwned>(key: &Key) -> T {
    let literal = key
        .default
        .unwrap_or_else(|| panic!("{} has no default", key.name));
    T::deserialize(literal.to_toml())
        .unwrap_or_else(|e| panic!("{}'s default {literal:?}: {e}", key.name))
}

#[cfg(test)]
mod tests;
