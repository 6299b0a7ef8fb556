//! `[allocation]` and `[guards]`: what each buffer is, how many, how each is made
//! resident, and when the loop stops early.

use super::{in_range, one_of, or_default, positive, problem, size, word, Problem};
use crate::defs::*;
use crate::model::*;
use crate::raw::*;

pub(super) fn allocation(raw: &RawAllocation, devices: &Devices) -> Result<Allocation, Problem> {
    let size_bytes = size(
        &ALLOCATION_SIZE,
        &or_default(raw.size.clone(), &ALLOCATION_SIZE),
    )?;
    if size_bytes == 0 {
        return Err(problem(
            ALLOCATION_SIZE.name,
            "a buffer must have at least 1 byte",
        ));
    }
    let count = count(raw)?;
    let flags = flags(raw)?;
    let placement = placement(raw, devices)?;
    let strategy = word(&ALLOCATION_STRATEGY, &raw.strategy, &STRATEGIES)?;
    let pool_size_bytes = pool_size(raw, strategy, size_bytes, &flags)?;
    let keep: bool = or_default(raw.keep, &ALLOCATION_KEEP);
    if !keep && strategy == Strategy::Pool {
        return Err(problem(
            ALLOCATION_KEEP.name,
            "a pool keeps its memory until the end; keep = false contradicts strategy \"pool\"",
        ));
    }
    let release_every = release_every(raw, keep, strategy, count)?;
    let pause_us = in_range(
        &ALLOCATION_PAUSE_US,
        or_default(raw.pause_us, &ALLOCATION_PAUSE_US),
    )?;
    let release_pause_us = in_range(
        &ALLOCATION_RELEASE_PAUSE_US,
        or_default(raw.release_pause_us, &ALLOCATION_RELEASE_PAUSE_US),
    )?;
    Ok(Allocation {
        pause_us,
        release_pause_us,
        size_bytes,
        count,
        flags,
        placement,
        keep,
        release_every,
        strategy,
        pool_size_bytes,
    })
}

fn count(raw: &RawAllocation) -> Result<Count, Problem> {
    Ok(match &or_default(raw.count.clone(), &ALLOCATION_COUNT) {
        RawNumberOrWord::Number(n) => Count::Fixed(positive(&ALLOCATION_COUNT, *n)?),
        RawNumberOrWord::Word(w) if same_word(w, "until-failure") => Count::UntilFailure,
        RawNumberOrWord::Word(w) => {
            return Err(problem(
                ALLOCATION_COUNT.name,
                format!("expected a positive integer or \"until-failure\", got {w:?}"),
            ))
        }
    })
}

/// `allocation.flags`, sorted, each once, none excluding another (OpenCL spec).
fn flags(raw: &RawAllocation) -> Result<Vec<MemFlag>, Problem> {
    let mut flags = Vec::new();
    let written = or_default(raw.flags.clone(), &ALLOCATION_FLAGS);
    // An empty list is the default too.
    let written = if written.is_empty() {
        default(&ALLOCATION_FLAGS)
    } else {
        written
    };
    for (i, f) in written.iter().enumerate() {
        let at = ALLOCATION_FLAGS.item(i);
        // Looked up by its name without CL_MEM_ and case; said as the file wrote it.
        let flag = one_of(&at, &flag_name(f), &MEM_FLAGS).map_err(|_| {
            let words: Vec<&str> = MEM_FLAGS.iter().map(|(w, _, _)| *w).collect();
            problem(
                &at,
                format!(
                    "unknown flag {f:?}; expected one of: {} (with or without CL_MEM_, upper or lower case){}",
                    words.join(", "),
                    crate::suggest::hint(&flag_name(f), words.iter().copied())
                ),
            )
        })?;
        if flags.contains(&flag) {
            return Err(problem(&at, format!("{f} is listed twice")));
        }
        flags.push(flag);
    }
    flags.sort();
    let has = |f| flags.contains(&f);
    let access = [MemFlag::ReadWrite, MemFlag::ReadOnly, MemFlag::WriteOnly];
    if access.iter().filter(|f| has(**f)).count() > 1 {
        return Err(problem(
            ALLOCATION_FLAGS.name,
            "READ_WRITE, READ_ONLY and WRITE_ONLY exclude each other (OpenCL spec)",
        ));
    }
    if has(MemFlag::UseHostPtr) && (has(MemFlag::AllocHostPtr) || has(MemFlag::CopyHostPtr)) {
        return Err(problem(
            ALLOCATION_FLAGS.name,
            "USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR (OpenCL spec)",
        ));
    }
    Ok(flags)
}

/// `allocation.placement`: round-robin, or one of the selected devices.
fn placement(raw: &RawAllocation, devices: &Devices) -> Result<Placement, Problem> {
    Ok(
        match &or_default(raw.placement.clone(), &ALLOCATION_PLACEMENT) {
            RawNumberOrWord::Word(w) if same_word(w, "round-robin") => Placement::RoundRobin,
            RawNumberOrWord::Word(w) => {
                return Err(problem(
                    ALLOCATION_PLACEMENT.name,
                    format!("expected \"round-robin\" or a device index, got {w:?}"),
                ))
            }
            RawNumberOrWord::Number(n) => {
                let index = usize::try_from(*n).map_err(|_| {
                    problem(ALLOCATION_PLACEMENT.name, "a device index must be >= 0")
                })?;
                if index >= devices.set.len() {
                    return Err(problem(ALLOCATION_PLACEMENT.name,
                        format!(
                            "device {index} is not among the {} selected device(s) (indices start at 0)",
                            devices.set.len()
                        ),
                    ));
                }
                Placement::Device(index)
            }
        },
    )
}

/// `allocation.pool_size`, for a pool only, big enough for one buffer; a pool's
/// flags may not ask for host memory.
fn pool_size(
    raw: &RawAllocation,
    strategy: Strategy,
    size_bytes: u64,
    flags: &[MemFlag],
) -> Result<Option<u64>, Problem> {
    let pool_size_bytes = match (strategy, &raw.pool_size) {
        (Strategy::Pool, None) => Some(size_bytes.max(256 << 20)),
        (Strategy::Pool, Some(s)) => {
            let pool = size(&ALLOCATION_POOL_SIZE, s)?;
            if pool < size_bytes {
                return Err(problem(
                    ALLOCATION_POOL_SIZE.name,
                    format!("a pool of {pool} bytes cannot hold one {size_bytes}-byte buffer"),
                ));
            }
            Some(pool)
        }
        (_, Some(_)) => {
            return Err(problem(
                ALLOCATION_POOL_SIZE.name,
                "only applies with allocation.strategy = \"pool\"",
            ))
        }
        (_, None) => None,
    };
    if strategy == Strategy::Pool
        && flags
            .iter()
            .any(|f| f.needs_host_memory() || *f == MemFlag::AllocHostPtr)
    {
        return Err(problem(ALLOCATION_FLAGS.name,
            "host-pointer flags apply to the pool buffer, not its sub-buffers: use strategy \"create\" with them",
        ));
    }
    Ok(pool_size_bytes)
}

/// `allocation.release_every`: rounds of kept buffers, fewer than the count.
fn release_every(
    raw: &RawAllocation,
    keep: bool,
    strategy: Strategy,
    count: Count,
) -> Result<Option<u64>, Problem> {
    let release_every = raw
        .release_every
        .map(|n| positive(&ALLOCATION_RELEASE_EVERY, n))
        .transpose()?;
    if release_every.is_some() && (!keep || strategy == Strategy::Pool) {
        return Err(problem(ALLOCATION_RELEASE_EVERY.name,
            "releases kept buffers in rounds: it needs keep = true and a strategy other than \"pool\"",
        ));
    }
    if let (Some(every), Count::Fixed(count)) = (release_every, count) {
        if every >= count {
            return Err(problem(ALLOCATION_RELEASE_EVERY.name,
                format!(
                    "{every} with allocation.count = {count}: a round releases after each {every} buffers, so none would come before the run's end; make it smaller than the count (e.g. {}), or leave it out",
                    (count / 2).max(1)
                ),
            ));
        }
    }
    Ok(release_every)
}

pub(super) fn guards(raw: &RawGuards) -> Result<Guards, Problem> {
    let max_rss = match &or_default(raw.max_rss.clone(), &GUARDS_MAX_RSS) {
        RawSize::Text(t) if t.trim_end().ends_with('%') => {
            let pct: f64 = t.trim().trim_end_matches('%').trim().parse().map_err(|_| {
                problem(
                    GUARDS_MAX_RSS.name,
                    format!("{t:?} is not a percentage like \"50%\""),
                )
            })?;
            if !(pct > 0.0 && pct <= 100.0) {
                return Err(problem(
                    GUARDS_MAX_RSS.name,
                    "a percentage of RAM must be in (0, 100]",
                ));
            }
            RssLimit::FractionOfRam(pct / 100.0)
        }
        s => RssLimit::Bytes(size(&GUARDS_MAX_RSS, s)?),
    };
    let max_seconds = match or_default(raw.max_seconds, &GUARDS_MAX_SECONDS) {
        s if s > MAX_SECONDS => {
            return Err(problem(
                GUARDS_MAX_SECONDS.name,
                format!("must be at most {MAX_SECONDS} (a week), got {s}"),
            ))
        }
        s if s.is_finite() && s > 0.0 => s,
        s => {
            return Err(problem(
                GUARDS_MAX_SECONDS.name,
                format!("must be > 0, got {s}"),
            ))
        }
    };
    Ok(Guards {
        max_total_bytes: raw
            .max_total
            .as_ref()
            .map(|s| size(&GUARDS_MAX_TOTAL, s))
            .transpose()?,
        max_rss,
        max_seconds,
    })
}
