//! The TOML as written: loose types, every key optional, unknown keys rejected.
//! [`crate::validate`] turns it into the trusted [`crate::Scenario`]. What each key
//! means, takes and defaults to is in its item ([`crate::defs`]), which each field's
//! doc links to. The field names are serde's (derived), so a test
//! (`keys::tests::the_raw_types_read_the_keys_of_the_table`) holds each field to
//! exactly one key item and each item to a field: a misspelt field fails it.

use serde::Deserialize;
use std::collections::BTreeMap;

/// A number of bytes: an integer, or a string with a unit ("1MiB", "1.5 GiB", "64KB").
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawSize {
    Bytes(u64),
    Text(String),
}

/// An integer, or a keyword string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawNumberOrWord {
    Number(i64),
    Word(String),
}

/// "equally" (one compute unit per sub-device) or a list of compute-unit counts.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawPartition {
    Word(String),
    Counts(Vec<i64>),
}

/// A clmulti scenario: one allocation experiment, expanded over its [grid] into runs.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// [`NAME`](crate::defs::NAME).
    pub name: Option<String>,
    /// [`DESCRIPTION`](crate::defs::DESCRIPTION).
    pub description: Option<String>,
    /// `[devices]`.
    #[serde(default)]
    pub devices: RawDevices,
    /// `[context]`.
    #[serde(default)]
    pub context: RawContext,
    /// `[allocation]`.
    #[serde(default)]
    pub allocation: RawAllocation,
    /// [`ENV`](crate::defs::ENV).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `[limits]`.
    #[serde(default)]
    pub limits: RawLimits,
    /// `[guards]`.
    #[serde(default)]
    pub guards: RawGuards,
    /// `[sampling]`.
    #[serde(default)]
    pub sampling: RawSampling,
    /// `[axpy]`.
    #[serde(default)]
    pub axpy: RawAxpy,
    /// `[grid]`: keys to vary.
    #[allow(dead_code)] // Named so serde knows the key: loading takes [grid] out first.
    #[serde(default)]
    pub grid: Option<toml::Table>,
}

/// `[devices]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevices {
    /// [`DEVICES_PLATFORM`](crate::defs::DEVICES_PLATFORM).
    pub platform: Option<RawNumberOrWord>,
    /// [`DEVICES_TYPE`](crate::defs::DEVICES_TYPE).
    #[serde(rename = "type")]
    pub device_type: Option<String>,
    /// [`DEVICES_COUNT`](crate::defs::DEVICES_COUNT).
    pub count: Option<i64>,
    /// [`DEVICES_INDICES`](crate::defs::DEVICES_INDICES).
    pub indices: Option<Vec<i64>>,
    /// [`DEVICES_FALLBACK`](crate::defs::DEVICES_FALLBACK).
    pub fallback: Option<String>,
    /// [`DEVICES_PARTITION`](crate::defs::DEVICES_PARTITION).
    pub partition: Option<RawPartition>,
}

/// `[context]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawContext {
    /// [`CONTEXT_MODE`](crate::defs::CONTEXT_MODE).
    pub mode: Option<String>,
    /// [`CONTEXT_COUNT`](crate::defs::CONTEXT_COUNT).
    pub count: Option<i64>,
}

/// `[allocation]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAllocation {
    /// [`ALLOCATION_SIZE`](crate::defs::ALLOCATION_SIZE).
    pub size: Option<RawSize>,
    /// [`ALLOCATION_COUNT`](crate::defs::ALLOCATION_COUNT).
    pub count: Option<RawNumberOrWord>,
    /// [`ALLOCATION_FLAGS`](crate::defs::ALLOCATION_FLAGS).
    pub flags: Option<Vec<String>>,
    /// [`ALLOCATION_PLACEMENT`](crate::defs::ALLOCATION_PLACEMENT).
    pub placement: Option<RawNumberOrWord>,
    /// [`ALLOCATION_KEEP`](crate::defs::ALLOCATION_KEEP).
    pub keep: Option<bool>,
    /// [`ALLOCATION_STRATEGY`](crate::defs::ALLOCATION_STRATEGY).
    pub strategy: Option<String>,
    /// [`ALLOCATION_POOL_SIZE`](crate::defs::ALLOCATION_POOL_SIZE).
    pub pool_size: Option<RawSize>,
    /// [`ALLOCATION_RELEASE_EVERY`](crate::defs::ALLOCATION_RELEASE_EVERY).
    pub release_every: Option<i64>,
    /// [`ALLOCATION_PAUSE_US`](crate::defs::ALLOCATION_PAUSE_US).
    pub pause_us: Option<i64>,
    /// [`ALLOCATION_RELEASE_PAUSE_US`](crate::defs::ALLOCATION_RELEASE_PAUSE_US).
    pub release_pause_us: Option<i64>,
}

/// `[limits]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// [`LIMITS_NOFILE`](crate::defs::LIMITS_NOFILE).
    pub nofile: Option<i64>,
    /// [`LIMITS_AS`](crate::defs::LIMITS_AS).
    #[serde(rename = "as")]
    pub address_space: Option<RawSize>,
    /// [`LIMITS_MEMLOCK`](crate::defs::LIMITS_MEMLOCK).
    pub memlock: Option<RawSize>,
    /// [`LIMITS_NPROC`](crate::defs::LIMITS_NPROC).
    pub nproc: Option<i64>,
    /// [`LIMITS_DATA`](crate::defs::LIMITS_DATA).
    pub data: Option<RawSize>,
}

/// `[guards]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGuards {
    /// [`GUARDS_MAX_TOTAL`](crate::defs::GUARDS_MAX_TOTAL).
    pub max_total: Option<RawSize>,
    /// [`GUARDS_MAX_RSS`](crate::defs::GUARDS_MAX_RSS).
    pub max_rss: Option<RawSize>,
    /// [`GUARDS_MAX_SECONDS`](crate::defs::GUARDS_MAX_SECONDS).
    pub max_seconds: Option<f64>,
}

/// `[sampling]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSampling {
    /// [`SAMPLING_EVERY`](crate::defs::SAMPLING_EVERY).
    pub every: Option<i64>,
    /// [`SAMPLING_MAPS`](crate::defs::SAMPLING_MAPS).
    pub maps: Option<String>,
}

/// `[axpy]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAxpy {
    /// [`AXPY_CHECK`](crate::defs::AXPY_CHECK).
    pub check: Option<String>,
    /// [`AXPY_SAMPLES`](crate::defs::AXPY_SAMPLES).
    pub samples: Option<i64>,
    /// [`AXPY_SPLIT`](crate::defs::AXPY_SPLIT).
    pub split: Option<bool>,
}
