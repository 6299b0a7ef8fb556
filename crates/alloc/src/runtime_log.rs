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
//! line is printed after the last allocation, and [`child::report_of`] takes the line
//! that starts with `{`: the log cannot cut into the report. `LogAllocationStdout`
//! (detailed lines by plain `printf`, unflushed) is never set. NEO 22.43 has no key
//! that sends the log elsewhere in a release build (its `igdrcl.log` file logger is
//! compiled into debug builds only; NEO 26's `ForcePrintsRedirection` moves it to
//! stderr or, in debug builds, to a file).

use clmulti_explain::{Report, StopReason};
use clmulti_probe::neo::{self, AllocationLog, AllocationsPerBuffer};
use clmulti_scenario::{Count, Scenario};
use clmulti_supervise::{run_child, ChildCommand};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

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

/// Runs `scenario` (one resolved run) at `buffers` and at twice as many, each in a
/// fresh child of `program` (a `clmulti` binary) with NEO's allocation log on
/// ([`neo::LOG_KEYS`] over `base_env`; the scenario's `[env]` comes on top, as in every
/// run), and returns NEO's log lines per buffer. Errors, in words for the user: a run
/// that did not create all its buffers, a platform that is not NEO, a log that stayed
/// empty.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// let case = clmulti_scenario::load_str(
///     "[devices]\nplatform = \"Intel(R) OpenCL HD Graphics\"\ncount = 2\n\
///      [env]\nNEOReadDebugKeys = \"1\"\nSetCommandStreamReceiver = \"1\"\n\
///      ProductFamilyOverride = \"dg2\"\nCreateMultipleRootDevices = \"2\"\n\
///      AUBDumpCaptureFileName = \"/dev/null\"\n",
///     "neo.toml",
/// ).map_err(|e| e.to_string())?.remove(0);
/// let clmulti = std::path::Path::new("target/release/clmulti");
/// let found = clmulti_alloc::runtime_log::neo_allocations_per_buffer(
///     clmulti, &case, 1000, &BTreeMap::new())?;
/// println!("{}", found.statement());
/// # Ok::<(), String>(())
/// ```
pub fn neo_allocations_per_buffer(
    program: &Path,
    scenario: &Scenario,
    buffers: u64,
    base_env: &BTreeMap<String, String>,
) -> Result<NeoAllocations, String> {
    if buffers == 0 {
        return Err("the allocation log needs at least one buffer per run".into());
    }
    let small = logged_run(program, scenario, buffers, base_env)?;
    let large = logged_run(program, scenario, 2 * buffers, base_env)?;
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
    case: &Scenario,
    buffers: u64,
    base_env: &BTreeMap<String, String>,
) -> Result<LoggedRun, String> {
    let mut scenario = case.clone();
    scenario.allocation.count = Count::Fixed(buffers);
    scenario.name = format!("{} (NEO allocation log, {buffers} buffers)", case.name);
    let mut env = base_env.clone();
    env.extend(
        neo::LOG_KEYS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let command = ChildCommand::scenario_run(program.to_owned(), &scenario, &env, None);
    let outcome =
        run_child(&command).map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let report = crate::child::report_of(&scenario, &outcome);
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
