//! Which keys a scenario has and what each takes, in words: for the messages that
//! must say what is allowed (a value of the wrong type, an integer beyond TOML's, a
//! grid key that names nothing). The keys are asked of the raw types' serde
//! derives, so a key added there is known here; [`takes`] has words for every one
//! (a test holds it to that).

use crate::raw::*;
use crate::validate::{
    AXPY_CHECKS, CONTEXT_MODES, DEVICE_TYPES, FALLBACKS, MAPS_SAMPLINGS, MAX_CONTEXTS,
    MAX_DESCRIPTION_BYTES, MAX_DEVICE_LIST, MAX_NAME_BYTES, MAX_PLATFORM_NAME, MAX_SECONDS,
    MEM_FLAGS, STRATEGIES,
};
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The tables of a scenario, in documented order (`grid` last): a key among these
/// holds a table, not a value or a list.
pub(crate) const TABLES: [&str; 9] = [
    "devices",
    "context",
    "allocation",
    "env",
    "limits",
    "guards",
    "sampling",
    "axpy",
    "grid",
];

/// The keys serde reads for the struct `T`, as the file spells them.
fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
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

/// The keys of a table (`None` for `env`, whose keys are any variable name, and for
/// anything that is not a table).
pub(crate) fn table_keys(table: &str) -> Option<&'static [&'static str]> {
    Some(match table {
        "devices" => fields_of::<RawDevices>(),
        "context" => fields_of::<RawContext>(),
        "allocation" => fields_of::<RawAllocation>(),
        "limits" => fields_of::<RawLimits>(),
        "guards" => fields_of::<RawGuards>(),
        "sampling" => fields_of::<RawSampling>(),
        "axpy" => fields_of::<RawAxpy>(),
        _ => return None,
    })
}

/// The keys outside the tables (`name`, `description`).
fn top_level_values() -> impl Iterator<Item = &'static str> {
    fields_of::<RawScenario>()
        .iter()
        .copied()
        .filter(|k| !TABLES.contains(k))
}

/// Every key a value can be given at (`env.<NAME>` standing for the variables), in
/// documented order.
#[cfg(test)]
fn all_keys() -> Vec<String> {
    let mut keys: Vec<String> = top_level_values().map(str::to_owned).collect();
    for table in TABLES {
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
    for table in TABLES {
        match table_keys(table) {
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
        [table] if TABLES.contains(&table) => Some(format!(
            "[{table}] is a table; vary one of its keys (\"{table}.<key>\"), each its own axis"
        )),
        [value] if top_level_values().any(|k| k == value) => None,
        ["env", name] if !name.is_empty() => None,
        [table, field] => match table_keys(table) {
            Some(fields) if fields.contains(&field) => None,
            Some(fields) => Some(format!(
                "[{table}] has no key `{field}`; its keys are {}",
                fields.join(", ")
            )),
            None => Some(format!("`{key}` is not a scenario key; {}", keys())),
        },
        _ => Some(format!("`{key}` is not a scenario key; {}", keys())),
    }
}

fn words<T>(choices: &[(&str, T)]) -> String {
    let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    format!("one of {}", names.join(", "))
}

const SIZE: &str = "a size: an integer number of bytes or a string like \"1MiB\"";

/// What `key` takes, in words (`key` as in a problem: `allocation.size`,
/// `devices.indices[2]`, `env.POCL_DEVICES`); `None` for a key no scenario has.
pub(crate) fn takes(key: &str) -> Option<String> {
    // A list's item takes what its list does.
    let key = key.split('[').next().unwrap_or(key);
    Some(match key {
        "name" => format!("a string: one line of at most {MAX_NAME_BYTES} bytes"),
        "description" => format!("a string of at most {} KiB", MAX_DESCRIPTION_BYTES >> 10),
        "devices.platform" => format!(
            "\"auto\", a platform's index (an integer from 0), or a substring of its name or vendor (at most {MAX_PLATFORM_NAME} bytes)"
        ),
        "devices.type" => words(&DEVICE_TYPES),
        "devices.count" => format!("an integer from 1 to {MAX_DEVICE_LIST}"),
        "devices.indices" => "a list of device indices (integers from 0), each once".into(),
        "devices.fallback" => words(&FALLBACKS),
        "devices.partition" => {
            "\"equally\" or a list of compute-unit counts (positive integers) like [1, 1]".into()
        }
        "context.mode" => words(&CONTEXT_MODES),
        "sampling.maps" => words(&MAPS_SAMPLINGS),
        "context.count" => format!("an integer from 1 to {MAX_CONTEXTS}"),
        "allocation.size" | "allocation.pool_size" => format!("{SIZE}, at least 1 byte"),
        "allocation.count" => "a positive integer or \"until-failure\"".into(),
        "allocation.flags" => format!(
            "a list of memory flags, each {} (CL_MEM_ prefix optional)",
            words(&MEM_FLAGS)
        ),
        "allocation.placement" => "\"round-robin\" or the index of one selected device (an integer from 0)".into(),
        "allocation.keep" | "axpy.split" => "true or false".into(),
        "allocation.strategy" => words(&STRATEGIES),
        "allocation.release_every" | "sampling.every" | "axpy.samples" => "a positive integer".into(),
        "allocation.pause_us" => "microseconds, an integer from 0 to 1000000".into(),
        "limits.nofile" | "limits.nproc" => {
            "a positive integer, at most this machine's hard limit".into()
        }
        "limits.as" | "limits.data" => format!("{SIZE}, at least 64MiB"),
        "limits.memlock" | "guards.max_total" => SIZE.into(),
        "guards.max_rss" => format!("{SIZE}, or a percentage of RAM like \"50%\""),
        "guards.max_seconds" => format!("a number of seconds above 0, at most {MAX_SECONDS} (a week)"),
        "axpy.check" => {
            let names: Vec<String> = AXPY_CHECKS.iter().map(|n| format!("\"{n}\"")).collect();
            format!("one of {}", names.join(", "))
        }
        _ if key.starts_with("env.") => "a string: one line of printable text".into(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Some("[allocation] has no key `nope`; its keys are size, count, flags, placement, keep, strategy, pool_size, release_every, pause_us")
        );
        assert!(not_a_grid_key("context").unwrap().contains("is a table"));
        let unknown = not_a_grid_key("nope.size").unwrap();
        assert_eq!(unknown, "`nope.size` is not a scenario key; a grid varies name, description, devices.{platform, type, count, indices, fallback, partition}, context.{mode, count}, allocation.{size, count, flags, placement, keep, strategy, pool_size, release_every, pause_us}, env.<NAME>, limits.{nofile, as, memlock, nproc, data}, guards.{max_total, max_rss, max_seconds}, sampling.{every, maps}, axpy.{check, samples, split}");
    }
}
