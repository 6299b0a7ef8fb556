//! Claims that hold on faults nobody wrote clmulti for: faults drawn from the whole
//! fault space (`clmulti_explain::testing::fault_space`, the layer in
//! `fault_space/layer.c`) from a fresh seed each run, each diagnosed on two PoCL
//! devices, every claim of the diagnosis held against the fault's truth. The seed is
//! printed; a seed that failed is kept in `fault_space/regressions.txt` (a line
//! `SEED INDEX`) and runs every time.
//!
//! `CLMULTI_FAULT_SEED` fixes the seed, `CLMULTI_FAULTS` the number of faults (60);
//! `CLMULTI_FAULT_BASELINE=PATH` also runs another clmulti binary (an earlier build, a
//! tracer beside it) on each fault, unjudged, and prints both medians: the cost of the
//! experiments side by side in one run.

use crate::common;
use clmulti_explain::diagnosis::Diagnosis;
use clmulti_explain::testing::fault_space::{generate, judge, Fault, Rng};
use common::*;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

fn regressions() -> Vec<(u64, u64)> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fault_space/regressions.txt");
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// The `index`th fault of `seed`'s sequence.
fn fault_of(seed: u64, index: u64) -> Fault {
    let mut rng = Rng::new(seed);
    let mut fault = generate(&mut rng, 0);
    for i in 1..=index {
        fault = generate(&mut rng, i);
    }
    fault
}

/// Diagnoses one fault on two PoCL devices; `Err` with the diagnose's stderr when it
/// gave no diagnosis.
fn diagnose(fault: &Fault) -> Result<Diagnosis, String> {
    diagnose_with(clmulti(2), fault)
}

/// [`diagnose`] with `cmd` (this build's clmulti, or a baseline's).
fn diagnose_with(mut cmd: std::process::Command, fault: &Fault) -> Result<Diagnosis, String> {
    let dir = tempfile_dir();
    cmd.env("OPENCL_LAYERS", fault_space_layer())
        .env("CLMULTI_FS_DIR", &dir)
        .envs(&fault.env)
        .args(["-q", "diagnose", "--format", "json", "--size"])
        .arg(fault.size.to_string())
        .arg("--count")
        .arg(fault.count.to_string());
    if let Some((soft, hard)) = fault.nofile {
        // SAFETY: setrlimit between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = run(&mut cmd);
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", stderr(&out)))
}

/// A folder the fault's shared ledgers live in, open to every user (a second process
/// as another user writes there).
fn tempfile_dir() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = temp_root().join(format!("clmulti-fs-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

#[test]
fn no_claim_is_contradicted_by_a_faults_truth() {
    let seed = std::env::var("CLMULTI_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let faults: u64 = std::env::var("CLMULTI_FAULTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    eprintln!("fault space: seed {seed}, {faults} faults (CLMULTI_FAULT_SEED={seed} repeats them)");
    let mut cases: Vec<(u64, u64)> = regressions();
    cases.extend((0..faults).map(|i| (seed, i)));
    let mut wrong = Vec::new();
    let mut tally = Tally::default();
    let baseline = std::env::var_os("CLMULTI_FAULT_BASELINE").map(PathBuf::from);
    for (seed, index) in cases {
        let fault = fault_of(seed, index);
        if let Some(bin) = &baseline {
            let started = std::time::Instant::now();
            let mut cmd = std::process::Command::new(bin);
            cmd.envs(clmulti(2).get_envs().filter_map(|(k, v)| Some((k, v?))));
            let _ = diagnose_with(cmd, &fault);
            tally.baseline.push(started.elapsed().as_secs_f64());
        }
        let started = std::time::Instant::now();
        let diagnosis = diagnose(&fault);
        tally.seconds.push(started.elapsed().as_secs_f64());
        match diagnosis {
            Ok(d) => {
                let j = judge(&d, &fault.truth);
                tally.add(&fault, &j);
                for c in &j.contradictions {
                    wrong.push(format!("{seed} {index}  {fault}\n    {c}"));
                }
            }
            Err(e) => wrong.push(format!("{seed} {index}  {fault}\n    no diagnosis: {e}")),
        }
    }
    eprintln!("{}", tally.table());
    assert!(
        wrong.is_empty(),
        "{} contradicted claims (keep a failing `SEED INDEX` in tests/fault_space/regressions.txt):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Per fault family and topic: claims that settled on the truth, that left it among
/// others (an honest "cannot tell"), and that contradicted it; and the time each
/// diagnose took. What `bench/rigor/fault-space.sh` prints for 500 faults.
#[derive(Default)]
struct Tally {
    rows: std::collections::BTreeMap<(String, String), [u32; 3]>,
    seconds: Vec<f64>,
    baseline: Vec<f64>,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

impl Tally {
    fn add(&mut self, fault: &Fault, j: &clmulti_explain::testing::fault_space::Judgement) {
        let family = fault.name.split('-').nth(1).unwrap_or("?").to_owned();
        for (topic, settled) in &j.answered {
            self.rows
                .entry((family.clone(), format!("{topic:?}")))
                .or_default()[usize::from(!settled)] += 1;
        }
        for c in &j.contradictions {
            self.rows
                .entry((family.clone(), format!("{:?}", c.topic)))
                .or_default()[2] += 1;
        }
    }

    fn table(&self) -> String {
        let baseline = if self.baseline.is_empty() {
            String::new()
        } else {
            format!(
                " (the baseline, same faults, same machine, interleaved: median {:.1} s, {:.2}x)",
                median(&self.baseline),
                median(&self.seconds) / median(&self.baseline).max(1e-9)
            )
        };
        let mut out = format!(
            "fault space: {} diagnoses, median {:.1} s each{baseline}\n{:<12} {:<14} {:>8} {:>8} {:>13}\n",
            self.seconds.len(),
            median(&self.seconds),
            "family",
            "topic",
            "settled",
            "open",
            "contradicted"
        );
        for ((family, topic), [settled, open, wrong]) in &self.rows {
            out.push_str(&format!(
                "{family:<12} {topic:<14} {settled:>8} {open:>8} {wrong:>13}\n"
            ));
        }
        out
    }
}
