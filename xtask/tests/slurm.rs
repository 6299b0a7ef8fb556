//! The shipped Slurm scripts (`scripts/slurm/`) against a real Slurm cluster of three
//! nodes that `scripts/slurm/local-cluster.sh` starts on this machine (Debian's
//! slurmctld, one slurmd per node in its own network, UTS, pid and mount namespaces,
//! munge; as root, as in CI), each node with two PoCL CPU devices. The file system is
//! shared by the nodes, as a cluster's shared file system would be.

mod common;

use common::{clmulti_bin, keys, record_lines, results, stderr, temp_dir, xtask_bare};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    let second = std::env::temp_dir().join(format!("clmulti-slurm-second-{}", std::process::id()));
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

/// Six runs of about a second each: long enough to cancel a shard, or kill its node,
/// between two.
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
fn a_shard_whose_node_dies_finishes_on_another_node() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let _took = Took(
        "a_shard_whose_node_dies_finishes_on_another_node",
        Instant::now(),
    );
    let conf = slurm_conf();
    let dir = temp_dir("slurm-node-dies");
    let scenario = dir.join("slow.toml");
    // Twelve runs, four per shard.
    std::fs::write(
        &scenario,
        format!("{SLOW}\"allocation.count\" = [20000, 20001]\n"),
    )
    .unwrap();
    let started = Instant::now();
    let cluster_out = dir.join("slurm");
    let logs = cluster_out.join("logs");
    let (array, merge) = submitted(&run_ok(
        slurm_command(workspace().join("scripts/slurm/submit.sh"), &conf)
            .args(["--shards", "3", "--time", "00:10:00", "--out"])
            .arg(&cluster_out)
            .arg(&scenario),
    ));

    // A shard with one run done, of four.
    let deadline = Instant::now() + Duration::from_secs(120);
    let (task, shard) = loop {
        let running = (1..=3)
            .map(|k| (k, cluster_out.join(k.to_string())))
            .find(|(_, shard)| records_written(shard) == 1);
        if let Some(found) = running {
            break found;
        }
        assert!(
            Instant::now() < deadline,
            "no shard had one run done within 120 s: {}",
            read_logs(&logs)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let first = plan(&shard);
    let dead = start_hosts(&first).pop().unwrap();
    let pid = first["starts"][0]["pid"].as_u64().unwrap();

    // Its lock holds across hosts: a sweep here into its folder is refused, naming the
    // node and the pid there. That pid is in the node's pid namespace: a check of it
    // on this host would find no such sweep, and must not take the lock over.
    let out = xtask_bare()
        .arg("sweep")
        .arg(&scenario)
        .args(["--shard", &format!("{task}/3"), "--resume", "--out"])
        .arg(&shard)
        .arg("--bin")
        .arg(clmulti_bin())
        // Set: the sweep asks PoCL once, and refuses soon, mid-run on the node.
        .env("POCL_DEVICES", "pthread pthread")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "is in use by a sweep on another host (pid {pid} on {dead}, "
        )),
        "{}",
        stderr(&out)
    );
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    assert_ne!(
        comm.trim(),
        "xtask",
        "pid {pid} here is not the node's sweep"
    );

    // The node dies with every process in it: slurmd, the job step, the sweep, its run.
    let out = local_cluster(&["kill-node", &dead]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = shard.join("results.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    // A record is one write; a SIGKILL stops it between pages at most, so the kill
    // itself seldom tears one, while a node dying mid-write on a network file system
    // can leave part of one. Half a record, as either would leave it (unless the kill
    // did): the restarted shard must cut it off, keep it aside, and lose or glue no
    // record.
    let whole_end = text.rfind('\n').map_or(0, |i| i + 1);
    let (before, torn) = if whole_end < text.len() {
        (text[..whole_end].to_owned(), text[whole_end..].to_owned())
    } else {
        let last = text.lines().last().unwrap();
        let half = (0..=last.len() / 2)
            .rev()
            .find(|&i| last.is_char_boundary(i))
            .unwrap();
        let torn = last[..half].to_owned();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, torn.as_bytes()))
            .unwrap();
        (text.clone(), torn)
    };
    let done_before = record_lines(&before);
    assert!(
        (1..4).contains(&done_before),
        "killed mid-shard ({done_before} of 4 done)"
    );

    // Slurm marks the node down (SlurmdTimeout) and requeues the shard.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = run_ok(slurm_command("sinfo", &conf).args(["-h", "-N", "-n", &dead, "-o", "%T"]));
        if String::from_utf8_lossy(&out.stdout).starts_with("down") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{dead} not down 120 s after it died: {}",
            read_logs(&logs)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "slurm: {dead} down {:?} after the submit",
        started.elapsed()
    );
    wait_for_jobs(&conf, &[&array, &merge], Duration::from_secs(240), &logs);
    eprintln!(
        "slurm: 3 shards, one requeued, and the merge in {:?}",
        started.elapsed()
    );
    assert_eq!(
        job_states(&conf, &array),
        ["COMPLETED"; 3],
        "{}",
        read_logs(&logs)
    );
    assert_eq!(
        job_states(&conf, &merge),
        ["COMPLETED"],
        "{}",
        read_logs(&logs)
    );

    // Slurm's accounting: the shard failed with its node, then completed on another.
    let ran_on = task_nodes(&conf, &array);
    let runs = &ran_on[&task];
    let [(first_node, failed), (second_node, completed)] = &runs[..] else {
        panic!("shard {task} ran twice: {ran_on:?}");
    };
    assert_eq!(
        (first_node, failed.as_str()),
        (&dead, "NODE_FAIL"),
        "{ran_on:?}"
    );
    assert_eq!(completed, "COMPLETED");
    assert_ne!(second_node, &dead);
    let log = std::fs::read_to_string(logs.join(format!("shard-{task}.log"))).unwrap();
    assert!(log.contains(&format!("on {dead} (restart 0)")), "{log}");
    assert!(
        log.contains(&format!("on {second_node} (restart 1)")),
        "{log}"
    );

    // The torn tail was cut off and kept; the records before it are as they were.
    assert!(log.contains("ended in a torn record"), "{log}");
    assert_eq!(
        std::fs::read_to_string(shard.join("results.jsonl.torn-1")).unwrap(),
        torn
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&before),
        "records before the death are kept"
    );
    assert!(
        log.contains(&format!(
            "{done_before} run(s) already done, {} to go",
            4 - done_before
        )),
        "{log}"
    );
    // No run lost or run twice, in this shard or the merge.
    let again = plan(&shard);
    assert_eq!(
        keys(&shard),
        sorted_plan_keys(&again),
        "each planned run once"
    );
    assert_eq!(start_hosts(&again), [dead.clone(), second_node.clone()]);
    assert_eq!(again["starts"][1]["done"], done_before);
    let mut planned: Vec<String> = (1..=3)
        .flat_map(|k| sorted_plan_keys(&plan(&cluster_out.join(k.to_string()))))
        .collect();
    planned.sort();
    assert_eq!(planned.len(), 12);
    assert_eq!(keys(&cluster_out.join("merged")), planned);

    // The merge says which shard restarted where.
    let merge_log = std::fs::read_to_string(logs.join("merge.log")).unwrap();
    assert!(
        merge_log.contains("12 run(s) from 3 shard(s)"),
        "{merge_log}"
    );
    let restart = format!(
        "{} (shard {task}/3): started on {dead} (pid {pid}) with 0 of 4 done, restarted on {second_node} (pid ",
        shard.display()
    );
    assert!(merge_log.contains(&restart), "{restart}\n{merge_log}");
    assert!(
        merge_log.contains(&format!("with {done_before} of 4 done\n")),
        "{merge_log}"
    );
    assert!(!merge_log.contains("more than one shard"), "{merge_log}");
}

#[test]
fn a_cancelled_shard_requeued_resumes_without_rerunning() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let _took = Took(
        "a_cancelled_shard_requeued_resumes_without_rerunning",
        Instant::now(),
    );
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
    while records_written(&shards.join("1")) < 2 {
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
    let done_before = record_lines(&before);
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
