//! The shared libraries a maintainer needs to symbolise a stack: each one this
//! process loaded (the runtime, its loader and their dependencies) and each one a
//! failing call's stack names, with its package and version (`dpkg -S`,
//! `dpkg-query`) and its ELF build ID (`.note.gnu.build-id`, what debuginfod and
//! `eu-unstrip` look a library's symbols up by).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::Command;

/// One library.
#[derive(Debug)]
pub(super) struct Library {
    pub path: String,
    pub package: Option<String>,
    pub version: Option<String>,
    pub build_id: Option<String>,
}

/// The libraries mapped into this process, clmulti itself with those of its own
/// libraries the runs loaded (`ran`: the runs' processes map them, this one does
/// not), and those named in `also` (a failing call's stack), each once.
pub(super) fn loaded(also: &str, ran: &[clmulti_contract::ProjectLibrary]) -> Vec<Library> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut paths: BTreeSet<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/') && is_library(p))
        .map(str::to_owned)
        .collect();
    if let Ok(exe) = std::env::current_exe() {
        let own: Vec<_> = ran
            .iter()
            .map(|l| exe.with_file_name(l.file_name))
            .filter(|p| p.is_file())
            .collect();
        paths.extend(own.iter().chain([&exe]).map(|p| p.display().to_string()));
    }
    paths.extend(
        also.split(|c: char| c == '"' || c.is_whitespace() || c == '(' || c == ')')
            .filter(|w| w.starts_with('/') && is_library(w))
            .map(|w| w.split('+').next().unwrap_or(w).to_owned()),
    );
    let packages = packages(&paths);
    let versions = versions(packages.values());
    paths
        .into_iter()
        .map(|path| {
            let package = packages.get(&path).cloned();
            Library {
                build_id: build_id(&path),
                version: package.as_ref().and_then(|p| versions.get(p).cloned()),
                package,
                path,
            }
        })
        .collect()
}

fn is_library(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|name| name.ends_with(".so") || name.contains(".so."))
}

/// The table a maintainer reads.
pub(super) fn text(libraries: &[Library]) -> String {
    let mut out = String::from(
        "Shared libraries loaded by diagnose (the runtime, its ICD loader and their dependencies), clmulti with those of its libraries the runs loaded (its tracer, its layer, its emulated driver), and those named in the failing calls' stacks.\nbuild ID: the ELF .note.gnu.build-id (debuginfod, `eu-unstrip`, `gdb` find symbols by it); package: `dpkg -S`, version: `dpkg-query`.\n\n",
    );
    for l in libraries {
        let _ = writeln!(
            out,
            "{}\n  build ID {}\n  package  {}\n",
            l.path,
            l.build_id
                .as_deref()
                .unwrap_or("none (no .note.gnu.build-id, or not readable)"),
            match (&l.package, &l.version) {
                (Some(p), Some(v)) => format!("{p} {v}"),
                (Some(p), None) => p.clone(),
                _ => "none known to dpkg (built or installed outside the package manager)".into(),
            }
        );
    }
    out
}

/// `dpkg -S` for every path (and its other spelling on a merged /usr): path ->
/// package.
fn packages(paths: &BTreeSet<String>) -> BTreeMap<String, String> {
    let spellings = |p: &str| {
        let mut all = vec![p.to_owned()];
        if let Some(rest) = p.strip_prefix("/usr/lib/") {
            all.push(format!("/lib/{rest}"));
        } else if let Some(rest) = p.strip_prefix("/lib/") {
            all.push(format!("/usr/lib/{rest}"));
        }
        if let Ok(real) = std::fs::canonicalize(p) {
            all.push(real.display().to_string());
        }
        all
    };
    let asked: Vec<String> = paths.iter().flat_map(|p| spellings(p)).collect();
    let Ok(out) = Command::new("dpkg").arg("-S").args(&asked).output() else {
        return BTreeMap::new();
    };
    let found: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (package, path) = l.split_once(": ")?;
            Some((
                path.trim().to_owned(),
                package.split(',').next()?.trim().to_owned(),
            ))
        })
        .collect();
    paths
        .iter()
        .filter_map(|p| {
            spellings(p)
                .iter()
                .find_map(|s| found.get(s))
                .map(|package| (p.clone(), package.clone()))
        })
        .collect()
}

/// `dpkg-query` for the versions of `packages`.
fn versions<'a>(packages: impl Iterator<Item = &'a String>) -> BTreeMap<String, String> {
    let names: BTreeSet<&String> = packages.collect();
    if names.is_empty() {
        return BTreeMap::new();
    }
    let Ok(out) = Command::new("dpkg-query")
        .args(["-W", "-f", "${binary:Package} ${Version}\n"])
        .args(names.iter().map(|n| n.as_str()))
        .output()
    else {
        return BTreeMap::new();
    };
    let listed: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(p, v)| (p.to_owned(), v.to_owned()))
        .collect();
    names
        .into_iter()
        .filter_map(|n| {
            let bare = n.split(':').next().unwrap_or(n);
            listed
                .get(n.as_str())
                .or_else(|| {
                    listed
                        .iter()
                        .find(|(p, _)| p.split(':').next() == Some(bare))
                        .map(|(_, v)| v)
                })
                .map(|v| (n.clone(), v.clone()))
        })
        .collect()
}

/// The GNU build ID of an ELF64 little-endian file, from its `PT_NOTE` segments.
pub(super) fn build_id(path: &str) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header).ok()?;
    // "\x7fELF", 64-bit, little-endian.
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as u64;
    let u32_at = |b: &[u8], at: usize| {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default()) as u64
    };
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    let (phoff, phentsize, phnum) = (
        u64_at(&header, 32),
        u16_at(&header, 54),
        u16_at(&header, 56),
    );
    for i in 0..phnum.min(256) {
        let mut ph = [0u8; 56];
        file.seek(SeekFrom::Start(phoff + i * phentsize)).ok()?;
        file.read_exact(&mut ph).ok()?;
        // PT_NOTE
        if u32_at(&ph, 0) != 4 {
            continue;
        }
        let (offset, size) = (u64_at(&ph, 8), u64_at(&ph, 32).min(1 << 16));
        let mut notes = vec![0u8; size as usize];
        file.seek(SeekFrom::Start(offset)).ok()?;
        file.read_exact(&mut notes).ok()?;
        let mut at = 0usize;
        while at + 12 <= notes.len() {
            let (namesz, descsz, kind) = (
                u32_at(&notes, at) as usize,
                u32_at(&notes, at + 4) as usize,
                u32_at(&notes, at + 8),
            );
            let name_end = at + 12 + namesz;
            let desc = name_end.next_multiple_of(4);
            if desc + descsz > notes.len() {
                break;
            }
            // NT_GNU_BUILD_ID
            if kind == 3 && notes.get(at + 12..name_end) == Some(b"GNU\0") {
                return Some(
                    notes[desc..desc + descsz]
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect(),
                );
            }
            at = (desc + descsz).next_multiple_of(4);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_has_a_build_id_and_a_package() {
        let libc = loaded("", &[])
            .into_iter()
            .find(|l| l.path.contains("libc.so"))
            .expect("libc is mapped");
        let id = libc.build_id.expect("a build ID");
        assert_eq!(id.len(), 40, "{id}");
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(
            libc.package
                .as_deref()
                .is_some_and(|p| p.starts_with("libc6")),
            "{:?}",
            libc.package
        );
        assert!(libc.version.is_some());
        assert_eq!(build_id("/proc/self/status"), None);
    }
}
