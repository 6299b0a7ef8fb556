//! Which keys a scenario has and what each takes, in words: for the messages that
//! must say what is allowed (a value of the wrong type, an integer beyond TOML's, a
//! grid key that names nothing). The keys and what they take come from the one
//! table of keys ([`crate::defs`]); a test holds the raw types' serde fields to it.

use crate::defs::{
    table_keys, top_level_values, Value, Words, ENV, MAX_DESCRIPTION_BYTES, MAX_NAME_BYTES,
    MAX_PLATFORM_NAME, MAX_SECONDS, TABLES,
};
use crate::size::format_size;

/// Whether a key holds a table, not a value or a list.
pub(crate) fn is_table(key: &str) -> bool {
    TABLES.iter().any(|(t, _)| *t == key)
}

/// Every key a value can be given at (`env.<NAME>` standing for the variables), in
/// documented order.
#[cfg(test)]
fn all_keys() -> Vec<String> {
    let mut keys: Vec<String> = top_level_values().map(str::to_owned).collect();
    for (table, _) in TABLES {
        match table_keys(table) {
            Some(fields) => keys.extend(fields.iter().map(|f| format!("{table}.{f}"))),
            None if table == "env" => keys.push("env.<NAME>".into()),
            None => {}
        }
    }
    keys
}

/// Every key, short: `name, description, devices.{platform, type, ...}, ...`.
fn keys_in_words() -> String {
    let mut groups: Vec<String> = top_level_values().map(str::to_owned).collect();
    for (table, _) in TABLES {
        match table_keys(table).as_deref() {
            Some([one]) => groups.push(format!("{table}.{one}")),
            Some(fields) => groups.push(format!("{table}.{{{}}}", fields.join(", "))),
            None if table == "env" => groups.push("env.<NAME>".into()),
            None => {}
        }
    }
    groups.join(", ")
}

/// Why `key` cannot be a `[grid]` axis (`None`: it names a key a run can vary).
pub(crate) fn not_a_grid_key(key: &str) -> Option<String> {
    let segments: Vec<&str> = key.split('.').collect();
    let keys = || format!("a grid varies {}", keys_in_words());
    match segments[..] {
        ["grid"] | ["grid", ..] => Some("the grid cannot vary itself".into()),
        [table] if is_table(table) => Some(format!(
            "[{table}] is a table; vary one of its keys (\"{table}.<key>\"), each its own axis"
        )),
        [value] if top_level_values().any(|k| k == value) => None,
        ["env", name] if !name.is_empty() => None,
        [table, field] => match table_keys(table) {
            Some(fields) if fields.contains(&field) => None,
            Some(fields) => Some(format!(
                "[{table}] has no key `{field}`; its keys are {}{}",
                fields.join(", "),
                crate::suggest::hint(field, fields.iter().copied())
            )),
            None => Some(format!(
                "`{key}` is not a scenario key; {}{}",
                keys(),
                crate::suggest::hint(key, grid_keys().iter().map(String::as_str))
            )),
        },
        _ => Some(format!(
            "`{key}` is not a scenario key; {}{}",
            keys(),
            crate::suggest::hint(key, grid_keys().iter().map(String::as_str))
        )),
    }
}

/// Every key a grid can vary, as written in `[grid]` (`allocation.size`).
fn grid_keys() -> Vec<String> {
    crate::defs::KEYS
        .iter()
        .filter(|k| k.name != ENV.name)
        .map(|k| k.name.to_owned())
        .collect()
}

fn words(table: &dyn Words) -> String {
    let names: Vec<String> = table
        .each()
        .iter()
        .map(|(n, _)| format!("\"{n}\""))
        .collect();
    format!("one of {}", names.join(", "))
}

const SIZE: &str = "a size: an integer number of bytes or a string like \"1MiB\"";

/// What `key` takes, in words (`key` as in a problem: `allocation.size`,
/// `devices.indices[2]`, `env.POCL_DEVICES`); `None` for a key no scenario has.
pub(crate) fn takes(key: &str) -> Option<String> {
    // A list's item takes what its list does.
    let key = key.split('[').next().unwrap_or(key);
    if key.starts_with("env.") {
        return Some("a string: one line of printable text".into());
    }
    Some(match crate::defs::find(key)?.value {
        Value::Name => format!("a string: one line of at most {MAX_NAME_BYTES} bytes"),
        Value::Description => format!("a string of at most {} KiB", MAX_DESCRIPTION_BYTES >> 10),
        Value::Platform => format!(
            "\"auto\", a platform's index (an integer from 0), or a substring of its name or vendor (at most {MAX_PLATFORM_NAME} bytes)"
        ),
        Value::Integer {
            min,
            max,
            unit,
            note,
        } => {
            let range = match (min, max) {
                (1, None) => "a positive integer".to_owned(),
                (min, None) => format!("an integer from {min}"),
                (min, Some(max)) => format!("an integer from {min} to {max}"),
            };
            let unit = unit.map_or(String::new(), |u| format!(" ({u})"));
            let note = note.map_or(String::new(), |n| format!(", {n}"));
            format!("{range}{unit}{note}")
        }
        Value::Words(table) => words(table),
        Value::Bool => "true or false".into(),
        Value::Size { min: 0 } => SIZE.into(),
        Value::Size { min: 1 } => format!("{SIZE}, at least 1 byte"),
        Value::Size { min } => format!("{SIZE}, at least {}", format_size(min)),
        Value::SizeOrPercent => format!("{SIZE}, or a percentage of RAM like \"50%\""),
        Value::Seconds => format!("a number of seconds above 0, at most {MAX_SECONDS} (a week)"),
        Value::Count => "a positive integer or \"until-failure\"".into(),
        Value::Placement => {
            "\"round-robin\" or the index of one selected device (an integer from 0)".into()
        }
        Value::Indices => "a list of device indices (integers from 0), each once".into(),
        Value::Partition => {
            "\"equally\" or a list of compute-unit counts (positive integers) like [1, 1]".into()
        }
        Value::Flags(table) => format!(
            "a list of memory flags, each {} (CL_MEM_ prefix optional)",
            words(table)
        ),
        Value::Env => "a table of variables, each a string".into(),
    })
}

/// A grid value as a run's name shows it: strings without quotes, unless they hold
/// what separates a name's parts (`,` `=` `[` `]` `"`) or spaces at an end, so that
/// two grid points never read as one name.
pub(crate) fn label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s)
            if !s.is_empty() && s.trim() == s && !s.contains([',', '=', '[', ']', '"']) =>
        {
            s.clone()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys serde reads for the struct `T`, as the file spells them.
    fn fields_of<T: for<'de> serde::Deserialize<'de>>() -> &'static [&'static str] {
        use serde::de::{self, Deserializer, Visitor};
        /// A deserializer that only notes the field list serde's derive hands it.
        struct Fields<'a>(&'a mut &'static [&'static str]);
        impl<'de> Deserializer<'de> for Fields<'_> {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(de::Error::custom("only structs name their fields"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                *self.0 = fields;
                Err(de::Error::custom("fields noted"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
                enum identifier ignored_any
            }
        }
        let mut fields: &'static [&'static str] = &[];
        let _ = T::deserialize(Fields(&mut fields));
        fields
    }

    /// The raw types read exactly the keys of the table, so neither can drift.
    #[test]
    fn the_raw_types_read_the_keys_of_the_table() {
        use crate::raw::*;
        let raw = [
            ("devices", fields_of::<RawDevices>()),
            ("context", fields_of::<RawContext>()),
            ("allocation", fields_of::<RawAllocation>()),
            ("limits", fields_of::<RawLimits>()),
            ("guards", fields_of::<RawGuards>()),
            ("sampling", fields_of::<RawSampling>()),
            ("axpy", fields_of::<RawAxpy>()),
        ];
        for (table, fields) in raw {
            assert_eq!(table_keys(table).unwrap(), fields, "[{table}]");
        }
        let top: Vec<&str> = fields_of::<RawScenario>()
            .iter()
            .copied()
            .filter(|k| !is_table(k))
            .collect();
        assert_eq!(top_level_values().collect::<Vec<_>>(), top);
        let tables: Vec<&str> = fields_of::<RawScenario>()
            .iter()
            .copied()
            .filter(|k| is_table(k))
            .collect();
        assert_eq!(TABLES.iter().map(|(t, _)| *t).collect::<Vec<_>>(), tables);
    }

    #[test]
    fn every_key_has_words_for_what_it_takes() {
        let keys = all_keys();
        assert!(keys.len() >= 30, "{keys:?}");
        for key in &keys {
            assert!(takes(key).is_some_and(|t| !t.is_empty()), "{key}");
        }
        assert!(keys.contains(&"devices.type".to_owned()), "{keys:?}");
        assert!(keys.contains(&"limits.as".to_owned()), "{keys:?}");
        assert_eq!(takes("nope"), None);
    }

    #[test]
    fn a_grid_key_names_a_key_a_run_can_vary() {
        for key in ["name", "allocation.size", "env.ANYTHING", "devices.type"] {
            assert_eq!(not_a_grid_key(key), None, "{key}");
        }
        assert_eq!(
            not_a_grid_key("allocation.nope").as_deref(),
            Some("[allocation] has no key `nope`; its keys are size, count, flags, placement, keep, strategy, pool_size, release_every, pause_us, release_pause_us")
        );
        assert!(not_a_grid_key("context").unwrap().contains("is a table"));
        let unknown = not_a_grid_key("nope.size").unwrap();
        assert_eq!(unknown, "`nope.size` is not a scenario key; a grid varies name, description, devices.{platform, type, count, indices, fallback, partition}, context.{mode, count}, allocation.{size, count, flags, placement, keep, strategy, pool_size, release_every, pause_us, release_pause_us}, env.<NAME>, limits.{nofile, as, memlock, nproc, data}, guards.{max_total, max_rss, max_seconds}, sampling.{every, maps}, axpy.{check, samples, split}");
    }
}
