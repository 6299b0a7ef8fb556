//! What a run's `[env]` makes its process load, run or write outside the run. Every
//! key not on the list of inert keys ([`super::inert`]) is a [`Load`]: a library the
//! process loads (`LD_PRELOAD`, `LD_AUDIT`, `OPENCL_LAYERS`, each library a vendors
//! folder's `.icd` files name), a folder searched for libraries or programs
//! (`LD_LIBRARY_PATH`, `PATH`), a folder a runtime keeps compiled code in and loads
//! it again from (`POCL_CACHE_DIR`, `HOME`, `TMPDIR`), a file written (`LD_DEBUG_OUTPUT`,
//! clmulti's own reports), or any other setting. Relative paths resolve against the
//! scenario file's own folder. A load needs no one's word when it is clmulti's own
//! library, a system file (root's, writable by no one else), or what this checkout's
//! setup scripts and cargo installed, in folders writable by their owner alone; any
//! other needs the user's ([`super::store`]).

use super::icd::{self, Vendors};
use super::inert::inert;
use super::owner::{system_owned, writable_by_others};
use clmulti_contract::PROJECT_LIBRARIES;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What an `[env]` entry makes a run do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadKind {
    /// A library the process loads (its constructor runs).
    Library,
    /// A folder searched for libraries or programs.
    SearchPath,
    /// A folder a runtime writes compiled code or settings to and loads them from.
    CodeCache,
    /// A file or folder written to.
    Writes,
    /// Any other key not on the list of inert keys: what it does is not known here.
    Setting,
}

/// Why a load needs no one's word, or whose word it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trusted {
    /// One of clmulti's own libraries, beside it.
    ProjectLibrary,
    /// A system file: owned by root, its folders too, writable by nobody else (or a
    /// bare name the dynamic linker finds in the system's folders; `/dev/null`).
    System,
    /// Installed by this checkout's setup scripts or built by its cargo, in folders
    /// writable by their owner alone.
    ThisCheckout,
    /// The user trusted the scenario (`clmulti trust`), this file as it is now.
    ByYou,
    /// Allowed for this run (`--allow`), as it was when the run was planned.
    Allowed,
}

/// One thing a scenario's run would load, run or write outside itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Load {
    /// The `[env]` key (`OCL_ICD_VENDORS (intel.icd)` for a library an ICD file names).
    pub key: String,
    /// What it makes the run do.
    pub kind: LoadKind,
    /// The path, resolved (a bare library name as written); a setting's value.
    pub path: String,
    /// Why it needs no word, or whose it has; `None`: it needs the user's word.
    pub trusted: Option<Trusted>,
    /// Why it needs the user's word again (it changed since it was trusted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why no run may make it, trusted or not (a vendors file that is a FIFO, a
    /// relative path the loader would open from its working folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Load {
    /// `LD_PRELOAD loads library /tmp/x.so`.
    pub fn words(&self) -> String {
        let (key, path) = (&self.key, &self.path);
        match self.kind {
            LoadKind::Library => format!("{key} loads library {path}"),
            LoadKind::SearchPath => format!("{key} searches for libraries and programs in {path}"),
            LoadKind::CodeCache => {
                format!("{key} keeps compiled code and settings it loads again in {path}")
            }
            LoadKind::Writes => format!("{key} writes to {path}"),
            LoadKind::Setting if super::inert::listed(key) => format!(
                "{key} = {path:?} is set (an inert key, but this value is not a plain one: letters, digits, spaces and _ - . , : + % = only, or a value the list names)"
            ),
            LoadKind::Setting => {
                format!("{key} = {path:?} is set (not on the list of inert keys)")
            }
        }
    }

    /// Whether a run may make it: trusted, and nothing in the way.
    pub fn may_run(&self) -> bool {
        self.trusted.is_some() && self.problem.is_none()
    }
}

/// Where a scenario's relative paths start, and where clmulti's libraries are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The scenario file's own folder (links resolved).
    pub folder: Option<PathBuf>,
    /// The folder of clmulti's libraries (beside the binary).
    pub libraries: Option<PathBuf>,
}

/// The keys whose values are paths, with what each does and how its list is
/// separated.
const PATH_KEYS: [(&str, LoadKind, &[char]); 20] = [
    ("LD_PRELOAD", LoadKind::Library, &[':', ' ']),
    ("LD_AUDIT", LoadKind::Library, &[':']),
    ("OPENCL_LAYERS", LoadKind::Library, &[':']),
    ("OCL_ICD_FILENAMES", LoadKind::Library, &[':']),
    // glibc splits a search path on ';' too; an empty entry is the current folder
    // (here: the scenario's).
    ("LD_LIBRARY_PATH", LoadKind::SearchPath, &[':', ';']),
    ("GCONV_PATH", LoadKind::SearchPath, &[':']),
    // PoCL's compiler runs the linker it finds there.
    ("PATH", LoadKind::SearchPath, &[':']),
    ("POCL_CACHE_DIR", LoadKind::CodeCache, &[]),
    ("NEO_CACHE_DIR", LoadKind::CodeCache, &[]),
    ("CUDA_CACHE_PATH", LoadKind::CodeCache, &[]),
    // PoCL's kernel cache lives under these when POCL_CACHE_DIR is unset.
    ("XDG_CACHE_HOME", LoadKind::CodeCache, &[]),
    ("HOME", LoadKind::CodeCache, &[]),
    // Compilers write their output there and the runtime loads it.
    ("TMPDIR", LoadKind::CodeCache, &[]),
    ("TMP", LoadKind::CodeCache, &[]),
    ("TEMP", LoadKind::CodeCache, &[]),
    ("LD_DEBUG_OUTPUT", LoadKind::Writes, &[]),
    ("AUBDumpCaptureFileName", LoadKind::Writes, &[]),
    ("CLMULTI_TRACE_REPORT", LoadKind::Writes, &[]),
    (clmulti_contract::kmd_emu::REPORT, LoadKind::Writes, &[]),
    (clmulti_contract::kmd_emu::ROOT, LoadKind::Writes, &[]),
];

/// The keys naming where ocl-icd finds `.icd` files.
pub const VENDOR_KEYS: [&str; 2] = ["OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH"];

/// The folders this checkout's setup scripts install into, and cargo's.
const CHECKOUT_FOLDERS: [&str; 4] = [".intel-gpu", ".intel-opencl", ".neo-roots", "target"];

/// One path a key names, classified: its load, and the file it is now.
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub load: Load,
    /// The file it resolves to now (`None`: a bare name, or nothing there).
    pub real: Option<PathBuf>,
}

/// What one `[env]` entry is.
#[derive(Debug, Clone)]
pub(super) enum Entry {
    /// On the list of inert keys.
    Inert,
    /// Paths (a list joined by `separator`).
    Paths { separator: char, items: Vec<Item> },
    /// A vendors folder (or `.icd` file): the `.icd` files by name, each with the
    /// library it names, and the folder's own problem.
    Vendors {
        real: Option<PathBuf>,
        icds: Vec<(String, Item)>,
        folder: Option<Item>,
    },
    /// Any other key.
    Setting(Item),
}

/// What `key = value` in a run's `[env]` (paths resolved, placeholders filled) is.
pub(super) fn entry(key: &str, value: &str, origin: &Origin) -> Entry {
    if inert(key, value) {
        return Entry::Inert;
    }
    if VENDOR_KEYS.contains(&key) {
        return vendors(key, value, origin);
    }
    let Some(&(_, kind, separators)) = PATH_KEYS.iter().find(|(k, _, _)| *k == key) else {
        return Entry::Setting(setting(key, value));
    };
    let parts: Vec<&str> = if separators.is_empty() {
        vec![value]
    } else if kind == LoadKind::SearchPath {
        value.split(separators).collect()
    } else {
        value.split(separators).filter(|s| !s.is_empty()).collect()
    };
    Entry::Paths {
        separator: separators.first().copied().unwrap_or(':'),
        items: parts
            .into_iter()
            .map(|part| path_item(key, kind, part, origin))
            .collect(),
    }
}

fn setting(key: &str, value: &str) -> Item {
    let shown = if value.len() > 200 {
        let end = (0..=200)
            .rev()
            .find(|&i| value.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}... ({} bytes)", &value[..end], value.len())
    } else {
        value.to_owned()
    };
    Item {
        load: load(key, LoadKind::Setting, shown, None),
        real: None,
    }
}

/// A load no run may make, whoever trusts it: `why` says what is in the way.
pub(super) fn refused(key: &str, path: String, why: String) -> Item {
    let mut load = load(key, LoadKind::Library, path, None);
    load.problem = Some(why);
    Item { load, real: None }
}

pub(super) fn load(key: &str, kind: LoadKind, path: String, trusted: Option<Trusted>) -> Load {
    Load {
        key: key.to_owned(),
        kind,
        path,
        trusted,
        note: None,
        problem: None,
    }
}

/// A path as a run would use it: relative to the scenario's folder (an empty search
/// path entry is that folder), never the working folder.
pub(super) fn resolve(part: &str, origin: &Origin) -> PathBuf {
    let path = Path::new(if part.is_empty() { "." } else { part });
    match (&origin.folder, path.is_relative()) {
        (Some(folder), true) => folder.join(path),
        _ => path.to_path_buf(),
    }
}

fn path_item(key: &str, kind: LoadKind, part: &str, origin: &Origin) -> Item {
    // A bare library name is the dynamic linker's to find (a search path the scenario
    // sets is a load of its own).
    if kind == LoadKind::Library && !part.is_empty() && !part.contains('/') {
        return search::bare_library(key, part);
    }
    let resolved = resolve(part, origin);
    let mut item = Item {
        load: load(key, kind, resolved.display().to_string(), None),
        real: std::fs::canonicalize(&resolved).ok(),
    };
    // The dynamic linker expands $ORIGIN, $LIB and $PLATFORM where a check reads
    // the path as written: such a path is not what it seems.
    if matches!(kind, LoadKind::Library | LoadKind::SearchPath) && part.contains('$') {
        item.load.problem = Some(
            "the dynamic linker expands $ORIGIN, $LIB and $PLATFORM in it: write the path out"
                .into(),
        );
        return item;
    }
    item.load.trusted = trusted(kind, &resolved, item.real.as_deref(), origin);
    item
}

/// Why a path needs no one's word, if it does not (`real`: where it resolves now).
pub(super) fn trusted(
    kind: LoadKind,
    resolved: &Path,
    real: Option<&Path>,
    origin: &Origin,
) -> Option<Trusted> {
    if kind == LoadKind::Writes {
        return (resolved == Path::new("/dev/null")).then_some(Trusted::System);
    }
    let real = real?;
    if let Some(libraries) = &origin.libraries {
        let root = checkout_of(libraries).unwrap_or_else(|| libraries.clone());
        let own = kind == LoadKind::Library
            && PROJECT_LIBRARIES.iter().any(|l| {
                std::fs::canonicalize(libraries.join(l.file_name)).is_ok_and(|p| p == real)
            });
        if own && writable_by_others(real, &root).is_none() {
            return Some(Trusted::ProjectLibrary);
        }
        let installed = CHECKOUT_FOLDERS
            .iter()
            .any(|f| real.starts_with(root.join(f)));
        if installed && writable_by_others(real, &root).is_none() {
            return Some(Trusted::ThisCheckout);
        }
    }
    system_owned(real).then_some(Trusted::System)
}

/// The checkout whose cargo built clmulti's libraries (`<root>/target/<profile>`).
fn checkout_of(libraries: &Path) -> Option<PathBuf> {
    let libraries = std::fs::canonicalize(libraries).ok()?;
    let root = libraries.parent()?.parent()?;
    root.join("Cargo.toml").exists().then(|| root.to_path_buf())
}

/// What a vendors key makes the ICD loader open.
fn vendors(key: &str, value: &str, origin: &Origin) -> Entry {
    if value.is_empty() {
        return Entry::Inert;
    }
    let resolved = resolve(value, origin);
    let real = std::fs::canonicalize(&resolved).ok();
    let at = real.clone().unwrap_or(resolved);
    // OPENCL_VENDOR_PATH is only ever a folder to ocl-icd.
    if key == "OPENCL_VENDOR_PATH" && !at.is_dir() {
        return Entry::Vendors {
            real,
            icds: Vec::new(),
            folder: None,
        };
    }
    let (found, problem) = match icd::read(&at) {
        Vendors::Library(library) => {
            let item = path_item(
                key,
                LoadKind::Library,
                &library.display().to_string(),
                origin,
            );
            return Entry::Paths {
                separator: ':',
                items: vec![item],
            };
        }
        Vendors::Icds(found, problem) => (found, problem),
    };
    let icds = found
        .into_iter()
        .filter_map(|icd| {
            let key = format!("{key} ({})", icd.name);
            let item = match icd.library {
                Ok(None) => return None,
                Ok(Some(library)) => icd_library(&key, &library, origin),
                Err(why) => refused(
                    &key,
                    at.join(&icd.name).display().to_string(),
                    format!("{} {why}", icd.name),
                ),
            };
            Some((icd.name, item))
        })
        .collect();
    let folder = problem.map(|why| refused(key, at.display().to_string(), why));
    Entry::Vendors { real, icds, folder }
}

/// The library an `.icd` file names, as the loader opens it: a bare name from the
/// system's folders, an absolute path, and never a relative one (the loader would
/// open it from its working folder).
fn icd_library(key: &str, library: &str, origin: &Origin) -> Item {
    if library.contains('/') && !library.starts_with('/') {
        return refused(
            key,
            library.to_owned(),
            format!("names {library:?}, a relative path the ICD loader would open from its working folder (leading spaces are part of the path)"),
        );
    }
    path_item(key, LoadKind::Library, library, origin)
}

#[path = "search.rs"]
mod search;

#[cfg(test)]
#[path = "loads_tests.rs"]
mod tests;
