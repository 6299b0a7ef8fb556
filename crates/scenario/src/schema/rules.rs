//! The rules between keys (`allOf`): when one key's value contradicts another's,
//! the key at fault is refused in words, as check says it.

use super::flags::contains_flag;
use super::words::{one_of_any_case, refuse};
use crate::defs::*;
use crate::model::{ContextMode, MemFlag, Strategy};
use serde_json::{json, Value};

/// A schema for one dotted key (`allocation.strategy`), as a schema of the file.
fn at(key: &str, schema: Value) -> Value {
    let (table, field) = key.split_once('.').expect("a dotted key");
    json!({"properties": {table: {"properties": {field: schema}}}})
}

/// `key` is present.
fn present(key: &Key) -> Value {
    let (table, field) = key.name.split_once('.').expect("a dotted key");
    json!({"required": [table], "properties": {table: {"required": [field]}}})
}

/// `key` is present and is `word` (in any case, as check reads words).
fn is_word(key: &Key, word: &str) -> Value {
    json!({"allOf": [present(key), at(key.name, json!({"type": "string", "pattern": one_of_any_case([word])}))]})
}

/// `allocation.strategy` is present and is `strategy`.
fn strategy_is(strategy: Strategy) -> Value {
    is_word(&ALLOCATION_STRATEGY, word_for(&STRATEGIES, strategy))
}

/// A rule between keys: when `problem` holds and the grid varies none of `keys`,
/// the file is refused at `blamed` in `words`.
fn rule(keys: &[&str], problem: Value, blamed: &str, words: &str) -> Value {
    let varied: Vec<Value> = keys.iter().map(|k| json!({"required": [k]})).collect();
    json!({
        "if": {"allOf": [problem, {"properties": {"grid": {"not": {"anyOf": varied}}}}]},
        "then": at(blamed, refuse(words)),
    })
}

/// The rules between keys that JSON Schema can state.
pub(super) fn rules() -> Vec<Value> {
    let mut out = allocation_rules();
    out.extend(other_rules());
    out.extend(placement_rules());
    out
}

/// Between the keys of `[allocation]`.
fn allocation_rules() -> Vec<Value> {
    let pool = strategy_is(Strategy::Pool);
    let keep_false = json!({"allOf": [present(&ALLOCATION_KEEP), at(ALLOCATION_KEEP.name, json!({"const": false}))]});
    vec![
        rule(
            &[ALLOCATION_POOL_SIZE.name, ALLOCATION_STRATEGY.name],
            json!({"allOf": [present(&ALLOCATION_POOL_SIZE), {"not": pool.clone()}]}),
            ALLOCATION_POOL_SIZE.name,
            "only applies with allocation.strategy = \"pool\"",
        ),
        rule(
            &[ALLOCATION_STRATEGY.name, ALLOCATION_KEEP.name],
            json!({"allOf": [pool.clone(), keep_false.clone()]}),
            ALLOCATION_KEEP.name,
            "a pool keeps its memory until the end; keep = false contradicts strategy \"pool\"",
        ),
        rule(
            &[ALLOCATION_STRATEGY.name, ALLOCATION_FLAGS.name],
            json!({"allOf": [
                pool.clone(),
                at(ALLOCATION_FLAGS.name, json!({"anyOf": [contains_flag(MemFlag::UseHostPtr.name()), contains_flag(MemFlag::CopyHostPtr.name()), contains_flag(MemFlag::AllocHostPtr.name())]})),
            ]}),
            ALLOCATION_FLAGS.name,
            "host-pointer flags apply to the pool buffer, not its sub-buffers: use strategy \"create\" with them",
        ),
        rule(
            &[ALLOCATION_RELEASE_EVERY.name, ALLOCATION_KEEP.name, ALLOCATION_STRATEGY.name],
            json!({"allOf": [present(&ALLOCATION_RELEASE_EVERY), {"anyOf": [keep_false, pool.clone()]}]}),
            ALLOCATION_RELEASE_EVERY.name,
            "releases kept buffers in rounds: it needs keep = true and a strategy other than \"pool\"",
        ),
    ]
}

/// Between `[devices]`, `[context]`, `[axpy]` and `[env]`.
fn other_rules() -> Vec<Value> {
    let pool = strategy_is(Strategy::Pool);
    let sample = is_word(&AXPY_CHECK, word_for(&AXPY_CHECKS, Check::Sample));
    let several =
        json!({"allOf": [present(&CONTEXT_COUNT), at(CONTEXT_COUNT.name, json!({"minimum": 2}))]});
    let checks = json!({"allOf": [present(&AXPY_CHECK), {"anyOf": [sample.clone(), is_word(&AXPY_CHECK, word_for(&AXPY_CHECKS, Check::All))]}]});
    let layer = format!(
        "(?:\\{{clmulti-layer\\}}|{})",
        clmulti_contract::LAYER.file_name.replace('.', "\\.")
    );
    let env_has =
        |key: &str| json!({"required": [ENV.name], "properties": {ENV.name: {"required": [key]}}});
    let names_layer = json!({"allOf": [env_has("OPENCL_LAYERS"), {"properties": {ENV.name: {"properties": {"OPENCL_LAYERS": {"pattern": layer}}}}}]});
    vec![
        rule(
            &[DEVICES_COUNT.name, DEVICES_INDICES.name],
            json!({"allOf": [present(&DEVICES_COUNT), present(&DEVICES_INDICES)]}),
            DEVICES_INDICES.name,
            "give either devices.count or devices.indices, not both",
        ),
        rule(
            &[CONTEXT_COUNT.name, CONTEXT_MODE.name],
            json!({"allOf": [several.clone(), is_word(&CONTEXT_MODE, word_for(&CONTEXT_MODES, ContextMode::PerDevice))]}),
            CONTEXT_COUNT.name,
            "several contexts apply to mode = \"shared\" (per-device makes one per device)",
        ),
        rule(
            &[CONTEXT_COUNT.name, ALLOCATION_STRATEGY.name],
            json!({"allOf": [several, pool.clone()]}),
            CONTEXT_COUNT.name,
            "a pool belongs to one context: use one context with strategy \"pool\"",
        ),
        rule(
            &[AXPY_SAMPLES.name, AXPY_CHECK.name],
            json!({"allOf": [present(&AXPY_SAMPLES), {"not": sample}]}),
            AXPY_SAMPLES.name,
            "only applies with axpy.check = \"sample\"",
        ),
        rule(
            &[AXPY_CHECK.name, ALLOCATION_KEEP.name],
            json!({"allOf": [checks.clone(), present(&ALLOCATION_KEEP), at(ALLOCATION_KEEP.name, json!({"const": false}))]}),
            AXPY_CHECK.name,
            "dAxpy runs over kept buffers; allocation.keep = false releases each at once",
        ),
        rule(
            &[AXPY_CHECK.name, ALLOCATION_SIZE.name],
            json!({"allOf": [checks.clone(), present(&ALLOCATION_SIZE), at(ALLOCATION_SIZE.name, json!({"type": "integer", "maximum": 7}))]}),
            AXPY_CHECK.name,
            "dAxpy needs buffers of at least 8 bytes (two floats)",
        ),
        rule(
            &[AXPY_CHECK.name, CONTEXT_COUNT.name],
            json!({"allOf": [checks.clone(), present(&CONTEXT_COUNT), at(CONTEXT_COUNT.name, json!({"minimum": 2}))]}),
            AXPY_CHECK.name,
            "dAxpy pairs buffers of one context; with context.count > 1 a device's buffers span contexts",
        ),
        rule(
            &[AXPY_CHECK.name, ALLOCATION_STRATEGY.name],
            json!({"allOf": [checks, strategy_is(Strategy::Pin)]}),
            AXPY_CHECK.name,
            "the check runs over kept buffers of strategy create, fill, migrate or pool",
        ),
        rule(
            &["env.OPENCL_LAYERS", "env.CLMULTI_LAYER_POLICY"],
            json!({"allOf": [names_layer.clone(), {"not": env_has(clmulti_contract::layer::POLICY)}]}),
            "env.OPENCL_LAYERS",
            "names clmulti's layer but no CLMULTI_LAYER_POLICY (what it models)",
        ),
        rule(
            &["env.OPENCL_LAYERS", "env.CLMULTI_LAYER_POLICY"],
            json!({"allOf": [env_has(clmulti_contract::layer::POLICY), {"not": names_layer}]}),
            &format!("env.{}", clmulti_contract::layer::POLICY),
            "sets what clmulti's emulation layer models, but OPENCL_LAYERS does not load the layer: add OPENCL_LAYERS = \"{clmulti-layer}\"",
        ),
    ]
}

/// A device index given as placement is among the selected devices.
fn placement_rules() -> Vec<Value> {
    let keys = [
        ALLOCATION_PLACEMENT.name,
        DEVICES_COUNT.name,
        DEVICES_INDICES.name,
    ];
    let beyond = |n: usize| json!({"allOf": [present(&ALLOCATION_PLACEMENT), at(ALLOCATION_PLACEMENT.name, json!({"type": "integer", "minimum": n}))]});
    let words = "is not among the selected devices (indices start at 0)";
    let mut out = vec![rule(
        &keys,
        json!({"allOf": [{"not": {"anyOf": [present(&DEVICES_COUNT), present(&DEVICES_INDICES)]}}, beyond(1)]}),
        ALLOCATION_PLACEMENT.name,
        words,
    )];
    for n in 1..=16usize {
        out.push(rule(
            &keys,
            json!({"allOf": [present(&DEVICES_COUNT), at(DEVICES_COUNT.name, json!({"const": n})), beyond(n)]}),
            ALLOCATION_PLACEMENT.name,
            words,
        ));
        out.push(rule(
            &keys,
            json!({"allOf": [present(&DEVICES_INDICES), at(DEVICES_INDICES.name, json!({"minItems": n, "maxItems": n})), beyond(n)]}),
            ALLOCATION_PLACEMENT.name,
            words,
        ));
    }
    out
}
