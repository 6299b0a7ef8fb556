//! Merges of shards named twice, without plans, retried, duplicated, or of two plans.

use super::*;

pub(super) fn merge(args: &[&str]) -> Output {
    run(xtask_bare().arg("merge").args(args))
}

/// Two shards of the grid, in `dir/shard1` and `dir/shard2`.
fn two_shards(dir: &Path) -> (PathBuf, PathBuf) {
    let grid = dir.join("grid.toml");
    std::fs::write(&grid, GRID).unwrap();
    let shards: Vec<PathBuf> = ["1/2", "2/2"]
        .iter()
        .map(|k| {
            let shard = dir.join(format!("shard{}", &k[..1]));
            let out = run(&mut sweep(&[
                grid.to_str().unwrap(),
                "--shard",
                k,
                "--out",
                shard.to_str().unwrap(),
            ]));
            assert!(out.status.success(), "{}", stderr(&out));
            shard
        })
        .collect();
    (shards[0].clone(), shards[1].clone())
}

fn csv_rows(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("summary.csv"))
        .unwrap()
        .lines()
        .count()
        - 1
}

#[test]
fn merges_name_what_is_missing_and_keep_each_runs_newest_record() {
    let dir = temp_dir("hostile-merge");
    let (s1, s2) = two_shards(&dir);
    let (s1s, s2s) = (s1.to_str().unwrap(), s2.to_str().unwrap());

    // One shard named twice is one shard: shard 2 is missing.
    let out = merge(&[
        s1s,
        s1s,
        "--expect",
        "2",
        "--out",
        dir.join("m1").to_str().unwrap(),
    ]);
    assert_sane("twice", &out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("shard 2/2"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("named more than once"),
        "{}",
        stderr(&out)
    );

    // A shard without plan.json cannot say it finished.
    let bare = dir.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let lines = std::fs::read_to_string(s2.join("results.jsonl")).unwrap();
    std::fs::write(bare.join("results.jsonl"), common::first_records(&lines, 1)).unwrap();
    let out = merge(&[
        s1s,
        bare.to_str().unwrap(),
        "--out",
        dir.join("m2").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no plan.json"), "{}", stderr(&out));

    // A garbage plan: located, the merge goes on, no temporary file left.
    let garbage = dir.join("garbage");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::copy(s2.join("results.jsonl"), garbage.join("results.jsonl")).unwrap();
    std::fs::write(
        garbage.join("plan.json"),
        "{\"shard\": [2, 2],\n \"keys\": [1, 2, \x01",
    )
    .unwrap();
    let m3 = dir.join("m3");
    let out = merge(&[
        s1s,
        garbage.to_str().unwrap(),
        "--out",
        m3.to_str().unwrap(),
    ]);
    assert_sane("garbage plan", &out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("plan.json: line 2 column"),
        "{}",
        stderr(&out)
    );
    assert_eq!(results(&m3).len(), 4);
    let left: Vec<_> = std::fs::read_dir(&m3)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains("merging"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // A retried run (a newer record of the same key) and a duplicated line: the
    // newest is taken once, and the summary counts four runs, not five or six.
    let retried = dir.join("retried");
    std::fs::create_dir_all(&retried).unwrap();
    std::fs::copy(s1.join("plan.json"), retried.join("plan.json")).unwrap();
    let text = std::fs::read_to_string(s1.join("results.jsonl")).unwrap();
    let record = text.lines().find(|l| l.contains("\"key\":")).unwrap();
    let mut newer: serde_json::Value = serde_json::from_str(record).unwrap();
    newer["finished_at"] = (newer["finished_at"].as_u64().unwrap() + 10).into();
    newer["report"]["buffers"] = 7.into();
    let mut crashed: serde_json::Value = serde_json::from_str(record).unwrap();
    crashed["report"]["stop"] =
        serde_json::json!({"kind": "crashed", "signal": 6, "signal_name": "SIGABRT"});
    std::fs::write(
        retried.join("results.jsonl"),
        format!(
            "{}{record}\n{newer}\n",
            text.replace(record, &crashed.to_string())
        ),
    )
    .unwrap();
    let m4 = dir.join("m4");
    let out = merge(&[
        retried.to_str().unwrap(),
        s2s,
        "--expect",
        "2",
        "--out",
        m4.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let merged = records_of(&m4);
    assert_eq!(merged.len(), 4);
    let key = newer["key"].as_str().unwrap();
    let kept: Vec<_> = merged.iter().filter(|r| r.key == key).collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].report.buffers, 7, "the newest record of the run");
    assert_eq!(csv_rows(&m4), 4);
    // The summary of the shard itself also counts each run once.
    let out = run(xtask_bare().args(["summary", retried.to_str().unwrap()]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(csv_rows(&retried), 2);

    // A folder merged into itself is refused, and left as it was.
    let before = std::fs::read(s1.join("results.jsonl")).unwrap();
    let out = merge(&[s1s, s2s, "--out", s1s, "--force"]);
    assert_sane("into itself", &out);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is the output folder"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(s1.join("results.jsonl")).unwrap(), before);
    assert!(s1.join("plan.json").exists());
}

#[test]
fn a_merge_takes_the_shards_of_one_plan_only() {
    let dir = temp_dir("hostile-plans");
    let (s1, s2) = two_shards(&dir);
    let other_grid = dir.join("other.toml");
    std::fs::write(&other_grid, GRID.replace("count = 10", "count = 11")).unwrap();
    let shard_of = |grid: &Path, k: &str, name: &str| {
        let folder = dir.join(name);
        let out = run(&mut sweep(&[
            grid.to_str().unwrap(),
            "--shard",
            k,
            "--out",
            folder.to_str().unwrap(),
        ]));
        assert!(out.status.success(), "{}", stderr(&out));
        folder
    };
    let other_2 = shard_of(&other_grid, "2/2", "other2");
    let third_1 = shard_of(&dir.join("grid.toml"), "1/3", "third1");
    let cases: [(&[&Path], Option<&str>, &str); 3] = [
        (&[&s1, &other_2], Some("2"), "different plans"),
        (&[&s1, &third_1], None, "mixed shard counts"),
        (&[&s1, &s2], Some("3"), "not shards of --expect 3"),
    ];
    for (i, (inputs, expect, said)) in cases.into_iter().enumerate() {
        let out_dir = dir.join(format!("m{i}"));
        let mut args: Vec<&str> = inputs.iter().map(|p| p.to_str().unwrap()).collect();
        if let Some(n) = expect {
            args.extend(["--expect", n]);
        }
        args.extend(["--out", out_dir.to_str().unwrap()]);
        let out = merge(&args);
        assert_sane(said, &out);
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
        assert!(
            !out_dir.join("results.jsonl").exists(),
            "{said}: merged anyway"
        );
    }
    // A shard resumed with another plan's files, or as another shard, is refused:
    // its folder would hold two plans' records.
    for (grid, k) in [(&other_grid, "2/2"), (&dir.join("grid.toml"), "1/2")] {
        let out = run(&mut sweep(&[
            grid.to_str().unwrap(),
            "--shard",
            k,
            "--out",
            s2.to_str().unwrap(),
            "--resume",
        ]));
        assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--resume of another plan"),
            "{}",
            stderr(&out)
        );
    }
    // A plan_id edited to another plan's is computed again from the runs the plan
    // lists; that plan's runs copied in too, its records are not the plan's; shards
    // of two clmulti versions are named. Each is refused, and nothing merged.
    let copy = |from: &Path, name: &str| {
        let to = dir.join(name);
        std::fs::create_dir_all(&to).unwrap();
        for file in ["results.jsonl", "plan.json"] {
            std::fs::copy(from.join(file), to.join(file)).unwrap();
        }
        to
    };
    let plan = |folder: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(folder.join("plan.json")).unwrap()).unwrap()
    };
    let edited = copy(&other_2, "edited");
    let mut forged = plan(&edited);
    forged["plan_id"] = plan(&s1)["plan_id"].clone();
    std::fs::write(edited.join("plan.json"), forged.to_string()).unwrap();
    let copied = copy(&other_2, "copied");
    std::fs::copy(s2.join("plan.json"), copied.join("plan.json")).unwrap();
    let older = copy(&s2, "older");
    let text = std::fs::read_to_string(older.join("results.jsonl")).unwrap();
    let rewritten: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v.get("tool").is_some() {
                v["tool"] = "0.0.1 (commit 0000000, features: )".into();
            }
            format!("{v}\n")
        })
        .collect();
    std::fs::write(older.join("results.jsonl"), rewritten).unwrap();
    for (i, (shard, said)) in [
        (&edited, "edited by hand"),
        (&copied, "2 recorded run(s) that plan"),
        (&older, "recorded by 2 clmulti versions"),
    ]
    .into_iter()
    .enumerate()
    {
        let out_dir = dir.join(format!("checked{i}"));
        let args = [
            s1.to_str().unwrap(),
            shard.to_str().unwrap(),
            "--expect",
            "2",
        ];
        let out = merge(&[&args[..], &["--out", out_dir.to_str().unwrap()]].concat());
        assert_sane(said, &out);
        assert_eq!(out.status.code(), Some(2), "{said}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{said}: {}", stderr(&out));
        assert!(!out_dir.join("results.jsonl").exists(), "{said}: merged");
    }
    let out = merge(&[
        s1.to_str().unwrap(),
        older.to_str().unwrap(),
        "--allow-mixed-versions",
        "--out",
        dir.join("mixed").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("merged as --allow-mixed-versions asks"),
        "{}",
        stderr(&out)
    );
    // The shards of one plan still merge.
    let out = merge(&[
        s1.to_str().unwrap(),
        s2.to_str().unwrap(),
        "--expect",
        "2",
        "--out",
        dir.join("ok").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
