use super::*;

/// The TOML that writes `keys` at their defaults, each in its table.
fn written(keys: &[&Key]) -> String {
    let mut text = String::new();
    let mut current = "";
    for key in keys {
        let (table, field) = key.name.split_once('.').expect("a table's key");
        if table != current {
            text.push_str(&format!("[{table}]\n"));
            current = table;
        }
        text.push_str(&format!("{field} = {}\n", key.default.unwrap().to_toml()));
    }
    text
}

fn load(text: &str) -> crate::Scenario {
    let mut s = crate::load_str(text, "d.toml").unwrap_or_else(|e| panic!("{text}: {e}"));
    s.remove(0)
}

/// Every default written in the table is what validation falls back on: a file
/// that writes each default out is the same scenario as one that leaves all out
/// (and the schema offers editors these same values).
#[test]
fn written_defaults_are_the_defaults_validation_falls_back_on() {
    // axpy.samples applies with check = "sample" only: asked apart below.
    let defaults: Vec<&Key> = KEYS
        .iter()
        .filter(|k| k.default.is_some() && k.name != AXPY_SAMPLES.name)
        .collect();
    assert!(defaults.len() >= 15, "{}", defaults.len());
    assert_eq!(load(&written(&defaults)), load(""));
    assert_eq!(
        load(&format!(
            "[axpy]\ncheck = \"sample\"\nsamples = {}\n",
            AXPY_SAMPLES.default.unwrap().to_toml()
        )),
        load("[axpy]\ncheck = \"sample\"\n")
    );
}

#[test]
fn every_default_reads_as_its_key_takes() {
    for key in KEYS.iter().filter(|k| k.default.is_some()) {
        let _: toml::Value = default(key);
    }
}

#[test]
fn every_key_is_named_once_and_reads_keys_of_the_table() {
    for (i, key) in KEYS.iter().enumerate() {
        assert!(
            KEYS[..i].iter().all(|k| k.name != key.name),
            "{} twice",
            key.name
        );
        for other in key.reads {
            assert!(
                find(other.name).is_some(),
                "{} reads {}",
                key.name,
                other.name
            );
        }
    }
}

/// Each word of `key`'s table, written in the file in two cases, is the value the
/// table gives it in the validated scenario (`read` picks the field); the key's
/// words (schema, description, messages) are the table's, in its order.
fn words_read_as_their_values<T: PartialEq + std::fmt::Debug + Copy>(
    key: &Key,
    table: &[Word<T>],
    read: impl Fn(&crate::Scenario) -> T,
) {
    let listed: Vec<&str> = key.words().unwrap().into_iter().map(|(w, _)| w).collect();
    let words: Vec<&str> = table.iter().map(|(w, _, _)| *w).collect();
    assert_eq!(listed, words, "{}", key.name);
    let description = key.description();
    assert!(
        description.ends_with(&format!("{}.", words[words.len() - 1])),
        "{description}"
    );
    let (section, field) = key.name.split_once('.').unwrap();
    for (word, _, value) in table {
        for written in [word.to_string(), word.to_ascii_uppercase()] {
            // A sample check needs kept buffers of one context (the defaults).
            let text = format!("[{section}]\n{field} = \"{written}\"\n");
            assert_eq!(read(&load(&text)), *value, "{text}");
        }
        assert!(description.contains(word), "{description}");
    }
}

#[test]
fn every_word_of_a_key_is_its_tables_value() {
    words_read_as_their_values(&DEVICES_TYPE, &DEVICE_TYPES, |s| s.devices.device_type);
    words_read_as_their_values(&DEVICES_FALLBACK, &FALLBACKS, |s| {
        s.devices.fallback_to_any_type
    });
    words_read_as_their_values(&CONTEXT_MODE, &CONTEXT_MODES, |s| s.context_mode);
    words_read_as_their_values(&SAMPLING_MAPS, &MAPS_SAMPLINGS, |s| s.sample_maps);
    words_read_as_their_values(&AXPY_CHECK, &AXPY_CHECKS, |s| match s.axpy.check {
        crate::AxpyCheck::None => Check::None,
        crate::AxpyCheck::Sample(_) => Check::Sample,
        crate::AxpyCheck::All => Check::All,
    });
    // Pin and pool refuse some defaults of other keys; the strategy reads as itself.
    words_read_as_their_values(&ALLOCATION_STRATEGY, &STRATEGIES, |s| s.allocation.strategy);
    let flags: Vec<&str> = ALLOCATION_FLAGS
        .words()
        .unwrap()
        .into_iter()
        .map(|(w, _)| w)
        .collect();
    assert_eq!(flags, MEM_FLAGS.map(|(w, _, _)| w));
    for (word, _, flag) in MEM_FLAGS {
        let text = format!(
            "[allocation]\nflags = [\"cl_mem_{}\"]\n",
            word.to_lowercase()
        );
        assert_eq!(load(&text).allocation.flags, [flag], "{text}");
    }
}

/// The name serde writes for a unit variant: the report's name for it.
fn serde_name<T: serde::Serialize>(value: T) -> String {
    match toml::Value::try_from(value) {
        Ok(toml::Value::String(s)) => s,
        other => panic!("{other:?}"),
    }
}

/// The model's names for its values (in reports) are the words files write.
#[test]
fn the_models_names_are_the_words() {
    for (word, _, mode) in CONTEXT_MODES {
        assert_eq!((mode.name(), serde_name(mode).as_str()), (word, word));
    }
    for (word, _, strategy) in STRATEGIES {
        assert_eq!(
            (strategy.name(), serde_name(strategy).as_str()),
            (word, word)
        );
    }
    for (word, _, flag) in MEM_FLAGS {
        assert_eq!((flag.name(), serde_name(flag).as_str()), (word, word));
    }
    for (word, _, device_type) in DEVICE_TYPES {
        assert_eq!(serde_name(device_type), word);
    }
    for (word, _, maps) in MAPS_SAMPLINGS {
        assert_eq!(serde_name(maps), word);
    }
}

/// What an editor shows for a key of words: its doc, then its words, the default
/// marked.
#[test]
fn a_key_of_words_lists_them_after_its_doc() {
    assert_eq!(
        DEVICES_TYPE.description(),
        "Which type of devices: gpu (default) | cpu | accelerator | all."
    );
    assert_eq!(
        ALLOCATION_FLAGS.description(),
        "Memory flags of each buffer: READ_WRITE (default), READ_ONLY, WRITE_ONLY, ALLOC_HOST_PTR, USE_HOST_PTR, COPY_HOST_PTR."
    );
    assert_eq!(ALLOCATION_SIZE.description(), ALLOCATION_SIZE.doc);
    let words = CONTEXT_MODE.words().unwrap();
    assert_eq!(
        words[0],
        (
            "shared",
            "one context over all devices, the seed's failing case (default)".to_owned()
        )
    );
    assert_eq!(
        words[1],
        ("per-device", "one context per device".to_owned())
    );
}
