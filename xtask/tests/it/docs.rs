//! The generated documentation is current, and every shipped scenario follows the
//! JSON Schema editors use to complete and check keys.

use crate::common;
#[path = "../../../crates/scenario/tests/cases/editing.rs"]
mod editing;
#[path = "../../../crates/scenario/tests/cases/malformed.rs"]
mod malformed;

use malformed::{ForSchema, CASES};
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

/// Files `clmulti check` accepts, written the ways people write them: the schema
/// accepts them too (it never refuses a file a run takes).
const VALID: &[&str] = &[
    "[allocation]\nsize = \"1.5 GiB\"\ncount = \"until-failure\"\n",
    "[allocation]\nsize = \"0.5KiB\"\npool_size = \"1_000_000\"\nstrategy = \"pool\"\n",
    "[allocation]\nsize = \"64KB\"\nflags = [\"CL_MEM_READ_ONLY\", \"ALLOC_HOST_PTR\"]\n",
    "[allocation]\nsize = \"1.250 KB\"\nplacement = 1\n[devices]\ncount = 2\n",
    "[allocation]\nsize = 4096\nplacement = 2\n[devices]\nindices = [0, 4, 7]\n",
    "[allocation]\nsize = \" 2gb \"\nkeep = false\n",
    "[allocation]\nstrategy = \"pin\"\nplacement = \"round-robin\"\n[devices]\ncount = 2\n",
    "[allocation]\nrelease_every = 100\nstrategy = \"fill\"\n",
    "[guards]\nmax_rss = \"12.5%\"\nmax_seconds = 0.5\nmax_total = \"1TiB\"\n",
    "[guards]\nmax_rss = \"100%\"\n",
    "[guards]\nmax_rss = 8589934592\n",
    "[limits]\nnofile = 64\nas = \"3GB\"\nmemlock = 0\ndata = \"512 MiB\"\n",
    "[limits]\nas = \"64MiB\"\n",
    "[devices]\nplatform = \"NVIDIA\"\ntype = \"all\"\npartition = [1, 1]\nfallback = \"none\"\n",
    "[devices]\nplatform = 1\npartition = \"equally\"\n",
    "[context]\nmode = \"shared\"\ncount = 2\n",
    "[axpy]\ncheck = \"sample\"\nsamples = 3\nsplit = true\n",
    "[env]\nOPENCL_LAYERS = \"{clmulti-layer}\"\nCLMULTI_LAYER_POLICY = \"fail-after, fd-per-peer\"\nCLMULTI_LAYER_FAIL_AFTER = \"40\"\nCLMULTI_LAYER_MIRROR_LIMIT = \"25%\"\nCLMULTI_LAYER_FAIL_ERROR = \"-5\"\nCLMULTI_LAYER_FAIL_SCOPE = \"context\"\n",
    "[env]\nCreateMultipleRootDevices = \"{devices.count}\"\nPOCL_DEVICES = \"pthread pthread\"\n",
    "name = \"x\"\n[allocation]\nkeep = false\n[grid]\n\"allocation.keep\" = [true]\n\"allocation.strategy\" = [\"pool\", \"create\"]\n\"env.X\" = [\"a\", \"b\"]\n\"name\" = [\"p\"]\n",
    "[allocation]\npool_size = \"1GiB\"\n[grid]\n\"allocation.strategy\" = [\"pool\"]\n",
    "[axpy]\nsamples = 4\n[grid]\n\"axpy.check\" = [\"sample\"]\n\"devices.count\" = [1, 2]\n",
    "[allocation]\nsize = \"2PB\"\n[guards]\nmax_total = \"15EiB\"\n[limits]\ndata = \"1.5 PiB\"\n",
    "[guards]\nmax_total = \"18446744073709551615\"\n[limits]\nas = \"18EB\"\n",
    "[sampling]\nmaps = \"every-sample\"\n[grid]\n\"env.A\" = [\"1,env.B=2\", \"1\"]\n",
    // Words in any case, as documented; flags with CL_MEM_ in any case.
    "[devices]\ntype = \"GPU\"\nfallback = \"Any-Type\"\npartition = \"EQUALLY\"\n[context]\nmode = \"Shared\"\n",
    "[allocation]\nflags = [\"read_write\", \"cl_mem_alloc_host_ptr\"]\nstrategy = \"FILL\"\ncount = \"UNTIL-FAILURE\"\nplacement = \"Round-Robin\"\n",
    "[allocation]\nflags = [\" CL_MEM_Read_Only \"]\n[axpy]\ncheck = \"Sample\"\nsamples = 2\n[sampling]\nmaps = \"EVERY-SAMPLE\"\n",
    "[env]\nPOCL_DEVICE = \"pthread pthread\"\nMY_OWN = \"x\"\nLD_PRELOAD = \"libm.so.6\"\n",
    "[allocation]\ncount = 100\nrelease_every = 99\n",
    "[limits]\nnofile = 3\n",
];

/// Each editing mistake of the corpus, as check and the schema see it: the schema
/// refuses every file check refuses and accepts every file check only warns about,
/// except where JSON Schema cannot state the rule (said, with why); no message of
/// the schema is a pattern.
#[test]
fn check_and_the_schema_agree_on_every_editing_mistake() {
    use editing::{Says, Schema, MISTAKES};
    let validator = validator();
    let mut disagree = Vec::new();
    let mut decided = 0;
    for m in MISTAKES {
        let check_refuses =
            !clmulti_scenario::ScenarioFile::problems_in_text(m.text, "case.toml").is_empty();
        assert_eq!(check_refuses, m.says == Says::Error, "{}: check", m.what);
        let messages: Vec<String> = validator
            .iter_errors(&as_json(m.text))
            .map(|e| e.to_string())
            .collect();
        for message in &messages {
            assert!(
                !message.contains("does not match") && message.len() < 400,
                "{}: a pattern or a dump: {message}",
                m.what
            );
        }
        let schema_refuses = !messages.is_empty();
        match m.schema {
            Schema::Cannot(why) => assert!(!why.is_empty()),
            Schema::Refuses | Schema::Accepts => {
                decided += 1;
                if schema_refuses != check_refuses {
                    disagree.push(format!(
                        "{}: check {check_refuses}, schema {schema_refuses} {messages:?}",
                        m.what
                    ));
                }
            }
        }
    }
    assert!(
        disagree.is_empty(),
        "{} of {decided}:\n{}",
        disagree.len(),
        disagree.join("\n")
    );
    assert!(decided >= 60, "{decided}");
}

/// The schema and the parser agree on where each unit's sizes stop fitting in 64
/// bits: the largest whole number of each unit that fits, and the next.
#[test]
fn the_schema_refuses_exactly_the_sizes_too_large_for_64_bits() {
    let validator = validator();
    for (unit, bytes, _) in clmulti_scenario::SIZE_UNITS {
        let most = u64::MAX / bytes;
        let most = most as u128;
        for (whole, fits) in [(most, true), (most + 1, false), (most * 10, false)] {
            let text = format!("[guards]\nmax_total = \"{whole}{unit}\"\n");
            assert_eq!(
                clmulti_scenario::load_str(&text, "size.toml").is_ok(),
                fits,
                "{whole}{unit}: clmulti"
            );
            assert_eq!(
                validator.is_valid(&as_json(&text)),
                fits,
                "{whole}{unit}: schema"
            );
        }
    }
}

/// The schema editors use refuses every malformed file of the shared corpus that
/// does not depend on the machine; `clmulti check` refuses all of them; both accept
/// the valid ones. The corpus also holds what a schema cannot say, with why.
#[test]
fn the_schema_refuses_every_mistake_that_does_not_depend_on_the_machine() {
    let validator = validator();
    let mut refused = 0;
    for case in CASES {
        assert!(
            clmulti_scenario::load_str(case.text, "case.toml").is_err(),
            "{}: clmulti accepts it",
            case.what
        );
        match case.schema {
            ForSchema::Refuses => {
                let json = as_json(case.text);
                assert!(
                    !validator.is_valid(&json),
                    "{}: the schema accepts {:?}",
                    case.what,
                    case.text
                );
                refused += 1;
            }
            ForSchema::Machine(why) | ForSchema::Cannot(why) => assert!(!why.is_empty()),
        }
    }
    assert!(refused >= 20, "{refused} files");
    // The project's libraries stand for themselves: what matters is that they exist.
    let libraries =
        crate::common::temp_root().join(format!("clmulti-docs-libs-{}", std::process::id()));
    std::fs::create_dir_all(&libraries).unwrap();
    for library in clmulti_contract::PROJECT_LIBRARIES {
        std::fs::write(libraries.join(library.file_name), "").unwrap();
    }
    for text in VALID {
        let checked = clmulti_scenario::ScenarioFile::parse(text, "valid.toml")
            .map(|f| f.with_libraries(libraries.clone()))
            .and_then(|f| f.check());
        assert!(checked.is_ok(), "{text}: {checked:?}");
        let errors: Vec<String> = validator
            .iter_errors(&as_json(text))
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{text}: {errors:?}");
    }
}

/// Every key a scenario can have is described, in the schema and in every grid entry.
#[test]
fn every_key_and_value_of_the_schema_is_described() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("configs/scenario.schema.json")).unwrap(),
    )
    .unwrap();
    let mut keys = 0;
    for (table, value) in schema["properties"].as_object().unwrap() {
        let described = |v: &serde_json::Value, key: &str| {
            let d = v["description"].as_str().unwrap_or("");
            assert!(d.len() > 10, "{key}: {d:?}");
        };
        described(value, table);
        if let Some(fields) = value["properties"].as_object() {
            for (field, v) in fields {
                let key = format!("{table}.{field}");
                described(v, &key);
                keys += 1;
                // What taplo 0.9 cannot complete: a key whose schema is a union
                // (listed once per branch, without its text), or that holds an
                // `allOf` (its key completion recursed until its stack ran out).
                for union in ["anyOf", "oneOf", "allOf"] {
                    assert!(v.get(union).is_none(), "{key}: {union}");
                }
                assert!(
                    !v.to_string().contains("\"null\""),
                    "{key}: TOML has no null"
                );
                // Each word a key takes says what it means.
                if let Some(values) = v["enum"].as_array() {
                    let docs = v["x-taplo"]["docs"]["enumValues"].as_array().unwrap();
                    assert_eq!(docs.len(), values.len(), "{key}");
                }
            }
        }
    }
    assert!(keys >= 40, "{keys} keys");
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

/// The field tables of docs/json.md: per section heading, each row's paths and
/// whether the row says the field may be absent (*Only* ...).
fn documented_fields() -> Vec<(String, Vec<(String, bool)>)> {
    let text = std::fs::read_to_string(root().join("docs/json.md")).unwrap();
    let mut sections: Vec<(String, Vec<(String, bool)>)> = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            sections.push((heading.to_owned(), Vec::new()));
            continue;
        }
        let Some(row) = line.strip_prefix("| `") else {
            continue;
        };
        let Some((first, meaning)) = row.split_once(" | ") else {
            continue;
        };
        let optional = meaning.trim_start().starts_with("*Only*");
        let paths: Vec<(String, bool)> = format!("`{first}")
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|p| (p.to_owned(), optional))
            .collect();
        if let Some(section) = sections.last_mut() {
            section.1.extend(paths);
        }
    }
    sections
}

/// Whether `path` (`a.b`, `a[].b`) is in `value`; a list's fields are looked up in
/// its first element, and an empty list has them all.
fn has_path(value: &serde_json::Value, path: &str) -> bool {
    let mut current = vec![value];
    for part in path.split('.') {
        let (name, list) = match part.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (part, false),
        };
        let mut next = Vec::new();
        for v in current {
            let Some(field) = v.as_object().and_then(|o| o.get(name)) else {
                return false;
            };
            if list {
                match field.as_array() {
                    Some(items) if items.is_empty() => return true,
                    Some(items) => next.push(&items[0]),
                    None => return false,
                }
            } else {
                next.push(field);
            }
        }
        current = next;
    }
    true
}

/// docs/json.md against what each command prints: every field a table lists is in
/// the output (unless the row says *Only* ...), and every field of the output's top
/// level is in its table.
#[test]
fn the_json_documentation_matches_every_commands_output() {
    let dir = common::temp_dir("json-docs");
    std::fs::write(
        dir.join("grid.toml"),
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"64KiB\"\ncount = 200\n[sampling]\nevery = 50\n[grid]\n\"devices.count\" = [2]\n",
    )
    .unwrap();
    let clmulti = |args: &[&str]| -> String {
        let out = Command::new(common::clmulti_bin())
            .args(args)
            .env("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd")
            .env("POCL_DEVICES", "pthread pthread")
            .env("POCL_MEMORY_LIMIT", "2")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let json = |text: &str| -> serde_json::Value { serde_json::from_str(text).unwrap() };
    let grid = dir.join("grid.toml");
    let grid = grid.to_str().unwrap();
    let sweep_out = dir.join("sweep");
    let out = common::xtask_bare()
        .args(["sweep", grid, "--out", sweep_out.to_str().unwrap(), "--bin"])
        .arg(common::clmulti_bin())
        .env("POCL_DEVICES", "pthread pthread")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let outputs: Vec<(&str, serde_json::Value)> = vec![
        (
            "`clmulti devices`",
            json(&clmulti(&["devices", "--format", "json"])),
        ),
        (
            "`clmulti check`",
            json(&clmulti(&["check", "--format", "json", grid])),
        ),
        (
            "`clmulti run`: the report",
            json(
                clmulti(&["run", "--format", "json", grid])
                    .lines()
                    .next()
                    .unwrap(),
            ),
        ),
        (
            "`clmulti axpy`",
            json(&clmulti(&[
                "axpy", "--n", "65536", "--repeat", "2", "--format", "json", "-q",
            ])),
        ),
        (
            "`clmulti bench`",
            json(&clmulti(&[
                "bench",
                "--count",
                "2000",
                "--size",
                "4KiB",
                "--rounds",
                "6",
                "--min-seconds",
                "0.01",
                "--format",
                "json",
                "-q",
            ])),
        ),
        (
            "`clmulti diagnose`",
            json(&clmulti(&[
                "diagnose",
                "--count",
                "300",
                "--size",
                "64KiB",
                "--no-experiments",
                "--format",
                "json",
                "-q",
            ])),
        ),
        (
            "Sweep records (`results.jsonl`)",
            json(
                // The first record: scenario base lines come before the records.
                std::fs::read_to_string(sweep_out.join("results.jsonl"))
                    .unwrap()
                    .lines()
                    .find(|l| json(l).get("key").is_some())
                    .unwrap(),
            ),
        ),
        (
            "Sweep plans (`plan.json`)",
            json(&std::fs::read_to_string(sweep_out.join("plan.json")).unwrap()),
        ),
        (
            "`clmulti run --list`",
            json(
                clmulti(&["run", "--list", "--format", "json", grid])
                    .lines()
                    .next()
                    .unwrap(),
            ),
        ),
    ];
    let sections = documented_fields();
    for (heading, output) in &outputs {
        let fields = &sections
            .iter()
            .find(|(h, _)| h == heading)
            .unwrap_or_else(|| panic!("docs/json.md has no section {heading}"))
            .1;
        assert!(!fields.is_empty(), "{heading}: no field table");
        for (path, optional) in fields {
            assert!(
                *optional || has_path(output, path),
                "{heading}: docs/json.md lists `{path}`, the output has none: {output:.400}"
            );
        }
        for key in output.as_object().unwrap().keys() {
            assert!(
                fields
                    .iter()
                    .any(|(p, _)| { p.split(['.', '[']).next() == Some(key.as_str()) }),
                "{heading}: the output has `{key}`, docs/json.md does not say what it is"
            );
        }
    }
    // The shapes the issue found wrong: no Rust enum wrapper, typed grid values.
    let axpy = &outputs[3].1["cross_device"];
    assert!(axpy["max_error_ulps"].is_number(), "{axpy}");
    let report = &outputs[2].1;
    assert_eq!(report["scenario"]["grid_point"]["devices.count"], 2);
    assert!(report["host_limits"]["page_size_bytes"].as_u64().unwrap() >= 4096);
}

/// The man pages have what a reader looks for, say nothing literal in backticks,
/// cite only pages that exist, and their examples parse; neither they nor the
/// completions offer clmulti's internal flags.
#[test]
fn man_pages_and_completions_are_complete_and_hide_internal_flags() {
    let man = root().join("docs/man");
    let mut pages = 0;
    for entry in std::fs::read_dir(&man).unwrap() {
        let path = entry.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        pages += 1;
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH OPTIONS",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH EXAMPLES",
            ".SH \"SEE ALSO\"",
        ] {
            assert!(page.contains(section), "{name}: no {section}");
        }
        assert!(!page.contains('`'), "{name}: a literal backtick");
        assert!(
            !page.contains("help(1)"),
            "{name}: cites a page that does not exist"
        );
        for cited in page.split("\\fB").skip(1) {
            if let Some(cited) = cited.split_once("\\fR(1)").map(|c| c.0) {
                let file = man.join(format!("{}.1", cited.replace("\\-", "-")));
                assert!(file.exists(), "{name} cites {}", file.display());
            }
        }
        for hidden in ["child", "resolved", "arm"] {
            assert!(
                !page.contains(&format!("\\-\\-{hidden}")),
                "{name}: --{hidden}"
            );
        }
        // A value is named in the synopsis: `--format FORMAT`, never a bare `--format`.
        let synopsis = page
            .split(".SH SYNOPSIS")
            .nth(1)
            .unwrap()
            .lines()
            .nth(1)
            .unwrap();
        assert!(
            !synopsis.contains("format\\fR]") && !synopsis.contains("device\\fR]"),
            "{name}: {synopsis}"
        );
        let mut examples = 0;
        for block in page.split(".nf\n").skip(1) {
            for line in block.split("\n.fi").next().unwrap().lines() {
                let line = line.replace("\\-", "-");
                let command = line.split('|').next().unwrap();
                let words: Vec<&str> = command.split_whitespace().collect();
                clmulti::command()
                    .try_get_matches_from(&words)
                    .unwrap_or_else(|e| panic!("{name}: example `{line}`: {e}"));
                examples += 1;
            }
        }
        assert!(examples >= 1, "{name}: no example");
    }
    assert_eq!(pages, 10, "clmulti and one page per command");
    for file in ["clmulti.bash", "_clmulti", "clmulti.fish"] {
        let text = std::fs::read_to_string(root().join("docs/completions").join(file)).unwrap();
        for hidden in [
            "--child",
            "--resolved",
            "--arm",
            "-l child",
            "-l resolved",
            "-l arm",
        ] {
            assert!(!text.contains(hidden), "{file}: {hidden}");
        }
        assert!(
            text.contains("verbose") && text.contains("format"),
            "{file}"
        );
    }
}
