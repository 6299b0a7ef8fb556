//! `allocation.flags` in the schema: each flag as check reads it
//! ([`crate::defs::flag_name`]: any case, `CL_MEM_` optional, spaces around), each
//! once, the access flags exclusive, USE_HOST_PTR without ALLOC_HOST_PTR or
//! COPY_HOST_PTR (OpenCL's rules), every refusal in words.

use super::words::{any_case, refuse};
use crate::defs::MEM_FLAGS;
use crate::model::MemFlag;
use serde_json::{json, Value};

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

/// What `allocation.flags` takes: `flags`, each with what it means.
pub(super) fn flags(description: &str, flags: &[(&str, String)]) -> Value {
    let names: Vec<&str> = flags.iter().map(|(n, _)| *n).collect();
    let any_flag: Vec<String> = names.iter().map(|n| any_case(n)).collect();
    let item_words = format!(
        "a memory flag: one of {}, upper or lower case, with or without CL_MEM_",
        names.join(", ")
    );
    let repeated: Vec<Value> = names.iter().flat_map(|n| twice(n)).collect();
    let exclusive: Vec<Value> = [
        (MemFlag::ReadWrite, MemFlag::ReadOnly),
        (MemFlag::ReadWrite, MemFlag::WriteOnly),
        (MemFlag::ReadOnly, MemFlag::WriteOnly),
        (MemFlag::UseHostPtr, MemFlag::AllocHostPtr),
        (MemFlag::UseHostPtr, MemFlag::CopyHostPtr),
    ]
    .iter()
    .map(|(a, b)| json!({"allOf": [contains_flag(a.name()), contains_flag(b.name())]}))
    .collect();
    let docs: Vec<String> = flags.iter().map(|(n, d)| format!("{n}: {d}")).collect();
    json!({
        "description": format!(
            "{description}\n\n{}\n\nREAD_WRITE, READ_ONLY and WRITE_ONLY exclude each other; USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR; each flag once.",
            docs.join("\n")
        ),
        "type": "array",
        "maxItems": flags.len(),
        "items": {
            "type": "string",
            "examples": names,
            "if": {"pattern": format!("^\\s*(?:{})?(?:{})\\s*$", any_case("CL_MEM_"), any_flag.join("|"))},
            "else": refuse(&item_words),
        },
        "if": {"anyOf": repeated},
        "then": refuse("each flag once: a flag is the same flag whatever its case, with or without CL_MEM_"),
        "else": {
            "if": {"anyOf": exclusive},
            "then": refuse("READ_WRITE, READ_ONLY and WRITE_ONLY exclude each other, and USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR (OpenCL spec)"),
        },
    })
}
