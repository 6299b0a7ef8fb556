//! What a child tells its parent, through a progress file it inherits: that it loads
//! the runtime, its setup, every sample, and its report last (stdout and stderr stay
//! the runtime's); the envelope is [`clmulti_contract::progress`]'s, and its payloads
//! move here as JSON text, for the caller to read. Also the resolved scenario a
//! parent hands a child.

use clmulti_contract::progress::{Kind, LOADED, LOADING, PROGRESS_ENV};
use std::io::Write;
use std::path::Path;

/// The most of a progress file that is read back, bytes.
const PROGRESS_MAX: u64 = 256 << 20;

/// What a child reported as it went; payloads as the JSON it wrote.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// It was about to load the OpenCL runtime (`clGetPlatformIDs`).
    pub loading: bool,
    /// `clGetPlatformIDs` returned.
    pub loaded: bool,
    /// Its setup: platform, devices, limits (a report with nothing measured).
    pub started: Option<String>,
    /// Its samples, in order: read only when no report came (the report holds
    /// them all).
    pub samples: Vec<String>,
    /// Its report (whole JSON: a line cut short by a crash is none), written here
    /// and not on stdout: stdout and stderr are the runtime's (and may be anything).
    pub report: Option<String>,
}

/// The progress descriptor this process adopted, for its report.
static PROGRESS_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Writes a run's progress for the parent: used by the child.
#[derive(Debug)]
pub struct ProgressWriter {
    /// Never closed: the report goes through it last ([`Self::report_to_parent`]),
    /// after the writer is gone; the process's exit closes it.
    file: std::mem::ManuallyDrop<std::fs::File>,
    /// The line being written, kept between lines: a sample is written with no
    /// allocation once the first has sized it.
    line: Vec<u8>,
}

impl ProgressWriter {
    /// The writer named by [`PROGRESS_ENV`], if the parent set it. A descriptor
    /// this process inherited (`/dev/fd/N`) is taken over, not opened again: under
    /// `[limits] nofile` every descriptor counts.
    pub fn from_env() -> Option<Self> {
        let path = std::env::var_os(PROGRESS_ENV)?;
        let file = match inherited_fd(Path::new(&path)) {
            Some(fd) => {
                use std::os::fd::FromRawFd;
                // SAFETY: the harness left this descriptor open for this process
                // alone; it is adopted once (the variable is removed below) and
                // closed on exec so that nothing this process starts keeps it.
                unsafe {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    std::fs::File::from_raw_fd(fd)
                }
            }
            None => std::fs::OpenOptions::new().append(true).open(&path).ok()?,
        };
        std::env::remove_var(PROGRESS_ENV);
        use std::os::fd::AsRawFd;
        PROGRESS_FD.store(file.as_raw_fd(), std::sync::atomic::Ordering::SeqCst);
        Some(ProgressWriter {
            file: std::mem::ManuallyDrop::new(file),
            line: Vec::new(),
        })
    }

    /// Writes `loading` and `loaded` around the runtime's loading
    /// ([`clmulti_probe::on_loading`]): a crash, an exit or a hang between the two is
    /// the runtime's loading.
    pub fn mark_loading(&self) {
        use std::os::fd::AsRawFd;
        static FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
        fn hook(loading: bool) {
            let fd = FD.load(std::sync::atomic::Ordering::SeqCst);
            let line = if loading { LOADING } else { LOADED };
            // SAFETY: one write of a static line to the progress descriptor.
            unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
        }
        if FD.swap(self.file.as_raw_fd(), std::sync::atomic::Ordering::SeqCst) == -1 {
            clmulti_probe::on_loading(hook);
        }
    }

    /// Writes the run's report to the progress file this process adopted (the
    /// parent reads it there; stdout stays the runtime's); `false` when there is none.
    pub fn report_to_parent(report: &impl serde::Serialize) -> bool {
        let fd = PROGRESS_FD.load(std::sync::atomic::Ordering::SeqCst);
        let Ok(json) = serde_json::to_string(report) else {
            return false;
        };
        if fd < 0 {
            return false;
        }
        let line = Kind::Report.line(&json);
        let mut written = 0;
        while written < line.len() {
            // SAFETY: writing the rest of `line` to the adopted progress descriptor.
            let n =
                unsafe { libc::write(fd, line.as_ptr().add(written).cast(), line.len() - written) };
            if n <= 0 {
                return false;
            }
            written += n as usize;
        }
        true
    }

    /// Writes one `kind\tJSON` line: the engine's setup and samples as they come.
    pub fn write_line(&mut self, kind: Kind, value: &impl serde::Serialize) {
        self.line.clear();
        self.line.extend_from_slice(kind.word().as_bytes());
        self.line.push(b'\t');
        if serde_json::to_writer(&mut self.line, value).is_ok() {
            self.line.push(b'\n');
            // One write per line: a crash leaves whole lines.
            let _ = self.file.write_all(&self.line);
        }
    }
}

/// `N` for a path `/dev/fd/N` naming an open descriptor of this process.
fn inherited_fd(path: &Path) -> Option<i32> {
    let fd: i32 = path.to_str()?.strip_prefix("/dev/fd/")?.parse().ok()?;
    // SAFETY: F_GETFD only asks whether the descriptor is open.
    (fd > 2 && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0).then_some(fd)
}

/// The resolved scenario a harness handed over ([`ChildCommand::resolved`]), read
/// whole; an inherited descriptor is closed after, so the run keeps no descriptor
/// it did not open.
pub fn read_resolved(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    if let Some(fd) = inherited_fd(path) {
        // SAFETY: the harness's descriptor, read above and used nowhere else.
        unsafe { libc::close(fd) };
    }
    Ok(text)
}

/// How far the parent has read a running child's progress file: read at its own
/// offset (`pread`), never moving the file's, which the child writes at.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    /// The newest sample written since the last look (its JSON), if any.
    pub(crate) fn latest_sample(&mut self, file: &std::fs::File) -> Option<String> {
        use std::os::unix::fs::FileExt;
        let mut chunk = vec![0u8; 1 << 16];
        let mut latest = None;
        while let Ok(n) = file.read_at(&mut chunk, self.offset) {
            if n == 0 {
                break;
            }
            self.offset += n as u64;
            self.partial.extend_from_slice(&chunk[..n]);
            while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.partial.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line[..end]);
                if let Some((Kind::Sample, json)) = Kind::parse(&line) {
                    latest = Some(json.to_owned());
                }
            }
            // A line longer than a sample ever is: not a sample, not kept.
            if self.partial.len() > PROGRESS_LINE_MAX {
                self.partial.clear();
            }
        }
        latest
    }
}

/// The longest progress line the parent keeps while a child runs, bytes.
const PROGRESS_LINE_MAX: usize = 16 << 20;

/// What the progress file holds, read in one go once the child ended: the report as
/// written (a line a crash cut short fails to parse where it is read), the samples
/// kept as written only when no report came.
pub(crate) fn read_progress(file: std::fs::File) -> Progress {
    use std::os::unix::fs::FileExt;
    let mut progress = Progress::default();
    let size = file.metadata().map_or(0, |m| m.len()).min(PROGRESS_MAX);
    let mut text = vec![0u8; size as usize];
    let mut read = 0;
    while read < text.len() {
        match file.read_at(&mut text[read..], read as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    text.truncate(read);
    let text = String::from_utf8_lossy(&text);
    let mut samples = Vec::new();
    for line in text.lines() {
        if line == LOADING.trim_end() {
            progress.loading = true;
        } else if line == LOADED.trim_end() {
            progress.loaded = true;
        }
        match Kind::parse(line) {
            Some((Kind::Started, json)) => progress.started = Some(json.to_owned()),
            Some((Kind::Report, json)) => progress.report = whole_json(json),
            Some((Kind::Sample, json)) => samples.push(json),
            None => {}
        }
    }
    // The samples stand in for a report that never came: kept only then.
    if progress.report.is_none() {
        progress.samples = samples.into_iter().filter_map(whole_json).collect();
    }
    progress
}

/// `json`, when it is JSON to its end: a line a crash cut short is not.
fn whole_json(json: &str) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(json)
        .is_ok()
        .then(|| json.to_owned())
}
