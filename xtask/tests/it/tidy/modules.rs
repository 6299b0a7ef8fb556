//! Import cycles between sibling modules of a crate: the paths each file names,
//! resolved to modules, and the strongly connected components among siblings.

use super::*;

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
pub(super) fn module_cycles(src: &Path, files: &[PathBuf], package: &str) -> Vec<String> {
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
