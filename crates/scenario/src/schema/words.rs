//! What an editor shows when a value is refused: words, never a regular expression.
//! A validator (taplo, VS Code through taplo, Python's jsonschema) prints the pattern
//! a string failed, or the schema a `not` matched; so a value is tested by a pattern
//! in an `if`, whose failures are not reported, and refused in its `else` by
//! `{"not": {"description": WORDS}}`, which prints as the words alone.

use serde_json::{json, Value};

/// A schema that refuses every value, printing `words`.
pub(super) fn refuse(words: &str) -> Value {
    json!({"not": {"description": words}})
}

/// Strings matching `pattern` pass; others are refused with `words` (other types
/// pass: `type` says which are allowed).
pub(super) fn matching(pattern: &str, words: &str) -> Value {
    json!({"if": {"pattern": pattern}, "else": refuse(words)})
}

/// `schema` with `rule`'s keys (`if`, `then`, `else`) added.
pub(super) fn with(mut schema: Value, rule: Value) -> Value {
    if let (Some(out), Value::Object(rule)) = (schema.as_object_mut(), rule) {
        out.extend(rule);
    }
    schema
}

/// A pattern for `word` in any case (`[Gg][Pp][Uu]`), as check reads words
/// ([`crate::defs::same_word`]).
pub(super) fn any_case(word: &str) -> String {
    word.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
            } else if ".^$|?*+()[]{}\\/".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A pattern for exactly one of `words`, in any case.
pub(super) fn one_of_any_case<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let alternatives: Vec<String> = words.into_iter().map(any_case).collect();
    format!("^(?:{})$", alternatives.join("|"))
}

/// `"gpu", "cpu" or "all"`.
pub(super) fn listed<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = words.into_iter().map(|w| format!("\"{w}\"")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// One of a few words, each with what it means, in any case (taplo shows
/// `x-taplo.docs`; its value completion offers the default).
pub(super) fn words<S: AsRef<str>>(description: &str, values: &[(&str, S)]) -> Value {
    let names: Vec<&str> = values.iter().map(|(n, _)| *n).collect();
    let docs: Vec<String> = values
        .iter()
        .map(|(n, d)| format!("{n}: {}", d.as_ref()))
        .collect();
    with(
        json!({
            "description": format!("{description}\n\n{}", docs.join("\n")),
            "type": "string",
            "examples": names,
        }),
        matching(
            &one_of_any_case(names.iter().copied()),
            &format!(
                "one of {}, upper or lower case",
                listed(names.iter().copied())
            ),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_in_any_case_and_are_listed_in_words() {
        assert_eq!(
            any_case("per-device"),
            "[Pp][Ee][Rr]-[Dd][Ee][Vv][Ii][Cc][Ee]"
        );
        assert_eq!(any_case("a.b"), "[Aa]\\.[Bb]");
        assert_eq!(listed(["a", "b", "c"]), "\"a\", \"b\" or \"c\"");
        assert_eq!(listed(["a"]), "\"a\"");
    }

    /// The schema offers each key of words exactly its table's words, and says what
    /// each means.
    #[test]
    fn the_schema_lists_each_keys_words() {
        let schema = super::super::schema();
        let mut keys = 0;
        use crate::defs::{Value, KEYS};
        for key in KEYS {
            let Some(words) = key.words() else { continue };
            let (table, field) = key.name.split_once('.').unwrap();
            let at = &schema["properties"][table]["properties"][field];
            let at = if matches!(key.value, Value::Flags(_)) {
                &at["items"]
            } else {
                at
            };
            let offered: Vec<&str> = at["examples"]
                .as_array()
                .unwrap_or_else(|| panic!("{}: {at}", key.name))
                .iter()
                .map(|w| w.as_str().unwrap())
                .collect();
            let listed: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
            assert_eq!(offered, listed, "{}", key.name);
            let description = schema["properties"][table]["properties"][field]["description"]
                .as_str()
                .unwrap();
            assert!(description.starts_with(&key.description()), "{description}");
            for (word, means) in &words {
                assert!(
                    description.contains(&format!("\n{word}: {means}")),
                    "{description}"
                );
            }
            keys += 1;
        }
        assert_eq!(keys, 7);
    }
}
