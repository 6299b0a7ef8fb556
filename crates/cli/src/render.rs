//! A report as text: the headline first, then the numbers behind it.

use crate::format::table;
use clmulti_explain::{Report, StopReason};
use clmulti_scenario::{format_bytes, format_count, format_rate, format_size, Count};

/// The style of the HTML pages clmulti writes.
pub const PAGE_STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;line-height:1.4}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #bbb;padding:3px 6px;text-align:left}\
th{background:#eee}.verdict li{margin:.3em 0}.tag{font-family:monospace;color:#555}\
li.measured .tag{color:#05a}li.inferred .tag{color:#a50}li.known .tag{color:#070}\
.answer{font-size:1.1em;border:2px solid #05a;padding:.2em .8em;margin:1em 0}.answer p{margin:.3em 0}\
.machine p{margin:.1em 0}.machine p.emulated{background:#fff3cd;border-left:4px solid #92400e;padding:2px 6px}";

/// The full text of one report; warnings already in `shown` are left out (each is
/// said once per invocation), new ones are added to it.
pub fn report(r: &Report, shown: &mut std::collections::HashSet<String>) -> String {
    let mut s = String::new();
    header(&mut s, r);
    cost_table(&mut s, r);
    for statement in &r.analysis.statements {
        line(&mut s, "finding", statement.to_string());
    }
    leak_check(&mut s, r);
    last_words(&mut s, r, shown);
    s.push('\n');
    s
}

/// One labelled line of a report: `  result          FAILED after ...`.
fn line(s: &mut String, label: &str, value: String) {
    s.push_str(&format!("  {label:<16}{value}\n"));
}

/// The run, its result, what ran on what, how far it got and how it stopped.
fn header(s: &mut String, r: &Report) {
    s.push_str(&format!("run {}  ({})\n", r.run_name, r.scenario.file));
    line(s, "result", r.headline());
    let devices: Vec<String> = r
        .devices
        .iter()
        .map(|d| {
            let mut name = format!("{} {}", d.selector, d.display_name());
            if let (Some(parent), Some(partition)) = (&d.parent, &d.partition) {
                name.push_str(&format!(
                    " (sub-device of {}, {partition})",
                    parent.selector
                ));
            }
            name
        })
        .collect();
    if !r.platform.is_empty() {
        line(
            s,
            "platform",
            format!("{} {}", r.platform, r.platform_version)
                .trim()
                .to_owned(),
        );
    }
    if let Some(neo) = &r.neo_emulation {
        line(s, "runtime", neo.statement());
    }
    if !devices.is_empty() {
        line(s, "devices", devices.join(", "));
    }
    let alloc = &r.scenario.allocation;
    line(
        s,
        "experiment",
        format!(
            "context {}, strategy {}, {} x {}, flags {}{}",
            r.scenario.context_mode.name(),
            alloc.strategy.name(),
            format_size(alloc.size_bytes),
            match alloc.count {
                Count::Fixed(n) => n.to_string(),
                Count::UntilFailure => "until failure".into(),
            },
            alloc
                .flags
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join("|"),
            if alloc.pause_us > 0 {
                format!(", a pause of {} us after each buffer", alloc.pause_us)
            } else {
                String::new()
            },
        ),
    );
    line(
        s,
        "reached",
        format!(
            "{} buffers ({} requested) in {:.3} s ({:.3} s of it sampling){}",
            r.buffers,
            format_bytes(r.bytes_requested as f64),
            r.elapsed_seconds,
            r.sampling_seconds,
            r.allocations_per_second.map_or(String::new(), |a| format!(
                ", {}",
                format_rate(a, "allocations")
            ))
        ),
    );
    line(s, "stopped", r.stop.summary());
    if let Some(g) = &r.effective_guards {
        for c in &g.capped {
            line(s, "guard", c.clone());
        }
    }
}

/// The per-buffer costs against the run's limits (system-wide readings only where
/// they are a candidate cause).
fn cost_table(s: &mut String, r: &Report) {
    if !r.costs.is_empty() {
        s.push_str("  per-buffer cost and limits:\n");
        let mut rows = vec![vec![
            "resource".to_owned(),
            "per buffer".into(),
            "now".into(),
            "limit".into(),
            "reached at".into(),
        ]];
        // A resource that read zero throughout (no dma-bufs, say) says nothing; a
        // system-wide one is not this run's cost unless it is a cause (a line below).
        let candidate = |c: &&clmulti_explain::Cost| {
            r.analysis
                .candidates
                .iter()
                .any(|k| k.resource == c.resource)
        };
        let horizon = r
            .buffers
            .max(1)
            .saturating_mul(clmulti_explain::thresholds::HORIZON);
        for c in r
            .costs
            .iter()
            .filter(|c| c.first != 0.0 || c.last != 0.0 || c.limit.is_some())
            .filter(|c| !c.resource.system_wide() || candidate(c))
        {
            let unit = c.resource.unit();
            rows.push(vec![
                format!(
                    "{}{}",
                    c.resource.label(),
                    if c.estimated { " (estimate)" } else { "" }
                ),
                c.per_buffer_words(),
                // A cap on what the run adds is read against what it added.
                match &c.limit {
                    Some(l) if l.of_growth => format!("+{}", unit.format(c.last - c.first)),
                    _ => unit.format(c.last),
                },
                c.limit.as_ref().map_or("-".into(), |l| {
                    format!("{} ({})", unit.format(l.value), l.name)
                }),
                c.predicted_count.map_or("-".into(), |n| {
                    if n > horizon {
                        format!("beyond {}x this run", clmulti_explain::thresholds::HORIZON)
                    } else {
                        format!("~{} buffers", format_count(n as f64))
                    }
                }),
            ]);
        }
        for row in table(&rows).lines() {
            s.push_str(&format!("  {row}\n"));
        }
    }
}

/// Objects released and readings after release, and the loop's own cost.
fn leak_check(s: &mut String, r: &Report) {
    let l = &r.leak_check;
    if l.contexts_created > 0 {
        line(
            s,
            "leak check",
            format!(
                "{}: buffers {}/{}, pools {}/{}, queues {}/{}, contexts {}/{} released; fds {} -> {}, RSS {} -> {}",
                if l.clean { "clean" } else { "NOT CLEAN" },
                l.buffers_released,
                l.buffers_created,
                l.pools_released,
                l.pools_created,
                l.queues_released,
                l.queues_created,
                l.contexts_released,
                l.contexts_created,
                l.before.open_fds,
                l.after_release.open_fds,
                format_bytes(l.before.rss_bytes as f64),
                format_bytes(l.after_release.rss_bytes as f64),
            ),
        );
        heap_after_release(s, r);
        line(
            s,
            "bookkeeping",
            format!(
                "{:.1} B and {:.1} ns per buffer (measured without OpenCL calls)",
                r.bookkeeping.bytes_per_buffer, r.bookkeeping.ns_per_buffer
            ),
        );
    }
    if let Some(a) = &r.axpy_check {
        line(
            s,
            "dAxpy check",
            format!(
                "{}/{} pairs verified{}",
                a.pairs_ok,
                a.pairs_checked,
                if a.failures.is_empty() {
                    String::new()
                } else {
                    format!("; {}", a.failures.join("; "))
                }
            ),
        );
    }
}

/// The dAxpy check, the driver's messages, a crashed child's stderr, and warnings not
/// said yet.
fn last_words(s: &mut String, r: &Report, shown: &mut std::collections::HashSet<String>) {
    for m in &r.driver_messages {
        line(s, "driver", m.clone());
    }
    if !r.stderr_tail.is_empty()
        && matches!(
            r.stop,
            StopReason::Crashed { .. } | StopReason::NoReport { .. } | StopReason::TimedOut { .. }
        )
    {
        let tail: Vec<&str> = r.stderr_tail.lines().rev().take(3).collect();
        for l in tail.into_iter().rev() {
            line(s, "stderr", l.to_owned());
        }
    }
    // ld.so's refusal is its only word: the library did not run, whatever the
    // outcome says.
    for refused in r
        .stderr_tail
        .lines()
        .filter(|l| l.contains("ld.so: object") && l.contains("cannot be preloaded"))
    {
        line(
            s,
            "warning",
            format!(
                "the dynamic linker refused a preload, so this run ran without it: {}",
                refused.trim()
            ),
        );
    }
    for w in &r.warnings {
        let text = format!("{} ({})", w.message, w.advice);
        if shown.insert(text.clone()) {
            line(s, "warning", text);
        }
    }
}

/// One row per run: what a reader compares when a file holds several runs.
pub fn comparison(reports: &[Report]) -> String {
    let mut rows = vec![vec![
        "run".to_owned(),
        "buffers".into(),
        "outcome".into(),
        "host RSS/buffer".into(),
        "fds/buffer".into(),
        "virtual/buffer".into(),
    ]];
    for r in reports {
        let cost = |resource: clmulti_explain::Resource| {
            r.costs
                .iter()
                .find(|c| c.resource == resource)
                .map_or("-".into(), |c| c.resource.unit().format(c.per_buffer))
        };
        rows.push(vec![
            r.run_name.clone(),
            r.buffers.to_string(),
            r.stop.kind().to_string(),
            cost(clmulti_explain::Resource::HostRss),
            cost(clmulti_explain::Resource::OpenFds),
            cost(clmulti_explain::Resource::VirtualSize),
        ]);
    }
    format!("comparison\n{}", table(&rows))
}

/// Under the leak check, what tells kept freed heap from live allocations: the C
/// library's heap after release where it was read (full mode), or how to read it
/// where RSS stayed above the start without it.
fn heap_after_release(s: &mut String, r: &Report) {
    let l = &r.leak_check;
    let first = r.samples.first().map(|x| &x.host);
    match (
        l.after_release.heap_in_use_bytes,
        l.after_release.heap_free_bytes,
    ) {
        (Some(in_use), Some(free)) => {
            let start = first
                .and_then(|h| h.heap_in_use_bytes)
                .map_or(String::new(), |b| {
                    format!(" ({} at the first sample)", format_bytes(b as f64))
                });
            let trimmed = l.after_trim.as_ref().map_or(String::new(), |t| {
                format!(
                    "; after malloc_trim(0), RSS {}",
                    format_bytes(t.rss_bytes as f64)
                )
            });
            line(
                s,
                "",
                format!(
                    "C heap after release: in use {}{start}, kept free {}{trimmed}",
                    format_bytes(in_use as f64),
                    format_bytes(free as f64)
                ),
            );
        }
        _ if l
            .not_returned
            .iter()
            .any(|n| n.resource == clmulti_explain::Resource::HostRss) =>
        {
            line(
                s,
                "",
                format!(
                    "RSS that stayed may be freed heap the C library keeps, live allocations, or memory outside its heap (the runtime's own mappings): {}=full reads the heap after release and trims it, which tells them apart",
                    clmulti_contract::trace::MODE
                ),
            );
        }
        _ => {}
    }
}

/// Each finding that has evidence behind it (its `detail`), under it.
fn evidence(s: &mut String, r: &Report) {
    let evidence: Vec<(&str, &str)> = r
        .analysis
        .statements
        .iter()
        .filter_map(|x| Some((x.text.as_str(), x.detail.as_deref()?)))
        .collect();
    if !evidence.is_empty() {
        s.push_str("  evidence behind the findings:\n");
        for (text, detail) in evidence {
            s.push_str(&format!("    {text}\n      {detail}\n"));
        }
    }
}

/// What `-v` adds about a run on stderr: how long each step took, and every sample
/// with the readings that moved or that a limit applies to.
pub fn details(r: &Report) -> String {
    let mut s = format!("run {}: details\n", r.run_name);
    if !r.phases.is_empty() {
        s.push_str("  steps:\n");
        for p in &r.phases {
            s.push_str(&format!("    {:>9.3} s  {}\n", p.seconds, p.phase));
        }
    }
    evidence(&mut s, r);
    if r.samples.is_empty() {
        s.push_str("  no samples\n");
        return s;
    }
    let mut rows = vec![vec![
        "buffers".to_owned(),
        "live".into(),
        "requested".into(),
        "s".into(),
        "RSS".into(),
        "virtual".into(),
        "fds".into(),
        "maps".into(),
        "threads".into(),
        "dma-buf".into(),
        "available".into(),
        "shmem".into(),
        "device used".into(),
    ]];
    let bytes = |b: u64| format_bytes(b as f64);
    for x in &r.samples {
        rows.push(vec![
            format_count(x.allocations as f64),
            x.live.map_or("-".into(), |l| format_count(l as f64)),
            bytes(x.bytes_requested),
            format!("{:.3}", x.elapsed_seconds),
            bytes(x.host.rss_bytes),
            bytes(x.host.virtual_bytes),
            format_count(x.host.open_fds as f64),
            x.host
                .memory_maps
                .map_or("-".into(), |m| format_count(m as f64)),
            format_count(x.host.threads as f64),
            bytes(x.host.dmabuf_bytes),
            x.system
                .as_ref()
                .and_then(|m| m.available_bytes)
                .map_or("-".into(), bytes),
            x.system
                .as_ref()
                .map_or("-".into(), |m| bytes(m.shmem_bytes)),
            if x.device_used_bytes.is_empty() {
                "-".into()
            } else {
                x.device_used_bytes
                    .iter()
                    .map(|d| d.map_or("-".into(), bytes))
                    .collect::<Vec<_>>()
                    .join(" / ")
            },
        ]);
    }
    s.push_str(&format!("  {} sample(s):\n", r.samples.len()));
    for row in table(&rows).lines() {
        s.push_str(&format!("  {row}\n"));
    }
    let unwalked = r
        .samples
        .iter()
        .filter(|x| x.host.memory_maps.is_none())
        .count();
    if unwalked > 0 {
        s.push_str(&format!(
            "  maps \"-\": {unwalked} sample(s) left the mapping walk out (about 1 us per mapping): the first and last samples and those either side of a release round always walk; the others while the walks have cost under 100 us or 0.5% of the loop, and the 1st, 8th, 64th... whatever they cost; the C library's heap is read at the same samples, the devices' memory (`device used`) and MemAvailable (`available`) there and at the first 8 and the 16th, 32nd... (\"-\" elsewhere, and in every row where no source of the devices' memory exists) ([sampling] maps = \"every-sample\" reads everything at every one)\n"
        ));
    }
    s
}
