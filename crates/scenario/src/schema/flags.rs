//! `allocation.flags` in the schema: each flag as check reads it
//! ([`crate::defs::flag_name`]: any case, `CL_MEM_` optional, spaces around), each
//! once, the access flags exclusive, USE_HOST_PTR without ALLOC_HOST_PTR or
//! COPY_HOST_PTR (OpenCL's rules), every refusal in words.

use super::words::{any_case, refuse};
use crate::defs::MEM_FLAGS;
use serde_json::{json, Value};

/// What each flag means.
fn meaning(name: &str) -> &'static str {
    match name {
        "READ_WRITE" => "kernels read and write the buffer (default)",
        "READ_ONLY" => "kernels only read the buffer",
        "WRITE_ONLY" => "kernels only write the buffer",
        "ALLOC_HOST_PTR" => "the runtime allocates the buffer from host-accessible memory",
        "USE_HOST_PTR" => "the buffer lives in a host block clmulti allocates per buffer",
        _ => "the buffer starts as a copy of a host block",
    }
}

/// A pattern for the flag `name` as check reads it.
pub(super) fn flag_pattern(name: &str) -> String {
    format!("^\\s*(?:{})?{}\\s*$", any_case("CL_MEM_"), any_case(name))
}

/// A string item that is the flag `name`.
fn is_flag(name: &str) -> Value {
    json!({"type": "string", "pattern": flag_pattern(name)})
}

/// The list holds the flag `name`.
pub(super) fn contains_flag(name: &str) -> Value {
    json!({"contains": is_flag(name)})
}

/// The list holds the flag `name` twice: at some place `k`, and after it. (Draft 7
/// cannot count `contains`; a list of more than six flags repeats one anyway.)
fn twice(name: &str) -> Vec<Value> {
    (0..MEM_FLAGS.len())
        .map(|k| {
            let mut at_k = vec![json!(true); k];
            at_k.push(is_flag(name));
            json!({"allOf": [
                {"items": at_k},
                {"not": {"items": vec![json!(true); k + 1], "additionalItems": {"not": is_flag(name)}}},
            ]})
        })
        .collect()
}

/// What `allocation.flags` takes.
pub(super) fn flags(description: &str) -> Value {
    let names: Vec<&str> = MEM_FLAGS.iter().map(|(n, _)| *n).collect();
    let any_flag: Vec<String> = names.iter().map(|n| any_case(n)).collect();
    let item_words = format!(
        "a memory flag: one of {}, in any case, with or without CL_MEM_",
        names.join(", ")
    );
    let repeated: Vec<Value> = names.iter().flat_map(|n| twice(n)).collect();
    let exclusive: Vec<Value> = [
        ("READ_WRITE", "READ_ONLY"),
        ("READ_WRITE", "WRITE_ONLY"),
        ("READ_ONLY", "WRITE_ONLY"),
        ("USE_HOST_PTR", "ALLOC_HOST_PTR"),
        ("USE_HOST_PTR", "COPY_HOST_PTR"),
    ]
    .iter()
    .map(|(a, b)| json!({"allOf": [contains_flag(a), contains_flag(b)]}))
    .collect();
    let docs: Vec<String> = names
        .iter()
        .map(|n| format!("{n}: {}", meaning(n)))
        .collect();
    json!({
        "description": format!(
            "{description}\n\n{}\n\nREAD_WRITE, READ_ONLY and WRITE_ONLY exclude each other; USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR; each flag once.",
            docs.join("\n")
        ),
        "type": "array",
        "maxItems": MEM_FLAGS.len(),
        "items": {
            "type": "string",
            "examples": names,
            "if": {"pattern": format!("^\\s*(?:{})?(?:{})\\s*$", any_case("CL_MEM_"), any_flag.join("|"))},
            "else": refuse(&item_words),
        },
        "if": {"anyOf": repeated},
        "then": refuse("each flag once: a flag is the same flag in any case, with or without CL_MEM_"),
        "else": {
            "if": {"anyOf": exclusive},
            "then": refuse("READ_WRITE, READ_ONLY and WRITE_ONLY exclude each other, and USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR (OpenCL spec)"),
        },
    })
}
