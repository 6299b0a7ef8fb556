//! The shipped Slurm scripts (`scripts/slurm/`) against a real Slurm cluster of three
//! nodes that `scripts/slurm/local-cluster.sh` starts on this machine (Debian's
//! slurmctld, one slurmd per node in its own network, UTS, pid and mount namespaces,
//! munge; as root, as in CI), each node with two PoCL CPU devices. The file system is
//! shared by the nodes, as a cluster's shared file system would be.

use crate::common;

use common::{clmulti_bin, keys, record_lines, results, stderr, temp_dir, xtask_bare};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod requeue;

/// One cluster, one test at a time: the nodes share this machine's two CPUs.
static CLUSTER: Mutex<()> = Mutex::new(());

/// Prints how long a test took, the cluster's start included, passed or not; straight
/// to stderr, past the test harness's capture, so CI's log shows it.
struct Took(&'static str, Instant);

impl Drop for Took {
    fn drop(&mut self) {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "slurm: {} took {:.1} s",
            self.0,
            self.1.elapsed().as_secs_f64()
        );
    }
}

/// Nodes of the test cluster: clm-node1 .. clm-node3, one CPU each.
const NODES: usize = 3;

fn node_names() -> BTreeSet<String> {
    (1..=NODES).map(|k| format!("clm-node{k}")).collect()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn local_cluster(args: &[&str]) -> Output {
    Command::new(workspace().join("scripts/slurm/local-cluster.sh"))
        .args(args)
        .output()
        .unwrap()
}

/// Starts the cluster (or finds it running, bringing back a node a test killed) and
/// returns its `SLURM_CONF`.
fn slurm_conf() -> String {
    let out = local_cluster(&["start", "--nodes", &NODES.to_string()]);
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

/// The `array` and `merge` job ids `submit.sh` prints.
fn submitted(out: &Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let id = |what: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(what))
            .unwrap_or_else(|| panic!("submit.sh printed no `{what}` line: {stdout}"))
            .trim()
            .to_owned()
    };
    (id("array "), id("merge "))
}

/// `scontrol show job` of a job, one line per task, as key=value fields.
fn job_tasks(conf: &str, job: &str) -> Vec<BTreeMap<String, String>> {
    let out = slurm_command("scontrol", conf)
        .args(["show", "job", job, "--oneliner"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .filter(|fields: &BTreeMap<String, String>| fields.contains_key("JobState"))
        .collect()
}

/// `JobState` of every task of a job (an array has one line per task).
fn job_states(conf: &str, job: &str) -> Vec<String> {
    job_tasks(conf, job)
        .into_iter()
        .map(|t| t["JobState"].clone())
        .collect()
}

const ENDED: [&str; 7] = [
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
];

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

/// The jobs' logs in `dir`, then the cluster daemons' (slurmctld, each slurmd).
fn read_logs(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        text += &format!(
            "--- {}\n{}\n",
            entry.path().display(),
            std::fs::read_to_string(entry.path()).unwrap_or_default()
        );
    }
    text + &String::from_utf8_lossy(&local_cluster(&["logs"]).stdout)
}

/// Where each task of an array ran, from Slurm's accounting (`sacct --completion`,
/// the job completion log): task number, then one (node, state) per time it ran, in
/// order (a requeued task ran more than once).
fn task_nodes(conf: &str, array: &str) -> BTreeMap<usize, Vec<(String, String)>> {
    // sacct names a task by its own job id: scontrol maps it to the task number.
    let task_of: BTreeMap<String, usize> = job_tasks(conf, array)
        .into_iter()
        .map(|t| (t["JobId"].clone(), t["ArrayTaskId"].parse().unwrap()))
        .collect();
    let out = run_ok(slurm_command("sacct", conf).args([
        "--completion",
        "--noheader",
        "--parsable2",
        "--format=JobID,NodeList,State",
    ]));
    let mut runs: BTreeMap<usize, Vec<(String, String)>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let fields: Vec<&str> = line.split('|').collect();
        if let [id, node, state] = fields[..] {
            if let Some(&task) = task_of.get(id) {
                runs.entry(task)
                    .or_default()
                    .push((node.to_owned(), state.to_owned()));
            }
        }
    }
    runs
}

/// Whole records in a folder's results.jsonl, read while its sweep may be writing one.
fn records_written(folder: &Path) -> usize {
    std::fs::read_to_string(folder.join("results.jsonl")).map_or(0, |t| record_lines(&t))
}

/// A shard folder's plan (`plan.json`).
fn plan(shard: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(shard.join("plan.json")).unwrap()).unwrap()
}

/// The host names of a plan's starts, oldest first.
fn start_hosts(plan: &serde_json::Value) -> Vec<String> {
    plan["starts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["host"].as_str().unwrap().to_owned())
        .collect()
}

fn sorted_plan_keys(plan: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = plan["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    keys.sort();
    keys
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

/// 36 tiny runs (a tenth of a second each on PoCL).
const GRID: &str = r#"
name = "grid"
[devices]
type = "cpu"
count = 2
[allocation]
size = "4KiB"
count = 100
[grid]
"context.mode" = ["shared", "per-device"]
"allocation.strategy" = ["create", "migrate", "pool"]
"allocation.size" = ["4KiB", "16KiB", "64KiB"]
"allocation.count" = [50, 100]
"#;

/// Four devices are more than a node has: skipped, and no failed task.
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
fn shards_on_three_nodes_merge_into_what_a_local_sweep_gives() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let _took = Took(
        "shards_on_three_nodes_merge_into_what_a_local_sweep_gives",
        Instant::now(),
    );
    let conf = slurm_conf();
    // A second cluster on the same machine would share its ports: refused, the
    // first named.
    let second =
        crate::common::temp_root().join(format!("clmulti-slurm-second-{}", std::process::id()));
    let out = Command::new(workspace().join("scripts/slurm/local-cluster.sh"))
        .args(["start", "--nodes", "1"])
        .env("CLMULTI_SLURM_DIR", &second)
        .output()
        .unwrap();
    assert!(!out.status.success(), "a second cluster started");
    assert!(
        stderr(&out).contains("another cluster runs on this machine")
            && stderr(&out).contains(&conf),
        "{}",
        stderr(&out)
    );
    assert!(
        !second.join("etc").exists(),
        "the refused cluster wrote its config"
    );
    let dir = temp_dir("slurm-nodes");
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
    let (array, merge) = submitted(&run_ok(
        slurm_command(workspace().join("scripts/slurm/submit.sh"), &conf)
            .args([
                "--shards", "6", "--time", "00:10:00", "--mem", "1G", "--out",
            ])
            .arg(&cluster_out)
            .arg(&scenarios),
    ));
    let logs = cluster_out.join("logs");
    wait_for_jobs(&conf, &[&array, &merge], Duration::from_secs(240), &logs);
    eprintln!(
        "slurm: 6 shards on {NODES} nodes and the merge in {:?}",
        started.elapsed()
    );

    // The skipped four-device run fails no task, and the merge ran after all six.
    let tasks = job_states(&conf, &array);
    assert_eq!(tasks, ["COMPLETED"; 6], "{}", read_logs(&logs));
    assert_eq!(
        job_states(&conf, &merge),
        ["COMPLETED"],
        "{}",
        read_logs(&logs)
    );

    // Slurm ran each shard once, and every node ran some.
    let ran_on = task_nodes(&conf, &array);
    assert_eq!(ran_on.len(), 6, "sacct has every task: {ran_on:?}");
    let mut nodes = BTreeSet::new();
    for (task, runs) in &ran_on {
        let [(node, state)] = &runs[..] else {
            panic!("shard {task} ran once: {runs:?}");
        };
        assert_eq!(state, "COMPLETED");
        nodes.insert(node.clone());
        // The shard's folder was written on that node only: its plan, its lock and
        // each of its records name it (the shards wrote their own folders, at once,
        // in one folder all nodes share).
        let shard = cluster_out.join(task.to_string());
        assert_eq!(start_hosts(&plan(&shard)), [node.as_str()], "shard {task}");
        let lock = std::fs::read_to_string(shard.join(".sweep.lock")).unwrap();
        assert!(
            lock.contains(&format!(" on {node}, ")),
            "shard {task}: {lock}"
        );
        for record in results(&shard) {
            let host = record["host"].as_str().unwrap();
            assert!(
                host.starts_with(&format!("{node}: ")),
                "shard {task}: {host}"
            );
        }
    }
    assert_eq!(nodes, node_names(), "every node ran a shard: {ran_on:?}");

    // The merge names every node and its devices.
    let merge_log = std::fs::read_to_string(logs.join("merge.log")).unwrap();
    assert!(
        merge_log.contains("38 run(s) from 6 shard(s)"),
        "{merge_log}"
    );
    for node in node_names() {
        assert!(
            merge_log.contains(&format!("run(s) on {node}: ")),
            "names {node}: {merge_log}"
        );
    }
    assert!(!merge_log.contains("restarted"), "{merge_log}");
    assert!(!merge_log.contains("more than one shard"), "{merge_log}");

    // Every shard's runs are in the merge once, and nothing else is.
    let merged = cluster_out.join("merged");
    let mut from_shards: Vec<String> = (1..=6)
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
    assert_eq!(guards.len(), 37);
    assert!(
        guards.iter().all(|&g| g <= 1 << 30),
        "max_rss guards {guards:?} B in a 1 GiB job"
    );
}
