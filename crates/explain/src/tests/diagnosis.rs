//! The diagnosis over a hand-built matrix: what sharing costs, the cause only when
//! confirmed, a limit of the process, the release check, the fixes.

use crate::diagnosis::{fixes_for, Diagnosis, Fix, FixOutcome, Outcome, Placed, Role};
use crate::experiment::{investigate, Runner};
use crate::testing::run;
use crate::verdict::Change;
use crate::Report;
use clmulti_scenario::{ContextMode, Rlimit};

/// One descriptor per buffer, 10 open before the first, under soft RLIMIT_NOFILE
/// 1024: unchanged, a re-run fails at 1014 again; more devices change nothing.
struct Fds;

impl Runner for Fds {
    fn run(&mut self, changes: &[Change], count: u64) -> Result<Report, crate::experiment::NotRun> {
        let soft = match changes[0].knob {
            crate::verdict::Knob::SoftLimit { .. } => changes[0].to,
            _ => 1024,
        };
        // One descriptor a buffer, whatever the devices: what the runtime did.
        Ok(crate::testing::run(2, ContextMode::Shared)
            .fds(10.0, 1.0)
            .limit(Rlimit::NoFile, soft, Some(4096))
            .failed_at(soft.saturating_sub(10).min(count)))
    }
}

fn matrix(one: Report, shared: Report, per: Report) -> Vec<(Role, Report)> {
    vec![
        (Role::OneDevice, one),
        (Role::Shared, shared),
        (Role::PerDevice, per),
    ]
}

fn diagnose(runs: &[(Role, Report)]) -> Diagnosis {
    let placed: Vec<Placed<'_>> = runs
        .iter()
        .map(|(role, report)| Placed {
            role: *role,
            report,
        })
        .collect();
    Diagnosis::new(&placed, &[])
}

fn verdict(d: &Diagnosis) -> String {
    d.verdict.iter().map(|s| format!("{s}\n")).collect()
}

fn at_fd_limit(devices: usize, mode: ContextMode, fails_at: u64) -> Report {
    run(devices, mode)
        .fds(10.0, 1.0)
        .limit(Rlimit::NoFile, 1024, Some(4096))
        .failed_at(fails_at)
}

#[test]
fn nothing_failed_and_sharing_costs_nothing() {
    let d = diagnose(&matrix(
        run(1, ContextMode::Shared).completed(10000),
        run(2, ContextMode::Shared).completed(10000),
        run(2, ContextMode::PerDevice).completed(10000),
    ));
    let v = verdict(&d);
    assert!(v.contains("[measured] no run failed"), "{v}");
    assert!(v.contains("adds no measurable cost per buffer"), "{v}");
    assert!(d.investigation.is_none());
    assert_eq!(d.fix_lines()[0], "[inferred from the runs' readings] not needed: the shared context neither failed nor heads for a limit the per-device contexts do not");
    assert_eq!(
        d.answer()[1..],
        [
            "Sharing a context adds no measurable cost per buffer (create).".to_owned(),
            "No shared context failed (create).".to_owned()
        ]
    );
}

#[test]
fn system_shmem_moving_less_than_a_page_per_buffer_is_not_a_cost_of_sharing() {
    // Other processes move Shmem: a few hundred bytes per buffer, either way, is theirs.
    let d = diagnose(&matrix(
        run(1, ContextMode::Shared)
            .shmem(1e8, 151.0)
            .completed(10000),
        run(2, ContextMode::Shared)
            .shmem(1e8, -250.0)
            .completed(10000),
        run(2, ContextMode::PerDevice)
            .shmem(1e8, 165.0)
            .completed(10000),
    ));
    let v = verdict(&d);
    assert!(v.contains("adds no measurable cost per buffer"), "{v}");
    assert!(!v.contains("Shmem"), "{v}");
    // A page or more per buffer is the run's own.
    let d = diagnose(&matrix(
        run(1, ContextMode::Shared).completed(10000),
        run(2, ContextMode::Shared)
            .shmem(1e8, 1048576.0)
            .completed(10000),
        run(2, ContextMode::PerDevice).completed(10000),
    ));
    // Even a megabyte a buffer: other processes move it too, and no control ran
    // over the same span.
    let v = verdict(&d);
    assert!(!v.contains("Shmem"), "{v}");
    assert!(d.sharing_costs.iter().all(|c| !c.resource.system_wide()));
}

#[test]
fn a_shared_case_stopped_part_way_assesses_no_fix() {
    let mut shared = run(2, ContextMode::Shared).completed(500);
    shared.stop = crate::StopReason::interrupted(15);
    let d = diagnose(&[
        (
            Role::OneDevice,
            run(1, ContextMode::Shared).completed(10000),
        ),
        (Role::Shared, shared),
    ]);
    assert_eq!(
        d.fix_lines(),
        ["[not run] not assessed: the shared context was stopped part way (interrupted)"]
    );
}

#[test]
fn a_fix_that_did_not_work_reached_further_only_beyond_run_to_run_noise() {
    let mut d = diagnose(&matrix(
        run(1, ContextMode::Shared).completed(10000),
        at_fd_limit(2, ContextMode::Shared, 2470),
        run(2, ContextMode::PerDevice).completed(10000),
    ));
    let did_not_work = |fix: Fix, buffers: u64| FixOutcome {
        fix,
        outcome: Outcome::DidNotWork {
            buffers,
            stop: format!("FAILED after {buffers} buffers"),
        },
        claim: None,
    };
    d.fixes = vec![
        did_not_work(Fix::PerDeviceContexts, 2471),
        did_not_work(Fix::Pool, 4940),
    ];
    let lines = d.fix_lines();
    assert_eq!(
        lines[0],
        "[measured] did not work: one context per device (FAILED after 2471 buffers)"
    );
    assert!(
        lines[1].ends_with("further than the shared context's 2470 (2.00x)"),
        "{lines:?}"
    );
}

#[test]
fn a_confirmed_limit_of_sharing_is_named_with_its_experiments() {
    let mut shared = at_fd_limit(2, ContextMode::Shared, 1014);
    investigate(&mut shared, &mut Fds);
    let d = diagnose(&matrix(
        run(1, ContextMode::Shared).completed(10000),
        shared,
        run(2, ContextMode::PerDevice).completed(10000),
    ));
    let v = verdict(&d);
    assert!(
        v.contains("the shared context failed because open fds reached RLIMIT_NOFILE (soft)"),
        "{v}"
    );
    assert!(
        v.contains("grows 1 per buffer there and 0 per buffer with one context per device"),
        "{v}"
    );
    assert!(v.contains("confirmed:"), "{v}");
    assert!(!v.contains("no run failed"), "{v}");
    let rows = d.experiment_rows();
    // The original and two replicates, lowered and raised, one and two more devices.
    assert_eq!(rows.len(), 7, "{rows:?}");
    assert!(
        rows[3][1].contains("1024 -> 517") && rows[3][4].starts_with("confirmed"),
        "{rows:?}"
    );
    assert!(d.markdown().contains("## Experiments"));
    // The answer first: three lines, what was compared, what sharing costs, what
    // failed and why.
    let answer = d.answer();
    assert_eq!(answer.len(), 3, "{answer:?}");
    assert!(
        answer[0].starts_with("Compared: 1 device, 2 devices in one shared context"),
        "{answer:?}"
    );
    assert!(answer[1].contains("open fds +1"), "{answer:?}");
    assert!(
        answer[2].contains("FAILED after 1014") && answer[2].contains("RLIMIT_NOFILE"),
        "{answer:?}"
    );
    assert!(d
        .markdown()
        .starts_with("# clmulti diagnose\n\n## Verdict\n\n> Compared:"));
    assert!(d
        .html()
        .starts_with("<section class=\"verdict\"><h2>Verdict</h2><div class=\"answer\">"));
}

#[test]
fn the_same_confirmed_limit_with_one_context_per_device_is_a_limit_of_the_process() {
    let mut shared = at_fd_limit(2, ContextMode::Shared, 1014);
    investigate(&mut shared, &mut Fds);
    let d = diagnose(&matrix(
        at_fd_limit(1, ContextMode::Shared, 1014),
        shared,
        at_fd_limit(2, ContextMode::PerDevice, 1014),
    ));
    let v = verdict(&d);
    assert!(
        v.contains(
            "one context per device failed the same way (at 1014): not a cost of sharing a context"
        ),
        "{v}"
    );
}

#[test]
fn an_untested_candidate_is_never_the_cause() {
    let d = diagnose(&matrix(
        run(1, ContextMode::Shared).completed(10000),
        at_fd_limit(2, ContextMode::Shared, 1014),
        run(2, ContextMode::PerDevice).completed(10000),
    ));
    let v = verdict(&d);
    assert!(!v.contains("failed because"), "{v}");
    assert!(v.contains("a candidate cause"), "{v}");
    assert!(!v.contains("no run failed"), "{v}");
}

#[test]
fn fixes_raise_the_limits_in_question_and_never_a_system_setting_unasked() {
    let shared = at_fd_limit(2, ContextMode::Shared, 1014);
    let fixes = fixes_for(&shared);
    assert!(fixes.contains(&(Fix::PerDeviceContexts, None)));
    assert!(
        fixes.contains(&(
            Fix::RaiseSoftLimit {
                limit: Rlimit::NoFile,
                to: 4096
            },
            None
        )),
        "{fixes:?}"
    );
    assert!(!fixes
        .iter()
        .any(|(f, _)| matches!(f, Fix::SystemSetting { .. })));
    // At the hard limit, raising is untested, with the reason.
    let stuck = run(2, ContextMode::Shared)
        .fds(10.0, 1.0)
        .limit(Rlimit::NoFile, 1024, Some(1024))
        .failed_at(1014);
    let (_, why) = fixes_for(&stuck)
        .into_iter()
        .find(|(f, _)| matches!(f, Fix::RaiseSoftLimit { .. }))
        .unwrap();
    assert!(why.unwrap().contains("already the hard limit"));
    // A failure that came with filling: a pooled run, which only creates, tests nothing.
    let mut filled = at_fd_limit(2, ContextMode::Shared, 1014);
    filled.scenario.allocation.strategy = clmulti_scenario::Strategy::Fill;
    let (_, why) = fixes_for(&filled)
        .into_iter()
        .find(|(f, _)| *f == Fix::Pool)
        .unwrap();
    assert!(why.unwrap().contains("strategy fill"));
}

#[test]
fn memory_kept_after_release_is_reported_per_run() {
    let mut kept = run(2, ContextMode::Shared)
        .rss(84.0 * 1048576.0, 1048576.0)
        .completed(1000);
    kept.leak_check
        .after_release_sample
        .as_mut()
        .unwrap()
        .host
        .rss_bytes = kept.samples.last().unwrap().host.rss_bytes;
    kept.conclude();
    let d = diagnose(&matrix(
        run(1, ContextMode::Shared).completed(1000),
        kept,
        run(2, ContextMode::PerDevice).completed(1000),
    ));
    assert_eq!(d.release.len(), 1);
    assert!(
        verdict(&d).contains(
            "2-shared: every release call succeeded, yet host RSS 1000.00 MiB stayed above the start after release"
        ),
        "{}",
        verdict(&d)
    );
}

/// NEO's single-device contexts under RLIMIT_AS, PoCL's fills: the process aborts.
/// The crash is named with what its stderr said, its count as a lower bound, and the
/// fixes are not called unneeded.
#[test]
fn a_crashed_case_is_reported_with_its_stderr_and_is_not_fine() {
    let crashed = |devices, mode| {
        let mut r = run(devices, mode).completed(600);
        r.stop = crate::StopReason::crashed(6);
        r.stderr_tail =
            "loading\nfatal runtime error: Rust cannot catch foreign exceptions, aborting\n".into();
        r
    };
    let d = diagnose(&matrix(
        crashed(1, ContextMode::Shared),
        crashed(2, ContextMode::Shared),
        run(2, ContextMode::PerDevice).completed(1000),
    ));
    let v = verdict(&d);
    assert!(
        v.contains("crashed: SIGABRT after at least 600 buffers (its last sample; it ended before the next); its stderr ends: loading / fatal runtime error: Rust cannot catch foreign exceptions, aborting"),
        "{v}"
    );
    assert!(!v.contains("no run failed"), "{v}");
    assert!(
        !d.fix_lines()[0].contains("not needed"),
        "{:?}",
        d.fix_lines()
    );
}
