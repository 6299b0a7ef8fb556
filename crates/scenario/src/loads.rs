//! What a scenario makes its run load or write outside the run: a scenario file is
//! code. `[env]` can preload libraries (`LD_PRELOAD`, `LD_AUDIT`), name the OpenCL
//! runtimes and layers the ICD loader opens (`OCL_ICD_VENDORS`, `OCL_ICD_FILENAMES`,
//! `OPENCL_LAYERS`), change where the dynamic linker looks (`LD_LIBRARY_PATH`,
//! `GCONV_PATH`), or point a runtime's cache, whose compiled kernels it loads again,
//! somewhere else (`POCL_CACHE_DIR`). Each such entry is a [`Load`]; one is trusted
//! without asking when it is the project's own library (`{clmulti-layer}`), a
//! system file (owned by root, writable by nobody else), or installed by this
//! checkout's setup scripts (`.intel-gpu`, `.intel-opencl`, `target`). Any other
//! needs the user's word ([`crate::trust`]).

use crate::validate::PROJECT_LIBRARIES;
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What an `[env]` entry makes a run do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadKind {
    /// A library the process loads (its constructor runs).
    Library,
    /// A folder the dynamic linker searches for libraries.
    SearchPath,
    /// A folder a runtime writes to and loads compiled code from again.
    CodeCache,
    /// A file or folder clmulti's own preloaded libraries write to.
    Writes,
}

impl LoadKind {
    /// In words.
    pub fn words(self) -> &'static str {
        match self {
            LoadKind::Library => "loads library",
            LoadKind::SearchPath => "searches for libraries in",
            LoadKind::CodeCache => "writes and loads compiled code in",
            LoadKind::Writes => "writes to",
        }
    }
}

/// Why a load needs no one's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trusted {
    /// One of the project's own libraries, named by its placeholder.
    ProjectLibrary,
    /// A system file: owned by root, its folder too, writable by nobody else (or a
    /// bare name the dynamic linker finds in the system's folders).
    System,
    /// Installed by this checkout's setup scripts or built by its cargo.
    ThisCheckout,
}

/// One thing a scenario's run would load or write outside itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Load {
    /// The `[env]` key (`OCL_ICD_VENDORS (intel.icd)` for a library an ICD file names).
    pub key: String,
    /// What it makes the run do.
    pub kind: LoadKind,
    /// The path (or a bare library name).
    pub path: String,
    /// Why it is trusted without asking; `None`: it needs the user's word.
    pub trusted: Option<Trusted>,
}

impl Load {
    /// `LD_PRELOAD loads library /tmp/x.so`.
    pub fn words(&self) -> String {
        format!("{} {} {}", self.key, self.kind.words(), self.path)
    }
}

/// The `[env]` keys whose values load code, with what each does and how its list is
/// separated.
const LOADING_KEYS: [(&str, LoadKind, &[char]); 12] = [
    ("LD_PRELOAD", LoadKind::Library, &[':', ' ']),
    ("LD_AUDIT", LoadKind::Library, &[':']),
    ("OPENCL_LAYERS", LoadKind::Library, &[':']),
    ("OCL_ICD_FILENAMES", LoadKind::Library, &[':']),
    // glibc splits a search path on ';' too; an empty entry is the current folder.
    ("LD_LIBRARY_PATH", LoadKind::SearchPath, &[':', ';']),
    ("GCONV_PATH", LoadKind::SearchPath, &[':']),
    ("POCL_CACHE_DIR", LoadKind::CodeCache, &[]),
    ("NEO_CACHE_DIR", LoadKind::CodeCache, &[]),
    // PoCL's kernel cache lives under it when POCL_CACHE_DIR is unset.
    ("XDG_CACHE_HOME", LoadKind::CodeCache, &[]),
    ("CLMULTI_TRACE_REPORT", LoadKind::Writes, &[]),
    ("CLMULTI_KMD_EMU_REPORT", LoadKind::Writes, &[]),
    ("CLMULTI_KMD_EMU_ROOT", LoadKind::Writes, &[]),
];

/// The `[env]` keys naming where the ICD loader finds `.icd` files (ocl-icd reads
/// both; a file that is not an `.icd` is opened as a runtime itself).
const ICD_KEYS: [&str; 2] = ["OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH"];

/// The folders this checkout's setup scripts install into, and cargo's.
const CHECKOUT_FOLDERS: [&str; 4] = [".intel-gpu", ".intel-opencl", ".neo-roots", "target"];

/// What a run's `[env]` (paths resolved) makes it load; `libraries` is the folder of
/// the project's libraries (beside clmulti).
pub fn loads_of(env: &BTreeMap<String, String>, libraries: Option<&Path>) -> Vec<Load> {
    let mut out = Vec::new();
    for (key, kind, separators) in LOADING_KEYS {
        let Some(value) = env.get(key) else { continue };
        let items: Vec<&str> = if separators.is_empty() {
            vec![value.as_str()]
        } else if kind == LoadKind::SearchPath {
            // An empty entry of a search path is the current folder.
            value
                .split(separators)
                .map(|s| if s.is_empty() { "." } else { s })
                .collect()
        } else {
            value.split(separators).filter(|s| !s.is_empty()).collect()
        };
        for item in items {
            out.push(load(key.to_owned(), kind, item, libraries));
        }
    }
    for key in ICD_KEYS {
        let Some(vendors) = env.get(key).filter(|v| !v.is_empty()) else {
            continue;
        };
        for (icd, library) in icd_libraries(Path::new(vendors)) {
            let key = format!("{key} ({icd})");
            out.push(load(key, LoadKind::Library, &library, libraries));
        }
    }
    out.sort();
    out.dedup();
    out
}

fn load(key: String, kind: LoadKind, path: &str, libraries: Option<&Path>) -> Load {
    // What clmulti's own libraries write goes wherever the file says: always asked.
    let trusted = match kind {
        LoadKind::Writes => None,
        _ => trusted(path, libraries),
    };
    Load {
        trusted,
        key,
        kind,
        path: path.to_owned(),
    }
}

/// The libraries the `.icd` files of an `OCL_ICD_VENDORS` folder (or one `.icd` file)
/// name: (the `.icd` file's name, the library). A file that is not an `.icd` is a
/// runtime the loader opens itself; an `.icd` that does not read as text names a
/// library no one can say is safe: the `.icd` stands for it.
fn icd_libraries(vendors: &Path) -> Vec<(String, String)> {
    if vendors.is_file() && vendors.extension().is_none_or(|e| e != "icd") {
        let name = vendors
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        return vec![(name, vendors.display().to_string())];
    }
    let files: Vec<PathBuf> = if vendors.is_dir() {
        std::fs::read_dir(vendors)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "icd"))
            .collect()
    } else {
        vec![vendors.to_path_buf()]
    };
    files
        .iter()
        .filter_map(|f| {
            let name = f.file_name()?.to_string_lossy().into_owned();
            let library = match std::fs::read(f) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => text.lines().next()?.trim().to_owned(),
                    // A library path that is not text: the .icd stands for it.
                    Err(_) => format!("{} (names a library that is not text)", f.display()),
                },
                Err(_) => return None,
            };
            (!library.is_empty()).then_some((name, library))
        })
        .collect()
}

/// Why `path` needs no one's word, if it does not.
fn trusted(path: &str, libraries: Option<&Path>) -> Option<Trusted> {
    // The dynamic linker expands $ORIGIN, $LIB and $PLATFORM where a check would read
    // the path as written: such a path is not what it seems.
    if path.contains('$') {
        return None;
    }
    if let Some(folder) = libraries {
        let own = PROJECT_LIBRARIES
            .iter()
            .any(|l| Path::new(path) == folder.join(l.file_name));
        if own {
            return Some(Trusted::ProjectLibrary);
        }
    }
    // A bare name is the dynamic linker's to find, in the system's folders (a search
    // path the scenario sets is a load of its own).
    if !path.contains('/') {
        return Some(Trusted::System);
    }
    let canonical = std::fs::canonicalize(path).ok()?;
    if let Some(root) = libraries.and_then(checkout_of) {
        let installed = CHECKOUT_FOLDERS
            .iter()
            .any(|f| canonical.starts_with(root.join(f)));
        if installed {
            return Some(Trusted::ThisCheckout);
        }
    }
    system_owned(&canonical).then_some(Trusted::System)
}

/// The checkout whose cargo built the project's libraries (`<root>/target/<profile>`).
fn checkout_of(libraries: &Path) -> Option<PathBuf> {
    let root = libraries.parent()?.parent()?;
    root.join("Cargo.toml").exists().then(|| root.to_path_buf())
}

/// Whether a file and every folder above it are owned by root and writable by no one
/// else: no other user could have put it there.
fn system_owned(path: &Path) -> bool {
    path.ancestors()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.uid() == 0 && m.mode() & 0o022 == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_loading_key_is_read_and_system_files_are_trusted() {
        let env: BTreeMap<String, String> = [
            ("LD_PRELOAD", "/tmp/evil.so libm.so.6"),
            ("OPENCL_LAYERS", "/usr/lib/x86_64-linux-gnu/libOpenCL.so.1"),
            ("LD_LIBRARY_PATH", "/tmp/lib"),
            ("POCL_CACHE_DIR", "/tmp/cache"),
            ("OTHER", "/tmp/not-a-load"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let loads = loads_of(&env, None);
        let find = |path: &str| loads.iter().find(|l| l.path == path).cloned();
        assert_eq!(find("/tmp/evil.so").unwrap().trusted, None);
        assert_eq!(find("libm.so.6").unwrap().trusted, Some(Trusted::System));
        assert_eq!(find("/tmp/lib").unwrap().kind, LoadKind::SearchPath);
        assert_eq!(find("/tmp/cache").unwrap().kind, LoadKind::CodeCache);
        assert!(find("/tmp/not-a-load").is_none());
        if Path::new("/usr/lib/x86_64-linux-gnu/libOpenCL.so.1").exists() {
            assert_eq!(
                find("/usr/lib/x86_64-linux-gnu/libOpenCL.so.1")
                    .unwrap()
                    .trusted,
                Some(Trusted::System)
            );
        }
    }

    #[test]
    fn an_icd_folder_loads_the_libraries_its_files_name() {
        let dir = std::env::temp_dir().join(format!("clmulti-icd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("evil.icd"), "/tmp/evil-icd.so\n").unwrap();
        let env: BTreeMap<String, String> =
            [("OCL_ICD_VENDORS".to_owned(), dir.display().to_string())].into();
        let loads = loads_of(&env, None);
        assert!(
            loads
                .iter()
                .any(|l| l.key == "OCL_ICD_VENDORS (evil.icd)" && l.path == "/tmp/evil-icd.so"),
            "{loads:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_ways_round_a_listing_are_listed_too() {
        let dir = std::env::temp_dir().join(format!("clmulti-loads-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("vp")).unwrap();
        std::fs::write(dir.join("vp/evil.icd"), "/tmp/evil-vp.so\n").unwrap();
        std::fs::write(dir.join("bad.icd"), b"/tmp/evil-\xff.so\n").unwrap();
        std::fs::write(dir.join("runtime.so"), "").unwrap();
        let env = |pairs: &[(&str, String)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        };
        let untrusted = |env: BTreeMap<String, String>| -> Vec<String> {
            loads_of(&env, None)
                .into_iter()
                .filter(|l| l.trusted.is_none())
                .map(|l| format!("{} {}", l.key, l.path))
                .collect()
        };
        let d = dir.display();
        // ocl-icd's other folder variable.
        let found = untrusted(env(&[("OPENCL_VENDOR_PATH", format!("{d}/vp"))]));
        assert!(
            found.iter().any(|l| l.contains("/tmp/evil-vp.so")),
            "{found:?}"
        );
        // A vendors file that is no .icd is a runtime the loader opens.
        let found = untrusted(env(&[("OCL_ICD_VENDORS", format!("{d}/runtime.so"))]));
        assert!(found.iter().any(|l| l.ends_with("runtime.so")), "{found:?}");
        // An .icd that is not text stands for the library it names.
        let found = untrusted(env(&[("OCL_ICD_VENDORS", format!("{d}/bad.icd"))]));
        assert!(found.iter().any(|l| l.contains("bad.icd")), "{found:?}");
        // The dynamic linker's tokens: never read as written.
        let found = untrusted(env(&[("LD_PRELOAD", "/usr/$LIB/libm.so.6".into())]));
        assert_eq!(found.len(), 1, "{found:?}");
        // ';' splits a search path too; an empty entry is the current folder.
        let found = loads_of(
            &env(&[("LD_LIBRARY_PATH", "/usr/lib;/tmp/x:".into())]),
            None,
        );
        let paths: Vec<&str> = found.iter().map(|l| l.path.as_str()).collect();
        assert!(
            paths.contains(&"/tmp/x") && paths.contains(&"."),
            "{paths:?}"
        );
        // Where clmulti's own libraries write: always asked.
        let found = untrusted(env(&[("CLMULTI_TRACE_REPORT", "/etc/passwd".into())]));
        assert_eq!(found.len(), 1, "{found:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_run_of_a_grid_is_read_placeholders_included() {
        let dir = std::env::temp_dir().join(format!("clmulti-grid-loads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in [1, 2] {
            std::fs::write(dir.join(format!("{n}.so")), "").unwrap();
        }
        let d = dir.display();
        let file = crate::ScenarioFile::parse(
            &format!("[env]\nLD_PRELOAD = \"{d}/{{devices.count}}.so\"\n[grid]\n\"devices.count\" = [1, 2]\n"),
            "grid.toml",
        )
        .unwrap();
        let paths: Vec<String> = file.loads().into_iter().map(|l| l.path).collect();
        assert_eq!(paths, [format!("{d}/1.so"), format!("{d}/2.so")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
