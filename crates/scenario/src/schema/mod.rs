//! The JSON Schema of scenario files (`configs/scenario.schema.json`), for editors
//! (taplo, VS Code) and any JSON Schema validator. The keys, their descriptions and
//! their words come from the key items ([`crate::defs`]); what each value may be comes
//! from [`value_schema`], one entry per key, saying everything validation knows
//! without the machine: enums (with a description of each value), size patterns,
//! minimums and maximums. The rules between keys that JSON Schema can state follow
//! in [`rules`]; each is waived when the `[grid]` varies one of its keys, since a
//! grid value may then satisfy it. What validation checks and a schema cannot say
//! (a pool at least as large as a buffer, paths that exist, this machine's hard
//! limits) is left to `clmulti check`.

use crate::defs::{table_of, Key, Value as Kind, ENV, KEYS, TABLES};
use serde_json::{json, Map, Value};

mod flags;
mod rules;
mod size;
mod words;
use flags::flags;
use rules::rules;
use size::{size, size_or_percent, size_text};
use words::{listed, matching, one_of_any_case, refuse, with, words};

fn integer(description: &str, minimum: i64, maximum: Option<i64>) -> Value {
    let mut v = json!({"description": description, "type": "integer", "minimum": minimum});
    if let Some(max) = maximum {
        v["maximum"] = json!(max);
    }
    v
}

/// A name: one line, not blank.
const NAME_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$";
/// An `[env]` value: one line of printable text.
const ENV_VALUE: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";
/// An `[env]` name: not empty, without `=`, spaces or control characters.
const ENV_NAME: &str = "^[^=\\s\\u0000-\\u001F\\u007F-\\u009F]+$";

/// A string refused in `words` unless it matches `pattern`.
fn text(description: &str, pattern: &str, words: &str) -> Value {
    with(
        json!({"description": description, "type": "string"}),
        matching(pattern, words),
    )
}

/// The values of the emulation layer's knobs in `[env]`.
fn layer_knobs() -> Map<String, Value> {
    use crate::layer::*;
    use clmulti_contract::layer::*;
    let policies: Vec<&str> = Policy::ALL.iter().map(|(n, _)| *n).collect();
    let one = format!("(?:{})", policies.join("|"));
    let mut knobs = Map::new();
    let mut policy = text(
        &format!("clmulti's emulation layer: which candidate cause it models, one or more comma-separated of: {}.", policies.join(", ")),
        &format!("^\\s*{one}\\s*(?:,\\s*{one}\\s*)*$"),
        &format!("one or more policies, comma-separated, each {}", listed(policies.iter().copied())),
    );
    policy["examples"] = json!(policies);
    knobs.insert(POLICY.into(), policy);
    knobs.insert(
        MIRROR_LIMIT.into(),
        size_or_percent(
            "host-mirror: the most mirror bytes before creation fails: a size, or a percentage of RAM (default 25%).",
            json!("string"),
        ),
    );
    knobs.insert(
        DEVICE_MEMORY.into(),
        size_text(
            "Any policy: each device's memory as the layer reports and enforces it (a size).",
        ),
    );
    knobs.insert(
        FAIL_AFTER.into(),
        text(
            "fail-after: multi-device buffers created before creation fails (default 1000).",
            "^\\s*[0-9]+\\s*$",
            "a count of buffers, digits only, like \"1000\"",
        ),
    );
    knobs.insert(
        FAIL_ERROR.into(),
        text(
            "fail-after: the OpenCL error creation fails with, a negative integer (default -6, CL_OUT_OF_HOST_MEMORY).",
            "^\\s*-0*[1-9][0-9]{0,8}\\s*$",
            "an OpenCL error code: a negative integer like \"-6\" (CL_OUT_OF_HOST_MEMORY)",
        ),
    );
    knobs.insert(
        FAIL_SCOPE.into(),
        words(
            "fail-after: what the count is kept for.",
            &[
                ("process", "one count for the whole process (default)"),
                ("context", "one count per context"),
            ],
        ),
    );
    knobs.insert(
        BYTE_BUDGET.into(),
        size_text(
            "byte-budget: the most bytes of live multi-device buffers (a size, default 1GiB).",
        ),
    );
    knobs
}

/// What an `[env]` name may be: not empty, without `=`, spaces or control
/// characters; a name clmulti knows only in its own case ([`crate::env_keys`]).
fn env_names() -> Value {
    // One test per known name, each in the `else` of the one before.
    let in_another_case = crate::env_keys::known().fold(json!({}), |others, known| {
        json!({
            "if": {"pattern": one_of_any_case([known])},
            "then": {
                "if": {"const": known},
                "else": refuse(&format!("environment variables are case-sensitive, and nothing reads this name: did you mean {known}?")),
            },
            "else": others,
        })
    });
    json!({
        "if": {"pattern": ENV_NAME},
        "then": in_another_case,
        "else": refuse("a variable's name: not empty, without '=', spaces or control characters"),
    })
}

/// `[env]`: one line of printable text each, names as [`env_names`]; the known keys
/// described.
fn env(description: &str) -> Value {
    let mut properties = layer_knobs();
    let paths = "A path, or several joined by ':', relative to the scenario's folder; clmulti checks that each exists.";
    let plain = |d: String| json!({"description": d, "type": "string"});
    properties.insert(
        "OPENCL_LAYERS".into(),
        plain(format!("OpenCL layers the ICD loader puts in the call path (ocl-icd >= 2.3). {paths} \"{}\" is clmulti's emulation layer, built beside clmulti.", clmulti_contract::LAYER.token)),
    );
    properties.insert(
        "OCL_ICD_VENDORS".into(),
        plain(format!("Where the ICD loader looks for runtimes: a folder of .icd files or one .icd file. {paths}")),
    );
    properties.insert(
        "OCL_ICD_FILENAMES".into(),
        plain(format!(
            "Runtime libraries the ICD loader loads instead of its vendors folder. {paths}"
        )),
    );
    properties.insert(
        "LD_PRELOAD".into(),
        plain(format!("Libraries loaded first, separated by ':' or spaces; a bare name is the dynamic linker's to find, a path is relative to the scenario's folder. \"{}\" is clmulti's emulated kernel driver, built beside clmulti: Intel's GPU runtime NEO then runs its kernel-driver path on emulated GPUs (Arc A770s on i915 unless CLMULTI_KMD_EMU_DRIVER and CLMULTI_KMD_EMU_MODEL say).", clmulti_contract::KMD_EMU.token)),
    );
    for (key, text) in [
        (clmulti_contract::kmd_emu::DRIVER, "clmulti's emulated kernel driver: i915 (the default) or xe (NEO 26 then needs NEOReadDebugKeys=1 EnableDirectSubmission=0)."),
        (clmulti_contract::kmd_emu::MODEL, "clmulti's emulated kernel driver: the device it presents, one of the driver's models: on i915 a770 (Arc A770, the default) or adl-s (UHD Graphics 770, Alder Lake-S: integrated, the newest GPU NEO 20.44 lists); on xe b580 (Arc B580, the default)."),
        (clmulti_contract::kmd_emu::DEVICES, "clmulti's emulated kernel driver: how many devices it presents, 1 to 8 (default 2)."),
        (clmulti_contract::kmd_emu::LOCAL_MEMORY, "clmulti's emulated kernel driver: device memory per device, bytes (default the model's: 17179869184 on an A770, 12884901888 on a B580; an integrated GPU has none)."),
        (clmulti_contract::kmd_emu::TRACE, "clmulti's emulated kernel driver: 1 prints every ioctl on an emulated descriptor on stderr."),
    ] {
        properties.insert(key.into(), plain(text.into()));
    }
    let dependencies: Map<String, Value> = clmulti_contract::layer::KNOBS
        .iter()
        .filter(|k| **k != clmulti_contract::layer::POLICY)
        .map(|k| ((*k).to_owned(), json!([clmulti_contract::layer::POLICY])))
        .collect();
    json!({
        "description": description,
        "type": "object",
        "maxProperties": crate::MAX_ENV_VARS,
        "propertyNames": env_names(),
        "properties": properties,
        // Every value, known key or not: one line of printable text.
        "patternProperties": {"": env_value()},
        "dependencies": dependencies,
    })
}

/// An `[env]` value.
fn env_value() -> Value {
    text(
        "A value: one line of printable text.",
        ENV_VALUE,
        "one line of printable text (no control characters)",
    )
}

/// A key's default, as JSON: editors offer it as the value.
fn default_of(key: &Key) -> Option<Value> {
    serde_json::to_value(key.default?.to_toml()).ok()
}

/// The schema of one key's value, with its description and default: from what the
/// table of keys says it takes.
pub(crate) fn value_schema(key: &Key) -> Value {
    let mut schema = value_schema_without_default(key);
    if let Some(default) = default_of(key) {
        schema["default"] = default;
    }
    schema
}

fn value_schema_without_default(key: &Key) -> Value {
    let description = key.description();
    let d = description.as_str();
    let either = |examples: Value, pattern: String, words: &str| {
        with(
            json!({"description": d, "type": ["integer", "string"], "minimum": 0, "examples": examples}),
            matching(&pattern, words),
        )
    };
    match key.value {
        Kind::Name => text(d, NAME_PATTERN, "one line of text, not blank (no control characters)"),
        Kind::Description => json!({"description": d, "type": "string"}),
        Kind::Platform => either(
            json!(["auto", "NVIDIA", "Intel", 0]),
            "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$".into(),
            "\"auto\", a platform's index, or a substring of its name or vendor (one line, not blank)",
        ),
        Kind::Integer { min, max, .. } => integer(d, min, max),
        Kind::Words(_) => words(d, &key.words().unwrap_or_default()),
        Kind::Bool => json!({"description": d, "type": "boolean"}),
        Kind::Size { min } => size(d, min),
        Kind::SizeOrPercent => size_or_percent(d, json!(["integer", "string"])),
        Kind::Seconds => json!({
            "description": d,
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": crate::defs::MAX_SECONDS,
        }),
        Kind::Count => {
            let mut count = either(
                json!([1000, "until-failure"]),
                one_of_any_case(["until-failure"]),
                "a positive integer, or \"until-failure\"",
            );
            count["minimum"] = json!(1);
            count
        }
        Kind::Placement => either(
            json!(["round-robin", 0]),
            one_of_any_case(["round-robin"]),
            "\"round-robin\", or the index of one selected device",
        ),
        Kind::Indices => json!({
            "description": d,
            "type": "array",
            "minItems": 1,
            "maxItems": crate::defs::MAX_DEVICE_LIST,
            "uniqueItems": true,
            "items": {"type": "integer", "minimum": 0},
        }),
        Kind::Partition => with(
            json!({
                "description": d,
                "type": ["string", "array"],
                "minItems": 1,
                "maxItems": crate::defs::MAX_DEVICE_LIST,
                "items": {"type": "integer", "minimum": 1},
                "examples": ["equally", [1, 1]],
            }),
            matching(
                &one_of_any_case(["equally"]),
                "\"equally\", or a list of compute-unit counts like [1, 1]",
            ),
        ),
        Kind::Flags(_) => flags(d, &key.words().unwrap_or_default()),
        Kind::Env => env(d),
    }
}

/// `[grid]`: each key a list of that key's values.
fn grid() -> Value {
    let mut properties = Map::new();
    let mut names = Vec::new();
    for key in KEYS.iter().filter(|k| k.name != ENV.name) {
        names.push(regex_escape(key.name));
        properties.insert(
            key.name.to_owned(),
            json!({
                "description": format!("Values of {}, one run each: {}", key.name, key.description()),
                "type": "array",
                "minItems": 1,
                "uniqueItems": true,
                "items": value_schema(key),
            }),
        );
    }
    json!({
        "description": format!(
            "Keys to vary: \"table.key\" = [values]; the file expands to every combination (at most {} runs), each run named after its point.",
            crate::MAX_RUNS
        ),
        "type": "object",
        "properties": properties,
        "patternProperties": {"^env\\.": {
            "description": "Values of an [env] variable, one run each.",
            "type": "array",
            "minItems": 1,
            "uniqueItems": true,
            "items": env_value(),
        }},
        "propertyNames": matching(
            &format!("^(?:{}|env\\.[^=\\s\\u0000-\\u001F\\u007F-\\u009F]+)$", names.join("|")),
            "a key to vary: \"table.key\" of a scenario key (\"allocation.size\", \"context.mode\", ...) or \"env.NAME\"",
        ),
    })
}

fn regex_escape(text: &str) -> String {
    text.replace('.', "\\.")
}

/// The JSON Schema of scenario files (what `configs/scenario.schema.json` holds), from
/// the table of keys: draft-07, everything inline, no `null` (TOML has none), the
/// grid typed per key, and the rules between keys.
pub fn schema() -> Value {
    let mut properties = Map::new();
    for key in KEYS.iter().filter(|k| !k.name.contains('.')) {
        properties.insert(key.name.to_owned(), value_schema(key));
    }
    for (table, doc) in TABLES {
        let Some(fields) = table_of(table) else {
            continue;
        };
        let mut schemas = Map::new();
        for (field, key) in fields {
            schemas.insert(field.to_owned(), value_schema(key));
        }
        properties.insert(
            table.to_owned(),
            json!({
                "description": doc,
                "type": "object",
                "properties": schemas,
                "additionalProperties": false,
            }),
        );
    }
    properties.insert("grid".into(), grid());
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "clmulti scenario",
        "description": "A clmulti scenario: one allocation experiment, expanded over its [grid] into runs.",
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
        "allOf": rules(),
    })
}
