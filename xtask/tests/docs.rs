//! The generated documentation is current, and every shipped scenario follows the
//! JSON Schema editors use to complete and check keys.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn shipped_scenarios() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![root().join("configs")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("configs/scenario.schema.json")).unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn as_json(text: &str) -> serde_json::Value {
    serde_json::to_value(toml::from_str::<toml::Value>(text).unwrap()).unwrap()
}

#[test]
fn generated_docs_are_current() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["docs", "--check"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn shipped_scenarios_follow_the_schema_and_point_to_it() {
    let validator = validator();
    let files = shipped_scenarios();
    assert!(files.len() >= 14, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&as_json(&text))
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
        let first = text.lines().next().unwrap();
        let target = first
            .strip_prefix("#:schema ")
            .unwrap_or_else(|| panic!("{}: no #:schema line", file.display()));
        assert!(
            file.parent().unwrap().join(target).exists(),
            "{}: {target}",
            file.display()
        );
    }
    // The schema refuses what clmulti refuses: an unknown key, a wrong type.
    assert!(!validator.is_valid(&as_json("[allocation]\ncuont = 3\n")));
    assert!(!validator.is_valid(&as_json("[allocation]\nkeep = \"yes\"\n")));
    assert!(validator.is_valid(&as_json(
        "[allocation]\nsize = \"1MiB\"\n[grid]\n\"allocation.count\" = [1, 2]\n"
    )));
}
