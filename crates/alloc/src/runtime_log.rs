//! The runtime's own account of what it allocated: NEO's allocation log, per buffer.
//!
//! Intel's GPU runtime NEO prints a line per graphics allocation when
//! `LogAllocationType=1` (read with `NEOReadDebugKeys=1`, in release builds too, on real
//! Arc GPUs as in AUB mode): [`clmulti_probe::neo`] parses it. This module runs the same
//! case twice, each in a fresh child (`clmulti run --child`), at N and 2N buffers with
//! the log on, and gives the log lines per buffer by type: what NEO allocates once (queues,
//! tags, heaps) cancels out, what it allocates for each buffer remains. Statements made
//! from it are "[measured: NEO's own allocation log]".
//!
//! NEO prints the log on stdout, the stream the child prints its JSON report on. Each
//! log line is flushed as it is printed (`printDebugString` ends in `fflush`), the report
//! line is printed after the last allocation, and [`Report::from_child`] takes the line
//! that starts with `{`: the log cannot cut into the report. `LogAllocationStdout`
//! (detailed lines by plain `printf`, unflushed) is never set. NEO 22.43 has no key
//! that sends the log elsewhere in a release build (its `igdrcl.log` file logger is
//! compiled into debug builds only; NEO 26's `ForcePrintsRedirection` moves it to
//! stderr or, in debug builds, to a file).

use crate::child::{self, ChildCommand};
use crate::report::{Report, StopReason};
use clmulti_probe::neo::{self, AllocationLog, AllocationsPerBuffer};
use clmulti_scenario::ScenarioFile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One child run with NEO's allocation log on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoggedRun {
    /// Buffers the run created.
    pub buffers: u64,
    /// NEO's log, counted.
    pub log: AllocationLog,
    /// The run's report.
    pub report: Report,
}

/// NEO's allocation log lines per buffer for one case: [`neo_allocations_per_buffer`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NeoAllocations {
    /// The run at N buffers.
    pub small: LoggedRun,
    /// The run at 2N buffers.
    pub large: LoggedRun,
    /// `(count(2N) - count(N)) / N`, by type (and pool and root device where the log
    /// says them).
    pub per_buffer: AllocationsPerBuffer,
}

impl NeoAllocations {
    /// "NEO's allocation log per buffer: BUFFER 2.00, BUFFER_HOST_MEMORY 2.00 (runs of
    /// 1000 and 2000 buffers, each in a fresh process) [measured: NEO's own allocation
    /// log]".
    pub fn statement(&self) -> String {
        let (a, b) = self.per_buffer.buffers;
        format!(
            "NEO's allocation log per buffer: {} (log lines of LogAllocationType=1; runs of {a} and {b} buffers, each in a fresh process) [measured: NEO's own allocation log]",
            self.per_buffer.summary()
        )
    }
}

/// A file in the temp folder, removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs the case `scenario_text(count)` at `buffers` and at twice as many, each in a
/// fresh child of `program` (a `clmulti` binary) with NEO's allocation log on
/// ([`neo::LOG_KEYS`] over `base_env`; the scenario's `[env]` comes on top, as in every
/// run), and returns NEO's log lines per buffer.
///
/// `scenario_text` gives a whole scenario file (one run: no grid) whose
/// `[allocation] count` is its argument; relative paths in its `[env]` are resolved
/// against the temp folder, so give absolute ones. Errors, in words for the user: a
/// run that did not create all its buffers, a platform that is not NEO, a log that
/// stayed empty.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// let case = |count: u64| format!(
///     "[devices]\nplatform = \"Intel(R) OpenCL HD Graphics\"\ncount = 2\n\
///      [allocation]\ncount = {count}\n[env]\nNEOReadDebugKeys = \"1\"\n\
///      SetCommandStreamReceiver = \"1\"\nProductFamilyOverride = \"dg2\"\n\
///      CreateMultipleRootDevices = \"2\"\nAUBDumpCaptureFileName = \"/dev/null\"\n");
/// let clmulti = std::path::Path::new("target/release/clmulti");
/// let found = clmulti_alloc::runtime_log::neo_allocations_per_buffer(
///     clmulti, &case, 1000, &BTreeMap::new())?;
/// println!("{}", found.statement());
/// # Ok::<(), String>(())
/// ```
pub fn neo_allocations_per_buffer(
    program: &Path,
    scenario_text: &dyn Fn(u64) -> String,
    buffers: u64,
    base_env: &BTreeMap<String, String>,
) -> Result<NeoAllocations, String> {
    if buffers == 0 {
        return Err("the allocation log needs at least one buffer per run".into());
    }
    let small = logged_run(program, &scenario_text(buffers), buffers, base_env)?;
    let large = logged_run(program, &scenario_text(2 * buffers), 2 * buffers, base_env)?;
    let per_buffer =
        AllocationLog::per_buffer(&small.log, small.buffers, &large.log, large.buffers)
            .ok_or("the two runs created the same number of buffers")?;
    Ok(NeoAllocations {
        small,
        large,
        per_buffer,
    })
}

fn logged_run(
    program: &Path,
    text: &str,
    buffers: u64,
    base_env: &BTreeMap<String, String>,
) -> Result<LoggedRun, String> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = TempFile(std::env::temp_dir().join(format!(
        "clmulti-neo-log-{}-{n}-{buffers}.toml",
        std::process::id()
    )));
    std::fs::write(&file.0, text).map_err(|e| format!("{}: {e}", file.0.display()))?;
    let loaded = ScenarioFile::load(&file.0).map_err(|e| e.to_string())?;
    if loaded.len() != 1 {
        return Err(format!(
            "the allocation log runs one case at a time; this scenario expands to {} runs",
            loaded.len()
        ));
    }
    let scenario = loaded.run(0).map_err(|e| e.to_string())?;
    let mut env = base_env.clone();
    env.extend(
        neo::LOG_KEYS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let command = ChildCommand::scenario_run(program.to_owned(), &file.0, 0, &scenario, &env, None);
    let outcome = child::run_child(&command)
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let report = Report::from_child(&scenario, &outcome);
    if !matches!(report.stop, StopReason::Completed) || report.buffers != buffers {
        return Err(format!(
            "{}: the run with NEO's allocation log made {} of {buffers} buffers and stopped: {}",
            scenario.name,
            report.buffers,
            report.stop.summary()
        ));
    }
    if !neo::is_neo(&report.platform) {
        return Err(format!(
            "{}: ran on \"{}\", not Intel's GPU runtime NEO: only NEO prints an allocation log",
            scenario.name, report.platform
        ));
    }
    let log = AllocationLog::parse(&outcome.stdout);
    if log.allocation_lines() == 0 {
        return Err(format!(
            "{}: NEO printed no allocation log with LogAllocationType=1 (NEO reads it only with NEOReadDebugKeys=1)",
            scenario.name
        ));
    }
    Ok(LoggedRun {
        buffers: report.buffers,
        log,
        report,
    })
}
