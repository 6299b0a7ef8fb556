//! Malformed scenarios: each gets one precise message with file, line, column and key.

#[path = "../cases/malformed.rs"]
mod cases;

use cases::CASES;
use clmulti_scenario::{
    load_str, ScenarioFile, MAX_ENV_ENTRY_BYTES, MAX_ENV_VARS, MAX_FILE_BYTES, MAX_RUNS,
};

#[test]
fn every_malformed_scenario_gets_a_precise_message() {
    assert!(CASES.len() >= 20);
    for case in CASES {
        let (what, text, line, key, fragment) =
            (case.what, case.text, &case.line, case.key, case.fragment);
        let err = match load_str(text, "case.toml") {
            Ok(runs) => panic!("{what}: accepted, gave {runs:?}"),
            Err(e) => e,
        };
        assert_eq!(err.file, "case.toml", "{what}");
        assert_eq!(err.line, Some(*line), "{what}: {err}");
        assert!(err.column.is_some_and(|c| c >= 1), "{what}: {err}");
        if !key.is_empty() {
            assert_eq!(err.key.as_deref(), Some(key), "{what}: {err}");
        }
        assert!(err.message.contains(fragment), "{what}: {err}");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("case.toml:{line}:")),
            "{what}: {shown}"
        );
    }
}

/// Each problem's line and key, as `check` lists them.
fn problems(text: &str) -> Vec<(usize, String)> {
    ScenarioFile::problems_in_text(text, "many.toml")
        .into_iter()
        .map(|e| (e.line.unwrap_or(0), e.key.unwrap_or_default()))
        .collect()
}

fn at(expected: &[(usize, &str)]) -> Vec<(usize, String)> {
    expected.iter().map(|(l, k)| (*l, k.to_string())).collect()
}

#[test]
fn every_problem_is_found_once_and_leaving_one_out_invents_none() {
    // A file with one mistake: that one, and nothing behind it.
    for case in CASES {
        let first = load_str(case.text, "case.toml").unwrap_err();
        assert_eq!(
            ScenarioFile::problems_in_text(case.text, "case.toml"),
            vec![first],
            "{}",
            case.what
        );
    }
    // Several mistakes, in base keys, a list's item and grid values: each once, in
    // file order; runs taking a bad grid value are passed over, the others checked.
    let text = "[devices]\ncount = 0\n[allocation]\nsize = \"1 parsec\"\ncuont = 3\n\
                flags = [\"READ_WRITE\", \"BOGUS\"]\n[sampling]\nevery = -1\n[grid]\n\
                \"allocation.count\" = [10, \"many\", 20, \"lots\"]\n\"context.mode\" = [\"shared\", \"sideways\"]\n";
    assert_eq!(
        problems(text),
        at(&[
            (2, "devices.count"),
            (4, "allocation.size"),
            (5, "allocation.cuont"),
            (6, "allocation.flags[1]"),
            (8, "sampling.every"),
            (10, "grid.\"allocation.count\"[1]"),
            (10, "grid.\"allocation.count\"[3]"),
            (11, "grid.\"context.mode\"[1]"),
        ])
    );
    assert!(problems("[allocation]\nsize = \"1MiB\"\n").is_empty());
    // A key whose default stands in for a bad one blames nothing that reads it: the
    // placement is not checked against the default device count, nor the pool size
    // against the default strategy or buffer size.
    for text in [
        "[devices]\ncount = \"two\"\n[allocation]\nplacement = 3\n",
        "[devices]\nindices = [0, \"one\", 7]\n[allocation]\nplacement = 2\n",
        "[allocation]\nstrategy = \"poool\"\npool_size = \"512MiB\"\n",
        "[allocation]\nsize = \"lots\"\npool_size = \"1KiB\"\nstrategy = \"pool\"\n",
    ] {
        assert_eq!(problems(text).len(), 1, "{text}: {:?}", problems(text));
    }
}

#[test]
fn a_grid_that_cannot_expand_hides_no_other_problem() {
    // An axis that is no scenario key, one that repeats, one that is not a list: each
    // is listed, and the rest of the file is still checked; a repeated bad value is
    // listed as bad too.
    let text = "colour = 1\n[allocation]\nsize = \"1MiZ\"\n[grid]\n\"allocation.bogus\" = [1, 2]\n\
                \"sampling.every\" = [0, 5]\n\"allocation.count\" = [\"x\", \"x\", \"y\"]\n\"context.mode\" = \"shared\"\n";
    assert_eq!(
        problems(text),
        at(&[
            (1, "colour"),
            (3, "allocation.size"),
            (5, "grid.\"allocation.bogus\""),
            (6, "grid.\"sampling.every\"[0]"),
            (7, "grid.\"allocation.count\"[0]"),
            (7, "grid.\"allocation.count\"[1]"),
            (7, "grid.\"allocation.count\"[2]"),
            (8, "grid.\"context.mode\""),
        ])
    );
    // A grid too large is one problem; the file's own keys are checked without it.
    let axis = |n: usize| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "[context]\ncount = 0\n[grid]\n\"allocation.count\" = [{}]\n\"sampling.every\" = [{}]\n",
        axis(400),
        axis(400)
    );
    let found = problems(&text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0], (2, "context.count".to_owned()));
    assert_eq!(found[1].1, "grid");
    // An axis of 20000 repeats: one pass over it, and the first 100 in the file.
    let text = format!(
        "[grid]\n\"sampling.every\" = [{}]\n",
        vec!["7"; 20000].join(", ")
    );
    let found = ScenarioFile::problems_in_text(&text, "repeats.toml");
    assert_eq!(found.len(), clmulti_scenario::MAX_PROBLEMS);
    assert_eq!(found[0].key.as_deref(), Some("grid.\"sampling.every\"[1]"));
    assert_eq!(
        found[99].key.as_deref(),
        Some("grid.\"sampling.every\"[100]")
    );
    // More than a screenful, all in file order.
    let many: String = (0..30).map(|i| format!("bad{i} = 1\n")).collect();
    let lines: Vec<usize> = problems(&many).into_iter().map(|(l, _)| l).collect();
    assert_eq!(lines, (1..=30).collect::<Vec<_>>());
}

#[test]
fn grid_values_holding_a_name_separator_are_quoted_so_names_stay_apart() {
    let text = "[grid]\n\"env.A\" = [\"1\", \"1,env.B=2\"]\n\"env.B\" = [\"2\", \"2,env.B=2\"]\n\"name\" = [\"x\", \" x\"]\n";
    let names: Vec<String> = load_str(text, "sep.toml")
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    let distinct: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(distinct.len(), 8, "{names:?}");
    assert!(
        names.contains(&"x[env.A=\"1,env.B=2\",env.B=2,name=x]".to_owned()),
        "{names:?}"
    );
}

#[test]
fn defaults_are_filled() {
    let runs = load_str("", "configs/empty.toml").unwrap();
    let s = &runs[0];
    assert_eq!(s.name, "empty");
    assert_eq!(s.allocation.size_bytes, 1 << 20);
    assert_eq!(
        s.allocation.flags,
        vec![clmulti_scenario::MemFlag::ReadWrite]
    );
    assert_eq!(s.context_mode, clmulti_scenario::ContextMode::Shared);
    assert!(s.devices.fallback_to_any_type);
    assert_eq!(
        s.guards.max_rss,
        clmulti_scenario::RssLimit::FractionOfRam(0.5)
    );
}

#[test]
fn grid_expands_every_combination_in_order() {
    let text = "name = \"g\"\n[grid]\n\"devices.count\" = [1, 2]\n\"allocation.strategy\" = [\"create\", \"fill\", \"pool\"]\n";
    let runs = load_str(text, "g.toml").unwrap();
    assert_eq!(runs.len(), 6);
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names[0], "g[allocation.strategy=create,devices.count=1]");
    assert!(names.iter().collect::<std::collections::HashSet<_>>().len() == 6);
    assert!(runs
        .iter()
        .any(|r| r.devices.set.len() == 2
            && r.allocation.strategy == clmulti_scenario::Strategy::Pool));
}

#[test]
fn a_huge_grid_is_refused_before_expanding() {
    // Nine axes of ten values: 10^9 runs, from a few hundred bytes.
    let mut text = String::from("[grid]\n");
    for key in [
        "allocation.count",
        "allocation.size",
        "sampling.every",
        "guards.max_seconds",
        "guards.max_total",
        "devices.count",
        "limits.nofile",
        "axpy.samples",
        "name",
    ] {
        let values: Vec<String> = (1..=10)
            .map(|v| {
                if key == "allocation.size" || key == "guards.max_total" || key == "name" {
                    format!("\"{v}KiB\"")
                } else {
                    v.to_string()
                }
            })
            .collect();
        text.push_str(&format!("\"{key}\" = [{}]\n", values.join(", ")));
    }
    let start = std::time::Instant::now();
    let err = ScenarioFile::parse(&text, "huge.toml").unwrap_err();
    // Refusing takes milliseconds; expanding 10^9 runs would take hours. The bound
    // allows a loaded machine.
    assert!(
        start.elapsed().as_secs_f64() < 10.0,
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(err.line, Some(1), "{err}");
    assert!(
        err.message
            .contains("10 x 10 x 10 x 10 x 10 x 10 x 10 x 10 x 10 runs"),
        "{err}"
    );
    assert!(
        err.message.contains(&format!("at most {MAX_RUNS}")),
        "{err}"
    );
}

#[test]
fn a_large_grid_expands_one_run_at_a_time() {
    let text = "[grid]\n\"allocation.count\" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n\"sampling.every\" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n\"guards.max_seconds\" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n\"devices.count\" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
    let file = ScenarioFile::parse(text, "big.toml").unwrap();
    assert_eq!(file.len(), 10_000);
    let last = file.run(9_999).unwrap();
    assert_eq!(last.devices.set.len(), 10);
    assert_eq!(last.sample_every, 10);
    assert!(file
        .run(10_000)
        .unwrap_err()
        .message
        .contains("out of range"));
}

#[test]
fn env_tables_are_bounded() {
    let mut text = String::from("[env]\n");
    for i in 0..=MAX_ENV_VARS {
        text.push_str(&format!("K{i} = \"v\"\n"));
    }
    let err = load_str(&text, "env.toml").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("env"), "{err}");
    assert!(
        err.message.contains(&format!("at most {MAX_ENV_VARS}")),
        "{err}"
    );
}

#[test]
fn an_env_entry_no_process_could_start_with_is_refused() {
    let value = "v".repeat(MAX_ENV_ENTRY_BYTES);
    let err = load_str(&format!("[env]\nBIG = \"{value}\"\n"), "big.toml").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("env.BIG"), "{}", err.message);
    assert!(
        err.message.contains("Linux starts no process"),
        "{}",
        err.message
    );
    let fits = "v".repeat(MAX_ENV_ENTRY_BYTES - 4);
    assert!(load_str(&format!("[env]\nBIG = \"{fits}\"\n"), "fits.toml").is_ok());
}

#[test]
fn a_huge_unknown_key_gives_a_short_message() {
    let key = "k".repeat(1 << 20);
    let err = load_str(&format!("{key} = 1\n"), "long.toml").unwrap_err();
    assert!(
        err.to_string().len() < 2000,
        "{} bytes",
        err.to_string().len()
    );
    assert!(err.to_string().contains("bytes)"), "{err}");
}

#[test]
fn files_that_are_not_scenarios_are_refused_with_their_reason() {
    let dir = std::env::temp_dir().join(format!("clmulti-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Not UTF-8: the byte's line and column.
    let latin1 = dir.join("latin1.toml");
    std::fs::write(&latin1, b"name = \"ok\"\ndescription = \"caf\xe9\"\n").unwrap();
    let err = ScenarioFile::load(&latin1).unwrap_err();
    assert_eq!((err.line, err.column), (Some(2), Some(19)), "{err}");
    assert!(err.message.contains("not UTF-8"), "{err}");
    // Too large.
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; (MAX_FILE_BYTES + 1) as usize]).unwrap();
    assert!(ScenarioFile::load(&big)
        .unwrap_err()
        .message
        .contains("larger than"));
    // A device that never ends and a FIFO that never writes: refused, not read.
    let zero = ScenarioFile::load(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(zero.message.contains("not a regular file"), "{zero}");
    let fifo = dir.join("fifo.toml");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = ScenarioFile::load(&fifo).unwrap_err();
    assert!(err.message.contains("not a regular file"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

#[test]
fn relative_paths_in_env_start_at_the_scenario_file() {
    let dir = std::env::temp_dir().join(format!("clmulti-rel-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("icd")).unwrap();
    std::fs::write(dir.join("icd/x.icd"), "/x.so\n").unwrap();
    let file = dir.join("s.toml");
    std::fs::write(&file, "[env]\nOCL_ICD_VENDORS = \"icd/x.icd\"\n").unwrap();
    let run = ScenarioFile::load(&file).unwrap().run(0).unwrap();
    assert_eq!(
        run.env["OCL_ICD_VENDORS"],
        dir.join("icd/x.icd").display().to_string()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_env_value_can_follow_the_device_count_of_each_run() {
    // NEO emulates as many devices as CreateMultipleRootDevices says: a grid over
    // devices.count must change it with the count, not multiply the runs.
    let file = ScenarioFile::parse(
        "[devices]\ncount = 1\n[env]\nCreateMultipleRootDevices = \"{devices.count}\"\n\
         [grid]\n\"devices.count\" = [1, 2, 8]\n\"context.mode\" = [\"shared\", \"per-device\"]\n",
        "neo.toml",
    )
    .unwrap();
    assert_eq!(file.len(), 6);
    let roots: Vec<(usize, String)> = file
        .runs()
        .map(|r| {
            let r = r.unwrap();
            (
                r.devices.set.len(),
                r.env["CreateMultipleRootDevices"].clone(),
            )
        })
        .collect();
    for (count, env) in &roots {
        assert_eq!(env, &count.to_string());
    }
    assert_eq!(
        roots.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        [1, 2, 8, 1, 2, 8]
    );
    let indices = load_str(
        "[devices]\nindices = [0, 3]\n[env]\nN = \"x{devices.count}x\"\n",
        "indices.toml",
    )
    .unwrap();
    assert_eq!(indices[0].env["N"], "x2x");
}

#[test]
fn hard_limits_are_checked_from_the_file() {
    let file = ScenarioFile::parse("[limits]\nnofile = 5000\n", "nofile.toml")
        .unwrap()
        .with_hard_limits([(clmulti_scenario::Rlimit::NoFile, 4096)].into());
    let err = file.run(0).unwrap_err();
    assert_eq!(
        (err.line, err.key.as_deref()),
        (Some(2), Some("limits.nofile")),
        "{err}"
    );
    assert!(
        err.message
            .contains("may set RLIMIT_NOFILE to (4096: its hard limit"),
        "{err}"
    );
}

/// An integer TOML cannot hold (beyond 64 bits) in any numeric key: the message
/// names the file, line and key, and what the key takes.
#[test]
fn an_integer_beyond_toml_names_its_key_and_what_it_takes() {
    let err = load_str("[allocation]\ncount = 99999999999999999999\n", "a.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "a.toml:2:9: key `allocation.count`: 99999999999999999999 is beyond TOML's integers \
         (-9223372036854775808 to 9223372036854775807); allocation.count takes a positive \
         integer or \"until-failure\""
    );
    let err = load_str("[sampling]\nevery = 18446744073709551616\n", "b.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "b.toml:2:9: key `sampling.every`: 18446744073709551616 is beyond TOML's integers \
         (-9223372036854775808 to 9223372036854775807); sampling.every takes a positive integer"
    );
    // Every key that takes a number, alone, in a list, in an inline table, negative
    // or in hex; and in the grid, where the key is the grid's entry.
    let numeric = [
        ("devices", "platform", "\"auto\", a platform's index"),
        ("devices", "count", "an integer from 1 to 4096"),
        ("devices", "indices[1]", "a list of device indices"),
        (
            "devices",
            "partition[1]",
            "\"equally\" or a list of compute-unit counts",
        ),
        ("context", "count", "an integer from 1 to 64"),
        ("allocation", "size", "a size: an integer number of bytes"),
        (
            "allocation",
            "count",
            "a positive integer or \"until-failure\"",
        ),
        ("allocation", "placement", "\"round-robin\" or the index"),
        ("allocation", "pool_size", "a size"),
        ("allocation", "release_every", "a positive integer"),
        (
            "allocation",
            "pause_us",
            "an integer from 0 to 1000000 (microseconds)",
        ),
        (
            "limits",
            "nofile",
            "an integer from 3, at most this machine's hard limit",
        ),
        (
            "limits",
            "as",
            "a size: an integer number of bytes or a string like \"1MiB\", at least 64MiB",
        ),
        ("limits", "memlock", "a size"),
        ("limits", "nproc", "a positive integer"),
        ("limits", "data", "a size"),
        ("guards", "max_total", "a size"),
        (
            "guards",
            "max_rss",
            "a size: an integer number of bytes or a string like \"1MiB\", or a percentage",
        ),
        ("guards", "max_seconds", "a number of seconds above 0"),
        ("sampling", "every", "a positive integer"),
        ("axpy", "samples", "a positive integer"),
    ];
    for (table, field, takes) in numeric {
        let (name, list) = match field.split_once('[') {
            Some((name, _)) => (name, true),
            None => (field, false),
        };
        for huge in [
            "99999999999999999999",
            "-9223372036854775809",
            "0x1_0000_0000_0000_0000",
        ] {
            let value = if list {
                format!("[1, {huge}]")
            } else {
                huge.to_owned()
            };
            let written = [
                format!("[{table}]\n{name} = {value}\n"),
                format!("\n{table} = {{ {name} = {value} }}\n"),
            ];
            for text in written {
                let err = load_str(&text, "n.toml").unwrap_err();
                let key = format!("{table}.{field}");
                assert_eq!(
                    (err.line, err.key.as_deref()),
                    (Some(2), Some(key.as_str())),
                    "{text}: {err}"
                );
                assert!(
                    err.message.starts_with(&format!(
                        "{huge} is beyond TOML's integers (-9223372036854775808 to 9223372036854775807); {table}.{name} takes {takes}"
                    )),
                    "{text}: {err}"
                );
            }
        }
        let value = if list {
            "[[1, 99999999999999999999]]"
        } else {
            "[1, 99999999999999999999]"
        };
        let text = format!("[grid]\n\"{table}.{name}\" = {value}\n");
        let err = load_str(&text, "g.toml").unwrap_err();
        let key = if list {
            format!("grid.\"{table}.{name}\"[0][1]")
        } else {
            format!("grid.\"{table}.{name}\"[1]")
        };
        assert_eq!(
            (err.line, err.key.as_deref()),
            (Some(2), Some(key.as_str())),
            "{text}: {err}"
        );
        assert!(
            err.message.ends_with(&format!(
                "; {table}.{name} takes {}",
                err.message.split(" takes ").nth(1).unwrap()
            )),
            "{err}"
        );
        assert!(err.message.contains(takes), "{text}: {err}");
    }
}

/// A bad key or value in `[grid]` names the grid entry as the file writes it, its
/// line, and what the grid or the key takes.
#[test]
fn grid_errors_name_the_grid_entry_as_written() {
    let cases = [
        (
            "[grid]\n\"allocation.nope\" = [1, 2]\n",
            "g.toml:2:1: key `grid.\"allocation.nope\"`: [allocation] has no key `nope`; its keys \
             are size, count, flags, placement, keep, strategy, pool_size, release_every, pause_us, \
             release_pause_us",
        ),
        (
            "[grid]\n\"allocation.count\" = [1, true]\n",
            "g.toml:2:26: key `grid.\"allocation.count\"[1]`: wrong type: found boolean `true`; \
             allocation.count takes a positive integer or \"until-failure\"",
        ),
        (
            "[grid]\n'allocation.flags' = [[\"READ_WRITE\", \"NOPE\"]]\n",
            "g.toml:2:38: key `grid.'allocation.flags'[0][1]`: unknown flag \"NOPE\"; expected one of: READ_WRITE, \
             READ_ONLY, WRITE_ONLY, ALLOC_HOST_PTR, USE_HOST_PTR, COPY_HOST_PTR (with or without CL_MEM_, upper or lower case)",
        ),
        (
            "[grid]\nallocation.count = [1, 2]\n",
            "g.toml:2:1: key `grid.allocation`: a grid axis must be a list of values; to vary \
             allocation.count, write its key in quotes: \"allocation.count\" = [...] (unquoted, \
             the dots make tables)",
        ),
        (
            "grid.\"nope\" = [1]\n",
            "g.toml:1:6: key `grid.\"nope\"`: `nope` is not a scenario key; a grid varies name, \
             description, devices.{platform, type, count, indices, fallback, partition}, \
             context.{mode, count}, allocation.{size, count, flags, placement, keep, strategy, \
             pool_size, release_every, pause_us, release_pause_us}, env.<NAME>, limits.{nofile, as, memlock, nproc, data}, \
             guards.{max_total, max_rss, max_seconds}, sampling.{every, maps}, axpy.{check, samples, split}",
        ),
        (
            "[grid]\n\"devices.count\" = [1]\n\"guards.max_seconds\" = [1, \"ten\"]\n",
            "g.toml:3:28: key `grid.\"guards.max_seconds\"[1]`: wrong type: found string `\"ten\"`; \
             guards.max_seconds takes a number of seconds above 0, at most 604800 (a week)",
        ),
    ];
    for (text, message) in cases {
        let err = load_str(text, "g.toml").unwrap_err();
        assert_eq!(err.to_string(), message, "{text}");
    }
}

#[test]
fn many_unknown_tables_are_found_in_one_pass_in_file_order() {
    // 100 000 unknown tables (889 KB): one pass over the file per unknown key took
    // 38 s; they are found together, the first ones in the file reported first.
    let mut text = String::from("[allocation]\ncount = 3\n");
    for i in 0..100_000 {
        text.push_str(&format!("[u{i}]\n"));
    }
    let start = std::time::Instant::now();
    let problems = ScenarioFile::problems_in_text(&text, "unknown.toml");
    assert!(
        start.elapsed().as_secs_f64() < 20.0,
        "took {:?}",
        start.elapsed()
    );
    let keys: Vec<&str> = problems.iter().filter_map(|p| p.key.as_deref()).collect();
    assert_eq!(keys.len(), clmulti_scenario::MAX_PROBLEMS, "{keys:?}");
    assert_eq!(&keys[..4], ["u0", "u1", "u2", "u3"]);
    assert_eq!(problems[0].line, Some(3));
    assert!(
        problems[3].message.contains("unknown field `u3`"),
        "{}",
        problems[3]
    );
}
