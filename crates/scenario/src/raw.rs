//! The TOML as written: loose types, every key optional, unknown keys rejected.
//! [`crate::validate`] turns it into the trusted [`crate::Scenario`].

use serde::Deserialize;
use std::collections::BTreeMap;

/// A number of bytes: an integer, or a string with a unit.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawSize {
    Bytes(u64),
    Text(String),
}

/// An integer, or a keyword string (`"until-failure"`, `"round-robin"`, `"auto"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawNumberOrWord {
    Number(i64),
    Word(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub devices: RawDevices,
    #[serde(default)]
    pub context: RawContext,
    #[serde(default)]
    pub allocation: RawAllocation,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub guards: RawGuards,
    #[serde(default)]
    pub sampling: RawSampling,
    #[serde(default)]
    pub axpy: RawAxpy,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevices {
    pub platform: Option<RawNumberOrWord>,
    #[serde(rename = "type")]
    pub device_type: Option<String>,
    pub count: Option<i64>,
    pub indices: Option<Vec<i64>>,
    pub fallback: Option<String>,
    pub partition: Option<RawPartition>,
}

/// `"equally"` or a list of compute-unit counts.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawPartition {
    Word(String),
    Counts(Vec<i64>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawContext {
    pub mode: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAllocation {
    pub size: Option<RawSize>,
    pub count: Option<RawNumberOrWord>,
    pub flags: Option<Vec<String>>,
    pub placement: Option<RawNumberOrWord>,
    pub keep: Option<bool>,
    pub strategy: Option<String>,
    pub pool_size: Option<RawSize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub nofile: Option<i64>,
    #[serde(rename = "as")]
    pub address_space: Option<RawSize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGuards {
    pub max_total: Option<RawSize>,
    pub max_rss: Option<RawSize>,
    pub max_seconds: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSampling {
    pub every: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAxpy {
    pub check: Option<String>,
    pub samples: Option<i64>,
    pub split: Option<bool>,
}
