//! A bare library name (`libpocl.so.2` in an `.icd` file, `libm.so.6` in
//! `LD_PRELOAD`), found as the dynamic linker finds it: first in the folders of the
//! `LD_LIBRARY_PATH` a run inherits from this process, then in the system's
//! (`/etc/ld.so.conf.d`, the multiarch and plain library folders). A folder another
//! user could write, searched before it, refuses the name; found in a folder of this
//! user's, it needs the user's word like any library; it needs none only where the
//! file is the system's.

use super::{load, refused, system_owned, writable_by_others, Item, LoadKind, Trusted};
use std::path::{Path, PathBuf};

/// The load of a bare library name `name` written at `key`.
pub(super) fn bare_library(key: &str, name: &str) -> Item {
    let inherited = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let mut folders = Vec::new();
    // A relative entry (an empty one is ".") names the run's own fresh folder: nothing
    // there to find.
    for entry in std::env::split_paths(&inherited).filter(|e| e.is_absolute()) {
        let real = std::fs::canonicalize(&entry).unwrap_or(entry.clone());
        if let Some(why) = writable_by_others(&real, &real) {
            return refused(
                key,
                name.to_owned(),
                format!(
                    "a bare library name is looked up first in LD_LIBRARY_PATH, whose {} another user could write ({why}): name the library by its path",
                    entry.display()
                ),
            );
        }
        folders.push(real);
    }
    folders.extend(system_folders());
    let Some(found) = folders.iter().map(|f| f.join(name)).find(|p| p.is_file()) else {
        return refused(
            key,
            name.to_owned(),
            format!(
                "no library {name} in the dynamic linker's folders (LD_LIBRARY_PATH, /etc/ld.so.conf.d, the system's): name it by its path"
            ),
        );
    };
    let real = std::fs::canonicalize(&found).unwrap_or(found);
    let trusted = system_owned(&real).then_some(Trusted::System);
    Item {
        load: load(key, LoadKind::Library, real.display().to_string(), trusted),
        real: Some(real),
    }
}

/// The system's library folders, in the dynamic linker's order: those
/// `/etc/ld.so.conf.d` lists, then the multiarch and plain defaults.
fn system_folders() -> Vec<PathBuf> {
    let mut folders = Vec::new();
    let mut confs: Vec<PathBuf> = std::fs::read_dir("/etc/ld.so.conf.d")
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    confs.sort();
    for conf in confs
        .iter()
        .filter(|c| c.extension().is_some_and(|x| x == "conf"))
    {
        let text = std::fs::read_to_string(conf).unwrap_or_default();
        folders.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| l.starts_with('/'))
                .map(PathBuf::from),
        );
    }
    let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
    for base in ["/lib", "/usr/lib"] {
        folders.push(Path::new(base).join(&multiarch));
    }
    folders.extend(["/lib64", "/usr/lib64", "/lib", "/usr/lib"].map(PathBuf::from));
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_found_in_the_systems_folders_and_trusted_there() {
        let item = bare_library("LD_PRELOAD", "libm.so.6");
        assert_eq!(item.load.trusted, Some(Trusted::System), "{:?}", item.load);
        assert!(item.real.is_some_and(|p| p.is_absolute()));
        let missing = bare_library("LD_PRELOAD", "libclmulti-no-such-library.so");
        assert!(missing
            .load
            .problem
            .is_some_and(|p| p.contains("no library libclmulti-no-such-library.so")));
    }
}
