//! The house rules, checked on every `cargo test` (after rust-analyzer's
//! `xtask/src/tidy.rs`): no source file over [`MAX_FILE_LINES`] lines; no function
//! over [`MAX_FN_LINES`] lines without a one-line reason (`// long: why` right above
//! it); no import cycle between sibling modules of a crate; every library crate has an
//! example, and every example runs in CI (`examples.rs`); the README's crate table
//! names every crate; raw OpenCL calls only in `crates/probe`. Each failure names the
//! file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The most lines a source file may have.
pub const MAX_FILE_LINES: usize = 600;
/// The most lines a function may have without a reason.
pub const MAX_FN_LINES: usize = 80;
/// What marks a function's reason for being long, on a line right above it.
pub const LONG_REASON: &str = "// long: ";

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
        // The comment and attribute lines directly above the signature.
        let reason = self.lines[..sig_line - 1]
            .iter()
            .rev()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with("//") || l.starts_with("#[") || l.starts_with("#!["))
            .any(|l| l.starts_with(LONG_REASON) && l.len() > LONG_REASON.len() + 10);
        if !reason {
            self.found.push(format!(
                "{}:{sig_line}: fn {name} has {length} lines, over {MAX_FN_LINES}: split it, or say why on a `{LONG_REASON}...` line above it",
                self.path
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

/// A module of a crate: its path from the crate root (`["experiment", "shape"]`).
type ModPath = Vec<String>;

/// The module a source file is, from its place under `src/`.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Whether an item is compiled for tests only (`#[cfg(test)]`): test code may use
/// any module.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Every path a file names (`use` trees flattened), with its line, test code left out.
struct Paths {
    found: Vec<(Vec<String>, usize)>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                full.push(n.ident.to_string());
                self.found.push((full, line));
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.found.push((full, line));
            }
            syn::UseTree::Glob(_) => self.found.push((prefix.clone(), line)),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }
}

impl Paths {
    fn tokens(&mut self, stream: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let tokens: Vec<TokenTree> = stream.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            if let TokenTree::Group(g) = &tokens[i] {
                self.tokens(g.stream());
            }
            let mut path = Vec::new();
            let mut j = i;
            while let TokenTree::Ident(ident) = &tokens[j] {
                path.push(ident.to_string());
                let colons = matches!((tokens.get(j + 1), tokens.get(j + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':');
                if !colons || j + 3 >= tokens.len() {
                    break;
                }
                j += 3;
            }
            if path.len() >= 2 {
                self.found.push((path, tokens[i].span().start().line));
                i = j + 1;
            } else {
                i += 1;
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // A macro's arguments are tokens, not syntax: paths in `format!(..)` are
        // found by their `a::b` shape.
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = p.segments.first() {
            self.found.push((segments, first.ident.span().start().line));
        }
        syn::visit::visit_path(self, p);
    }
}

/// The module a path names, from the module `from`, among `modules`: `crate::`,
/// `super::`, `self::` and child modules resolved; the longest known prefix.
fn target(from: &ModPath, path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let (mut base, mut rest, anchored) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..], true),
        Some("super" | "self") => (from.clone(), path, true),
        Some(_) => (from.clone(), path, false),
        None => return None,
    };
    while let Some(word) = rest.first().map(String::as_str) {
        match word {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    let mut found = anchored.then(|| base.clone());
    for word in rest {
        base.push(word.clone());
        if !modules.contains(&base) {
            break;
        }
        found = Some(base.clone());
    }
    found
}

/// Uses between sibling modules that go both ways, each as `crate: a -> b -> a`
/// with one `file:line` per step.
fn module_cycles(src: &Path, files: &[PathBuf], package: &str) -> Vec<String> {
    let modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(src, f)).collect();
    // (parent, from child, to child) -> where.
    let mut edges: BTreeMap<(ModPath, String, String), String> = BTreeMap::new();
    for file in files {
        let from = module_of(src, file);
        let (_, parsed) = parse(file);
        let mut paths = Paths { found: Vec::new() };
        paths.visit_file(&parsed);
        for (path, line) in paths.found {
            let Some(to) = target(&from, &path, &modules) else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            // A module and its ancestors or descendants: down or up, never sideways.
            if common == from.len() || common == to.len() {
                continue;
            }
            edges
                .entry((
                    from[..common].to_vec(),
                    from[common].clone(),
                    to[common].clone(),
                ))
                .or_insert_with(|| format!("{}:{line} uses {}", relative(file), path.join("::")));
        }
    }
    let mut cycles = Vec::new();
    let parents: BTreeSet<&ModPath> = edges.keys().map(|k| &k.0).collect();
    for parent in parents {
        let graph: BTreeMap<&str, Vec<&str>> =
            edges
                .keys()
                .filter(|k| &k.0 == parent)
                .fold(BTreeMap::new(), |mut g, (_, a, b)| {
                    g.entry(a.as_str()).or_default().push(b.as_str());
                    g
                });
        for cycle in strongly_connected(&graph) {
            // Every use between the component's modules: any one of them may be the
            // one to move.
            let steps: Vec<String> = edges
                .iter()
                .filter(|((p, a, b), _)| {
                    p == parent && cycle.contains(&a.as_str()) && cycle.contains(&b.as_str())
                })
                .map(|((_, a, b), w)| format!("{a} -> {b} ({w})"))
                .collect();
            cycles.push(format!(
                "{package}: modules of `{}` use each other: {}",
                if parent.is_empty() {
                    "crate".to_owned()
                } else {
                    parent.join("::")
                },
                steps.join("; ")
            ));
        }
    }
    cycles
}

/// The strongly connected components of more than one node (Tarjan's algorithm), each
/// in an order that follows its edges where it can.
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, g: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in g.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, g, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.reverse();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !state.index.contains_key(v) {
            visit(v, graph, &mut state);
        }
    }
    state.out
}

/// Library crates without an example, and examples no test runs.
fn examples() -> Vec<String> {
    // Spaces out: an entry's package and example may sit on lines of their own.
    let run_by_test: String = std::fs::read_to_string(root().join("xtask/tests/examples.rs"))
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
                    "{}:1: example {stem} of {name} is run by no test: list it in xtask/tests/examples.rs",
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

fn src_files() -> Vec<PathBuf> {
    crates()
        .iter()
        .flat_map(|(dir, _)| rust_files(&dir.join("src")))
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
fn no_source_file_is_over_600_lines() {
    report("file length", file_lengths(&src_files()));
}

#[test]
fn no_function_is_over_80_lines_without_a_reason() {
    report("function length", long_functions(&src_files()));
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
fn only_probe_calls_opencl_raw() {
    report("raw OpenCL", raw_opencl(&opencl_callers()));
}

#[test]
fn the_readme_names_every_crate() {
    report("README crate table", readme_crates());
}

/// The rules catch what they are for: a file one line too long, a long function
/// without a reason (and not with one), two modules that use each other, a raw
/// OpenCL call (and not a safe type's).
#[test]
fn the_rules_fail_on_what_they_forbid() {
    let dir = std::env::temp_dir().join(format!("clmulti-tidy-{}", std::process::id()));
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
    std::fs::write(
        &long,
        format!("// long: one table of cases, read top to bottom\nfn f() {{\n{body}}}\n"),
    )
    .unwrap();
    assert!(long_functions(std::slice::from_ref(&long)).is_empty());
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
    let raw = src.join("raw.rs");
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
