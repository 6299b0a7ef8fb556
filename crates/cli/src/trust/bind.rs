//! Trust at planning, and again at each run. Planning reads every distinct `[env]`
//! of a file's runs once ([`assess`]): what each loads, why it needs no word or whose
//! it has, and what the user's word binds (each library's real path and content, each
//! folder's real path) into a [`Binding`]. Each run is then [`prepare`]d right before
//! its process starts: every path is resolved again; a library only the user's word
//! covers is opened without following links, copied into a sealed anonymous file
//! while its SHA-256 is checked, and handed to the loader by that file
//! (`/proc/self/fd/N`), so what loads is byte for byte what was trusted, however the
//! file changes after; a file that changed is refused. A vendors folder that is not
//! the system's or this checkout's is handed over as `.icd` files clmulti writes in a
//! folder of its own, naming what it checked.

use super::loads::{entry, trusted, Entry, Item, Load, LoadKind, Origin, Trusted};
use super::store::{self, Record};
use clmulti_scenario::ScenarioFile;
use clmulti_supervise::PrivateFolder;
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the user's word and `--allow` bind, for the runs of one file.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    origin: Origin,
    /// Each library loaded by the user's word: real path, SHA-256.
    files: BTreeMap<PathBuf, String>,
    /// Each folder, or file written, by the user's word: real (or resolved) path.
    places: BTreeSet<PathBuf>,
}

impl Binding {
    /// For a scenario clmulti made itself (a diagnose case): only what needs no word.
    pub fn own() -> Self {
        Binding {
            origin: Origin {
                folder: None,
                libraries: clmulti_scenario::default_libraries(),
            },
            ..Binding::default()
        }
    }

    /// This binding and a folder clmulti made for the run (a second process's home).
    pub fn with_place(mut self, folder: PathBuf) -> Self {
        self.places
            .insert(std::fs::canonicalize(&folder).unwrap_or(folder));
        self
    }
}

/// A file's loads as planned, and what its runs may load.
#[derive(Debug, Clone)]
pub struct Assessment {
    /// Every load of every run, each once.
    pub loads: Vec<Load>,
    /// What the runs are checked against.
    pub binding: Binding,
}

impl Assessment {
    /// The loads no run may make as the file is: needing a word, or in the way.
    pub fn refused(&self) -> Vec<&Load> {
        self.loads.iter().filter(|l| !l.may_run()).collect()
    }
}

/// Where a scenario's paths start, and where clmulti's libraries are.
fn origin_of(file: &ScenarioFile) -> Origin {
    Origin {
        folder: file.folder().map(Path::to_path_buf),
        libraries: file.libraries().map(Path::to_path_buf),
    }
}

/// Every distinct item the file's runs name, each once.
fn items_of(file: &ScenarioFile, origin: &Origin) -> Vec<Item> {
    let mut seen = BTreeSet::new();
    let mut items = Vec::new();
    for (_, env) in file.envs() {
        for (key, value) in &env {
            for item in entry_items(entry(key, value, origin)) {
                if seen.insert(item.load.clone()) {
                    items.push(item);
                }
            }
        }
    }
    items
}

fn entry_items(entry: Entry) -> Vec<Item> {
    match entry {
        Entry::Inert => Vec::new(),
        Entry::Paths { items, .. } => items,
        Entry::Vendors { icds, folder, .. } => {
            icds.into_iter().map(|(_, i)| i).chain(folder).collect()
        }
        Entry::Setting(item) => vec![item],
    }
}

/// Where a path-valued load is: its real path, else the path it resolves to.
fn place(item: &Item) -> PathBuf {
    item.real
        .clone()
        .unwrap_or_else(|| PathBuf::from(&item.load.path))
}

/// The SHA-256 of a regular file, opened without following a link or waiting.
fn hash_of(path: &Path) -> Result<String, String> {
    let mut file = open_regular(path)?;
    store::digest_of(&mut file).map_err(|e| format!("{}: {e}", path.display()))
}

fn open_regular(path: &Path) -> Result<std::fs::File, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    if !regular {
        return Err(format!("{}: not a regular file", path.display()));
    }
    Ok(file)
}

/// The file's loads as planned, with the user's word (its record) and `allowed`
/// applied, and what its runs are checked against.
pub fn assess(file: &ScenarioFile, allowed: &[PathBuf]) -> Assessment {
    let origin = origin_of(file);
    let record = file
        .real_path()
        .and_then(|real| store::find(real, &store::digest(file.text().as_bytes())));
    let allowed: Vec<PathBuf> = allowed
        .iter()
        .map(|a| std::fs::canonicalize(a).unwrap_or_else(|_| a.clone()))
        .collect();
    let mut binding = Binding {
        origin: origin.clone(),
        ..Binding::default()
    };
    let mut loads = Vec::new();
    for mut item in items_of(file, &origin) {
        if item.load.trusted.is_none() && item.load.problem.is_none() {
            if let Some(record) = &record {
                by_record(&mut item, record, &mut binding);
            }
            if item.load.trusted.is_none() && item.load.kind != LoadKind::Setting {
                by_allowance(&mut item, &allowed, &mut binding);
            }
        }
        loads.push(item.load);
    }
    loads.sort();
    Assessment { loads, binding }
}

/// The user's word for `item`, when the record gives it as the item is now.
fn by_record(item: &mut Item, record: &Record, binding: &mut Binding) {
    let at = place(item);
    match item.load.kind {
        LoadKind::Setting => item.load.trusted = Some(Trusted::ByYou),
        LoadKind::Library => {
            let Some(recorded) = record.files.iter().find(|f| f.path == at) else {
                item.load.note = Some("not among the files you trusted with this scenario".into());
                return;
            };
            match hash_of(&at) {
                Ok(now) if now == recorded.sha256 => {
                    item.load.trusted = Some(Trusted::ByYou);
                    binding.files.insert(at, now);
                }
                _ => item.load.note = Some("changed since you trusted it".into()),
            }
        }
        _ if record.places.contains(&at) => {
            item.load.trusted = Some(Trusted::ByYou);
            binding.places.insert(at);
        }
        _ => item.load.note = Some("not among the places you trusted with this scenario".into()),
    }
}

/// `--allow PATH` for `item`: a library as it is now, a folder by its real path.
fn by_allowance(item: &mut Item, allowed: &[PathBuf], binding: &mut Binding) {
    let at = place(item);
    if !allowed.iter().any(|a| at.starts_with(a)) {
        return;
    }
    if item.load.kind == LoadKind::Library {
        let Ok(now) = hash_of(&at) else { return };
        binding.files.insert(at, now);
    } else {
        binding.places.insert(at);
    }
    item.load.trusted = Some(Trusted::Allowed);
}

/// The record `clmulti trust` writes for `file` as it is: every library that needs a
/// word by its real path and content, every folder or file written by its real
/// path. An error names what cannot be trusted (a load in the way, a library that
/// is not there to be read).
pub fn record_for(file: &ScenarioFile) -> Result<Record, String> {
    let scenario = file
        .real_path()
        .ok_or("text without a file cannot be trusted")?
        .to_path_buf();
    let origin = origin_of(file);
    let mut record = Record {
        scenario,
        sha256: store::digest(file.text().as_bytes()),
        files: Vec::new(),
        places: Vec::new(),
    };
    let mut problems = Vec::new();
    for item in items_of(file, &origin) {
        let load = &item.load;
        if let Some(problem) = &load.problem {
            problems.push(format!("{}: {problem}", load.words()));
            continue;
        }
        match (load.trusted, load.kind) {
            (Some(_), _) | (None, LoadKind::Setting) => {}
            (None, LoadKind::Library) => match hash_of(&place(&item)) {
                Ok(sha256) => record.files.push(store::Hashed {
                    path: place(&item),
                    sha256,
                }),
                Err(why) => problems.push(format!(
                    "{}: {why} (trust binds a library by its content: it must be there)",
                    load.words()
                )),
            },
            (None, _) => record.places.push(place(&item)),
        }
    }
    match problems.is_empty() {
        true => Ok(record),
        false => Err(problems.join("; ")),
    }
}

/// A run's environment as its process gets it, and the files it inherits: held
/// until the process has ended.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The `[env]` with every path resolved and checked, libraries by open file.
    pub env: BTreeMap<String, String>,
    /// The open files the links in `env`'s paths lead to (`/proc/self/fd/N`).
    pub inherit: Vec<Arc<OwnedFd>>,
    /// clmulti's own folder for what it hands over: `.icd` files, and a link per
    /// library to its sealed copy, named as the library is (what the loader and the
    /// tracer call it).
    folder: Option<PrivateFolder>,
}

impl Prepared {
    /// A fresh sub-folder of clmulti's own folder for this run.
    fn subfolder(&mut self) -> Result<PathBuf, String> {
        if self.folder.is_none() {
            let folder = PrivateFolder::new("handed")
                .map_err(|e| format!("a folder of clmulti's own: {e}"))?;
            self.folder = Some(folder);
        }
        let root = self
            .folder
            .as_ref()
            .map(|f| f.path().to_path_buf())
            .unwrap_or_default();
        let path = root.join(
            std::fs::read_dir(&root)
                .map_or(0, |d| d.count())
                .to_string(),
        );
        std::fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }
}

/// A run's `[env]` checked again right before its process starts, as [`Binding`]
/// allows (see the module's words); an error names what changed since planning.
pub fn prepare(env: &BTreeMap<String, String>, binding: &Binding) -> Result<Prepared, String> {
    let mut prepared = Prepared::default();
    for (key, value) in env {
        let value = match entry(key, value, &binding.origin) {
            Entry::Inert | Entry::Setting(_) => value.clone(),
            Entry::Paths { separator, items } => {
                let mut parts = Vec::new();
                for item in &items {
                    parts.push(handed_over(item, binding, &mut prepared)?);
                }
                parts.join(&separator.to_string())
            }
            Entry::Vendors { real, icds, folder } => {
                if let Some(item) = folder {
                    return Err(refusal(&item.load));
                }
                vendors(real, &icds, binding, &mut prepared)?
            }
        };
        prepared.env.insert(key.clone(), value);
    }
    Ok(prepared)
}

fn refusal(load: &Load) -> String {
    match &load.problem {
        Some(problem) => format!("{}: {problem}", load.words()),
        None => format!(
            "{}: trusted by no one as it is now (it changed, or a link in its path did, since the run was planned)",
            load.words()
        ),
    }
}

/// What the process is given for one path: the path itself where no one else could
/// have changed it, a library the user's word covers by a sealed copy.
fn handed_over(item: &Item, binding: &Binding, prepared: &mut Prepared) -> Result<String, String> {
    let load = &item.load;
    if load.problem.is_some() {
        return Err(refusal(load));
    }
    match (load.trusted, &item.real) {
        // A bare name, or /dev/null.
        (Some(Trusted::System), None) => return Ok(load.path.clone()),
        (Some(_), Some(real)) => return Ok(real.display().to_string()),
        _ => {}
    }
    let at = place(item);
    match binding.files.get(&at) {
        Some(sha256) if load.kind == LoadKind::Library => {
            let copy =
                sealed_copy(&at, sha256).map_err(|why| format!("{}: {why}", load.words()))?;
            // Through a link named as the library is: what the loader and the tracer
            // call it.
            let name = at.file_name().unwrap_or(at.as_os_str());
            let link = prepared.subfolder()?.join(name);
            std::os::unix::fs::symlink(format!("/proc/self/fd/{}", copy.as_raw_fd()), &link)
                .map_err(|e| format!("{}: {e}", link.display()))?;
            prepared.inherit.push(Arc::new(copy));
            Ok(link.display().to_string())
        }
        _ if load.kind != LoadKind::Library && binding.places.contains(&at) => {
            Ok(at.display().to_string())
        }
        _ => Err(refusal(load)),
    }
}

/// A vendors value handed over: the system's or this checkout's folder as it is,
/// anything else as `.icd` files clmulti writes, each naming what was checked.
fn vendors(
    real: Option<PathBuf>,
    icds: &[(String, Item)],
    binding: &Binding,
    prepared: &mut Prepared,
) -> Result<String, String> {
    let Some(real) = real else {
        return Ok(String::new());
    };
    let safe = |path: &Path| {
        trusted(LoadKind::SearchPath, path, Some(path), &binding.origin)
            .is_some_and(|t| matches!(t, Trusted::System | Trusted::ThisCheckout))
    };
    let files_safe = icds.iter().all(|(name, item)| {
        let file = if real.is_dir() {
            real.join(name)
        } else {
            real.clone()
        };
        item.load.trusted.is_some()
            && item.load.trusted != Some(Trusted::Allowed)
            && item.load.trusted != Some(Trusted::ByYou)
            && std::fs::canonicalize(&file).is_ok_and(|f| safe(&f))
    });
    if safe(&real) && files_safe {
        return Ok(real.display().to_string());
    }
    let folder = prepared.subfolder()?;
    for (name, item) in icds {
        let library = handed_over(item, binding, prepared)?;
        std::fs::write(folder.join(name), format!("{library}\n"))
            .map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    Ok(folder.display().to_string())
}

/// A copy of the library at `path` in a sealed anonymous file, its SHA-256 checked
/// while it is copied: nothing can change it after, and the loader maps exactly it.
fn sealed_copy(path: &Path, sha256: &str) -> Result<OwnedFd, String> {
    use std::io::{Read, Write};
    let mut source = open_regular(path)?;
    // Named by its path (`/memfd:PATH` in the process's maps), or by its file name
    // where the path is longer than a name may be.
    let whole = path.display().to_string();
    let shown = match whole.len() <= 240 {
        true => whole,
        false => path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
    };
    let name = std::ffi::CString::new(shown.into_bytes()).unwrap_or_else(|_| c"library".to_owned());
    let copy = memfd(&name).map_err(|e| format!("cannot make a sealed copy: {e}"))?;
    let mut out = std::fs::File::from(copy);
    let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = source.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        sha2::Digest::update(&mut hasher, &chunk[..n]);
        out.write_all(&chunk[..n]).map_err(|e| e.to_string())?;
    }
    let now: String = sha2::Digest::finalize(hasher)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if now != sha256 {
        return Err("changed since it was trusted (its SHA-256 differs): refused".into());
    }
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on a descriptor this function owns.
    if unsafe { libc::fcntl(out.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(format!(
            "cannot seal the copy: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(OwnedFd::from(out))
}

/// An anonymous file that may be sealed and mapped executable (MFD_EXEC where the
/// kernel knows it), closed on exec unless handed over.
fn memfd(name: &std::ffi::CStr) -> std::io::Result<OwnedFd> {
    const MFD_EXEC: libc::c_uint = 0x10;
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    for extra in [MFD_EXEC, 0] {
        // SAFETY: memfd_create with a NUL-terminated name; the descriptor is owned below.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), flags | extra) };
        if fd >= 0 {
            // SAFETY: a fresh descriptor nothing else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINVAL) {
            return Err(error);
        }
    }
    Err(std::io::Error::last_os_error())
}
