//! `[allocation]` and `[guards]`: what each buffer is, how many, how each is made
//! resident, and when the loop stops early.

use super::{in_range, one_of, or_default, positive, problem, size, Problem};
use crate::defs::{MAX_SECONDS, MEM_FLAGS, STRATEGIES};
use crate::model::*;
use crate::raw::*;

pub(super) fn allocation(raw: &RawAllocation, devices: &Devices) -> Result<Allocation, Problem> {
    let size_bytes = size(
        "allocation.size",
        &or_default(raw.size.clone(), "allocation.size"),
    )?;
    if size_bytes == 0 {
        return Err(problem(
            "allocation.size",
            "a buffer must have at least 1 byte",
        ));
    }
    let count = count(raw)?;
    let flags = flags(raw)?;
    let placement = placement(raw, devices)?;
    let strategy = one_of(
        "allocation.strategy",
        &or_default(raw.strategy.clone(), "allocation.strategy"),
        &STRATEGIES,
    )?;
    let pool_size_bytes = pool_size(raw, strategy, size_bytes, &flags)?;
    let keep: bool = or_default(raw.keep, "allocation.keep");
    if !keep && strategy == Strategy::Pool {
        return Err(problem(
            "allocation.keep",
            "a pool keeps its memory until the end; keep = false contradicts strategy \"pool\"",
        ));
    }
    let release_every = release_every(raw, keep, strategy, count)?;
    let pause_us = in_range(
        "allocation.pause_us",
        or_default(raw.pause_us, "allocation.pause_us"),
    )?;
    let release_pause_us = in_range(
        "allocation.release_pause_us",
        or_default(raw.release_pause_us, "allocation.release_pause_us"),
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
    Ok(match &or_default(raw.count.clone(), "allocation.count") {
        RawNumberOrWord::Number(n) => Count::Fixed(positive("allocation.count", *n)?),
        RawNumberOrWord::Word(w) if crate::defs::same_word(w, "until-failure") => {
            Count::UntilFailure
        }
        RawNumberOrWord::Word(w) => {
            return Err(problem(
                "allocation.count",
                format!("expected a positive integer or \"until-failure\", got {w:?}"),
            ))
        }
    })
}

/// `allocation.flags`, sorted, each once, none excluding another (OpenCL spec).
fn flags(raw: &RawAllocation) -> Result<Vec<MemFlag>, Problem> {
    let mut flags = Vec::new();
    let written = or_default(raw.flags.clone(), "allocation.flags");
    // An empty list is the default too.
    let written = if written.is_empty() {
        crate::defs::default("allocation.flags")
    } else {
        written
    };
    for (i, f) in written.iter().enumerate() {
        let key = format!("allocation.flags[{i}]");
        let name = crate::defs::flag_name(f);
        let flag = one_of(&key, &name, &MEM_FLAGS)?;
        if flags.contains(&flag) {
            return Err(problem(&key, format!("{f} is listed twice")));
        }
        flags.push(flag);
    }
    flags.sort();
    let has = |f| flags.contains(&f);
    let access = [MemFlag::ReadWrite, MemFlag::ReadOnly, MemFlag::WriteOnly];
    if access.iter().filter(|f| has(**f)).count() > 1 {
        return Err(problem(
            "allocation.flags",
            "READ_WRITE, READ_ONLY and WRITE_ONLY exclude each other (OpenCL spec)",
        ));
    }
    if has(MemFlag::UseHostPtr) && (has(MemFlag::AllocHostPtr) || has(MemFlag::CopyHostPtr)) {
        return Err(problem(
            "allocation.flags",
            "USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR (OpenCL spec)",
        ));
    }
    Ok(flags)
}

/// `allocation.placement`: round-robin, or one of the selected devices.
fn placement(raw: &RawAllocation, devices: &Devices) -> Result<Placement, Problem> {
    Ok(
        match &or_default(raw.placement.clone(), "allocation.placement") {
            RawNumberOrWord::Word(w) if crate::defs::same_word(w, "round-robin") => {
                Placement::RoundRobin
            }
            RawNumberOrWord::Word(w) => {
                return Err(problem(
                    "allocation.placement",
                    format!("expected \"round-robin\" or a device index, got {w:?}"),
                ))
            }
            RawNumberOrWord::Number(n) => {
                let index = usize::try_from(*n)
                    .map_err(|_| problem("allocation.placement", "a device index must be >= 0"))?;
                if index >= devices.set.len() {
                    return Err(problem(
                        "allocation.placement",
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
            let pool = size("allocation.pool_size", s)?;
            if pool < size_bytes {
                return Err(problem(
                    "allocation.pool_size",
                    format!("a pool of {pool} bytes cannot hold one {size_bytes}-byte buffer"),
                ));
            }
            Some(pool)
        }
        (_, Some(_)) => {
            return Err(problem(
                "allocation.pool_size",
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
        return Err(problem(
            "allocation.flags",
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
        .map(|n| positive("allocation.release_every", n))
        .transpose()?;
    if release_every.is_some() && (!keep || strategy == Strategy::Pool) {
        return Err(problem(
            "allocation.release_every",
            "releases kept buffers in rounds: it needs keep = true and a strategy other than \"pool\"",
        ));
    }
    if let (Some(every), Count::Fixed(count)) = (release_every, count) {
        if every >= count {
            return Err(problem(
                "allocation.release_every",
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
    let max_rss = match &or_default(raw.max_rss.clone(), "guards.max_rss") {
        RawSize::Text(t) if t.trim_end().ends_with('%') => {
            let pct: f64 = t.trim().trim_end_matches('%').trim().parse().map_err(|_| {
                problem(
                    "guards.max_rss",
                    format!("{t:?} is not a percentage like \"50%\""),
                )
            })?;
            if !(pct > 0.0 && pct <= 100.0) {
                return Err(problem(
                    "guards.max_rss",
                    "a percentage of RAM must be in (0, 100]",
                ));
            }
            RssLimit::FractionOfRam(pct / 100.0)
        }
        s => RssLimit::Bytes(size("guards.max_rss", s)?),
    };
    let max_seconds = match or_default(raw.max_seconds, "guards.max_seconds") {
        s if s > MAX_SECONDS => {
            return Err(problem(
                "guards.max_seconds",
                format!("must be at most {MAX_SECONDS} (a week), got {s}"),
            ))
        }
        s if s.is_finite() && s > 0.0 => s,
        s => {
            return Err(problem(
                "guards.max_seconds",
                format!("must be > 0, got {s}"),
            ))
        }
    };
    Ok(Guards {
        max_total_bytes: raw
            .max_total
            .as_ref()
            .map(|s| size("guards.max_total", s))
            .transpose()?,
        max_rss,
        max_seconds,
    })
}
