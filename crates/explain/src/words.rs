//! The sentences of a verdict about causes: candidates and their tests, experiments,
//! shape findings. The reasoning ([`analysis`](crate::analysis),
//! [`experiment`](crate::experiment)) decides; this says it, each sentence with its
//! basis.

use crate::resource::Unit;
use crate::verdict::{
    Candidate, CandidateTest, Change, Experiment, Knob, ShapeFinding, ShapeQuestion, Statement,
};

/// A change in words: `soft RLIMIT_NOFILE 1024 -> 512`.
pub fn change(change: &Change) -> String {
    let unit = if change.knob.in_bytes() {
        Unit::Bytes
    } else {
        Unit::Count
    };
    match &change.knob {
        Knob::ReleaseEvery => format!("every buffer released after each {}", change.to),
        Knob::Replicate => format!("unchanged (replicate {})", change.to),
        Knob::Pause => format!("a pause of {} us after each buffer", change.to),
        Knob::Wait => format!(
            "unchanged, after a wait of {}",
            seconds(change.to as f64 / 1000.0)
        ),
        Knob::ReleasePause => format!(
            "a pause of {} after each release",
            seconds(change.to as f64 / 1e6)
        ),
        Knob::Sibling { place } => format!(
            "beside a second process {} holding {} buffers",
            place.words(),
            change.to
        ),
        Knob::Observe => "unchanged, watched by a system-call observer".into(),
        Knob::OnlyDevice => format!("device {} alone", change.to),
        knob => format!(
            "{} {} -> {}",
            knob.label(),
            unit.format(change.from as f64),
            unit.format(change.to as f64)
        ),
    }
}

/// One experiment in words: `soft RLIMIT_NOFILE 1024 -> 512: failed: ... at 12 ms
/// (before 1014, predicted 502)`.
pub(crate) fn experiment_words(e: &Experiment) -> String {
    let predicted = e
        .predicted_count
        .map_or(String::new(), |p| format!(", predicted {p}"));
    let seconds = e
        .observed_seconds
        .map_or(String::new(), |s| format!(" at {}", seconds(s)));
    format!(
        "{}: {}{seconds} (before {}{predicted})",
        change(&e.change),
        e.stop,
        e.before_count
    )
}

/// What the experiments on one candidate did, as a statement of what they measured;
/// what they mean for the cause is the cause's claim ([`cause`]).
pub fn candidate(c: &Candidate, estimated: bool) -> Statement {
    let label = c.resource.label();
    let runs: Vec<String> = c.test.experiments().iter().map(experiment_words).collect();
    let limit = &c.limit.name;
    match &c.test {
        CandidateTest::Confirmed {
            second_limit_after, ..
        } => {
            let second = second_limit_after.map_or(String::new(), |after| {
                format!(
                    "; raised, the run stopped {after} buffers past the old failure with {label} short of its raised limit: a second limit (not explained)"
                )
            });
            Statement::measured(format!(
                "confirmed: {label} at {limit} is the cause; lowering the limit moved the failure down as its line predicts and raising it let the run go further{second}"
            ))
            .with_detail(runs.join("; "))
        }
        CandidateTest::Consistent { why, .. } => Statement::measured(format!(
            "{label} at {limit}: lowering the limit moved the failure as its line predicts; raising it could not be tried"
        ))
        .with_detail(format!("{why}; {}", runs.join("; "))),
        CandidateTest::Refuted { experiments } => {
            let lowered_moved = experiments
                .first()
                .is_some_and(|e| e.outcome == crate::verdict::ExperimentOutcome::AsPredicted);
            let why = if lowered_moved {
                "lowering the limit moved the failure down as predicted, but raising it left the failure where it was: it is a limit, not the one this run met"
            } else {
                "moving the limit left the failure where it was"
            };
            Statement::measured(format!(
                "refuted: {label} was at {limit} when the run failed, but {why}, so it is not the cause"
            ))
            .with_detail(runs.join("; "))
        }
        CandidateTest::Inconclusive { experiments } => {
            let at_once = experiments
                .iter()
                .any(|e| e.outcome == crate::verdict::ExperimentOutcome::FailedAtOnce);
            Statement::measured(format!(
                "inconclusive: moving {limit} {}",
                if at_once {
                    "made the run fail at once (the runtime uses the limit's value some other way)"
                } else {
                    "moved the failure, but not to where its line predicts"
                },
            ))
            .with_detail(runs.join("; "))
        }
        CandidateTest::NotTested { reason, command } => Statement::inferred(
            format!("{label} readings against {limit}"),
            format!(
                "not tested: {label} was at {limit} when the run failed ({reason}){}",
                command.as_ref().map_or(String::new(), |c| format!("; to test it, run `{c}` and run clmulti again"))
            ),
        ),
        CandidateTest::Pending => {
            let unit = c.resource.unit();
            Statement::inferred(
                format!("{label} readings against {limit}"),
                format!(
                    "{label} was at {} of {limit} {} ({:.0}%) when the run failed, growing {} per buffer; its line meets the limit at {} buffers, the run failed at {}: a candidate cause{}, not yet tested by moving {limit}",
                    unit.format(c.reading),
                    unit.format(c.limit.value),
                    c.reading / c.limit.value * 100.0,
                    unit.format(c.per_buffer),
                    c.predicted_count,
                    c.observed_count,
                    if estimated { " (device memory estimated from the strategy and declared capacity)" } else { "" },
                ),
            )
        }
    }
}

/// The cause claim as a statement, inferred from `basis`
/// ([`crate::cause::cause_basis`]: what ran).
pub fn cause(claim: crate::claim::Claim, basis: String) -> Statement {
    Statement::claim(basis, "", claim)
}

/// What the run could not read, where no limit it read explains the failure.
pub fn not_measured(unmeasured: &[String]) -> Statement {
    // The lead of each item (before its parenthesis) names it; the rest is detail.
    let names: Vec<&str> = unmeasured
        .iter()
        .map(|u| u.split(" (").next().unwrap_or(u).trim())
        .collect();
    Statement::measured(format!(
        "not measured here, so not ruled out: {}",
        names.join("; ")
    ))
    .with_detail(unmeasured.join("; "))
}

/// What re-running the failing case unchanged showed: the counts, and the claim they
/// make about the failure.
pub fn replicates(r: &crate::verdict::Replicates, claim: crate::claim::Claim) -> Statement {
    let run = |run: &crate::verdict::ReplicateRun| {
        if run.failed {
            format!("{} ({})", run.count, seconds(run.seconds))
        } else {
            format!("{} without failing", run.count)
        }
    };
    let again: Vec<String> = r.runs.iter().skip(1).map(run).collect();
    let waited = r.after_wait.as_ref().map_or(String::new(), |w| {
        format!(
            "; after a wait of {}, {}",
            seconds(w.wait_seconds),
            run(&w.run)
        )
    });
    let slack = match r.reproduced() {
        crate::verdict::Reproduced::Yes => format!(
            "; every experiment is judged against a slack of {} buffers (three times their spread, at least {})",
            r.slack(),
            crate::thresholds::MIN_SLACK
        ),
        _ => String::new(),
    };
    let lead = format!(
        "the failing case failed at {}; re-run unchanged, each in a fresh process: {}{waited}. ",
        r.runs.first().map_or_else(String::new, run),
        again.join(", "),
    );
    Statement::claim("the failing case re-run unchanged", &lead, claim).with_detail(format!(
        "counts within {} buffers of each other are one failure{slack}",
        r.tolerance
    ))
}

/// A time in the unit that shows it: `4 ms`, `0.40 s`, `12.3 s`.
pub fn seconds(s: f64) -> String {
    if s < 0.1 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 10.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.1} s")
    }
}

/// Counts in a list: `58, 460, 486`.
pub fn counts(counts: &[u64]) -> String {
    counts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A shape question in words: `buffers or bytes`.
pub fn question(q: ShapeQuestion) -> &'static str {
    match q {
        ShapeQuestion::CountOrBytes => "buffers or bytes",
        ShapeQuestion::LiveOrCumulative => "live or cumulative",
        ShapeQuestion::PerContextOrProcess => "per context or per process",
        ShapeQuestion::PerPeer => "per peer",
        ShapeQuestion::TimeOrCount => "time or count",
    }
}

/// The statement a shape finding adds to the verdict: its claim, or why it was not
/// asked.
pub fn shape(f: &ShapeFinding) -> Statement {
    let question = question(f.question);
    let Some(claim) = &f.claim else {
        return Statement::measured(format!(
            "{question}: not asked: {}",
            f.not_tested
                .as_deref()
                .unwrap_or("no re-run could answer it")
        ));
    };
    let runs: Vec<String> = f.experiments.iter().map(experiment_words).collect();
    let statement = Statement::claim("re-runs of the failing case", "", claim.clone());
    if runs.is_empty() {
        return statement;
    }
    statement.with_detail(format!("runs: {}", runs.join("; ")))
}

/// A resource that stayed up after release, in words: `host RSS stayed 12.00 MiB
/// above its start (80.00 MiB -> peak 100.00 MiB -> 92.00 MiB after release)`.
pub fn not_returned(n: &crate::report::NotReturned) -> String {
    let unit = n.resource.unit();
    format!(
        "{} stayed {} above its start ({} -> peak {} -> {} after release)",
        n.resource.label(),
        unit.format(n.after - n.before),
        unit.format(n.before),
        unit.format(n.peak),
        unit.format(n.after)
    )
}

/// One kernel-driver count in words, singular: `exports` -> "dma-buf export"; a traced
/// call's key (`ioctl:DRM_IOCTL_I915_GEM_CREATE_EXT:local`, `mmap`) as the call.
fn kernel_count_name(key: &str) -> Option<String> {
    if let Some(request) = key.strip_prefix("ioctl:") {
        return Some(match request.rsplit_once(':') {
            Some((name, region)) if !name.contains('(') => {
                format!("{name} ioctl ({region} memory)")
            }
            _ => format!("{request} ioctl"),
        });
    }
    if matches!(
        key,
        "open"
            | "mmap"
            | "munmap"
            | "mremap"
            | "mprotect"
            | "memfd_create"
            | "pipe"
            | "socket"
            | "dup"
            | "eventfd"
            | "epoll_create"
            | "timerfd_create"
            | "pthread_create"
            | "mlock"
    ) {
        return Some(format!("{key} call"));
    }
    if let Some(rest) = key.strip_prefix("objects-") {
        let (device, region) = rest.split_once('-')?;
        return Some(format!("GEM object in {region} (device {device})"));
    }
    if let Some(rest) = key.strip_prefix("deferred-objects-") {
        let (device, region) = rest.split_once('-')?;
        return Some(format!(
            "GEM object created with DEFER_BACKING in {region} (device {device})"
        ));
    }
    if let Some(rest) = key.strip_prefix("resident-bytes-") {
        let (device, region) = rest.split_once('-')?;
        return Some(format!("resident bytes in {region} (device {device})"));
    }
    Some(
        match key {
            "maps" => "CPU mapping of a GEM object",
            "exports" => "dma-buf export kept open (a descriptor)",
            "imports" => "import on a peer device",
            "userptrs" => "userptr object",
            "execbuffers" => "submission (execbuffer)",
            "post-sync-writes" => "post-sync write",
            "evictions" => "eviction from device memory",
            "files" => "render-node file",
            "vms" => "GPU address space",
            "contexts" => "GPU context",
            "failed-ioctls" => "failed ioctl",
            "vm-binds" => "VM bind of a GEM object (xe)",
            "vm-unbinds" => "VM unbind (xe)",
            "vm-prefetches" => "VM prefetch (xe)",
            "exec-queues" => "exec queue (xe)",
            "execs" => "submission (xe exec)",
            "user-fence-writes" => "user fence written (xe)",
            "syncobjs" => "syncobj",
            "madvises" => "memory advice (xe madvise)",
            _ => return None,
        }
        .to_owned(),
    )
}

/// "1 GEM object in system0 (device 0), 1 CPU mapping of a GEM object, ..." for one
/// case's counts per buffer (figures below 0.01 a buffer left out).
pub fn kernel_counts_list(per_buffer: &std::collections::BTreeMap<String, f64>) -> String {
    let items: Vec<String> = per_buffer
        .iter()
        .filter(|(_, v)| v.abs() >= 0.01)
        .filter_map(|(k, v)| {
            let name = kernel_count_name(k)?;
            Some(if k.starts_with("resident-bytes-") {
                format!("{} {name}", crate::Unit::Bytes.format(*v))
            } else {
                format!("{} {name}", figure(*v))
            })
        })
        .collect();
    if items.is_empty() {
        "nothing".into()
    } else {
        items.join(", ")
    }
}

/// A count per buffer: whole when it is (`1`), else two decimals (`0.50`).
pub fn figure(v: f64) -> String {
    if (v - v.round()).abs() < 0.005 {
        format!("{:+}", v.round() as i64)
            .trim_start_matches('+')
            .to_owned()
    } else {
        format!("{v:.2}")
    }
}

/// What the runtime itself printed just before the run failed (its debug log, kept in
/// the report around clmulti's mark): the lines that speak of an error.
pub fn runtime_log(report: &crate::Report) -> Option<Statement> {
    let at = report
        .stdout_tail
        .rfind(clmulti_probe::trace::FAILURE_MARK)?;
    let before: Vec<&str> = report.stdout_tail[..at].lines().rev().take(60).collect();
    let said: Vec<&str> = before
        .iter()
        .rev()
        .copied()
        .filter(|l| {
            let l = l.to_lowercase();
            l.contains("errno") || l.contains("error") || l.contains("fail")
        })
        .collect();
    let quoted: Vec<String> = said
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(|l| format!("\"{}\"", l.trim()))
        .collect();
    Some(Statement::measured(if before.is_empty() {
        format!(
            "{}: the runtime printed nothing before the failure",
            report.run_name
        )
    } else if quoted.is_empty() {
        format!("{}: the runtime's own log says nothing of an error in its last {} lines before the failure (kept in the run's report)", report.run_name, before.len())
    } else {
        format!(
            "{}: the runtime's own log just before the failure: {}",
            report.run_name,
            quoted.join("; ")
        )
    }))
}

/// `text` with every path to one of clmulti's libraries cut to its file name
/// (`/home/u/clmulti/target/release/libclmulti_layer.so` -> `libclmulti_layer.so`): a
/// page never names the folder a build was made in, whatever report it reads.
pub fn library_file_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("libclmulti_") {
        let start = rest[..at]
            .rfind(|c: char| c.is_whitespace() || "(\"'=:,".contains(c))
            .map_or(0, |p| p + 1);
        let path = &rest[start..at];
        out.push_str(&rest[..start]);
        if !path.ends_with('/') {
            out.push_str(path);
        }
        out.push_str("libclmulti_");
        rest = &rest[at + "libclmulti_".len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod library_names_tests {
    #[test]
    fn build_folders_are_cut_from_library_paths() {
        assert_eq!(
            super::library_file_names(
                "ran under the OpenCL layer /work/main/target/gpu/libclmulti_layer.so: what"
            ),
            "ran under the OpenCL layer libclmulti_layer.so: what"
        );
        assert_eq!(
            super::library_file_names(
                "(target/release/libclmulti_kmd_emu.so), libclmulti_trace.so"
            ),
            "(libclmulti_kmd_emu.so), libclmulti_trace.so"
        );
    }
}
