//! What an experiment runs around its run: a wait; a second process holding buffers
//! beside it (as the same user, as another, outside the run's cgroups); a system-call
//! observer (strace) watching it.

use crate::trust::Binding;
use clmulti_explain::experiment::NotRun;
use clmulti_explain::verdict::Place;
use clmulti_explain::Report;
use clmulti_scenario::{Count, Scenario};
use clmulti_supervise::{Placement, PrivateFolder};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `nobody` on Debian: the other user a second process runs as.
const NOBODY: (u32, u32) = (65534, 65534);
/// How long a second process may take to start and hold its buffers.
const HOLD_START: Duration = Duration::from_secs(120);

fn stopped() -> Result<(), NotRun> {
    match clmulti_supervise::INTERRUPT.signal() {
        Some(signal) => Err(NotRun::Stopped(signal)),
        None => Ok(()),
    }
}

/// Waits, a signal ending it early.
pub(super) fn wait(length: Duration) -> Result<(), NotRun> {
    let until = Instant::now() + length;
    while Instant::now() < until {
        stopped()?;
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A folder of its own for one experiment's files, open to every user (a second
/// process as another user writes there; sticky, so none removes another's), removed
/// when dropped.
fn scratch(what: &str) -> Result<PrivateFolder, NotRun> {
    use std::os::unix::fs::PermissionsExt;
    let folder = PrivateFolder::new(what)
        .and_then(|f| {
            std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(0o1777))?;
            Ok(f)
        })
        .map_err(|e| NotRun::Failed(format!("cannot make a scratch folder: {e}")))?;
    Ok(folder)
}

/// The root `cgroup.procs` of every cgroup hierarchy mounted here: a process written
/// there has left every cgroup this one is in.
fn cgroup_roots() -> Vec<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, kind) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "cgroup" | "cgroup2").then(|| Path::new(at).join("cgroup.procs"))
        })
        .filter(|p| p.exists())
        .collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Where the second process runs, or why it cannot run there.
fn placement(place: Place) -> Result<Placement, NotRun> {
    let root_only = |what: &str| {
        NotRun::Failed(format!(
            "a second process {what} needs root, and clmulti does not run as root here"
        ))
    };
    Ok(match place {
        Place::Beside => Placement::default(),
        Place::OtherUser if !is_root() => return Err(root_only("as another user")),
        Place::OtherUser => Placement {
            user: Some(NOBODY),
            ..Placement::default()
        },
        Place::OtherCgroup if !is_root() => return Err(root_only("outside the run's cgroups")),
        Place::OtherCgroup => Placement {
            cgroups: cgroup_roots(),
            ..Placement::default()
        },
    })
}

/// Whether the second process ran where it was asked: its `.ready` file, written by
/// it, says its cgroups; its owner, its user.
fn placed_as_asked(place: Place, ready: &Path) -> Result<(), NotRun> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(ready).map_err(|e| NotRun::Failed(e.to_string()))?;
    match place {
        Place::Beside => Ok(()),
        Place::OtherUser if meta.uid() == NOBODY.0 => Ok(()),
        Place::OtherUser => Err(NotRun::Failed(
            "the second process did not run as another user".into(),
        )),
        Place::OtherCgroup => {
            let theirs = std::fs::read_to_string(ready).unwrap_or_default();
            let ours = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            // Every hierarchy where this process is not at the root must differ.
            let same = ours
                .lines()
                .filter(|l| !l.ends_with(":/"))
                .any(|l| theirs.lines().any(|t| t == l));
            if same {
                Err(NotRun::Failed(
                    "the second process could not leave the run's cgroups (their roots refused it)"
                        .into(),
                ))
            } else {
                Ok(())
            }
        }
    }
}

/// Runs `scenario` while a second process of the same case holds `held` buffers
/// (started first; released once the run ends).
pub(super) fn run_beside(
    scenario: &Scenario,
    place: Place,
    held: u64,
    binding: &Binding,
) -> Result<Report, NotRun> {
    let placement = placement(place)?;
    let scratch = scratch("beside")?;
    let hold = scratch.path().join("hold");
    let ready = scratch.path().join("hold.ready");
    std::fs::write(&hold, b"").map_err(|e| NotRun::Failed(e.to_string()))?;
    let mut second = scenario.clone();
    let mut second_binding = binding.clone();
    second.allocation.count = Count::Fixed(held);
    second.name = format!("{} [the second process]", scenario.name);
    second
        .env
        .insert(clmulti_alloc::HOLD_ENV.into(), hold.display().to_string());
    if place == Place::OtherUser {
        // Another user cannot write this one's home: runtimes that keep a cache there
        // (PoCL) get an empty one of their own, which loads nothing.
        let home = scratch.path().join("home");
        std::fs::create_dir_all(&home).map_err(|e| NotRun::Failed(e.to_string()))?;
        let _ = std::os::unix::fs::chown(&home, Some(NOBODY.0), Some(NOBODY.1));
        second.env.insert("HOME".into(), home.display().to_string());
        second
            .env
            .insert("XDG_CACHE_HOME".into(), home.display().to_string());
        second_binding = second_binding.with_place(home);
    }
    let handle = std::thread::spawn(move || {
        crate::child::run_child_placed(&second, None, placement, &second_binding)
    });
    let started = Instant::now();
    while !ready.exists() && !handle.is_finished() && started.elapsed() < HOLD_START {
        if let Err(stop) = stopped() {
            let _ = std::fs::remove_file(&hold);
            let _ = handle.join();
            return Err(stop);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let run = if ready.exists() {
        placed_as_asked(place, &ready).and_then(|()| {
            crate::child::run_child_bound(scenario, None, binding)
                .map_err(|e| NotRun::Failed(e.into_message()))
        })
    } else {
        Err(NotRun::Failed(
            "the second process ended, or did not hold its buffers in time, before the run".into(),
        ))
    };
    let _ = std::fs::remove_file(&hold);
    let second = handle.join();
    let run = run?;
    // The second process must have held what it was asked to: else the run beside it
    // says nothing of who shares the limit.
    match second {
        Ok(Ok(r)) if r.buffers >= held => Ok(run),
        Ok(Ok(r)) => Err(NotRun::Failed(format!(
            "the second process held only {} of {held} buffers ({})",
            r.buffers,
            r.stop.summary()
        ))),
        Ok(Err(e)) => Err(NotRun::Failed(e.into_message())),
        Err(_) => Err(NotRun::Failed(
            "the second process's thread panicked".into(),
        )),
    }
}

/// Runs `scenario` under strace, and records the system calls that failed inside its
/// failing OpenCL call (none when it failed with none failing; the report's
/// `observed_calls` stays empty when it did not fail).
pub(super) fn run_observed(scenario: &Scenario, binding: &Binding) -> Result<Report, NotRun> {
    let strace = clmulti_probe::strace::find().ok_or_else(|| {
        NotRun::Failed("strace is not installed (Debian: apt-get install strace)".into())
    })?;
    let scratch = scratch("observe")?;
    let log = scratch.path().join("strace.log");
    let mut watched = scenario.clone();
    watched
        .env
        .insert(clmulti_probe::strace::OBSERVED_ENV.into(), "1".into());
    // The replicate a verdict reads its failing call from: the tracer's full record too.
    watched.env.insert(
        clmulti_contract::trace::MODE.into(),
        clmulti_contract::trace::FULL.into(),
    );
    let placement = Placement {
        wrapper: clmulti_probe::strace::wrapper(&strace, &log),
        ..Placement::default()
    };
    let mut report = crate::child::run_child_placed(&watched, None, placement, binding)
        .map_err(|e| NotRun::Failed(e.into_message()))?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    report.observed_calls = Some(match report.failing_window {
        Some((start, end)) => clmulti_probe::strace::failed_between(&text, start, end),
        None => Vec::new(),
    });
    Ok(report)
}
