//! The JSON Schema of scenario files (`configs/scenario.schema.json`), for editors
//! (taplo, VS Code) and any JSON Schema validator. The keys and their descriptions
//! come from the raw types' doc comments (schemars); what each value may be comes
//! from [`value_schema`], one entry per key, saying everything validation knows
//! without the machine: enums (with a description of each value), size patterns,
//! minimums and maximums. The rules between keys that JSON Schema can state follow
//! in [`rules`]; each is waived when the `[grid]` varies one of its keys, since a
//! grid value may then satisfy it. What validation checks and a schema cannot say
//! (a pool at least as large as a buffer, paths that exist, this machine's hard
//! limits) is left to `clmulti check`.

use crate::defs::{Key, Value as Kind, KEYS, TABLES};
use serde_json::{json, Map, Value};

mod rules;
use rules::rules;

/// Digits with `_` between them, at least one digit: the whole part of a size.
const WHOLE: &str = "[0-9_]*[0-9][0-9_]*";

/// A fraction that adds at most `digits` significant digits (zeros after them are
/// fine): sizes in decimal units are whole bytes up to their power of ten.
fn fraction(digits: usize, required: bool) -> String {
    let body = if digits == 0 {
        "[0_]*".to_owned()
    } else {
        format!("(?:_*[0-9]){{0,{digits}}}[0_]*")
    };
    if required {
        format!("\\.{body}")
    } else {
        format!("(?:\\.{body})?")
    }
}

/// The body of a size string (no anchors): a number and an optional unit, spaces
/// allowed, the unit in any case; a fraction only where it can be whole bytes.
fn size_body() -> String {
    let mut alternatives = Vec::new();
    let mut binary = Vec::new();
    for (name, bytes, optional_b) in crate::SIZE_UNITS {
        let unit = unit_pattern(name, optional_b);
        if bytes == 1 {
            // Bytes: no fraction but zeros.
            alternatives.push(format!("{WHOLE}{}\\s*{unit}", fraction(0, false)));
        } else if bytes.is_power_of_two() {
            binary.push(unit);
        } else {
            // Decimal units: a fraction of at most as many digits as the unit's zeros.
            let digits = bytes.ilog10() as usize;
            alternatives.push(format!(
                "(?:{WHOLE}{}|_*{})\\s*{unit}",
                fraction(digits, false),
                fraction(digits, true)
            ));
        }
    }
    // Binary units: any fraction (0.5KiB is 512 bytes).
    alternatives.push(format!(
        "(?:{WHOLE}(?:\\.[0-9_]*)?|[0-9_]*\\.[0-9_]*[0-9][0-9_]*)\\s*(?:{})",
        binary.join("|")
    ));
    format!("\\s*(?:{})\\s*", alternatives.join("|"))
}

/// A unit's name in any case, its final B optional where the unit allows:
/// `[Kk][Ii][Bb]`, `[Kk][Bb]?`.
fn unit_pattern(name: &str, optional_b: bool) -> String {
    let mut pattern: String = name
        .chars()
        .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()))
        .collect();
    if optional_b {
        pattern.push('?');
    }
    pattern
}

/// A percentage in (0, 100].
const PERCENT_BODY: &str =
    "\\s*0*(?:100(?:\\.0*)?|[1-9][0-9]?(?:\\.[0-9]*)?|\\.[0-9]*[1-9][0-9]*)\\s*%\\s*";

/// Sizes too large for 64 bits: a whole part above what fits in each unit (bytes
/// above 18446744073709551615, EiB above 15, ...), whatever fraction follows.
fn overflow() -> String {
    let alternatives: Vec<String> = crate::SIZE_UNITS
        .iter()
        .map(|&(name, bytes, optional_b)| {
            format!(
                "(?:{})(?:\\.[0-9_]*)?\\s*{}",
                integers_above(u64::MAX / bytes),
                unit_pattern(name, optional_b)
            )
        })
        .collect();
    format!("^\\s*0*(?:{})\\s*$", alternatives.join("|"))
}

/// A pattern for the decimal integers (no leading zeros) above `n`: longer ones, and
/// those of its length that pass it at some digit.
fn integers_above(n: u64) -> String {
    let digits = n.to_string();
    let mut alternatives = vec![format!("[1-9][0-9]{{{},}}", digits.len())];
    for (i, d) in digits.bytes().enumerate() {
        if d < b'9' {
            let rest = digits.len() - i - 1;
            alternatives.push(format!(
                "{}[{}-9][0-9]{{{rest}}}",
                &digits[..i],
                (d + 1) as char
            ));
        }
    }
    alternatives.join("|")
}

/// A size string that is zero.
const ZERO: &str = "^\\s*[0_]*(?:\\.[0_]*)?\\s*[A-Za-z]*\\s*$";

/// Sizes certainly below 64 MiB: bytes of up to 7 digits, K of up to 4, M below 67,
/// MiB below 64.
const BELOW_64_MIB: &str = "^\\s*0*(?:[0-9]{1,7}(?:\\.[0-9]*)?\\s*[Bb]?|[0-9]{1,4}(?:\\.[0-9]*)?\\s*[Kk][Ii]?[Bb]?|(?:[0-9]|[1-5][0-9]|6[0-6])(?:\\.[0-9]*)?\\s*[Mm][Bb]?|(?:[0-9]|[1-5][0-9]|6[0-3])(?:\\.[0-9]*)?\\s*[Mm][Ii][Bb])\\s*$";

/// A size: an integer of bytes or a string with a unit. (No `allOf` in a value's
/// schema: taplo 0.9's key completion recurses into it until its stack runs out.)
fn size(description: &str, min_bytes: u64) -> Value {
    let mut not = vec![json!({"type": "string", "pattern": overflow()})];
    if min_bytes >= 1 {
        not.push(json!({"type": "string", "pattern": ZERO}));
    }
    if min_bytes >= 64 << 20 {
        not.push(json!({"type": "string", "pattern": BELOW_64_MIB}));
    }
    json!({
        "description": description,
        "type": ["integer", "string"],
        "minimum": min_bytes,
        "pattern": format!("^{}$", size_body()),
        "not": {"anyOf": not},
        "examples": ["1MiB", "64KiB", "1.5GiB", "64KB", 4096],
    })
}

/// One of a few words, each with what it means (taplo shows `x-taplo.docs`).
fn words(description: &str, values: &[(&str, &str)]) -> Value {
    let names: Vec<&str> = values.iter().map(|(n, _)| *n).collect();
    let docs: Vec<String> = values.iter().map(|(n, d)| format!("{n}: {d}")).collect();
    json!({
        "description": format!("{description}\n\n{}", docs.join("\n")),
        "type": "string",
        "enum": names,
        "x-taplo": {"docs": {"enumValues": values.iter().map(|(_, d)| *d).collect::<Vec<_>>()}},
        "enumDescriptions": values.iter().map(|(_, d)| *d).collect::<Vec<_>>(),
    })
}

fn integer(description: &str, minimum: i64, maximum: Option<i64>) -> Value {
    let mut v = json!({"description": description, "type": "integer", "minimum": minimum});
    if let Some(max) = maximum {
        v["maximum"] = json!(max);
    }
    v
}

/// The memory flags, with and without `CL_MEM_`.
const FLAGS: [(&str, &str); 6] = [
    ("READ_WRITE", "kernels read and write the buffer (default)"),
    ("READ_ONLY", "kernels only read the buffer"),
    ("WRITE_ONLY", "kernels only write the buffer"),
    (
        "ALLOC_HOST_PTR",
        "the runtime allocates the buffer from host-accessible memory",
    ),
    (
        "USE_HOST_PTR",
        "the buffer lives in a host block clmulti allocates per buffer",
    ),
    (
        "COPY_HOST_PTR",
        "the buffer starts as a copy of a host block",
    ),
];

fn flag_names(name: &str) -> Value {
    json!([name, format!("CL_MEM_{name}")])
}

fn contains_flag(name: &str) -> Value {
    json!({"contains": {"enum": flag_names(name)}})
}

/// Flags: each once (either spelling), the access flags exclusive, USE_HOST_PTR
/// without ALLOC_HOST_PTR or COPY_HOST_PTR (OpenCL's rules).
fn flags(description: &str) -> Value {
    let mut names = Vec::new();
    let mut docs = Vec::new();
    for (name, doc) in FLAGS {
        names.push(name.to_owned());
        docs.push(doc.to_owned());
    }
    for (name, doc) in FLAGS {
        names.push(format!("CL_MEM_{name}"));
        docs.push(doc.to_owned());
    }
    let mut excluded: Vec<Value> = FLAGS
        .iter()
        .map(|(name, _)| {
            json!({"allOf": [
                {"contains": {"const": name}},
                {"contains": {"const": format!("CL_MEM_{name}")}},
            ]})
        })
        .collect();
    for (a, b) in [
        ("READ_WRITE", "READ_ONLY"),
        ("READ_WRITE", "WRITE_ONLY"),
        ("READ_ONLY", "WRITE_ONLY"),
        ("USE_HOST_PTR", "ALLOC_HOST_PTR"),
        ("USE_HOST_PTR", "COPY_HOST_PTR"),
    ] {
        excluded.push(json!({"allOf": [contains_flag(a), contains_flag(b)]}));
    }
    json!({
        "description": format!(
            "{description}\n\nREAD_WRITE, READ_ONLY and WRITE_ONLY exclude each other; USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR; each flag once."
        ),
        "type": "array",
        "uniqueItems": true,
        "items": {
            "type": "string",
            "enum": names,
            "x-taplo": {"docs": {"enumValues": docs.clone()}},
            "enumDescriptions": docs,
        },
        "not": {"anyOf": excluded},
    })
}

/// A name: one line, not blank.
const NAME_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// The values of the emulation layer's knobs in `[env]`.
fn layer_knobs() -> Map<String, Value> {
    use crate::layer::*;
    let policies: Vec<&str> = Policy::ALL.iter().map(|(n, _)| *n).collect();
    let one = format!("(?:{})", policies.join("|"));
    let mut knobs = Map::new();
    knobs.insert(
        POLICY.into(),
        json!({
            "description": format!("clmulti's emulation layer: which candidate cause it models, one or more comma-separated of: {}.", policies.join(", ")),
            "type": "string",
            "pattern": format!("^\\s*{one}\\s*(?:,\\s*{one}\\s*)*$"),
            "examples": policies,
        }),
    );
    let size_text = |d: &str| json!({"description": d, "type": "string", "pattern": format!("^{}$", size_body())});
    knobs.insert(
        MIRROR_LIMIT.into(),
        json!({
            "description": "host-mirror: the most mirror bytes before creation fails: a size, or a percentage of RAM (default 25%).",
            "type": "string",
            "pattern": format!("^(?:{}|{PERCENT_BODY})$", size_body()),
        }),
    );
    knobs.insert(
        DEVICE_MEMORY.into(),
        size_text(
            "Any policy: each device's memory as the layer reports and enforces it (a size).",
        ),
    );
    knobs.insert(
        FAIL_AFTER.into(),
        json!({"description": "fail-after: multi-device buffers created before creation fails (default 1000).", "type": "string", "pattern": "^\\s*[0-9]+\\s*$"}),
    );
    knobs.insert(
        FAIL_ERROR.into(),
        json!({"description": "fail-after: the OpenCL error creation fails with, a negative integer (default -6, CL_OUT_OF_HOST_MEMORY).", "type": "string", "pattern": "^\\s*-0*[1-9][0-9]{0,8}\\s*$"}),
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

/// `[env]`: strings without NUL, names without `=`; the known keys described.
fn env(description: &str) -> Value {
    let mut properties = layer_knobs();
    let paths = "A path, or several joined by ':', relative to the scenario's folder; clmulti checks that each exists.";
    properties.insert(
        "OPENCL_LAYERS".into(),
        json!({"description": format!("OpenCL layers the ICD loader puts in the call path (ocl-icd >= 2.3). {paths} \"{}\" is clmulti's emulation layer, built beside clmulti.", crate::LAYER_TOKEN), "type": "string"}),
    );
    properties.insert(
        "OCL_ICD_VENDORS".into(),
        json!({"description": format!("Where the ICD loader looks for runtimes: a folder of .icd files or one .icd file. {paths}"), "type": "string"}),
    );
    properties.insert(
        "OCL_ICD_FILENAMES".into(),
        json!({"description": format!("Runtime libraries the ICD loader loads instead of its vendors folder. {paths}"), "type": "string"}),
    );
    properties.insert(
        "LD_PRELOAD".into(),
        json!({"description": format!("Libraries loaded first, separated by ':' or spaces; a bare name is the dynamic linker's to find, a path is relative to the scenario's folder. \"{}\" is clmulti's emulated i915 kernel driver, built beside clmulti: Intel's GPU runtime NEO then runs its kernel-driver path on emulated Arc A770s.", crate::KMD_EMU.token), "type": "string"}),
    );
    for (key, text) in [
        (crate::kmd_emu::DEVICES, "clmulti's emulated i915 driver: how many Arc A770s it presents, 1 to 8 (default 2)."),
        (crate::kmd_emu::LOCAL_MEMORY, "clmulti's emulated i915 driver: device memory per device, bytes (default 17179869184, an A770's 16 GiB)."),
        (crate::kmd_emu::TRACE, "clmulti's emulated i915 driver: 1 prints every ioctl on an emulated descriptor on stderr."),
        (crate::kmd_emu::MODEL, "clmulti's emulated i915 driver: the device it presents, a770 (Arc A770, the default) or adl-s (UHD Graphics 770, Alder Lake-S: integrated, the newest GPU NEO 20.44 lists)."),
    ] {
        properties.insert(key.into(), json!({"description": text, "type": "string"}));
    }
    let dependencies: Map<String, Value> = crate::layer::KNOBS
        .iter()
        .filter(|k| **k != crate::layer::POLICY)
        .map(|k| ((*k).to_owned(), json!([crate::layer::POLICY])))
        .collect();
    json!({
        "description": description,
        "type": "object",
        "maxProperties": crate::MAX_ENV_VARS,
        "propertyNames": {"pattern": "^[^=\\u0000]+$"},
        "properties": properties,
        "additionalProperties": {"type": "string", "pattern": "^[^\\u0000]*$"},
        "dependencies": dependencies,
    })
}

/// A key's default, as JSON: editors offer it as the value.
fn default_of(key: &Key) -> Option<Value> {
    let table: toml::Table = toml::from_str(&format!("v = {}", key.default?)).ok()?;
    serde_json::to_value(&table["v"]).ok()
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
    let d = key.doc;
    match key.value {
        Kind::Name => json!({"description": d, "type": "string", "pattern": NAME_PATTERN}),
        Kind::Description => json!({"description": d, "type": "string"}),
        Kind::Platform => json!({
            "description": d,
            "type": ["integer", "string"],
            "minimum": 0,
            "pattern": "\\S",
            "examples": ["auto", "NVIDIA", "Intel", 0],
        }),
        Kind::Integer { min, max, .. } => integer(d, min, max),
        Kind::Words(choices) => words(d, choices),
        Kind::Bool => json!({"description": d, "type": "boolean"}),
        Kind::Size { min } => size(d, min),
        Kind::SizeOrPercent => json!({
            "description": d,
            "type": ["integer", "string"],
            "minimum": 0,
            "pattern": format!("^(?:{}|{PERCENT_BODY})$", size_body()),
            "not": {"type": "string", "pattern": overflow()},
            "examples": ["50%", "8GiB"],
        }),
        Kind::Seconds => json!({
            "description": d,
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": crate::defs::MAX_SECONDS,
        }),
        Kind::Count => json!({
            "description": d,
            "type": ["integer", "string"],
            "minimum": 1,
            "pattern": "^until-failure$",
            "examples": [1000, "until-failure"],
        }),
        Kind::Placement => json!({
            "description": d,
            "type": ["integer", "string"],
            "minimum": 0,
            "pattern": "^round-robin$",
            "examples": ["round-robin", 0],
        }),
        Kind::Indices => json!({
            "description": d,
            "type": "array",
            "minItems": 1,
            "maxItems": crate::defs::MAX_DEVICE_LIST,
            "uniqueItems": true,
            "items": {"type": "integer", "minimum": 0},
        }),
        Kind::Partition => json!({
            "description": d,
            "type": ["string", "array"],
            "pattern": "^equally$",
            "minItems": 1,
            "maxItems": crate::defs::MAX_DEVICE_LIST,
            "items": {"type": "integer", "minimum": 1},
            "examples": ["equally", [1, 1]],
        }),
        Kind::Flags => flags(d),
        Kind::Env => env(d),
    }
}

/// `[grid]`: each key a list of that key's values.
fn grid() -> Value {
    let mut properties = Map::new();
    let mut names = Vec::new();
    for key in KEYS.iter().filter(|k| k.name != "env") {
        names.push(regex_escape(key.name));
        properties.insert(
            key.name.to_owned(),
            json!({
                "description": format!("Values of {}, one run each: {}", key.name, key.doc),
                "type": "array",
                "minItems": 1,
                "uniqueItems": true,
                "items": value_schema(key),
            }),
        );
    }
    let env_value = json!({"type": "string", "pattern": "^[^\\u0000]*$"});
    json!({
        "description": format!(
            "Keys to vary: \"table.key\" = [values]; the file expands to every combination (at most {} runs), each run named after its point.",
            crate::MAX_RUNS
        ),
        "type": "object",
        "properties": properties,
        "patternProperties": {"^env\\.[^=\\u0000]+$": {
            "description": "Values of an [env] variable, one run each.",
            "type": "array",
            "minItems": 1,
            "uniqueItems": true,
            "items": env_value,
        }},
        "propertyNames": {"pattern": format!("^(?:{}|env\\.[^=\\u0000]+)$", names.join("|"))},
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
        let Some(fields) = crate::defs::table_keys(table) else {
            continue;
        };
        let mut schemas = Map::new();
        for field in fields {
            let key = crate::defs::find(&format!("{table}.{field}")).expect("a key of the table");
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
