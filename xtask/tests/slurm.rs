//! The shipped Slurm scripts (`scripts/slurm/`) against a real one-node Slurm that
//! `scripts/slurm/local-cluster.sh` starts (Debian's slurmctld, slurmd and munge; as
//! root, as in CI), on two PoCL CPU devices.

mod common;

use common::{clmulti_bin, keys, results, stderr, temp_dir, xtask_bare};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One cluster, one test at a time: the node has two CPUs.
static CLUSTER: Mutex<()> = Mutex::new(());

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Starts the cluster (or finds it running) and returns its `SLURM_CONF`.
fn slurm_conf() -> String {
    let out = Command::new(workspace().join("scripts/slurm/local-cluster.sh"))
        .arg("start")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/slurm/local-cluster.sh start failed (it needs root and Debian's slurm packages: scripts/setup-tests.sh installs them):\n{}",
        stderr(&out)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("export SLURM_CONF="))
        .expect("start prints the SLURM_CONF line")
        .to_owned()
}

/// A command with the cluster's and the CPU devices' environment (sbatch passes it on
/// to the jobs).
fn slurm_command(program: impl AsRef<std::ffi::OsStr>, conf: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(workspace())
        .env("SLURM_CONF", conf)
        .env("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd")
        .env("POCL_MEMORY_LIMIT", "2")
        .env_remove("POCL_DEVICES")
        .env("CLMULTI_BIN", clmulti_bin())
        .env("CLMULTI_XTASK", env!("CARGO_BIN_EXE_xtask"));
    cmd
}

/// The library PoCL's ICD file names.
fn pocl_library() -> String {
    std::fs::read_to_string("/etc/OpenCL/vendors/pocl.icd")
        .unwrap()
        .trim()
        .to_owned()
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    out
}

/// `JobState` of every task of a job (an array has one line per task).
fn job_states(conf: &str, job: &str) -> Vec<String> {
    let out = slurm_command("scontrol", conf)
        .args(["show", "job", job, "--oneliner"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("JobState="))
                .map(str::to_owned)
        })
        .collect()
}

const ENDED: [&str; 4] = ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"];

/// Waits until every task of the jobs has ended; panics after `limit`, with the logs.
fn wait_for_jobs(conf: &str, jobs: &[&str], limit: Duration, logs: &Path) {
    let deadline = Instant::now() + limit;
    loop {
        let states: Vec<String> = jobs.iter().flat_map(|j| job_states(conf, j)).collect();
        if !states.is_empty() && states.iter().all(|s| ENDED.contains(&s.as_str())) {
            return;
        }
        if Instant::now() > deadline {
            panic!(
                "jobs {jobs:?} still {states:?} after {limit:?}; logs:\n{}",
                read_logs(logs)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn read_logs(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        text += &format!(
            "--- {}\n{}\n",
            entry.path().display(),
            std::fs::read_to_string(entry.path()).unwrap_or_default()
        );
    }
    text
}

/// The summary's rows by run name, without the measured costs (they differ between
/// any two processes) and the host: what the runs did, not what they cost.
fn outcomes(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let wanted = [
        "run",
        "group",
        "devices",
        "device count",
        "context mode",
        "strategy",
        "buffers reached",
        "outcome",
        "stop reason",
        "bytes requested",
    ];
    let columns: Vec<usize> = wanted
        .iter()
        .map(|w| {
            headers
                .iter()
                .position(|h| h == *w)
                .unwrap_or_else(|| panic!("summary.csv has no `{w}` column"))
        })
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            let row: Vec<String> = columns.iter().map(|&c| r[c].to_owned()).collect();
            (row[0].clone(), row)
        })
        .collect()
}

const GRID: &str = r#"
name = "grid"
[devices]
type = "cpu"
count = 2
[allocation]
size = "64KiB"
count = 2000
[grid]
"context.mode" = ["shared", "per-device"]
"allocation.strategy" = ["create", "migrate", "pool"]
"#;

/// Four devices are more than this node has: skipped, and no failed task.
const SCALING: &str = r#"
name = "scaling"
[devices]
type = "cpu"
[allocation]
size = "4KiB"
count = 100
[grid]
"devices.count" = [2, 4]
"#;

#[test]
fn submitted_shards_merge_into_what_a_local_sweep_gives() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let conf = slurm_conf();
    let dir = temp_dir("slurm-submit");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(scenarios.join("grid.toml"), GRID).unwrap();
    std::fs::write(scenarios.join("scaling.toml"), SCALING).unwrap();

    let local = dir.join("local");
    let out = xtask_bare()
        .args(["sweep", scenarios.to_str().unwrap(), "--out"])
        .arg(&local)
        .arg("--bin")
        .arg(clmulti_bin())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let started = Instant::now();
    let cluster_out = dir.join("slurm");
    let out = run_ok(
        slurm_command(workspace().join("scripts/slurm/submit.sh"), &conf)
            .args([
                "--shards", "3", "--time", "00:10:00", "--mem", "1G", "--out",
            ])
            .arg(&cluster_out)
            .arg(&scenarios),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let id = |what: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(what))
            .unwrap_or_else(|| panic!("submit.sh printed no `{what}` line: {stdout}"))
            .trim()
            .to_owned()
    };
    let (array, merge) = (id("array "), id("merge "));
    let logs = cluster_out.join("logs");
    wait_for_jobs(&conf, &[&array, &merge], Duration::from_secs(240), &logs);
    eprintln!("slurm: 3 shards and the merge in {:?}", started.elapsed());

    // The skipped four-device run fails no task, and the merge ran after all three.
    let tasks = job_states(&conf, &array);
    assert_eq!(tasks, ["COMPLETED"; 3], "{}", read_logs(&logs));
    assert_eq!(
        job_states(&conf, &merge),
        ["COMPLETED"],
        "{}",
        read_logs(&logs)
    );
    let merge_log = std::fs::read_to_string(logs.join("merge.log")).unwrap();
    assert!(
        merge_log.contains("8 run(s) from 3 shard(s)"),
        "{merge_log}"
    );
    assert!(
        merge_log.contains("run(s) on "),
        "names the node and its devices: {merge_log}"
    );

    // Every shard's runs are in the merge once, and nothing else is.
    let merged = cluster_out.join("merged");
    let mut from_shards: Vec<String> = (1..=3)
        .flat_map(|k| keys(&cluster_out.join(k.to_string())))
        .collect();
    from_shards.sort();
    assert_eq!(from_shards, keys(&merged), "each run once, in one shard");
    assert_eq!(keys(&merged), keys(&local));
    // Run for run, the cluster did what the local sweep did.
    assert_eq!(outcomes(&merged), outcomes(&local));
    let skipped = results(&merged)
        .into_iter()
        .filter(|r| r["report"]["stop"]["kind"] == "skipped")
        .count();
    assert_eq!(skipped, 1);
    // The memory guard is under the job's 1 GiB (SLURM_MEM_PER_NODE), not the node's RAM.
    let guards: Vec<u64> = results(&merged)
        .iter()
        .filter(|r| r["report"]["stop"]["kind"] != "skipped")
        .map(|r| {
            r["report"]["effective_guards"]["max_rss_bytes"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(guards.len(), 7);
    assert!(
        guards.iter().all(|&g| g <= 1 << 30),
        "max_rss guards {guards:?} B in a 1 GiB job"
    );
}

/// Six runs of about a second each: long enough to cancel a shard between two.
const SLOW: &str = r#"
name = "slow"
[devices]
type = "cpu"
count = 2
[allocation]
size = "1KiB"
count = 20000
strategy = "migrate"
[sampling]
every = 5000
[grid]
"context.mode" = ["shared", "per-device"]
"allocation.size" = ["1KiB", "2KiB", "4KiB"]
"#;

#[test]
fn a_cancelled_shard_requeued_resumes_without_rerunning() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let conf = slurm_conf();
    let dir = temp_dir("slurm-requeue");
    std::fs::write(dir.join("slow.toml"), SLOW).unwrap();
    let shards = dir.join("shards");
    let logs = shards.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let empty_system = dir.join("no-vendors");
    std::fs::create_dir_all(&empty_system).unwrap();
    // The array submit.sh submits, without its merge: this test merges after the requeue.
    let out = run_ok(
        slurm_command("sbatch", &conf)
            .args(["--parsable", "--array=1-1", "--time=00:10:00", "--output"])
            .arg(logs.join("shard-%a.log"))
            .arg("scripts/slurm/sweep.sbatch")
            .env("CLMULTI_SCENARIOS", dir.join("slow.toml"))
            .env("CLMULTI_OUT", &shards)
            // The GPU path of the script, with PoCL for the GPU: nothing registered
            // in the "system" folder; the job registers it in a folder it owns.
            .env("OCL_ICD_VENDORS", &empty_system)
            .env("POCL_DEVICES", "pthread pthread")
            .env("CLMULTI_GPUS", "2")
            .env(
                "CLMULTI_GPU_SETUP",
                format!("--user --icd {} --platform portable", pocl_library()),
            )
            .env("CLMULTI_ICD_DIR", dir.join("job-icd")),
    );
    let job = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    // Cancel it after two runs.
    let file = shards.join("1/results.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while results(&shards.join("1")).len() < 2 {
        let ended = job_states(&conf, &job)
            .iter()
            .any(|s| ENDED.contains(&s.as_str()));
        assert!(
            !ended && Instant::now() < deadline,
            "no two runs while the job ran (120 s at most): {}",
            read_logs(&logs)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    run_ok(slurm_command("scancel", &conf).arg(&job));
    wait_for_jobs(&conf, &[&job], Duration::from_secs(60), &logs);
    assert_eq!(job_states(&conf, &job), ["CANCELLED"]);
    let before = std::fs::read_to_string(&file).unwrap();
    let done_before = before.lines().count();
    assert!(
        (2..6).contains(&done_before),
        "the cancel came between runs 2 and 6 ({done_before} done)"
    );
    // A merge now names the shard that stopped early.
    let out = xtask_bare()
        .arg("merge")
        .arg(shards.join("1"))
        .arg("--out")
        .arg(dir.join("early"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("(shard 1/1) on "), "{}", stderr(&out));

    run_ok(slurm_command("scontrol", &conf).args(["requeue", &job]));
    // Slurm holds a requeued job back a few seconds (the credential lifetime).
    std::thread::sleep(Duration::from_secs(1));
    wait_for_jobs(&conf, &[&job], Duration::from_secs(180), &logs);
    assert_eq!(
        job_states(&conf, &job),
        ["COMPLETED"],
        "{}",
        read_logs(&logs)
    );

    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&before),
        "the finished runs' records are kept as they were"
    );
    let all = keys(&shards.join("1"));
    let mut unique = all.clone();
    unique.dedup();
    assert_eq!(all.len(), 6, "every run once: {all:?}");
    assert_eq!(unique, all, "no run ran twice");
    let log = std::fs::read_to_string(logs.join("shard-1.log")).unwrap();
    assert!(log.contains("(restart 1)"), "{log}");
    assert!(log.contains("gpu-node-setup: registered"), "{log}");
    assert!(
        log.contains(&format!(
            "{done_before} run(s) already done, {} to go",
            6 - done_before
        )),
        "{log}"
    );
    let out = xtask_bare()
        .arg("merge")
        .arg(shards.join("1"))
        .args(["--expect", "1", "--out"])
        .arg(dir.join("merged"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn gpu_node_setup_registers_the_icd_in_a_folder_the_job_owns() {
    // A read-only system folder, as in a job: one other vendor registered there.
    let dir = temp_dir("icd");
    let system = dir.join("system");
    std::fs::create_dir_all(&system).unwrap();
    std::fs::write(system.join("other.icd"), "libother-opencl.so.1\n").unwrap();
    let own = dir.join("job");
    let setup = |expected: &str| {
        Command::new(workspace().join("scripts/gpu-node-setup.sh"))
            .args(["--env", "--icd", &pocl_library(), "--platform", "portable"])
            .arg(expected)
            .arg(clmulti_bin())
            .env("OCL_ICD_VENDORS", &system)
            .env("CLMULTI_ICD_DIR", &own)
            .env("POCL_DEVICES", "pthread pthread")
            .output()
            .unwrap()
    };
    let out = setup("2");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("export OCL_ICD_VENDORS={}\n", own.display()),
        "stdout is only the line to eval"
    );
    assert!(
        own.join("other.icd").exists(),
        "the platforms already registered stay"
    );
    assert!(
        stderr(&out).contains("2 device(s) visible"),
        "{}",
        stderr(&out)
    );
    // Fewer devices than expected fails the job step, saying so.
    let out = setup("3");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("expected 3"), "{}", stderr(&out));
}
