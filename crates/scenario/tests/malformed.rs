//! Malformed scenarios: each gets one precise message with file, line, column and key.

use clmulti_scenario::load_str;

/// (what, text, line, key, message fragment)
const CASES: &[(&str, &str, usize, &str, &str)] = &[
    (
        "toml syntax",
        "name = \"x\"\n[allocation\nsize = 1\n",
        2,
        "",
        "expected",
    ),
    (
        "unknown top-level key",
        "name = \"x\"\nsizee = 3\n",
        2,
        "sizee",
        "unknown field `sizee`",
    ),
    (
        "unknown nested key",
        "[allocation]\nsize = \"1MiB\"\ncuont = 3\n",
        3,
        "allocation.cuont",
        "unknown field `cuont`",
    ),
    (
        "unknown table",
        "[allocaton]\nsize = 1\n",
        1,
        "allocaton",
        "unknown field `allocaton`",
    ),
    (
        "bad unit",
        "[allocation]\nsize = \"1MB/s\"\n",
        2,
        "allocation.size",
        "unknown unit",
    ),
    (
        "size not a number",
        "[allocation]\nsize = \"lots\"\n",
        2,
        "allocation.size",
        "not a number",
    ),
    (
        "size wrong type",
        "[allocation]\nsize = true\n",
        2,
        "allocation.size",
        "expected a size",
    ),
    (
        "zero size",
        "[allocation]\nsize = 0\n",
        2,
        "allocation.size",
        "at least 1 byte",
    ),
    (
        "fractional bytes",
        "[allocation]\nsize = \"0.5B\"\n",
        2,
        "allocation.size",
        "whole number of bytes",
    ),
    (
        "size overflow",
        "[allocation]\nsize = \"99999999999TiB\"\n",
        2,
        "allocation.size",
        "too large",
    ),
    (
        "negative count",
        "[allocation]\ncount = -5\n",
        2,
        "allocation.count",
        "positive integer",
    ),
    (
        "count word",
        "[allocation]\ncount = \"forever\"\n",
        2,
        "allocation.count",
        "until-failure",
    ),
    (
        "unknown strategy",
        "[allocation]\nstrategy = \"teleport\"\n",
        2,
        "allocation.strategy",
        "create, fill, migrate, pin, pool",
    ),
    (
        "unknown flag",
        "[allocation]\nflags = [\"READ_WRITE\", \"DEVICE_LOCAL\"]\n",
        2,
        "allocation.flags[1]",
        "unknown value \"DEVICE_LOCAL\"",
    ),
    (
        "conflicting access flags",
        "[allocation]\nflags = [\"READ_ONLY\", \"WRITE_ONLY\"]\n",
        2,
        "allocation.flags",
        "exclude each other",
    ),
    (
        "use and copy host ptr",
        "[allocation]\nflags = [\"USE_HOST_PTR\", \"COPY_HOST_PTR\"]\n",
        2,
        "allocation.flags",
        "USE_HOST_PTR excludes",
    ),
    (
        "duplicate flag",
        "[allocation]\nflags = [\"READ_WRITE\", \"CL_MEM_READ_WRITE\"]\n",
        2,
        "allocation.flags[1]",
        "listed twice",
    ),
    (
        "pin to a device not selected",
        "[devices]\ncount = 2\n[allocation]\nstrategy = \"pin\"\nplacement = 2\n",
        5,
        "allocation.placement",
        "not among the 2 selected",
    ),
    (
        "pool smaller than buffer",
        "[allocation]\nsize = \"4MiB\"\nstrategy = \"pool\"\npool_size = \"1MiB\"\n",
        4,
        "allocation.pool_size",
        "cannot hold",
    ),
    (
        "pool_size without pool",
        "[allocation]\npool_size = \"1GiB\"\n",
        2,
        "allocation.pool_size",
        "only applies",
    ),
    (
        "pool with keep = false",
        "[allocation]\nstrategy = \"pool\"\nkeep = false\n",
        3,
        "allocation.keep",
        "contradicts",
    ),
    (
        "unknown context mode",
        "[context]\nmode = \"both\"\n",
        2,
        "context.mode",
        "shared, per-device",
    ),
    (
        "device count and indices",
        "[devices]\ncount = 2\nindices = [0, 1]\n",
        3,
        "devices.indices",
        "not both",
    ),
    (
        "duplicate device index",
        "[devices]\nindices = [0, 0]\n",
        2,
        "devices.indices[1]",
        "listed twice",
    ),
    (
        "bad device type",
        "[devices]\ntype = \"fpga\"\n",
        2,
        "devices.type",
        "gpu, cpu, accelerator, all",
    ),
    (
        "rss percentage too high",
        "[guards]\nmax_rss = \"150%\"\n",
        2,
        "guards.max_rss",
        "(0, 100]",
    ),
    (
        "negative seconds",
        "[guards]\nmax_seconds = -1\n",
        2,
        "guards.max_seconds",
        "must be > 0",
    ),
    (
        "zero sampling",
        "[sampling]\nevery = 0\n",
        2,
        "sampling.every",
        "positive integer",
    ),
    (
        "env value not a string",
        "[env]\nPOCL_DEBUG = 1\n",
        2,
        "env.POCL_DEBUG",
        "wrong type",
    ),
    (
        "tiny address-space limit",
        "[limits]\nas = \"1MiB\"\n",
        2,
        "limits.as",
        "64MiB",
    ),
    (
        "empty name",
        "name = \"  \"\n",
        1,
        "name",
        "must not be empty",
    ),
    (
        "grid not a list",
        "[grid]\n\"allocation.size\" = \"1MiB\"\n",
        2,
        "grid.allocation.size",
        "list of values",
    ),
    (
        "grid bad value points at grid",
        "[allocation]\nsize = \"1MiB\"\n[grid]\n\"allocation.size\" = [\"1MiB\", \"2 parsecs\"]\n",
        4,
        "allocation.size",
        "unknown unit",
    ),
    (
        "grid unknown key",
        "[grid]\n\"allocation.colour\" = [1, 2]\n",
        2,
        "allocation.colour",
        "unknown field `colour`",
    ),
    (
        "axpy samples without sample",
        "[axpy]\nsamples = 3\n",
        2,
        "axpy.samples",
        "only applies",
    ),
];

#[test]
fn every_malformed_scenario_gets_a_precise_message() {
    assert!(CASES.len() >= 20);
    for (what, text, line, key, fragment) in CASES {
        let err = match load_str(text, "case.toml") {
            Ok(runs) => panic!("{what}: accepted, gave {runs:?}"),
            Err(e) => e,
        };
        assert_eq!(err.file, "case.toml", "{what}");
        assert_eq!(err.line, Some(*line), "{what}: {err}");
        assert!(err.column.is_some_and(|c| c >= 1), "{what}: {err}");
        if !key.is_empty() {
            assert_eq!(err.key.as_deref(), Some(*key), "{what}: {err}");
        }
        assert!(err.message.contains(fragment), "{what}: {err}");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("case.toml:{line}:")),
            "{what}: {shown}"
        );
    }
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
