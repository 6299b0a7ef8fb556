//! `clmulti bench`: the engine's allocation rate against a plain `clCreateBuffer`
//! loop on the same device. Each arm of each round runs in a fresh process (a warm
//! runtime or reused memory would favour whichever runs second), the order
//! alternates, every arm runs long enough not to be noise (the count is raised until
//! the plain loop takes `--min-seconds`), and the verdict comes from the median ratio
//! and its 95% interval: "not resolved" when the interval straddles the target, with
//! the rounds that would resolve it at the spread seen (the rounds are fixed before
//! the first: stopping at the first interval that clears the target would make it
//! cover less than it says).
//! SIGINT or SIGTERM stops it after the arm in flight and reports the rounds that
//! finished (a second one ends it at once).
//!
//! Each process draws its own rate (on an H200 node, 480 000 to 740 000
//! `clCreateBuffer` a second, the same in both arms, pinned or not), so the ratio's
//! spread shrinks only with rounds: `--jobs N` plays N rounds at a time on a host
//! with the cores for it, each arm's memory bound a N-th of the one arm's share.
//! The arms of all rounds then share the host alike, which the ratio cancels.

use crate::format::{self, table, Format};
use crate::{note, Failure};
use clmulti_probe::{ClCode, DeviceRequest};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::time::Duration;

mod arm;
mod rounds;
mod stats;
use arm::run_arm;
use rounds::play_rounds;
use stats::{median, median_interval, rounds_needed, verdict};

/// The engine's rate should be at least this share of the plain loop's.
const TARGET: f64 = 0.95;
/// The confidence of the median's interval.
const CONFIDENCE: f64 = 0.95;
/// Calibration runs at most, each raising the count toward `--min-seconds`.
const CALIBRATIONS: usize = 4;
/// Share of the host's available memory the buffers of one arm may take.
const MEMORY_SHARE: f64 = 0.25;
/// The most rounds `--rounds` takes.
const MAX_ROUNDS: u32 = 1000;
/// The most rounds `--jobs` plays at a time.
const MAX_JOBS: u32 = 64;
/// The longest `--min-seconds` (each arm of each round runs about this long).
const MAX_MIN_SECONDS: f64 = 600.0;
/// The plain loop reads its RSS every this many buffers against its memory bound.
const PLAIN_RSS_EVERY: u64 = 4096;
/// The share of an arm's memory bound a calibrated count may fill, at the RSS per
/// buffer measured at a smaller count.
const CAP_SHARE: f64 = 0.8;
/// Host bytes every buffer costs at least (its handle, the runtime's bookkeeping):
/// a `--count` whose buffers cannot fit at this cost is refused before any arm runs.
const MIN_BYTES_PER_BUFFER: u64 = 64;

/// Arguments of `clmulti bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Device selector `PLATFORM[:DEVICE]`.
    #[arg(long, default_value = "auto", value_parser = crate::devices::selector)]
    device: String,
    /// Buffers per arm to start from; raised until an arm takes --min-seconds.
    #[arg(long, allow_negative_numbers = true, default_value_t = 20_000, value_parser = crate::values::whole_in::<u64>(1..=u64::MAX))]
    count: u64,
    /// Buffer size.
    #[arg(long, allow_hyphen_values = true, default_value = "1MiB")]
    size: String,
    /// Rounds (each runs both arms, in fresh processes); at least 6 for a 95% interval.
    /// A busy machine's arms vary by a fifth from round to round: 21 rounds put the
    /// interval within a few percent of the median.
    #[arg(long, allow_negative_numbers = true, default_value_t = 21, value_parser = crate::values::whole_in::<u32>(1..=u64::from(MAX_ROUNDS)))]
    rounds: u32,
    /// Rounds played at a time (at most 64, and no more than --rounds), each arm still
    /// its own process. On a host with cores to spare, N at a time give N times the
    /// rounds in the same time; each arm's memory bound is then a N-th of the quarter
    /// one arm may take. Calibration runs one arm alone: with N beyond the free cores
    /// the arms share cores and run slower than it measured (both arms alike).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1, value_parser = crate::values::whole_in::<u32>(1..=u64::from(MAX_JOBS)))]
    jobs: u32,
    /// Seconds the plain loop of one arm should take at least (the count is raised
    /// to reach it, within a quarter of the available memory).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.5, value_parser = min_seconds)]
    min_seconds: f64,
    /// The engine's sampling interval.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1000, value_parser = crate::values::whole_in::<u64>(1..=u64::MAX))]
    sample_every: u64,
    /// The target ratio (default 0.95); exit 1 when the interval lies wholly below it.
    #[arg(long, allow_negative_numbers = true, value_name = "RATIO", value_parser = crate::values::ratio)]
    require: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Internal: run one arm in this process and print its rate.
    #[arg(long, hide = true, value_enum)]
    arm: Option<Arm>,
    /// Internal: the arm's bound on its host memory, bytes.
    #[arg(long, hide = true)]
    memory_bound: Option<u64>,
}

impl Args {
    /// Rounds played at a time: `--jobs`, at most `--rounds`.
    fn jobs(&self) -> u32 {
        self.jobs.min(self.rounds).max(1)
    }

    /// Whether this process is one arm (a child the bench's harness watches).
    pub fn is_arm(&self) -> bool {
        self.arm.is_some()
    }
}

fn min_seconds(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= MAX_MIN_SECONDS)
        .ok_or_else(|| format!("{text}: expected seconds above 0 and at most {MAX_MIN_SECONDS}"))
}

/// One side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Arm {
    /// A plain loop calling clCreateBuffer.
    Plain,
    /// clmulti's engine on the same scenario.
    Engine,
}

/// What one arm's process reports.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct ArmResult {
    /// Allocations per second.
    rate: f64,
    /// Seconds the allocations took.
    seconds: f64,
    /// Host RSS gained per buffer, bytes.
    rss_per_buffer: f64,
}

#[derive(Debug, Serialize)]
struct Round {
    plain: f64,
    engine: f64,
    ratio: f64,
    plain_seconds: f64,
    engine_seconds: f64,
}

/// Whether the engine met the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    /// The whole interval is at or above the target.
    Met,
    /// The whole interval is below it.
    NotMet,
    /// The interval straddles it (or there are too few rounds for one).
    NotResolved,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::NotMet => "NOT met",
            Verdict::NotResolved => "not resolved",
        }
    }
}

#[derive(Debug, Serialize)]
struct BenchReport {
    schema_version: u32,
    device: String,
    /// Buffers per arm, after calibration.
    count: u64,
    size_bytes: u64,
    /// The plain loop's seconds at each calibration count.
    calibration: Vec<(u64, f64)>,
    /// Whether a quarter of the available memory held the count below what
    /// `--min-seconds` asked for.
    count_capped_by_memory: bool,
    rounds: Vec<Round>,
    ratio_min: f64,
    ratio_median: f64,
    ratio_max: f64,
    /// Distribution-free interval of the median ratio (order statistics), when the
    /// rounds allow one.
    ratio_interval: Option<(f64, f64)>,
    /// Its coverage (at least `CONFIDENCE`).
    interval_coverage: Option<f64>,
    target: f64,
    verdict: Verdict,
    /// The rounds asked for (`--rounds`); `rounds` holds fewer when stopped early.
    rounds_asked: u32,
    /// Rounds played at a time (`--jobs`).
    jobs: u32,
    /// Wall-clock seconds from the first round's start to the last finished round's
    /// end (calibration apart).
    rounds_seconds: f64,
    /// The signal that stopped the bench before every round ran (`SIGTERM`).
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<String>,
    /// When not resolved: about how many rounds would put the interval wholly on one
    /// side of the target, were the median and the spread to stay as they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    rounds_needed: Option<u32>,
}

/// What one arm's buffers may take of the host: a quarter of what is left, the
/// smaller of its available memory and its cgroup's headroom (which counts the page
/// tables and kernel memory RSS does not).
fn memory_bound() -> u64 {
    let available = clmulti_probe::UsageReader::open()
        .system()
        .and_then(|s| s.available_bytes)
        .unwrap_or(1 << 30);
    let left = available.min(clmulti_probe::own_cgroup_headroom().unwrap_or(u64::MAX));
    (left as f64 * MEMORY_SHARE) as u64
}

/// Runs one arm in a fresh process, watched: killed when it outlives `--min-seconds`
/// many times over (a hung runtime), at once on a second Ctrl-C.
fn spawn_arm(arm: Arm, args: &Args, count: u64, memory: u64) -> Result<ArmResult, Failure> {
    use clmulti_supervise::{run_child, INTERRUPT};
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Tool(format!("cannot find own binary: {e}")))?;
    let arm_name = match arm {
        Arm::Plain => "plain",
        Arm::Engine => "engine",
    };
    let command = arm_command(exe, arm_name, args, count, memory);
    crate::verbose!(
        "bench: child: {} {}",
        command.program.display(),
        command
            .args
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let started = std::time::Instant::now();
    let out =
        run_child(&command).map_err(|e| Failure::Tool(format!("cannot run a bench arm: {e}")))?;
    crate::verbose!(
        "bench: the {arm_name} arm exited with {} after {:.3} s: {}",
        out.status,
        started.elapsed().as_secs_f64(),
        out.stdout.trim()
    );
    if let Some(signal) = INTERRUPT.signal() {
        return Err(Failure::Interrupted(signal));
    }
    match out
        .stdout
        .lines()
        .find_map(|l| serde_json::from_str::<ArmResult>(l).ok())
    {
        Some(r) if out.status.success() => Ok(r),
        _ => {
            let why = why_arm_failed(&out, command.timeout);
            Err(match out.status.code() {
                Some(2) => Failure::Input(why),
                _ => Failure::Tool(format!("the {arm_name} arm failed: {why}")),
            })
        }
    }
}

/// An arm's command line: this binary's `bench --arm`, with a timeout for loading,
/// a calibrated arm (about `--min-seconds`) and its release, with room.
fn arm_command(
    exe: std::path::PathBuf,
    arm_name: &str,
    args: &Args,
    count: u64,
    memory: u64,
) -> clmulti_supervise::ChildCommand {
    clmulti_supervise::ChildCommand {
        program: exe,
        args: [
            "bench",
            "--arm",
            arm_name,
            "--device",
            &args.device,
            "--size",
            &args.size,
            "--count",
            &count.to_string(),
            "--sample-every",
            &args.sample_every.to_string(),
            "--memory-bound",
            &memory.to_string(),
        ]
        .map(std::ffi::OsString::from)
        .to_vec(),
        env: Default::default(),
        timeout: Duration::from_secs(120) + Duration::from_secs_f64(args.min_seconds * 20.0),
        interrupt: Some(&clmulti_supervise::INTERRUPT),
        interrupt_grace: Duration::ZERO,
        abandon_when: None,
        resolved: None,
        placement: Default::default(),
        inherit: Vec::new(),
    }
}

/// Why an arm gave no figures: its time ran out, a signal, or its error line.
fn why_arm_failed(out: &clmulti_supervise::ChildOutcome, timeout: Duration) -> String {
    use std::os::unix::process::ExitStatusExt;
    if out.timed_out {
        format!("did not end within {:.0} s", timeout.as_secs_f64())
    } else if let Some(signal) = out.status.signal() {
        format!("crashed with {}", clmulti_contract::signal_name(signal))
    } else {
        let err = out.stderr_tail.as_str();
        err.lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or(err.trim())
            .to_owned()
    }
}

/// What calibration found.
struct Calibration {
    /// Buffers per arm.
    count: u64,
    /// The plain loop's seconds at each count tried.
    tried: Vec<(u64, f64)>,
    /// Whether the memory held the count below what `--min-seconds` needs.
    capped: bool,
}

/// The count at which one arm's plain loop takes `min_seconds`, raised from
/// `count` by measuring, and at most what `memory_bytes` holds at the RSS per buffer
/// measured.
fn calibrate(args: &Args, memory_bytes: f64) -> Result<Calibration, Failure> {
    let mut count = args.count;
    let mut tried = Vec::new();
    let mut capped = false;
    for _ in 0..CALIBRATIONS {
        let plain = match spawn_arm(Arm::Plain, args, count, memory_bytes as u64) {
            Ok(plain) => plain,
            // A raised count the bound did not hold after all: the last that ran stands.
            Err(Failure::Input(_)) if !tried.is_empty() => {
                count = tried.last().map_or(count, |&(c, _)| c);
                capped = true;
                break;
            }
            Err(e) => return Err(e),
        };
        tried.push((count, plain.seconds));
        if plain.seconds >= args.min_seconds {
            break;
        }
        // 20% beyond the estimate: a larger count can run at another rate.
        let wanted = count as f64 * args.min_seconds / plain.seconds.max(1e-6) * 1.2;
        // Within 80% of the bound: a buffer's RSS grows a little with the count.
        let cap = CAP_SHARE * memory_bytes / plain.rss_per_buffer.max(64.0);
        capped = wanted > cap;
        let next = wanted.min(cap).ceil() as u64;
        if next <= count {
            break;
        }
        count = next;
    }
    Ok(Calibration {
        count,
        tried,
        capped,
    })
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let size = clmulti_scenario::parse_size(&args.size)
        .map_err(|e| Failure::Input(format!("--size: {e}")))?;
    if size == 0 {
        return Err(Failure::Input(
            "--size: a buffer must have at least 1 byte".into(),
        ));
    }
    if let Some(arm) = args.arm {
        return run_arm(arm, args, size);
    }
    let (_, devices) = crate::axpy::devices_from_args(std::slice::from_ref(&args.device), None)?;
    let device = format!(
        "{} {}",
        devices[0].info().selector,
        devices[0].info().display_name()
    );
    let memory = memory_for(args.count, args.jobs())?;
    say_if_jobs_share_cores(args.jobs());
    let Calibration {
        count,
        tried: calibration,
        capped,
    } = calibrate(args, memory as f64).map_err(|e| match e {
        Failure::Interrupted(signal) => stopped_before_a_round(signal),
        other => other,
    })?;
    note!(
        "bench: {device}; {count} buffers of {} per arm (the plain loop took {:.3} s at that count or the one before), engine sampling every {}; each arm in a fresh process{}",
        clmulti_scenario::format_size(size),
        calibration.last().map_or(0.0, |c| c.1),
        args.sample_every,
        match args.jobs() {
            1 => String::new(),
            n => format!(", {n} rounds at a time"),
        }
    );
    let rounds::Played {
        rounds,
        stopped_by,
        seconds: rounds_seconds,
    } = play_rounds(args, count, memory)?;
    let mut ratios: Vec<f64> = rounds.iter().map(|r| r.ratio).collect();
    ratios.sort_by(f64::total_cmp);
    let interval = median_interval(&ratios, CONFIDENCE);
    let target = args.require.unwrap_or(TARGET);
    let verdict = verdict(interval, target);
    let report = BenchReport {
        schema_version: 3,
        device,
        count,
        size_bytes: size,
        calibration,
        count_capped_by_memory: capped,
        ratio_min: ratios[0],
        ratio_median: median(&ratios),
        ratio_max: ratios[ratios.len() - 1],
        ratio_interval: interval.map(|(low, high, _)| (low, high)),
        interval_coverage: interval.map(|(_, _, coverage)| coverage),
        target,
        verdict,
        rounds,
        rounds_asked: args.rounds,
        jobs: args.jobs(),
        rounds_seconds,
        stopped_by: stopped_by.map(clmulti_contract::signal_name),
        rounds_needed: (verdict == Verdict::NotResolved)
            .then(|| rounds_needed(&ratios, target))
            .flatten(),
    };
    say_verdict(args, &report, stopped_by)
}

/// More rounds at a time than cores: the arms share them.
fn say_if_jobs_share_cores(jobs: u32) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    if jobs > cores {
        note!(
            "bench: --jobs {jobs} on {cores} core(s): the arms share cores and run slower than calibration measured them (both arms alike; the ratio stands, its spread may not)"
        );
    }
}

/// One arm's bound on host memory (a `jobs`-th of the arms' quarter), once
/// `--count` buffers fit in it.
fn memory_for(count: u64, jobs: u32) -> Result<u64, Failure> {
    let memory = memory_bound() / u64::from(jobs.max(1));
    if count.saturating_mul(MIN_BYTES_PER_BUFFER) > memory {
        let share = match jobs {
            1 => "a quarter of the available memory".to_owned(),
            n => format!("a quarter of the available memory over --jobs {n}"),
        };
        return Err(Failure::Input(format!(
            "--count {count}: at {MIN_BYTES_PER_BUFFER} B of host memory per buffer at least, that passes the bench's bound of {} ({share}): use --count {} or less",
            clmulti_scenario::format_bytes(memory as f64),
            memory / MIN_BYTES_PER_BUFFER
        )));
    }
    Ok(memory)
}

fn stopped_before_a_round(signal: i32) -> Failure {
    note!(
        "bench: stopped by {} before a round finished: nothing to report",
        clmulti_contract::signal_name(signal)
    );
    Failure::Interrupted(signal)
}

/// The report in the format asked, and the exit: a stop, or a rate below `--require`.
fn say_verdict(args: &Args, report: &BenchReport, stopped_by: Option<i32>) -> Result<(), Failure> {
    match args.format {
        Format::Json => format::print_json(report)?,
        Format::Text => format::write_stdout(&bench_text(report, args.min_seconds))?,
    }
    if let Some(signal) = stopped_by {
        return Err(Failure::Interrupted(signal));
    }
    if args.require.is_some() && report.verdict == Verdict::NotMet {
        return Err(Failure::Tool(format!(
            "the engine's rate is below --require {} of the plain loop's (median {:.3}, 95% interval below it)",
            report.target, report.ratio_median
        )));
    }
    Ok(())
}

fn bench_text(report: &BenchReport, min_seconds: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "device {}", report.device);
    let mut rows = vec![vec![
        "round".to_owned(),
        "plain alloc/s".into(),
        "clmulti alloc/s".into(),
        "ratio".into(),
        "plain s".into(),
        "clmulti s".into(),
    ]];
    for (i, r) in report.rounds.iter().enumerate() {
        rows.push(vec![
            (i + 1).to_string(),
            format!("{:.0}", r.plain),
            format!("{:.0}", r.engine),
            format!("{:.3}", r.ratio),
            format!("{:.3}", r.plain_seconds),
            format!("{:.3}", r.engine_seconds),
        ]);
    }
    let _ = write!(out, "{}", table(&rows));
    if let Some(signal) = &report.stopped_by {
        let _ = writeln!(
            out,
            "  stopped by {signal} after {} of {} rounds: the figures below are those rounds'",
            report.rounds.len(),
            report.rounds_asked
        );
    }
    if report.count_capped_by_memory {
        let _ = writeln!(
                out,
            "  note: a quarter of the available memory held the count below what {min_seconds} s per arm needs: rounds are shorter, and noisier"
        );
    }
    let interval = match (report.ratio_interval, report.interval_coverage) {
        (Some((low, high)), Some(coverage)) => format!(
            "{:.0}% interval {low:.3} to {high:.3} (order statistics, {:.1}% coverage)",
            CONFIDENCE * 100.0,
            coverage * 100.0
        ),
        _ => format!(
            "no {:.0}% interval from {} rounds (6 at least)",
            CONFIDENCE * 100.0,
            report.rounds.len()
        ),
    };
    let _ = writeln!(
                out,
        "verdict [measured]: the engine allocates at {:.3} (median of {} rounds; {interval}; min {:.3}, max {:.3}) of a plain clCreateBuffer loop's rate, {} buffers per arm; target >= {}: {}",
        report.ratio_median,
        report.rounds.len(),
        report.ratio_min,
        report.ratio_max,
        report.count,
        report.target,
        report.verdict.text()
    );
    if report.verdict == Verdict::NotResolved {
        let _ = match report.rounds_needed {
            Some(n) => writeln!(
                out,
                "  to resolve it: about {n} rounds (--rounds {n}) at this spread, were the median to stay where it is: {} at this run's pace ({:.2} s a round, --jobs {})",
                duration_words(report.rounds_seconds / report.rounds.len().max(1) as f64 * f64::from(n)),
                report.rounds_seconds / report.rounds.len().max(1) as f64,
                report.jobs
            ),
            None => writeln!(
                out,
                "  to resolve it: the median sits too near the target for any number of rounds up to {MAX_ROUNDS} to tell, at this spread"
            ),
        };
    }
    out
}

/// `seconds` as a person reads a wait: "40 s", "12 min", "3.5 h".
fn duration_words(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("about {seconds:.0} s")
    } else if seconds < 5400.0 {
        format!("about {:.0} min", seconds / 60.0)
    } else {
        format!("about {:.1} h", seconds / 3600.0)
    }
}
