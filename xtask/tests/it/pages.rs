//! Every committed page, as a reader sees it in a real browser (Debian's chromium):
//! where and how it ran is said up front (machine, OS, runtime, clmulti, and every
//! emulated part or that none was), a sweep's verdicts each open with their answer,
//! no raw number of more than six digits is left for a person to count, and no page
//! names the folder clmulti's libraries were built in. Diagnose pages made by a
//! clmulti before pages carried their context say so first.

use crate::common;
use common::{browser_dom, visible_text};
use std::path::{Path, PathBuf};

fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            pages(&path, out);
        } else if path.file_name().is_some_and(|n| n == "index.html") {
            out.push(path);
        }
    }
}

/// A run of digits (thousands separators and decimals aside) longer than six, outside
/// names, paths and commits a reader copies rather than reads, and outside a failed
/// call quoted as strace prints it (`after mmap(0x0, 1048576, ...) failed with`).
fn raw_numbers(text: &str) -> Vec<String> {
    let mut read = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("after ") {
        read.push_str(&rest[..start]);
        rest = &rest[start..];
        match rest.find(" failed with") {
            Some(end) => rest = &rest[end..],
            None => break,
        }
    }
    read.push_str(rest);
    read.split(|c: char| c.is_whitespace() || "(),;:[]|=".contains(c))
        .filter(|w| !w.contains('/') && !w.contains('-') && !w.contains('_') && !w.contains('x'))
        .filter(|w| {
            let digits = w.trim_end_matches('.').split('.').next().unwrap_or("");
            digits.len() > 6 && digits.chars().all(|c| c.is_ascii_digit())
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn committed_pages_say_where_they_ran_and_answer_first() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut all = Vec::new();
    pages(&root, &mut all);
    all.sort();
    assert!(all.len() >= 10, "{all:?}");
    let mut checked_headers = 0;
    for page in &all {
        let text = visible_text(&browser_dom(page));
        let name = page.display();
        // Sweep pages, and diagnose pages made since pages carry their context.
        let sweep = page.with_file_name("summary.md").exists();
        let diagnose_with_context = std::fs::read_to_string(page.with_file_name("diagnose.json"))
            .is_ok_and(|j| j.contains("\"context\""));
        if sweep || diagnose_with_context {
            for label in ["Machine:", "OS:", "OpenCL:", "clmulti:", "Emulated:"] {
                assert!(text.contains(label), "{name}: no {label} line");
            }
            checked_headers += 1;
        }
        if diagnose_with_context {
            assert!(
                text.contains("Verdict Compared: "),
                "{name}: the verdict does not open with its answer"
            );
        }
        if sweep {
            let verdicts = text.matches("Verdict: ").count();
            let answers = text.matches(" Compared: ").count();
            assert_eq!(verdicts, answers, "{name}: a verdict without its answer");
        }
        // Diagnose pages made before pages carried their context (on machines not at
        // hand again, e.g. two H200s) say so at their top, and are otherwise as made.
        if !sweep && !diagnose_with_context {
            let notice = text.find("An earlier page.");
            assert!(
                notice.is_some_and(|at| at < text.find("Verdict").unwrap_or(text.len())),
                "{name}: made before pages carried their context, and does not say so first"
            );
        }
        // No page names the folder it was built in: clmulti's libraries by file name.
        let built_in = text
            .match_indices("libclmulti_")
            .filter(|(at, _)| text[..*at].ends_with('/'));
        assert_eq!(
            built_in.count(),
            0,
            "{name}: a build path of clmulti's libraries"
        );
        if sweep || diagnose_with_context {
            let raw = raw_numbers(&text);
            assert!(
                raw.is_empty(),
                "{name}: raw numbers a person must count: {raw:?}"
            );
        }
    }
    assert!(checked_headers >= 9, "{checked_headers} pages with headers");
}
