//! The rules between keys (`allOf`): when one key's value contradicts another's,
//! the key at fault is refused in words, as check says it.

use super::flags::contains_flag;
use super::words::{one_of_any_case, refuse};
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

/// `key` is present and is `word` (in any case, as check reads words).
fn is_word(key: &str, word: &str) -> Value {
    json!({"allOf": [present(key), at(key, json!({"type": "string", "pattern": one_of_any_case([word])}))]})
}

/// `key` is absent or not `word`: its default is not `word`.
fn not_word(key: &str, word: &str) -> Value {
    json!({"not": is_word(key, word)})
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
    let keep_false = json!({"allOf": [present("allocation.keep"), at("allocation.keep", json!({"const": false}))]});
    vec![
        rule(
            &["allocation.pool_size", "allocation.strategy"],
            json!({"allOf": [present("allocation.pool_size"), not_word("allocation.strategy", "pool")]}),
            "allocation.pool_size",
            "only applies with allocation.strategy = \"pool\"",
        ),
        rule(
            &["allocation.strategy", "allocation.keep"],
            json!({"allOf": [is_word("allocation.strategy", "pool"), keep_false.clone()]}),
            "allocation.keep",
            "a pool keeps its memory until the end; keep = false contradicts strategy \"pool\"",
        ),
        rule(
            &["allocation.strategy", "allocation.flags"],
            json!({"allOf": [
                is_word("allocation.strategy", "pool"),
                at("allocation.flags", json!({"anyOf": [contains_flag("USE_HOST_PTR"), contains_flag("COPY_HOST_PTR"), contains_flag("ALLOC_HOST_PTR")]})),
            ]}),
            "allocation.flags",
            "host-pointer flags apply to the pool buffer, not its sub-buffers: use strategy \"create\" with them",
        ),
        rule(
            &["allocation.release_every", "allocation.keep", "allocation.strategy"],
            json!({"allOf": [present("allocation.release_every"), {"anyOf": [keep_false, is_word("allocation.strategy", "pool")]}]}),
            "allocation.release_every",
            "releases kept buffers in rounds: it needs keep = true and a strategy other than \"pool\"",
        ),
    ]
}

/// Between `[devices]`, `[context]`, `[axpy]` and `[env]`.
fn other_rules() -> Vec<Value> {
    let several =
        json!({"allOf": [present("context.count"), at("context.count", json!({"minimum": 2}))]});
    let checks = json!({"allOf": [present("axpy.check"), {"anyOf": [is_word("axpy.check", "sample"), is_word("axpy.check", "all")]}]});
    let layer = format!(
        "(?:\\{{clmulti-layer\\}}|{})",
        clmulti_contract::LAYER.file_name.replace('.', "\\.")
    );
    let env_has =
        |key: &str| json!({"required": ["env"], "properties": {"env": {"required": [key]}}});
    let names_layer = json!({"allOf": [env_has("OPENCL_LAYERS"), {"properties": {"env": {"properties": {"OPENCL_LAYERS": {"pattern": layer}}}}}]});
    vec![
        rule(
            &["devices.count", "devices.indices"],
            json!({"allOf": [present("devices.count"), present("devices.indices")]}),
            "devices.indices",
            "give either devices.count or devices.indices, not both",
        ),
        rule(
            &["context.count", "context.mode"],
            json!({"allOf": [several.clone(), is_word("context.mode", "per-device")]}),
            "context.count",
            "several contexts apply to mode = \"shared\" (per-device makes one per device)",
        ),
        rule(
            &["context.count", "allocation.strategy"],
            json!({"allOf": [several, is_word("allocation.strategy", "pool")]}),
            "context.count",
            "a pool belongs to one context: use one context with strategy \"pool\"",
        ),
        rule(
            &["axpy.samples", "axpy.check"],
            json!({"allOf": [present("axpy.samples"), not_word("axpy.check", "sample")]}),
            "axpy.samples",
            "only applies with axpy.check = \"sample\"",
        ),
        rule(
            &["axpy.check", "allocation.keep"],
            json!({"allOf": [checks.clone(), present("allocation.keep"), at("allocation.keep", json!({"const": false}))]}),
            "axpy.check",
            "dAxpy runs over kept buffers; allocation.keep = false releases each at once",
        ),
        rule(
            &["axpy.check", "allocation.size"],
            json!({"allOf": [checks.clone(), present("allocation.size"), at("allocation.size", json!({"type": "integer", "maximum": 7}))]}),
            "axpy.check",
            "dAxpy needs buffers of at least 8 bytes (two floats)",
        ),
        rule(
            &["axpy.check", "context.count"],
            json!({"allOf": [checks.clone(), present("context.count"), at("context.count", json!({"minimum": 2}))]}),
            "axpy.check",
            "dAxpy pairs buffers of one context; with context.count > 1 a device's buffers span contexts",
        ),
        rule(
            &["axpy.check", "allocation.strategy"],
            json!({"allOf": [checks, is_word("allocation.strategy", "pin")]}),
            "axpy.check",
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
    let keys = ["allocation.placement", "devices.count", "devices.indices"];
    let beyond = |n: usize| json!({"allOf": [present("allocation.placement"), at("allocation.placement", json!({"type": "integer", "minimum": n}))]});
    let words = "is not among the selected devices (indices start at 0)";
    let mut out = vec![rule(
        &keys,
        json!({"allOf": [{"not": {"anyOf": [present("devices.count"), present("devices.indices")]}}, beyond(1)]}),
        "allocation.placement",
        words,
    )];
    for n in 1..=16usize {
        out.push(rule(
            &keys,
            json!({"allOf": [present("devices.count"), at("devices.count", json!({"const": n})), beyond(n)]}),
            "allocation.placement",
            words,
        ));
        out.push(rule(
            &keys,
            json!({"allOf": [present("devices.indices"), at("devices.indices", json!({"minItems": n, "maxItems": n})), beyond(n)]}),
            "allocation.placement",
            words,
        ));
    }
    out
}
