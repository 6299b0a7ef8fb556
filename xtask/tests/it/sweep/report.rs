//! The sweep's report: its summary files, its page in a browser, and its size at 300 runs.

use super::*;

/// Every number of seven or more digits in `text` (a byte count or a count no
/// person should have to count the digits of), with its context; digits within a
/// hex word (a commit hash) are not a number, `4295806976B` is.
pub(super) fn long_numbers(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let hex = |c: &char| matches!(c, 'a'..='f');
            let in_word = (start > 0 && hex(&chars[start - 1])) || chars.get(i).is_some_and(hex);
            if i - start >= 7 && !in_word {
                let from = start.saturating_sub(40);
                let to = (i + 20).min(chars.len());
                found.push(chars[from..to].iter().collect());
            }
        } else {
            i += 1;
        }
    }
    found
}

/// The text of every `<text>` element of the folder's plots.
fn plot_texts(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            let svg = std::fs::read_to_string(&path).unwrap();
            for piece in svg.split("<text").skip(1) {
                let body = piece.split_once('>').map_or("", |(_, b)| b);
                out.push_str(body.split("</text>").next().unwrap_or(""));
                out.push('\n');
            }
        }
    }
    out
}

fn body_count(dom: &str, attribute: &str) -> usize {
    let start = dom
        .find(&format!("{attribute}=\""))
        .unwrap_or_else(|| panic!("no {attribute} in {dom:.300}"));
    dom[start + attribute.len() + 2..]
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn the_report_opens_in_a_browser_verdict_first_with_every_plot() {
    let dir = temp_dir("browser");
    std::fs::write(dir.join("seed-2gpu-shared.toml"), "[devices]\ntype = \"gpu\"\ncount = 2\n[allocation]\nsize = \"1MiB\"\ncount = 2000\n[sampling]\nevery = 200\n").unwrap();
    std::fs::write(dir.join("seed-2gpu-per-device.toml"), "[devices]\ntype = \"gpu\"\ncount = 2\n[context]\nmode = \"per-device\"\n[allocation]\nsize = \"1MiB\"\ncount = 2000\n[sampling]\nevery = 200\n").unwrap();
    std::fs::write(dir.join("seed-1gpu.toml"), "[devices]\ntype = \"gpu\"\n[allocation]\nsize = \"1MiB\"\ncount = 2000\n[sampling]\nevery = 200\n").unwrap();
    std::fs::write(
        dir.join("too-many.toml"),
        "[devices]\ntype = \"gpu\"\ncount = 8\n[allocation]\ncount = 10\n",
    )
    .unwrap();
    // A run outside the verdict's matrix that fails (the emulation layer fails the
    // 41st multi-device buffer with -6), and one a byte guard stops: neither may hide
    // under "no run failed".
    std::fs::write(
        dir.join("fails-late.toml"),
        "[devices]\ntype = \"cpu\"\ncount = 2\n[allocation]\nsize = \"64KiB\"\ncount = 200\n\
         [env]\nOPENCL_LAYERS = \"{clmulti-layer}\"\nCLMULTI_LAYER_POLICY = \"fail-after\"\nCLMULTI_LAYER_FAIL_AFTER = \"40\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("guarded.toml"),
        "[devices]\ntype = \"cpu\"\n[allocation]\nsize = \"1000001\"\ncount = 100\n[guards]\nmax_total = \"3000002\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = xtask(&[dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let page = out_dir.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // The verdict comes first, then the buffers plot; the seed's runs before the rest.
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    assert!(at("id=\"machine\"") < at("<h2>Verdict"));
    assert!(at("<h2>Verdict") < at("<h2>Buffers reached</h2>"));
    assert!(at(">seed-1gpu</h2>") < at(">seed-2gpu-shared</h2>"));
    assert!(at(">seed-2gpu-per-device</h2>") < at(">too-many</h2>"));
    assert!(html.contains("id=\"fallback\""), "CPU fallback banner");
    assert!(html.contains("[measured]") && html.contains("sharing one context over 2 devices"));
    assert!(
        html.contains("skipped: asked for 8 devices"),
        "a skipped run says why"
    );
    let images = html.matches("<img ").count();
    assert!(images >= 4, "{images} plots");
    let dom = browser_dom(&page);
    // The verdict speaks for every run on the page: a failed run present means no
    // "no run failed", and the failed and guard-stopped runs are named in it.
    let text = visible_text(&dom);
    let verdict = &text[text.find("Verdict").unwrap()..text.find("Buffers reached").unwrap()];
    assert!(!verdict.contains("no run failed"), "{verdict}");
    assert!(
        verdict.contains("fails-late: FAILED after 40 buffers: CL_OUT_OF_HOST_MEMORY (-6)"),
        "{verdict}"
    );
    assert!(
        verdict.contains("guarded: guard max_total: ")
            && verdict.contains(" MiB requested would pass "),
        "{verdict}"
    );
    assert!(verdict.contains("too-many: skipped"), "{verdict}");
    assert!(
        verdict.contains("this verdict compares 3 of the 6 runs on this page"),
        "{verdict}"
    );
    // No figure a person must count the digits of, on the page or in a plot (the
    // guard's 3000002 bytes read as 2.86 MiB; limits ahead in millions of buffers).
    assert_eq!(long_numbers(&text), Vec::<String>::new());
    assert_eq!(long_numbers(&plot_texts(&out_dir)), Vec::<String>::new());
    // Landmark and data: one <main>, and each plot's figures beside it.
    assert_eq!(dom.matches("<main").count(), 1);
    assert_eq!(
        dom.matches("The plot's figures").count(),
        images,
        "every plot has its data beside it"
    );
    assert_eq!(
        body_count(&dom, "data-images-broken"),
        0,
        "a plot failed to load"
    );
    assert_eq!(body_count(&dom, "data-images-loaded"), images);
    // A missing plot is caught.
    std::fs::remove_file(out_dir.join("buffers.svg")).unwrap();
    assert_eq!(body_count(&browser_dom(&page), "data-images-broken"), 1);
}

#[test]
fn an_interrupted_sweeps_page_says_what_did_not_run() {
    let dir = temp_dir("interrupted");
    std::fs::write(dir.join("grid.toml"), GRID).unwrap();
    let whole = dir.join("whole");
    let out = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        whole.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // A sweep that stopped after its three shared-context runs: the plan knows six.
    let part = dir.join("part");
    std::fs::create_dir_all(&part).unwrap();
    std::fs::copy(whole.join("plan.json"), part.join("plan.json")).unwrap();
    let shared: String = std::fs::read_to_string(whole.join("results.jsonl"))
        .unwrap()
        .lines()
        // Scenario base lines, and the records of shared-context runs.
        .filter(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.get("key").is_none()
                || v["report"]["run_name"]
                    .as_str()
                    .unwrap()
                    .contains("context.mode=shared")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(part.join("results.jsonl"), shared).unwrap();
    let out = xtask_bare()
        .args(["summary", part.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = visible_text(&browser_dom(&part.join("index.html")));
    assert!(
        text.contains(
            "Incomplete: 3 of the 6 planned runs did not run (the sweep stopped before them"
        ),
        "{text}"
    );
    assert!(text.contains("Planned 6, done 3, missing 3"), "{text}");
    assert!(text.contains("Runs: 3 "), "{text}");
    let verdict = &text[text.find("Verdict").unwrap()..text.find("Buffers reached").unwrap()];
    assert!(
        verdict.contains("3 planned run(s) did not run: nothing here speaks for them"),
        "{verdict}"
    );
    assert!(!verdict.contains("no run failed"), "{verdict}");
    // The comparisons cite only runs that ran: no per-device context ran here.
    assert!(!verdict.contains("one context each"), "{verdict}");
    assert!(
        !verdict.contains("the per-device contexts do not"),
        "{verdict}"
    );
    let md = std::fs::read_to_string(part.join("summary.md")).unwrap();
    assert!(
        md.contains("**Incomplete:** 3 of the 6 planned runs did not run"),
        "{md}"
    );

    // A sweep stopped by Ctrl-C says so on its own page.
    let stopped = dir.join("stopped");
    let mut child = xtask(&[
        dir.join("grid.toml").to_str().unwrap(),
        "--out",
        stopped.to_str().unwrap(),
    ])
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_for_lines(&stopped.join("results.jsonl"), 1);
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    let done = results(&stopped).len();
    assert_eq!(status.code(), Some(130), "{done} run(s) done");
    let html = std::fs::read_to_string(stopped.join("index.html")).unwrap();
    assert!(
        html.contains(&format!("Planned 6, done {done}, missing {}", 6 - done)),
        "{html}"
    );
    assert!(html.contains("the sweep stopped before them"), "{html}");
}

#[test]
fn a_sweep_of_300_runs_renders_complete_and_small() {
    let out_dir = temp_dir("bench").join("out");
    let out = xtask_bare()
        .args([
            "bench-sweep",
            "300",
            "--out",
            out_dir.to_str().unwrap(),
            "--bin",
        ])
        .arg(clmulti_bin())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("sweep's own time per run: first tenth"),
        "{text}"
    );
    assert_eq!(results(&out_dir).len(), 300);
    let csv = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 301);
    let html = std::fs::metadata(out_dir.join("index.html")).unwrap().len();
    assert!(html < 2 << 20, "index.html is {html} bytes");
    let page = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    assert!(
        page.contains("more run(s) of this group are in"),
        "tables are cut, not endless"
    );
    assert!(std::fs::read_to_string(out_dir.join("buffers.svg"))
        .unwrap()
        .contains("runs per outcome"));
    let group = std::fs::read_to_string(out_dir.join("group-tiny.svg")).unwrap();
    assert!(
        group.contains("median (line) and range (band)"),
        "300 runs are aggregated"
    );
}
