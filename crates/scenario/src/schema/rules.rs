//! The rules between keys (`allOf`): what one key's value asks of another.

use super::contains_flag;
use serde_json::{json, Value};

/// A schema for one dotted key (`allocation.strategy`), as a schema of the file.
fn at(key: &str, schema: Value) -> Value {
    let (table, field) = key.split_once('.').expect("a dotted key");
    json!({"properties": {table: {"properties": {field: schema}}}})
}

/// `key` is present.
fn present(key: &str) -> Value {
    let (table, field) = key.split_once('.').expect("a dotted key");
    json!({"required": [table], "properties": {table: {"required": [field]}}})
}

/// A rule between keys: when `condition` holds and the grid varies none of `keys`,
/// `then` must hold.
fn rule(keys: &[&str], condition: Value, then: Value) -> Value {
    let varied: Vec<Value> = keys.iter().map(|k| json!({"required": [k]})).collect();
    json!({
        "if": {"allOf": [condition, {"properties": {"grid": {"not": {"anyOf": varied}}}}]},
        "then": then,
    })
}

/// The rules between keys that JSON Schema can state.
// long: one JSON Schema rule per check between keys, a list
pub(super) fn rules() -> Vec<Value> {
    let strategy_is = |s: &str| json!({"allOf": [present("allocation.strategy"), at("allocation.strategy", json!({"const": s}))]});
    let not_strategy = |s: &str| at("allocation.strategy", json!({"not": {"const": s}}));
    let keep_not_false = at("allocation.keep", json!({"const": true}));
    let mut out = vec![
        // devices: count or indices.
        rule(
            &["devices.count", "devices.indices"],
            json!({"allOf": [present("devices.count"), present("devices.indices")]}),
            json!({"properties": {"devices": {"not": {"required": ["count", "indices"]}, "description": "give either devices.count or devices.indices, not both"}}}),
        ),
        // pool_size only with strategy pool.
        rule(
            &["allocation.pool_size", "allocation.strategy"],
            present("allocation.pool_size"),
            json!({"allOf": [present("allocation.strategy"), at("allocation.strategy", json!({"const": "pool"}))]}),
        ),
        // A pool keeps its memory: keep = false contradicts it.
        rule(
            &["allocation.strategy", "allocation.keep"],
            strategy_is("pool"),
            keep_not_false.clone(),
        ),
        // Host-pointer flags apply to the pool buffer, not its sub-buffers.
        rule(
            &["allocation.strategy", "allocation.flags"],
            strategy_is("pool"),
            at(
                "allocation.flags",
                json!({"not": {"anyOf": [contains_flag("USE_HOST_PTR"), contains_flag("COPY_HOST_PTR"), contains_flag("ALLOC_HOST_PTR")]}}),
            ),
        ),
        // release_every needs kept buffers and a strategy other than pool.
        rule(
            &[
                "allocation.release_every",
                "allocation.keep",
                "allocation.strategy",
            ],
            present("allocation.release_every"),
            json!({"allOf": [keep_not_false.clone(), not_strategy("pool")]}),
        ),
        // Several contexts: mode shared, no pool.
        rule(
            &["context.count", "context.mode", "allocation.strategy"],
            json!({"allOf": [present("context.count"), at("context.count", json!({"minimum": 2}))]}),
            json!({"allOf": [at("context.mode", json!({"const": "shared"})), not_strategy("pool")]}),
        ),
        // axpy.samples only with check = "sample".
        rule(
            &["axpy.samples", "axpy.check"],
            present("axpy.samples"),
            json!({"allOf": [present("axpy.check"), at("axpy.check", json!({"const": "sample"}))]}),
        ),
        // The dAxpy check runs over kept buffers of one context, not pinned ones, of
        // at least two floats.
        rule(
            &[
                "axpy.check",
                "allocation.keep",
                "context.count",
                "allocation.strategy",
                "allocation.size",
            ],
            json!({"allOf": [present("axpy.check"), at("axpy.check", json!({"enum": ["sample", "all"]}))]}),
            json!({"allOf": [
                keep_not_false,
                at("context.count", json!({"maximum": 1})),
                not_strategy("pin"),
                at("allocation.size", json!({"not": {"type": "integer", "maximum": 7}})),
            ]}),
        ),
        // clmulti's layer needs a policy.
        rule(
            &["env.OPENCL_LAYERS", "env.CLMULTI_LAYER_POLICY"],
            json!({"required": ["env"], "properties": {"env": {"required": ["OPENCL_LAYERS"], "properties": {"OPENCL_LAYERS": {"pattern": format!("(?:\\{{clmulti-layer\\}}|{})", crate::LAYER_FILE_NAME.replace('.', "\\."))}}}}}),
            json!({"properties": {"env": {"required": [crate::layer::POLICY]}}}),
        ),
    ];
    // A device index given as placement is among the selected devices.
    let placement_below = |n: usize| {
        at(
            "allocation.placement",
            json!({"not": {"type": "integer", "minimum": n}}),
        )
    };
    let keys = ["allocation.placement", "devices.count", "devices.indices"];
    out.push(rule(
        &keys,
        json!({"not": {"anyOf": [present("devices.count"), present("devices.indices")]}}),
        placement_below(1),
    ));
    for n in 1..=16usize {
        out.push(rule(
            &keys,
            json!({"allOf": [present("devices.count"), at("devices.count", json!({"const": n}))]}),
            placement_below(n),
        ));
        out.push(rule(
            &keys,
            json!({"allOf": [present("devices.indices"), at("devices.indices", json!({"minItems": n, "maxItems": n}))]}),
            placement_below(n),
        ));
    }
    out
}
