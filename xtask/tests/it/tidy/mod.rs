//! The house rules, checked on every `cargo test` (after rust-analyzer's
//! `xtask/src/tidy.rs`): no source or test file over [`MAX_FILE_LINES`] lines; no
//! function over [`MAX_FN_LINES`] lines without a reason (`// long: REASON: why`
//! right above it), none over [`MAX_FN_LINES_WITH_REASON`] even with one, and at most
//! [`MAX_LONG_NOTES`] such notes in the workspace; no import cycle between sibling
//! modules of a crate; every library crate has an example, and every example runs in
//! CI (`examples.rs`); the README's crate table names every crate; raw OpenCL calls
//! only in `crates/probe` (`raw_opencl.rs`). Each failure names the file and line.
//!
//! A long function is split into named steps unless it is one of [`LONG_REASONS`],
//! the only reasons a note may give, each followed by what the function is:
//! - `a flat table`: one arm, row or field per case, nothing to name between them;
//! - `a state machine`: states and transitions that read only together;
//! - `one unsafe sequence`: system calls whose order is the contract (fork to reap);
//! - `a hot loop`: a timed loop, where a call per step would be in the measurement.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

mod modules;
mod raw_opencl;

use modules::module_cycles;

/// The most lines a source file may have.
pub const MAX_FILE_LINES: usize = 600;
/// The most lines a function may have without a reason.
pub const MAX_FN_LINES: usize = 80;
/// The most lines a function may have with a reason.
pub const MAX_FN_LINES_WITH_REASON: usize = 150;
/// The most `// long:` notes the workspace may hold.
pub const MAX_LONG_NOTES: usize = 12;
/// What marks a function's reason for being long, on a line right above it.
pub const LONG_REASON: &str = "// long: ";
/// What makes a long function indivisible: a note starts with one of these, then
/// `: ` and what the function is.
pub const LONG_REASONS: [&str; 4] = [
    "a flat table",
    "a state machine",
    "one unsafe sequence",
    "a hot loop",
];

/// Whether a note (a line's text, trimmed) names a known reason and says more.
fn known_reason(note: &str) -> bool {
    note.strip_prefix(LONG_REASON).is_some_and(|rest| {
        LONG_REASONS.iter().any(|reason| {
            rest.strip_prefix(reason)
                .and_then(|r| r.strip_prefix(": "))
                .is_some_and(|what| what.len() >= 10)
        })
    })
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every crate of the workspace: (its folder, its package name).
fn crates() -> Vec<(PathBuf, String)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").exists())
        .collect();
    dirs.push(root().join("xtask"));
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let manifest: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml"))
                .unwrap()
                .parse()
                .unwrap();
            let name = manifest["package"]["name"].as_str().unwrap().to_owned();
            (dir, name)
        })
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn parse(path: &Path) -> (String, syn::File) {
    let text = std::fs::read_to_string(path).unwrap();
    let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", relative(path)));
    (text, file)
}

/// The rules' findings over the workspace's source, each `path:line: what`.
fn file_lengths(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            (lines > MAX_FILE_LINES).then(|| {
                format!(
                    "{}:{}: {lines} lines, over {MAX_FILE_LINES}: split it by what its parts are about",
                    relative(path),
                    MAX_FILE_LINES + 1
                )
            })
        })
        .collect()
}

/// Functions over [`MAX_FN_LINES`] lines (signature to closing brace) without a
/// `// long: ` line among the comments and attributes right above them.
struct LongFns<'a> {
    lines: Vec<&'a str>,
    path: String,
    found: Vec<String>,
}

impl LongFns<'_> {
    fn check(&mut self, name: &syn::Ident, sig_line: usize, end_line: usize) {
        let length = end_line + 1 - sig_line;
        if length <= MAX_FN_LINES {
            return;
        }
        if length > MAX_FN_LINES_WITH_REASON {
            self.found.push(format!(
                "{}:{sig_line}: fn {name} has {length} lines, over {MAX_FN_LINES_WITH_REASON}: split it into named steps (no reason allows more)",
                self.path
            ));
            return;
        }
        // The comment and attribute lines directly above the signature.
        let reason = self.lines[..sig_line - 1]
            .iter()
            .rev()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with("//") || l.starts_with("#[") || l.starts_with("#!["))
            .any(known_reason);
        if !reason {
            self.found.push(format!(
                "{}:{sig_line}: fn {name} has {length} lines, over {MAX_FN_LINES}: split it into named steps, or say why it cannot be on a `{LONG_REASON}REASON: ...` line above it (REASON one of: {})",
                self.path,
                LONG_REASONS.join(", ")
            ));
        }
    }
}

impl<'ast> Visit<'ast> for LongFns<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let start = f.sig.fn_token.span.start().line;
        let end = f.block.brace_token.span.close().end().line;
        self.check(&f.sig.ident, start, end);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let start = f.sig.fn_token.span.start().line;
        let end = f.block.brace_token.span.close().end().line;
        self.check(&f.sig.ident, start, end);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            let start = f.sig.fn_token.span.start().line;
            let end = block.brace_token.span.close().end().line;
            self.check(&f.sig.ident, start, end);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

fn long_functions(files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for path in files {
        let (text, file) = parse(path);
        let mut visitor = LongFns {
            lines: text.lines().collect(),
            path: relative(path),
            found: Vec::new(),
        };
        visitor.visit_file(&file);
        found.extend(visitor.found);
    }
    found
}

/// Notes whose reason is not one of [`LONG_REASONS`], and notes past
/// [`MAX_LONG_NOTES`] in all.
fn long_notes(files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    let mut notes = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if !line.starts_with(LONG_REASON.trim_end()) {
                continue;
            }
            let at = format!("{}:{}", relative(path), i + 1);
            if !known_reason(line) {
                found.push(format!(
                    "{at}: a `{LONG_REASON}` note names no reason: start it with one of {}, then `: ` and what the function is",
                    LONG_REASONS.join(", ")
                ));
            }
            notes.push(at);
        }
    }
    if notes.len() > MAX_LONG_NOTES {
        found.push(format!(
            "{} `{LONG_REASON}` notes, over {MAX_LONG_NOTES}: split the functions whose reason a reader would not accept at once ({})",
            notes.len(),
            notes.join(", ")
        ));
    }
    found
}

/// Library crates without an example, and examples no test runs.
fn examples() -> Vec<String> {
    // Spaces out: an entry's package and example may sit on lines of their own.
    let run_by_test: String = std::fs::read_to_string(root().join("xtask/tests/it/examples.rs"))
        .unwrap()
        .split_whitespace()
        .collect();
    let mut found = Vec::new();
    for (dir, name) in crates() {
        // A binary crate's library serves the binary (and xtask), not reusers.
        if !dir.join("src/lib.rs").exists() || dir.join("src/main.rs").exists() {
            continue;
        }
        let examples = rust_files(&dir.join("examples"));
        if examples.is_empty() {
            found.push(format!(
                "{}:1: library crate {name} has no example (examples/*.rs)",
                relative(&dir.join("Cargo.toml"))
            ));
        }
        for example in examples {
            let stem = example.file_stem().unwrap().to_string_lossy().to_string();
            if !run_by_test.contains(&format!("(\"{name}\",\"{stem}\"")) {
                found.push(format!(
                    "{}:1: example {stem} of {name} is run by no test: list it in xtask/tests/it/examples.rs",
                    relative(&example)
                ));
            }
        }
    }
    found
}

/// Crates the README's crate table does not name.
fn readme_crates() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let table: Vec<(usize, &str)> = readme
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("| `crates/") || l.starts_with("| `xtask"))
        .collect();
    let line = table.first().map_or(1, |(i, _)| i + 1);
    crates()
        .into_iter()
        .filter_map(|(dir, name)| {
            let folder = dir.strip_prefix(root()).unwrap().display().to_string();
            let named = table.iter().any(|(_, l)| {
                l.contains(&format!("`{folder}`")) && l.contains(&format!("`{name}`"))
            });
            (!named).then(|| {
                format!("README.md:{line}: the crate table does not name `{folder}` (`{name}`)")
            })
        })
        .collect()
}

fn src_files() -> Vec<PathBuf> {
    crates()
        .iter()
        .flat_map(|(dir, _)| rust_files(&dir.join("src")))
        .collect()
}

/// Every crate's integration tests (`tests/`), their shared helpers and data files.
fn test_files() -> Vec<PathBuf> {
    crates()
        .iter()
        .flat_map(|(dir, _)| rust_files(&dir.join("tests")))
        .collect()
}

fn report(rule: &str, found: Vec<String>) {
    assert!(
        found.is_empty(),
        "{rule}: {} finding(s)\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn no_source_or_test_file_is_over_600_lines() {
    let mut files = src_files();
    files.extend(test_files());
    report("file length", file_lengths(&files));
}

#[test]
fn no_function_is_over_80_lines_without_a_reason_nor_over_150() {
    report("function length", long_functions(&src_files()));
}

#[test]
fn long_notes_name_their_reason_and_are_few() {
    let mut files = src_files();
    files.extend(test_files());
    report("long notes", long_notes(&files));
}

#[test]
fn no_two_modules_of_a_crate_use_each_other() {
    let mut found = Vec::new();
    for (dir, name) in crates() {
        let src = dir.join("src");
        found.extend(module_cycles(&src, &rust_files(&src), &name));
    }
    report("module cycles", found);
}

#[test]
fn every_library_crate_has_an_example_that_a_test_runs() {
    report("examples", examples());
}

#[test]
fn the_readme_names_every_crate() {
    report("README crate table", readme_crates());
}

/// The rules catch what they are for: a file one line too long, a long function
/// without a reason (and not with one), two modules that use each other.
#[test]
fn the_rules_fail_on_what_they_forbid() {
    let dir = crate::common::temp_root().join(format!("clmulti-tidy-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let long = src.join("long.rs");
    std::fs::write(&long, "// x\n".repeat(MAX_FILE_LINES + 1)).unwrap();
    assert_eq!(file_lengths(std::slice::from_ref(&long)).len(), 1);
    std::fs::write(&long, "// x\n".repeat(MAX_FILE_LINES)).unwrap();
    assert!(file_lengths(std::slice::from_ref(&long)).is_empty());
    let body = "    let _ = 1;\n".repeat(MAX_FN_LINES);
    std::fs::write(&long, format!("fn f() {{\n{body}}}\n")).unwrap();
    let found = long_functions(std::slice::from_ref(&long));
    assert!(
        found.len() == 1 && found[0].contains(":1: fn f has 82 lines"),
        "{found:?}"
    );
    // A note must name a reason from the vocabulary.
    std::fs::write(
        &long,
        format!("// long: one table of cases, read top to bottom\nfn f() {{\n{body}}}\n"),
    )
    .unwrap();
    assert_eq!(long_functions(std::slice::from_ref(&long)).len(), 1);
    assert_eq!(long_notes(std::slice::from_ref(&long)).len(), 1);
    let note = "// long: a flat table: one row per case, read top to bottom";
    std::fs::write(&long, format!("{note}\nfn f() {{\n{body}}}\n")).unwrap();
    assert!(long_functions(std::slice::from_ref(&long)).is_empty());
    assert!(long_notes(std::slice::from_ref(&long)).is_empty());
    // No reason covers a function over the hard limit.
    let longer = "    let _ = 1;\n".repeat(MAX_FN_LINES_WITH_REASON);
    std::fs::write(&long, format!("{note}\nfn f() {{\n{longer}}}\n")).unwrap();
    let found = long_functions(std::slice::from_ref(&long));
    assert!(
        found.len() == 1 && found[0].contains("no reason allows more"),
        "{found:?}"
    );
    // One note past the workspace's allowance.
    let notes = format!("{note}\nfn f() {{}}\n").repeat(MAX_LONG_NOTES + 1);
    std::fs::write(&long, notes).unwrap();
    let found = long_notes(std::slice::from_ref(&long));
    assert!(
        found.len() == 1 && found[0].contains(&format!("over {MAX_LONG_NOTES}")),
        "{found:?}"
    );
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct B;\nfn f() { let _ = super::a::A; }\n",
    )
    .unwrap();
    std::fs::write(src.join("c.rs"), "use crate::a::A;\n").unwrap();
    std::fs::remove_file(&long).unwrap();
    let files = rust_files(&src);
    let cycles = module_cycles(&src, &files, "demo");
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].contains("a -> b (") && cycles[0].contains("b -> a ("),
        "{cycles:?}"
    );
    std::fs::write(src.join("b.rs"), "pub struct B;\n").unwrap();
    assert!(module_cycles(&src, &rust_files(&src), "demo").is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
