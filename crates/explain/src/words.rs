//! The sentences of a verdict about causes: candidates and their tests, experiments,
//! shape findings. The reasoning ([`analysis`](crate::analysis),
//! [`experiment`](crate::experiment)) decides; this says it, each sentence with its
//! basis.

use crate::resource::Unit;
use crate::verdict::{
    Candidate, CandidateTest, Change, Experiment, Knob, ShapeAnswer, ShapeFinding, ShapeQuestion,
    Statement,
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
        knob => format!(
            "{} {} -> {}",
            knob.label(),
            unit.format(change.from as f64),
            unit.format(change.to as f64)
        ),
    }
}

fn experiment_words(e: &Experiment) -> String {
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

/// The statement a tested candidate adds to the verdict.
pub fn candidate(c: &Candidate, estimated: bool) -> Statement {
    let label = c.resource.label();
    let runs: Vec<String> = c.test.experiments().iter().map(experiment_words).collect();
    let from = format!("re-runs with {} moved", c.limit.name);
    match &c.test {
        CandidateTest::Confirmed {
            second_limit_after, ..
        } => {
            let second = second_limit_after.map_or(String::new(), |after| {
                format!(
                    "; raised, a second limit stopped the run {after} buffers past the old failure (not explained)"
                )
            });
            Statement::measured(format!(
                "confirmed: {label} at {} is the cause; lowering the limit moved the failure down as its line predicts and raising it let the run go further{second}: {}",
                c.limit.name,
                runs.join("; ")
            ))
        }
        CandidateTest::Consistent { why, .. } => Statement::inferred(
            from.clone(),
            format!(
                "consistent with {label} at {} ({why}): {}",
                c.limit.name,
                runs.join("; ")
            ),
        ),
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
                "refuted: {label} was at {} when the run failed, but {why}, so it is not the cause: {}",
                c.limit.name,
                runs.join("; ")
            ))
        }
        CandidateTest::Inconclusive { .. } => Statement::inferred(
            from,
            format!(
                "inconclusive: moving {} moved the failure, but not to where {label}'s line predicts: {}",
                c.limit.name,
                runs.join("; ")
            ),
        ),
        CandidateTest::NotTested { reason, command } => Statement::inferred(
            format!("{label} readings against {}", c.limit.name),
            format!(
                "not tested: {label} was at {} when the run failed ({reason}){}",
                c.limit.name,
                command.as_ref().map_or(String::new(), |c| format!("; to test it, run `{c}` and run clmulti again"))
            ),
        ),
        CandidateTest::Pending => {
            let unit = c.resource.unit();
            Statement::inferred(
                format!("{label} readings against {}", c.limit.name),
                format!(
                    "{label} was at {} of {} {} ({:.0}%) when the run failed, growing {} per buffer; its line meets the limit at {} buffers, the run failed at {}: a candidate cause{}, not yet tested by moving {}",
                    unit.format(c.reading),
                    c.limit.name,
                    unit.format(c.limit.value),
                    c.reading / c.limit.value * 100.0,
                    unit.format(c.per_buffer),
                    c.predicted_count,
                    c.observed_count,
                    if estimated { " (device memory estimated from the strategy and declared capacity)" } else { "" },
                    c.limit.name,
                ),
            )
        }
    }
}

/// What re-running the failing case unchanged showed, as a statement.
pub fn replicates(r: &crate::verdict::Replicates) -> Statement {
    let run = |run: &crate::verdict::ReplicateRun| {
        if run.failed {
            format!("{} ({})", run.count, seconds(run.seconds))
        } else {
            format!("{} without failing", run.count)
        }
    };
    let again: Vec<String> = r.runs.iter().skip(1).map(run).collect();
    let verdict = match r.reproduced() {
        crate::verdict::Reproduced::Yes => format!(
            "the same failure; every experiment is judged against a slack of {} buffers (three times their spread, at least {})",
            r.slack(),
            crate::thresholds::MIN_SLACK
        ),
        _ => "they do not agree (see the cause)".to_owned(),
    };
    Statement::measured(format!(
        "the failing case failed at {}; re-run unchanged, each in a fresh process: {} (counts within {} buffers of each other are one failure): {verdict}",
        r.runs.first().map_or_else(String::new, run),
        again.join(", "),
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

/// A failure that does not hold still, as a statement.
pub fn unsteady(cause: &crate::verdict::Cause) -> Statement {
    use crate::verdict::Cause;
    let list = counts;
    let text = match cause {
        Cause::NotReproducible { counts } => format!(
            "not reproducible: the same case failed at {} buffers, so no count-based cause or shape is claimed from runs within that spread",
            list(counts)
        ),
        Cause::TimeLimit { seconds: at, counts } => format!(
            "a time limit (after about {}): the failures held their time while their counts did not ({} buffers); not a limit on buffers or bytes",
            seconds(*at),
            list(counts)
        ),
        Cause::Persistent { counts } => format!(
            "the limit persists across processes: re-runs failed earlier and earlier, or at once ({} buffers), so something outside the process (a file, a daemon, the driver) keeps the count; experiments and fixes after the first run are void",
            list(counts)
        ),
        _ => String::new(),
    };
    Statement::measured(text)
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

/// A shape answer in a word or two: `bytes`, `per process`.
pub fn answer(a: ShapeAnswer) -> &'static str {
    match a {
        ShapeAnswer::Buffers => "buffers",
        ShapeAnswer::Bytes => "bytes",
        ShapeAnswer::Live => "live",
        ShapeAnswer::Cumulative => "cumulative",
        ShapeAnswer::PerContext => "per context",
        ShapeAnswer::PerProcess => "per process",
        ShapeAnswer::PerPeer => "per peer",
        ShapeAnswer::NotPerPeer => "not per peer",
        ShapeAnswer::Time => "time",
        ShapeAnswer::Count => "count",
        ShapeAnswer::Neither => "neither",
    }
}

/// The statement a shape finding adds to the verdict.
pub fn shape(f: &ShapeFinding) -> Statement {
    let runs: Vec<String> = f.experiments.iter().map(experiment_words).collect();
    let question = question(f.question);
    let Some(answer) = f.answer else {
        let why = match (&f.not_tested, &f.met_other_limit) {
            (Some(not_tested), _) => not_tested.clone(),
            (None, Some(limit)) => format!(
                "no answer: the re-run met {limit} first, a limit of its own, so its count says nothing of this one ({})",
                runs.join("; ")
            ),
            (None, None) => format!("no answer ({})", runs.join("; ")),
        };
        return Statement::measured(format!("{question}: {why}"));
    };
    let meaning = match answer {
        ShapeAnswer::Buffers => "the limit counts buffers: another size failed at the same count",
        ShapeAnswer::Bytes => "the limit counts bytes: another size failed at the same number of bytes",
        ShapeAnswer::Live => "the limit is on live buffers: capacity came back after release",
        ShapeAnswer::Cumulative => "the limit is cumulative (a leak or a counter): releasing every buffer gave no capacity back",
        ShapeAnswer::PerContext => "the limit is per context: two contexts reached twice as far",
        ShapeAnswer::PerProcess => "the limit is per process: two contexts together reached as far as one",
        ShapeAnswer::PerPeer => "the limit is per peer: one more device in the context cut the count by its share",
        ShapeAnswer::NotPerPeer => "the limit does not depend on peers: one more device left the count where it was",
        ShapeAnswer::Time => "the limit is on time: paused after each buffer, the run failed at about the same time and fewer buffers",
        ShapeAnswer::Count => "the limit is not on time: paused after each buffer, the run failed at the same count, later",
        ShapeAnswer::Neither => "the runs fit none of the simple answers",
    };
    Statement::measured(format!("{question}: {meaning} ({})", runs.join("; ")))
}

/// The statement of a failure no candidate explains.
pub fn not_explained(unmeasured: &[String], had_candidates: bool) -> Statement {
    let why = if had_candidates {
        "no candidate was confirmed by moving its limit".to_owned()
    } else {
        format!(
            "no growing resource was within one buffer's growth (or {:.0}%) of its limit with a line that meets it at the failing count",
            crate::thresholds::AT_LIMIT_SHARE * 100.0
        )
    };
    Statement::inferred(
        "every measured resource",
        format!(
            "the failure is not explained by what was measured: {why}. Not measured here: {}",
            unmeasured.join("; ")
        ),
    )
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

/// What the tracer saw fail inside the OpenCL call that stopped a run: "clCreateBuffer
/// returned CL_OUT_OF_HOST_MEMORY (-6) after ioctl(3, DRM_IOCTL_PRIME_HANDLE_TO_FD)
/// failed with EMFILE in libigdrcl.so+0x742f3c <- ...", or that nothing failed.
pub fn failing_call(report: &crate::Report) -> Option<Statement> {
    let traced = report.traced.as_ref()?;
    let crate::StopReason::Failed { error, call, .. } = &report.stop else {
        return None;
    };
    let returned = format!("{} returned {error}", call.c_name());
    let Some(last) = traced.failing_calls.last() else {
        return Some(Statement::measured(format!(
            "{returned} with no system call failing inside it: the runtime refused by itself (clmulti's tracer saw {})",
            clmulti_probe::trace::UNSEEN
        )));
    };
    let earlier = match traced.failing_calls.len() {
        1 => String::new(),
        n => format!(
            " ({n} calls failed inside it; the first: {})",
            traced.failing_calls[0].summary()
        ),
    };
    let in_layer = last
        .stack
        .first()
        .is_some_and(|f| f.module == clmulti_scenario::LAYER.file_name);
    let layer = if in_layer {
        " (inside clmulti's emulation layer: the policy it emulates made the call)"
    } else {
        ""
    };
    Some(Statement::measured(format!(
        "{returned} after {} in {}{layer}{earlier} [traced by clmulti-trace, which sees {}]",
        last.summary(),
        last.where_(4),
        clmulti_probe::trace::UNSEEN
    )))
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

/// The errnos a call returns when a resource's limit is reached.
fn errnos_at_limit(resource: &crate::Resource) -> &'static [&'static str] {
    use crate::Resource;
    match resource {
        Resource::OpenFds | Resource::DmabufFds => &["EMFILE", "ENFILE"],
        Resource::MemoryMaps | Resource::VirtualSize | Resource::DataSize => &["ENOMEM"],
        Resource::Threads => &["EAGAIN"],
        Resource::LockedMemory => &["ENOMEM", "EAGAIN", "EPERM"],
        _ => &[],
    }
}

/// The errno of the run's failing call, when it is one a call gets with `resource`
/// at its limit.
pub fn failing_errno_of<'a>(resource: &crate::Resource, run: &'a crate::Report) -> Option<&'a str> {
    let call = run.traced.as_ref()?.failing_calls.last()?;
    errnos_at_limit(resource)
        .contains(&call.errno_name.as_str())
        .then_some(call.errno_name.as_str())
}

/// Whether the call that failed inside the shared run agrees with the cause its
/// readings name: the errno that limit gives, or not (both are then shown).
pub fn call_agrees(resource: &crate::Resource, run: &crate::Report) -> Option<Statement> {
    let call = run.traced.as_ref()?.failing_calls.last()?;
    let expected = errnos_at_limit(resource);
    if expected.is_empty() {
        return None;
    }
    let basis = format!("the failing call and the {} readings", resource.label());
    Some(if expected.contains(&call.errno_name.as_str()) {
        Statement::inferred(
            basis,
            format!(
                "the failing call agrees with the readings: {} is what a call gets when {} is at its limit",
                call.errno_name,
                resource.label()
            ),
        )
    } else {
        Statement::inferred(
            basis,
            format!(
                "the failing call does not agree with the readings: {} failed with {}, while {} at its limit gives {}: one of them is not the cause; both are shown",
                call.call,
                call.errno_name,
                resource.label(),
                expected.join(" or ")
            ),
        )
    })
}
