//! Raw OpenCL only in `crates/probe`: `cl3::` and `cl_sys::` paths, and opencl3's
//! re-exported free functions, nowhere else (the emulation layer aside: it is an
//! OpenCL implementation, not a caller).

use super::*;

/// The crates that may call OpenCL raw: probe, the one thin unsafe layer callers go
/// through, and the emulation layer, which is an OpenCL implementation (it answers
/// the ICD loader's calls), not a caller.
const RAW_OPENCL_CRATES: [&str; 2] = ["crates/probe", "crates/layer"];

/// Raw OpenCL calls outside [`RAW_OPENCL_CRATES`]: `cl3::` and `cl_sys::` paths, and
/// opencl3's re-exported free functions (`opencl3::memory::create_buffer(`); its safe
/// types (`opencl3::device::Device::new(`) are fine.
fn raw_opencl(files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if let Some(why) = raw_call(code) {
                found.push(format!(
                    "{}:{}: {why}: call through clmulti_probe::raw (the only crate with raw OpenCL)",
                    relative(file),
                    n + 1
                ));
            }
        }
    }
    found
}

/// What in `code` calls OpenCL raw, if anything.
fn raw_call(code: &str) -> Option<String> {
    // Inside a string literal (an odd number of quotes before it) is no call.
    let in_code = |at: usize| {
        let before = &code[..at];
        (before.matches('"').count() - before.matches("\\\"").count()) % 2 == 0
    };
    let crate_path = |name: &str| {
        code.match_indices(name).any(|(at, _)| {
            in_code(at)
                && !code[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    if let Some(name) = ["cl3::", "cl_sys::"].into_iter().find(|n| crate_path(n)) {
        return Some(format!("`{name}`"));
    }
    for (at, _) in code
        .match_indices("opencl3::")
        .filter(|(at, _)| in_code(*at))
    {
        let rest = &code[at..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let segments: Vec<&str> = rest[..end].split("::").collect();
        let called = rest[end..].trim_start().starts_with('(');
        if let ([_, _, function], true) = (segments.as_slice(), called) {
            if function.starts_with(|c: char| c.is_ascii_lowercase()) {
                return Some(format!("`{}`", &rest[..end]));
            }
        }
    }
    None
}

/// The source, examples and tests of every crate that may not call OpenCL raw.
fn opencl_callers() -> Vec<PathBuf> {
    crates()
        .iter()
        .filter(|(dir, _)| {
            !RAW_OPENCL_CRATES
                .iter()
                .any(|raw| dir.ends_with(Path::new(raw)))
        })
        .flat_map(|(dir, _)| {
            ["src", "examples", "tests"]
                .into_iter()
                .flat_map(|sub| rust_files(&dir.join(sub)))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn only_probe_calls_opencl_raw() {
    report("raw OpenCL", raw_opencl(&opencl_callers()));
}

/// The rule catches a raw call, and not a safe type's, a comment's or a string's.
#[test]
fn the_raw_opencl_rule_fails_on_what_it_forbids() {
    let dir = crate::common::temp_root().join(format!("clmulti-tidy-raw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let raw = dir.join("raw.rs");
    let fixture = [
        "let m = unsafe { opencl3::memory::create_buffer(c, f, s, p) };",
        "let _ = cl3::memory::release_mem_object(m);",
        "let d = opencl3::device::Device::new(id); // opencl3::memory::create_buffer(",
        "let t: opencl3::types::cl_mem = m;",
        "let said = \"cl3::memory::release_mem_object(m)\";",
    ];
    std::fs::write(&raw, fixture.join("\n")).unwrap();
    let found = raw_opencl(std::slice::from_ref(&raw));
    assert!(
        found.len() == 2 && found[0].contains("raw.rs:1: `opencl3::memory::create_buffer`"),
        "{found:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
