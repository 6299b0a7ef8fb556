//! The keys, one item each, in documented order ([`KEYS`]). Validation, the schema
//! and the messages name a key by its item; only a name read from a file is looked
//! up ([`super::find`]).

use super::words::*;
use super::*;

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
    const fn default(self, default: Literal) -> Key {
        Key {
            default: Some(default),
            ..self
        }
    }

    const fn reads(self, reads: &'static [&'static Key]) -> Key {
        Key { reads, ..self }
    }
}

use Literal::{Bool as B, Float as F, Integer as I, List as L, Text as T};

pub(crate) const NAME: Key = key(
    "name",
    "The scenario's name (default: the file name; one line, at most 256 bytes); a grid appends its point.",
    Value::Name,
);
pub(crate) const DESCRIPTION: Key = key(
    "description",
    "What the scenario shows (at most 64 KiB).",
    Value::Description,
);
pub(crate) const DEVICES_PLATFORM: Key = key(
    "devices.platform",
    "\"auto\", a substring of the platform's name or vendor (\"NVIDIA\", \"Intel\"), or an index.",
    Value::Platform,
)
.default(T("auto"));
pub(crate) const DEVICES_TYPE: Key = key(
    "devices.type",
    "Which type of devices",
    Value::Words(&DEVICE_TYPES),
)
.default(T("gpu"));
pub(crate) const DEVICES_COUNT: Key = key(
    "devices.count",
    "The first N devices of that type (default 1).",
    integer(1, Some(MAX_DEVICE_LIST as i64)),
)
.default(I(1));
pub(crate) const DEVICES_INDICES: Key = key(
    "devices.indices",
    "These devices of that type, by index (instead of count; at most 4096).",
    Value::Indices,
)
.reads(&[&DEVICES_COUNT]);
pub(crate) const DEVICES_FALLBACK: Key = key(
    "devices.fallback",
    "With no device of that type anywhere",
    Value::Words(&FALLBACKS),
)
.default(T("any-type"));
pub(crate) const DEVICES_PARTITION: Key = key(
    "devices.partition",
    "Split each device into sub-devices first: \"equally\" or compute-unit counts [1, 1].",
    Value::Partition,
);
pub(crate) const CONTEXT_MODE: Key = key(
    "context.mode",
    "One context over all devices, or one per device",
    Value::Words(&CONTEXT_MODES),
)
.default(T("shared"));
pub(crate) const CONTEXT_COUNT: Key = key(
    "context.count",
    "Shared contexts in the process (default 1; only with mode = \"shared\"): buffers take turns over them.",
    integer(1, Some(MAX_CONTEXTS as i64)),
)
.default(I(1))
.reads(&[&CONTEXT_MODE, &ALLOCATION_STRATEGY]);
pub(crate) const ALLOCATION_SIZE: Key = key(
    "allocation.size",
    "Bytes per buffer (default \"1MiB\").",
    Value::Size { min: 1 },
)
.default(T("1MiB"));
pub(crate) const ALLOCATION_COUNT: Key = key(
    "allocation.count",
    "How many buffers (default 1000), or \"until-failure\".",
    Value::Count,
)
.default(I(1000));
pub(crate) const ALLOCATION_FLAGS: Key = key(
    "allocation.flags",
    "Memory flags of each buffer",
    Value::Flags(&MEM_FLAGS),
)
.default(L(&["READ_WRITE"]))
.reads(&[&ALLOCATION_STRATEGY]);
pub(crate) const ALLOCATION_PLACEMENT: Key = key(
    "allocation.placement",
    "\"round-robin\" (default) or the index of one selected device.",
    Value::Placement,
)
.default(T("round-robin"))
.reads(&[&DEVICES_COUNT, &DEVICES_INDICES, &DEVICES_PARTITION]);
pub(crate) const ALLOCATION_KEEP: Key = key(
    "allocation.keep",
    "Keep every buffer (default true), or release each right after creating it.",
    Value::Bool,
)
.default(B(true))
.reads(&[&ALLOCATION_STRATEGY]);
pub(crate) const ALLOCATION_STRATEGY: Key = key(
    "allocation.strategy",
    "How each buffer is made resident",
    Value::Words(&STRATEGIES),
)
.default(T("create"));
pub(crate) const ALLOCATION_POOL_SIZE: Key = key(
    "allocation.pool_size",
    "Strategy pool: bytes per pool buffer (default the larger of size and 256MiB).",
    Value::Size { min: 1 },
)
.reads(&[&ALLOCATION_STRATEGY, &ALLOCATION_SIZE]);
pub(crate) const ALLOCATION_RELEASE_EVERY: Key = key(
    "allocation.release_every",
    "Release every live buffer after each N buffers, then go on (default: never).",
    integer(1, None),
)
.reads(&[&ALLOCATION_KEEP, &ALLOCATION_STRATEGY, &ALLOCATION_COUNT]);
pub(crate) const ALLOCATION_PAUSE_US: Key = key(
    "allocation.pause_us",
    "Microseconds to wait after each buffer (default 0): a limit on time then fails sooner in buffers, a limit on buffers does not.",
    Value::Integer {
        min: 0,
        max: Some(MAX_PAUSE_US),
        unit: Some("microseconds"),
        note: None,
    },
)
.default(I(0));
pub(crate) const ALLOCATION_RELEASE_PAUSE_US: Key = key(
    "allocation.release_pause_us",
    "Microseconds to wait after each release of every live buffer (default 0): capacity a runtime gives back some time after release then comes back.",
    Value::Integer {
        min: 0,
        max: Some(MAX_PAUSE_US * 10),
        unit: Some("microseconds"),
        note: None,
    },
)
.default(I(0))
.reads(&[&ALLOCATION_RELEASE_EVERY]);
pub(crate) const LIMITS_NOFILE: Key = key(
    "limits.nofile",
    "RLIMIT_NOFILE: open file descriptors (at least 3, at most the hard limit).",
    Value::Integer {
        min: MIN_NOFILE as i64,
        max: None,
        unit: None,
        note: Some("at most this machine's hard limit"),
    },
);
pub(crate) const LIMITS_AS: Key = key(
    "limits.as",
    "RLIMIT_AS: virtual address space (at least \"64MiB\").",
    Value::Size {
        min: MIN_ADDRESS_SPACE,
    },
);
pub(crate) const LIMITS_MEMLOCK: Key = key(
    "limits.memlock",
    "RLIMIT_MEMLOCK: locked memory (a size; root is exempt).",
    Value::Size { min: 0 },
);
pub(crate) const LIMITS_NPROC: Key = key(
    "limits.nproc",
    "RLIMIT_NPROC: processes and threads of this user (root is exempt).",
    Value::Integer {
        min: 1,
        max: None,
        unit: None,
        note: Some("at most this machine's hard limit"),
    },
);
pub(crate) const LIMITS_DATA: Key = key(
    "limits.data",
    "RLIMIT_DATA: data segment, heap and private mappings (at least \"64MiB\").",
    Value::Size {
        min: MIN_ADDRESS_SPACE,
    },
);
pub(crate) const GUARDS_MAX_TOTAL: Key = key(
    "guards.max_total",
    "Bytes requested at most.",
    Value::Size { min: 0 },
);
pub(crate) const GUARDS_MAX_RSS: Key = key(
    "guards.max_rss",
    "Host RSS at most: a size or a percentage of the memory ceiling (\"50%\", the default).",
    Value::SizeOrPercent,
)
.default(T("50%"));
pub(crate) const GUARDS_MAX_SECONDS: Key = key(
    "guards.max_seconds",
    "Seconds of allocation at most (default 300, at most a week).",
    Value::Seconds,
)
.default(F(DEFAULT_MAX_SECONDS));
pub(crate) const SAMPLING_EVERY: Key = key(
    "sampling.every",
    "Read every N buffers (default 1000), and at the end and at a failure.",
    integer(1, None),
)
.default(I(DEFAULT_SAMPLE_EVERY as i64));
pub(crate) const SAMPLING_MAPS: Key = key(
    "sampling.maps",
    "Which samples count the process's mappings",
    Value::Words(&MAPS_SAMPLINGS),
)
.default(T("budgeted"));
pub(crate) const AXPY_CHECK: Key = key(
    "axpy.check",
    "dAxpy over pairs of kept buffers",
    Value::Words(&AXPY_CHECKS),
)
.default(T("none"))
.reads(&[
    &ALLOCATION_KEEP,
    &ALLOCATION_SIZE,
    &ALLOCATION_STRATEGY,
    &CONTEXT_COUNT,
]);
pub(crate) const AXPY_SAMPLES: Key = key(
    "axpy.samples",
    "With check = \"sample\": how many pairs (default 8).",
    integer(1, None),
)
.default(I(8))
.reads(&[&AXPY_CHECK]);
pub(crate) const AXPY_SPLIT: Key = key(
    "axpy.split",
    "One dAxpy split over all the run's devices, in its context mode.",
    Value::Bool,
)
.default(B(false));
pub(crate) const ENV: Key = key("env", TABLES[3].1, Value::Env);

/// Every key, in documented order.
pub(crate) const KEYS: &[Key] = &[
    NAME,
    DESCRIPTION,
    DEVICES_PLATFORM,
    DEVICES_TYPE,
    DEVICES_COUNT,
    DEVICES_INDICES,
    DEVICES_FALLBACK,
    DEVICES_PARTITION,
    CONTEXT_MODE,
    CONTEXT_COUNT,
    ALLOCATION_SIZE,
    ALLOCATION_COUNT,
    ALLOCATION_FLAGS,
    ALLOCATION_PLACEMENT,
    ALLOCATION_KEEP,
    ALLOCATION_STRATEGY,
    ALLOCATION_POOL_SIZE,
    ALLOCATION_RELEASE_EVERY,
    ALLOCATION_PAUSE_US,
    ALLOCATION_RELEASE_PAUSE_US,
    LIMITS_NOFILE,
    LIMITS_AS,
    LIMITS_MEMLOCK,
    LIMITS_NPROC,
    LIMITS_DATA,
    GUARDS_MAX_TOTAL,
    GUARDS_MAX_RSS,
    GUARDS_MAX_SECONDS,
    SAMPLING_EVERY,
    SAMPLING_MAPS,
    AXPY_CHECK,
    AXPY_SAMPLES,
    AXPY_SPLIT,
    ENV,
];
