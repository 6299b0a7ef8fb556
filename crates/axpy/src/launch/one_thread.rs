//! The launchers that run every part from the calling thread: enqueue and flush
//! each part in turn, then complete them by finishing, waiting or polling.

use super::*;

/// One repetition from this thread: enqueue and flush each part in turn, then wait.
pub(super) fn one_thread(
    parts: &[Prepared<'_>],
    strategy: Strategy,
    epoch: Instant,
) -> Result<Rep, AxpyError> {
    let at = || epoch.elapsed().as_secs_f64();
    let mut reps = vec![PartRep::default(); parts.len()];
    let mut events = Vec::with_capacity(parts.len());
    let flush_after = strategy.launcher == Launcher::OneThreadFlushAfter;
    for (part, rep) in parts.iter().zip(&mut reps) {
        rep.launch_at = at();
        events.push(enqueue(part, strategy)?);
        rep.enqueued_at = at();
        if !flush_after {
            rep.flush_at = rep.enqueued_at;
            flush(part, strategy)?;
            rep.launched_at = at();
        }
    }
    if flush_after {
        for (part, rep) in parts.iter().zip(&mut reps) {
            rep.flush_at = at();
            flush(part, strategy)?;
            rep.launched_at = at();
        }
    }
    match strategy.completion {
        Completion::FinishInOrder => {
            for (part, rep) in parts.iter().zip(&mut reps) {
                if part.kernel.is_some() {
                    part.queue(strategy).finish().map_err(cl3("clFinish"))?;
                }
                rep.seen_at = at();
            }
        }
        Completion::WaitForEvents => wait_per_context(parts, &events, &mut reps, &at)?,
        Completion::Poll => poll(&events, &mut reps, &at)?,
    }
    for (event, rep) in events.iter().zip(&mut reps) {
        rep.profile = profile(event.as_ref(), strategy.profiling)?;
    }
    Ok(reps)
}

/// Completion by one wait per context, in launch order of each context's first part.
fn wait_per_context(
    parts: &[Prepared<'_>],
    events: &[Option<Event>],
    reps: &mut [PartRep],
    at: &dyn Fn() -> f64,
) -> Result<(), AxpyError> {
    // One call per context, in launch order of each context's first part.
    let mut contexts: Vec<usize> = Vec::with_capacity(parts.len());
    for p in parts {
        if !contexts.contains(&p.context) {
            contexts.push(p.context);
        }
    }
    for context in contexts {
        let list: Vec<_> = parts
            .iter()
            .zip(events)
            .filter(|(p, _)| p.context == context)
            .filter_map(|(_, e)| e.as_ref().map(Event::get))
            .collect();
        if !list.is_empty() {
            // SAFETY: live events of one context (this loop's).
            unsafe { clmulti_probe::raw::wait_for_events(&list) }.map_err(|code| {
                AxpyError::OpenCl {
                    call: "clWaitForEvents",
                    code,
                }
            })?;
        }
        let seen = at();
        for (p, r) in parts.iter().zip(reps.iter_mut()) {
            if p.context == context {
                r.seen_at = seen;
            }
        }
    }
    Ok(())
}

/// Completion by polling each part's event until all are complete.
fn poll(
    events: &[Option<Event>],
    reps: &mut [PartRep],
    at: &dyn Fn() -> f64,
) -> Result<(), AxpyError> {
    let mut pending: Vec<usize> = (0..events.len()).collect();
    while !pending.is_empty() {
        let mut still = Vec::with_capacity(pending.len());
        for i in pending {
            match &events[i] {
                Some(e) if !complete(e)? => still.push(i),
                _ => reps[i].seen_at = at(),
            }
        }
        pending = still;
        std::hint::spin_loop();
    }
    Ok(())
}
