//! # clmulti-scenario: experiments as TOML files
//!
//! A *scenario* is one TOML file describing an allocation experiment: which devices,
//! one shared context or one per device, what to allocate and how, which runtime
//! knobs and resource limits, and when to stop. Any key may be varied over a
//! `[grid]`, which expands one file into several *runs*.
//!
//! This crate knows nothing of OpenCL. It turns raw TOML into a trusted
//! [`Scenario`] in two steps: serde reads a loose raw form (unknown keys are errors),
//! then validation checks units, ranges and contradictions and fills defaults.
//! Every error names the file, line, column and key path ([`ScenarioError`]).
//!
//! ```
//! let runs = clmulti_scenario::load_str(r#"
//!     name = "seed-shared"
//!     [devices]
//!     type = "gpu"
//!     count = 2
//!     [context]
//!     mode = "shared"
//!     [allocation]
//!     size = "1MiB"
//!     count = 100000
//!     [grid]
//!     "context.mode" = ["shared", "per-device"]
//! "#, "seed.toml").unwrap();
//! assert_eq!(runs.len(), 2);
//! assert_eq!(runs[1].name, "seed-shared[context.mode=per-device]");
//! assert_eq!(runs[0].allocation.size_bytes, 1 << 20);
//!
//! let err = clmulti_scenario::load_str("[allocation]\nsize = \"1 MB/s\"\n", "bad.toml").unwrap_err();
//! assert_eq!(err.to_string(), "bad.toml:2:8: key `allocation.size`: unknown unit \"MB/s\"; \
//!     use B, KiB, MiB, GiB, TiB, PiB, EiB (binary) or KB, MB, GB, TB, PB, EB (decimal)");
//! ```
//!
//! Large grids are validated one run at a time through [`ScenarioFile`], which counts
//! the runs before expanding any (at most [`MAX_RUNS`]):
//!
//! ```
//! let file = clmulti_scenario::ScenarioFile::parse(
//!     "[grid]\n\"allocation.count\" = [1, 2, 3]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
//!     "grid.toml",
//! ).unwrap();
//! assert_eq!(file.len(), 6);
//! assert_eq!(file.run(5).unwrap().name, "grid[allocation.count=3,context.mode=per-device]");
//! ```
//!
//! The schema, with defaults, is documented in `configs/README.md` of the workspace.

mod defs;
mod env_keys;
mod error;
mod keys;
pub mod layer;
mod load;
mod locate;
mod machine;
mod model;
mod raw;
#[cfg(feature = "schema")]
mod schema;
mod size;
mod suggest;
mod validate;

pub use defs::{
    DEFAULT_MAX_SECONDS, DEFAULT_SAMPLE_EVERY, MAX_CONTEXTS, MAX_DESCRIPTION_BYTES, MAX_NAME_BYTES,
    MAX_PAUSE_US, MAX_SECONDS,
};
pub use load::{
    load_file, load_str, ScenarioError, ScenarioFile, MAX_FILE_BYTES, MAX_PROBLEMS, MAX_RUNS,
};
pub use machine::{default_libraries, hard_limits, may_raise_hard_limits, nr_open};
pub use model::{
    Allocation, Axpy, AxpyCheck, ContextMode, Count, DeviceSet, DeviceType, Devices, Guards,
    Limits, MapsSampling, MemFlag, Partition, Placement, Platform, Rlimit, RssLimit, Scenario,
    Strategy,
};
#[cfg(feature = "schema")]
pub use schema::schema;
pub use size::{
    format_bytes, format_bytes_apart, format_count, format_rate, format_size, parse_size, Bytes,
    SizeError, SIZE_UNITS,
};
pub use validate::{
    parse_seconds, DEVICE_COUNT_TOKEN, MAX_ENV_ENTRY_BYTES, MAX_ENV_VARS, PATH_ENV_KEYS,
};
