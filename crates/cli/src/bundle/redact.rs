//! What names this machine and its user in a bundle, replaced by placeholders: the
//! host name, the user name, the home folder, the checkout clmulti runs from and
//! the folder it ran in. `--no-redact` keeps them.

use std::path::{Path, PathBuf};

/// The replacements, each text with its placeholder, longest first.
#[derive(Debug, Default)]
pub(super) struct Redactor {
    paths: Vec<(String, &'static str)>,
    words: Vec<(String, &'static str)>,
}

impl Redactor {
    /// This machine's names.
    pub(super) fn here() -> Self {
        let mut paths: Vec<(String, &'static str)> = Vec::new();
        let mut add = |path: Option<PathBuf>, placeholder: &'static str| {
            if let Some(p) = path.map(|p| p.display().to_string()) {
                if p.len() > 1 && !paths.iter().any(|(q, _)| *q == p) {
                    paths.push((p, placeholder));
                }
            }
        };
        add(checkout(), "<checkout>");
        add(std::env::current_dir().ok(), "<cwd>");
        add(std::env::var_os("HOME").map(PathBuf::from), "<home>");
        add(
            std::env::temp_dir()
                .canonicalize()
                .ok()
                .filter(|t| t != Path::new("/tmp")),
            "<tmp>",
        );
        paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let mut words = vec![(clmulti_probe::host_name(), "<host>")];
        // root names no one; a person's login does.
        if let Some(user) = user_name().filter(|u| u != "root") {
            words.push((user, "<user>"));
        }
        words.retain(|(w, _)| w.len() >= 2);
        Redactor { paths, words }
    }

    /// Every name of this machine in `text`, replaced: paths where they start a
    /// path, words where they stand alone (`vm` in `vm.max_map_count` stays).
    pub(super) fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (path, placeholder) in &self.paths {
            out = replace_bounded(
                &out,
                path,
                placeholder,
                |c| c.is_alphanumeric() || "_-.".contains(c),
                |_| false,
            );
        }
        for (word, placeholder) in &self.words {
            let inside = |c: char| c.is_alphanumeric() || "_-.".contains(c);
            out = replace_bounded(&out, word, placeholder, inside, inside);
        }
        out
    }

    /// What was replaced, in words, for the bundle's README.
    pub(super) fn placeholders(&self) -> Vec<&'static str> {
        self.paths
            .iter()
            .chain(&self.words)
            .map(|(_, p)| *p)
            .collect()
    }
}

/// `text` with each `needle` replaced, where the character after it does not
/// continue it (`after`) and the one before does not lead into it (`before`).
fn replace_bounded(
    text: &str,
    needle: &str,
    with: &str,
    after: impl Fn(char) -> bool,
    before: impl Fn(char) -> bool,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(needle) {
        let end = at + needle.len();
        let prev = rest[..at]
            .chars()
            .next_back()
            .or_else(|| out.chars().next_back());
        let next = rest[end..].chars().next();
        let alone = !prev.is_some_and(&before) && !next.is_some_and(&after);
        out.push_str(&rest[..at]);
        out.push_str(if alone { with } else { needle });
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The checkout clmulti runs from: the folder above its binary that holds the
/// workspace (`Cargo.toml` and `crates/`).
fn checkout() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .find(|d| d.join("Cargo.toml").is_file() && d.join("crates").is_dir())
        .map(Path::to_path_buf)
}

/// This process's user name, as the password database has it.
fn user_name() -> Option<String> {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(|| {
            // SAFETY: getpwuid returns a pointer into static storage or null; read at once.
            let entry = unsafe { libc::getpwuid(libc::getuid()) };
            if entry.is_null() {
                return None;
            }
            // SAFETY: a non-null entry has a NUL-terminated pw_name.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).pw_name) };
            Some(name.to_string_lossy().into_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_replaced_where_they_stand_alone() {
        let r = Redactor {
            paths: vec![
                ("/home/ada/clmulti".into(), "<checkout>"),
                ("/home/ada".into(), "<home>"),
            ],
            words: vec![("vm".into(), "<host>"), ("ada".into(), "<user>")],
        };
        assert_eq!(
            r.apply("host: vm; /home/ada/clmulti/target/x.so and /home/ada/.cache, /home/adam; vm.max_map_count; ada"),
            "host: <host>; <checkout>/target/x.so and <home>/.cache, /home/adam; vm.max_map_count; <user>"
        );
    }
}
