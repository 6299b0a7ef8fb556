//! Reading stored reports: this schema and every earlier one.

use super::{Report, SCHEMA_VERSION};
use serde_json::{json, Value};

/// Why a stored report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON, or not a report of any known schema.
    #[error("not a clmulti report: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a newer clmulti.
    #[error("report schema {found} is newer than this clmulti understands ({SCHEMA_VERSION})")]
    Newer {
        /// The report's `schema_version`.
        found: u64,
    },
}

impl Report {
    /// Reads a report written by this or an earlier clmulti; older schemas are
    /// upgraded field by field (below).
    pub fn from_json(text: &str) -> Result<Self, ReadError> {
        // This schema's report (every run's hand-over from its child) reads straight
        // into its types: a JSON tree first took three times as long (0.28 ms against
        // 0.10 for a 100 000-buffer run's 48 KB, measured).
        if let Ok(report) = serde_json::from_str::<Report>(text) {
            if report.schema_version == SCHEMA_VERSION {
                return Ok(report);
            }
        }
        let mut value: serde_json::Value = serde_json::from_str(text)?;
        // The upgrades write into the report's object: anything else is no report.
        if !value.is_object() {
            return Err(ReadError::Json(serde::de::Error::custom(
                "a report is a JSON object",
            )));
        }
        let version = value["schema_version"].as_u64().unwrap_or(1);
        if version > u64::from(SCHEMA_VERSION) {
            return Err(ReadError::Newer { found: version });
        }
        if version < 2 {
            upgrade_v1(&mut value);
        }
        if version < 3 {
            upgrade_v2(&mut value);
        }
        if version < 4 {
            upgrade_v3(&mut value);
        }
        // Schema 4 -> 5: nothing to change; a sample's `memory_maps` count reads as
        // present (5 leaves it out of samples that did not walk the mappings).
        // Schema 5 -> 6: `open_fds` now counts clmulti's own readers; an older report
        // reads as it was (its figures a few descriptors short of what the kernel
        // counted, at most its `clmulti_fds`).
        if version < 7 {
            upgrade_v6(&mut value);
        }
        // Schema 7 -> 8: nothing to change; a sample's `locked_bytes`, `data_bytes`
        // and `system.available_bytes` read as present (8 leaves them out of samples
        // that did not read `status` and `meminfo`).
        value["schema_version"] = json!(SCHEMA_VERSION);
        Ok(serde_json::from_value(value)?)
    }
}

/// Schema 6 -> 7: a cost says how many samples its slope runs through; an older one
/// ran through every sample of its run. (Shape findings' `answer` became a claim: an
/// older finding reads without one, as not judged here.)
fn upgrade_v6(report: &mut Value) {
    let samples = report["samples"].as_array().map_or(0, Vec::len);
    if let Some(costs) = report["costs"].as_array_mut() {
        for cost in costs.iter_mut().filter(|c| c["estimated"] != json!(true)) {
            cost["samples"] = json!(samples);
        }
    }
    report["schema_version"] = json!(SCHEMA_VERSION);
}

/// Schema 3 -> 4: grid values keep their types (`"devices.count": 2`, not `"2"`):
/// numbers and booleans written as text become numbers and booleans again, except
/// under the keys whose values are text (`name`, `description`, `env.*`). The host's
/// `page_size` became `page_size_bytes` (read under either name).
fn upgrade_v3(report: &mut Value) {
    if let Some(point) = report
        .pointer_mut("/scenario/grid_point")
        .and_then(Value::as_object_mut)
    {
        for (key, value) in point.iter_mut() {
            let text_key = key == "name" || key == "description" || key.starts_with("env.");
            let Some(text) = value.as_str().filter(|_| !text_key) else {
                continue;
            };
            *value = if let Ok(n) = text.parse::<i64>() {
                json!(n)
            } else if let Ok(b) = text.parse::<bool>() {
                json!(b)
            } else if let Some(x) = text.parse::<f64>().ok().filter(|x| x.is_finite()) {
                json!(x)
            } else {
                continue;
            };
        }
    }
    report["schema_version"] = json!(SCHEMA_VERSION);
}

/// Schema 2 -> 3: the scenario's limits became a map keyed like `[limits]`
/// (`{"nofile": 1024, "as": 3000000000}`), without unset entries; `axpy_split` went
/// from clmulti-axpy's JSON to [`AxpySplit`](super::AxpySplit).
fn upgrade_v2(report: &mut Value) {
    let split = report["axpy_split"].take();
    report["axpy_split"] = match split {
        Value::Object(ref o) if o.contains_key("error") => {
            json!({"outcome": "failed", "error": o["error"].to_string()})
        }
        Value::Object(ref o) => {
            let devices = o.get("parts").and_then(Value::as_array).map_or(0, Vec::len);
            let kernel = |k: &Value| match k.as_str() {
                Some("seed") => "dAxpy".to_owned(),
                Some("fast") => "axpy_fast".to_owned(),
                other => other.unwrap_or("?").to_owned(),
            };
            let runs: Vec<Value> = o
                .get("runs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| {
                    json!({
                        "devices": r.get("devices").cloned().unwrap_or(json!(devices)),
                        "context": r["context"],
                        "layout": r["layout"],
                        "kernel": kernel(&r["kernel"]),
                        "aggregate_gb_per_s": r["aggregate_gb_per_s_best"],
                        "scaling_efficiency": r["scaling_efficiency"],
                        "max_error_ulps": r["max_error_ulps"],
                    })
                })
                .collect();
            json!({"outcome": "ran", "n": o.get("n").cloned().unwrap_or(json!(0)), "runs": runs})
        }
        _ => Value::Null,
    };
    let limits = report.pointer_mut("/scenario/limits");
    if let Some((limits, old)) = limits.and_then(|l| l.as_object().cloned().map(|o| (l, o))) {
        let mut map = serde_json::Map::new();
        for (old_key, new_key) in [("nofile", "nofile"), ("address_space_bytes", "as")] {
            if let Some(v) = old.get(old_key).filter(|v| !v.is_null()) {
                map.insert(new_key.into(), v.clone());
            }
        }
        *limits = Value::Object(map);
    }
    report["schema_version"] = json!(3);
}

/// Schema 1 -> 2: the scenario's `axpy_check` became `axpy: {check, split}`; costs'
/// limits became `{value, name}`; the prediction moved out of the report; the
/// warning `lazy_allocation_likely` became `lazy_allocation`.
fn upgrade_v1(report: &mut Value) {
    let scenario = &mut report["scenario"];
    if let Some(check) = scenario
        .as_object_mut()
        .and_then(|s| s.remove("axpy_check"))
    {
        scenario["axpy"] = json!({ "check": check, "split": false });
    }
    if let Some(costs) = report["costs"].as_array_mut() {
        for cost in costs {
            let name = match cost["resource"].as_str() {
                Some("host_rss") => "physical RAM",
                Some("virtual_size") => "RLIMIT_AS (soft)",
                Some("open_fds") => "RLIMIT_NOFILE (soft)",
                Some("memory_maps") => "vm.max_map_count",
                Some("device_memory") => "device global memory",
                _ => "limit",
            };
            if let Some(value) = cost.get("limit").and_then(Value::as_f64) {
                cost["limit"] = json!({ "value": value, "name": name });
            }
        }
    }
    if let Some(warnings) = report["warnings"].as_array_mut() {
        for warning in warnings {
            if warning["kind"] == "lazy_allocation_likely" {
                warning["kind"] = json!("lazy_allocation");
            }
        }
    }
    if let Some(object) = report.as_object_mut() {
        object.remove("prediction");
        object.insert("schema_version".into(), json!(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_that_is_no_object_is_an_error_not_a_panic() {
        for text in [
            "\"garbage\"",
            "42",
            "[1, 2]",
            "null",
            "{\"schema_version\": 1, \"scenario\": 3}",
        ] {
            assert!(Report::from_json(text).is_err(), "{text}");
        }
    }

    /// Reports of schema 1 as an earlier clmulti wrote them on a real machine.
    #[test]
    fn schema_1_reports_in_the_shipped_results_still_read() {
        let records = include_str!("../../../../results/pocl-8cpu/scaling/results.jsonl");
        let mut read = 0;
        for line in records.lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(record["report"]["schema_version"], 1);
            let report = Report::from_json(&record["report"].to_string())
                .unwrap_or_else(|e| panic!("{e}: {line:.200}"));
            assert_eq!(report.schema_version, SCHEMA_VERSION);
            read += 1;
        }
        assert_eq!(read, 16);
    }

    #[test]
    fn schema_7_samples_keep_their_accounting_and_schema_8_leaves_what_was_not_read() {
        let report = crate::testing::run(2, clmulti_scenario::ContextMode::Shared).completed(1000);
        let mut value = serde_json::to_value(&report).unwrap();
        value["schema_version"] = json!(7);
        let sample = &mut value["samples"][0];
        sample["locked_bytes"] = json!(4096);
        sample["data_bytes"] = json!(8192);
        sample["system"]["available_bytes"] = json!(1 << 30);
        let read = Report::from_json(&value.to_string()).unwrap();
        assert_eq!(read.schema_version, SCHEMA_VERSION);
        let first = &read.samples[0];
        assert_eq!(
            (first.host.locked_bytes, first.host.data_bytes),
            (Some(4096), Some(8192))
        );
        assert_eq!(first.system.unwrap().available_bytes, Some(1 << 30));
        // Left out where a sample did not read them: absent, not zero.
        let mut light = report.clone();
        light.samples[1].host.locked_bytes = None;
        light.samples[1].system.as_mut().unwrap().available_bytes = None;
        let text = serde_json::to_string(&light).unwrap();
        let back = Report::from_json(&text).unwrap();
        assert_eq!(back.samples[1].host.locked_bytes, None);
        assert_eq!(back.samples[1].system.unwrap().available_bytes, None);
        assert_eq!(back.samples[0].host.locked_bytes, Some(0));
    }

    #[test]
    fn schema_2_splits_become_typed() {
        let mut value = json!({"schema_version": 2, "scenario": {"limits": {}}, "axpy_split": {
            "n": 4096, "parts": [2048, 2048], "runs": [{"context": "shared", "layout": "buffers",
            "kernel": "fast", "aggregate_gb_per_s_best": 30.5, "scaling_efficiency": 0.9,
            "max_error_ulps": 0.5}]}});
        upgrade_v2(&mut value);
        let split: super::super::AxpySplit =
            serde_json::from_value(value["axpy_split"].clone()).unwrap();
        match split {
            super::super::AxpySplit::Ran { n, runs } => {
                assert_eq!(
                    (n, runs[0].devices, runs[0].kernel.as_str()),
                    (4096, 2, "axpy_fast")
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn schema_3_grid_values_get_their_types_back() {
        let mut value = json!({"schema_version": 3, "scenario": {"grid_point": {
            "devices.count": "2", "allocation.keep": "false", "guards.max_seconds": "2.5",
            "context.mode": "shared", "env.X": "1", "name": "7"}}});
        upgrade_v3(&mut value);
        assert_eq!(
            value["scenario"]["grid_point"],
            json!({"devices.count": 2, "allocation.keep": false, "guards.max_seconds": 2.5,
                   "context.mode": "shared", "env.X": "1", "name": "7"})
        );
        assert_eq!(value["schema_version"], SCHEMA_VERSION);
    }

    #[test]
    fn schema_2_limits_become_a_map() {
        let mut value = json!({"schema_version": 2, "scenario": {"limits": {"nofile": 512, "address_space_bytes": null}}});
        upgrade_v2(&mut value);
        assert_eq!(value["scenario"]["limits"], json!({"nofile": 512}));
        assert_eq!(value["schema_version"], 3);
    }
}
