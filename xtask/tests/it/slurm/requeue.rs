//! Shards whose node dies or that are cancelled, requeued and resumed; a GPU node's setup.

use super::*;

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
