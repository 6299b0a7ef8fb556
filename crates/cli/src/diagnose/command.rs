//! `clmulti diagnose`'s steps in order: inputs, the matrix of cases, experiments,
//! fixes, second rounds, the diagnosis, the comparison, the outputs; each able to
//! stop on a signal.

use super::fixes::FixRun;
use super::*;

pub fn run(args: &Args) -> Result<(), Failure> {
    let size = checked_size(&args.size)?;
    // Before minutes of runs: what to compare with must read.
    let compare = read_compare(args.compare.as_deref())?;
    // Before minutes of runs: the results must have somewhere to go.
    if let Some(dir) = &args.out {
        crate::output::writable_folder(dir).map_err(|e| Failure::Input(format!("--out {e}")))?;
    }
    if let Some(path) = &args.bundle {
        bundle_writable(path)?;
    }
    let (platform_name, devices, single) = choose(args)?;
    if let Some(why) = &single {
        note!("diagnose: only one device: {why}; the shared and per-device cases need two");
    }
    note!(
        "diagnose: {} device(s) of {platform_name}; {} x {} buffers with create, {} with fill",
        devices.len(),
        args.count,
        format_size(size),
        fill_count(args.count)
    );
    let mut reports = run_matrix(
        (&platform_name, args.partition.as_ref()),
        &devices,
        size,
        args.count,
        args.runtime_log,
    )?;
    let fix_reports = fixes_of_failing(args, &mut reports)?;
    // A limit that outlives processes would stop the rounds too: no fair test.
    let persistent = reports
        .iter()
        .any(|(_, r)| matches!(r.analysis.cause, Some(Cause::Persistent { .. })));
    if args.experiments && stop_signal().is_none() && !persistent {
        second_rounds(&mut reports);
    }
    let mut diagnosis = diagnosis_of(args, &reports, &fix_reports)?;
    if let Some((other, source)) = &compare {
        diagnosis.compare(other, source);
    }
    if let Some(why) = single {
        diagnosis.verdict.insert(
            0,
            Statement::measured(format!(
                "one device only: {why}; nothing here compares a shared context with per-device ones"
            )),
        );
    }
    let stopped = stop_signal();
    if let Some(signal) = stopped {
        say_stopped(&mut diagnosis, signal, devices.len(), &reports);
    }
    diagnosis.finish();
    write_outputs(args, &diagnosis, &reports)?;
    match stopped {
        Some(signal) => Err(Failure::Interrupted(signal)),
        None => Ok(()),
    }
}

/// `--size` as bytes: 1 byte to what a scenario holds.
fn checked_size(text: &str) -> Result<u64, Failure> {
    let size = parse_size(text).map_err(|e| Failure::Input(format!("--size: {e}")))?;
    if size == 0 || size > i64::MAX as u64 {
        return Err(Failure::Input(format!(
            "--size: a buffer has 1 byte to {} (what a scenario holds)",
            format_size(i64::MAX as u64)
        )));
    }
    Ok(size)
}

/// `--compare`'s diagnosis, with the path it came from.
fn read_compare(path: Option<&Path>) -> Result<Option<(Diagnosis, String)>, Failure> {
    path.map(|path| {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::Input(format!("--compare {}: {e}", path.display())))?;
        serde_json::from_str::<Diagnosis>(&text)
            .map(|d| (d, path.display().to_string()))
            .map_err(|e| {
                Failure::Input(format!(
                    "--compare {}: not a diagnose.json of this clmulti (line {}, column {}: {e})",
                    path.display(),
                    e.line(),
                    e.column()
                ))
            })
    })
    .transpose()
}

/// The fixes tried on the first strategy whose shared context needs them (after
/// its experiments, when asked for); none when no strategy does.
fn fixes_of_failing(args: &Args, reports: &mut [(Role, Report)]) -> Result<Vec<FixRun>, Failure> {
    let find = |reports: &[(Role, Report)], role: Role, strategy: Strategy| {
        reports
            .iter()
            .position(|(r, rep)| *r == role && rep.scenario.allocation.strategy == strategy)
    };
    let failing = [Strategy::Create, Strategy::Fill].into_iter().find(|s| {
        find(reports, Role::Shared, *s).is_some_and(|i| {
            let per = find(reports, Role::PerDevice, *s).map(|p| &reports[p].1);
            needs_fixes(&reports[i].1, per)
        })
    });
    let Some(strategy) = failing else {
        return Ok(Vec::new());
    };
    let shared = find(reports, Role::Shared, strategy).expect("found above");
    if args.experiments {
        crate::experiments::investigate(&mut reports[shared].1);
    }
    let per = find(reports, Role::PerDevice, strategy).map(|p| &reports[p].1);
    run_fixes(&reports[shared].1, per)
}

/// The diagnosis of the cases and fixes, with where it ran and, under NEO's
/// emulation, its allocation log.
fn diagnosis_of(
    args: &Args,
    reports: &[(Role, Report)],
    fix_reports: &[FixRun],
) -> Result<Diagnosis, Failure> {
    let placed: Vec<Placed<'_>> = reports
        .iter()
        .map(|(role, report)| Placed {
            role: *role,
            report,
        })
        .collect();
    let fixes: Vec<(Fix, Result<&Report, String>)> = fix_reports
        .iter()
        .map(|(f, r)| (f.clone(), r.as_ref().map_err(Clone::clone)))
        .collect();
    let mut diagnosis = Diagnosis::new(&placed, &fixes);
    diagnosis.context = Some(page_context(&diagnosis, reports.iter().map(|(_, r)| r)));
    if diagnosis.neo_emulation.is_some() && stop_signal().is_none() {
        diagnosis.add_allocation_log(allocation_logs(reports, args.count)?);
    }
    Ok(diagnosis)
}

/// A stop's words at the head of the verdict: how many cases ran, the last part way.
fn say_stopped(diagnosis: &mut Diagnosis, signal: i32, devices: usize, reports: &[(Role, Report)]) {
    let planned = if devices >= 2 { 6 } else { 2 };
    let partial = reports
        .last()
        .filter(|(_, r)| matches!(r.stop, StopReason::Interrupted { .. }))
        .map_or(String::new(), |(_, r)| {
            format!(
                " (the last, {}, part way: {})",
                r.run_name,
                r.buffers_words()
            )
        });
    diagnosis.verdict.insert(
        0,
        Statement::measured(format!(
            "stopped by {} after {} of the {planned} cases{partial}; the experiments and fixes after that were not run: this diagnosis is of what ran",
            clmulti_contract::signal_name(signal),
            reports.len()
        )),
    );
    diagnosis.stopped = Some(format!(
        "{} after {} of the {planned} cases{partial}; what did not run is not compared",
        clmulti_contract::signal_name(signal),
        reports.len()
    ));
}

/// The folder (`--out`), the bundle (`--bundle`) and stdout in the format asked.
fn write_outputs(
    args: &Args,
    diagnosis: &Diagnosis,
    reports: &[(Role, Report)],
) -> Result<(), Failure> {
    if let Some(dir) = &args.out {
        write_out(dir, diagnosis, reports)?;
    }
    // The answer first: a bundle that cannot be written loses nothing else.
    match args.format {
        DiagnoseFormat::Json => crate::format::print_json(diagnosis)?,
        DiagnoseFormat::Markdown => crate::format::write_stdout(&diagnosis.markdown())?,
        DiagnoseFormat::Text => crate::format::write_stdout(&text(diagnosis, args))?,
    }
    if let Some(path) = &args.bundle {
        crate::bundle::write(path, diagnosis, reports, &page(diagnosis), !args.no_redact)?;
        note!("diagnose: bundle written to {}", path.display());
    }
    Ok(())
}

/// Before minutes of runs: the bundle's folder must exist and take a file.
fn bundle_writable(path: &std::path::Path) -> Result<(), Failure> {
    let fail = |why: String| Failure::Input(format!("--bundle {}: {why}", path.display()));
    if path.is_dir() {
        return Err(fail(
            "a folder; name the archive to write (clmulti-bundle.tar.gz)".into(),
        ));
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() {
        return Err(fail(format!(
            "its folder {} does not exist",
            folder.display()
        )));
    }
    crate::output::writable_folder(folder).map_err(fail)
}
