//! The version knowledge about Intel's NEO, checked against the committed table of
//! every NEO Debian ships, measured on clmulti's emulated i915 driver
//! (results/intel-neo-versions/versions.json, scripts/neo-versions-results.sh): where
//! the facts' version scopes say a shared buffer keeps a descriptor, a measured
//! version kept one, and nowhere else; where they say the shared context is refused,
//! it was.

use clmulti_explain::knowledge::{
    Applies, Seen, NEO_FD_PER_SHARED_BUFFER, NEO_NO_MULTI_ROOT_CONTEXTS,
};

fn table() -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/intel-neo-versions/versions.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_descriptor_per_shared_buffer_holds_for_exactly_the_versions_measured_to_keep_one() {
    let table = table();
    let rows = table["rows"].as_array().expect("rows");
    let mut checked = Vec::new();
    for row in rows.iter().filter(|r| r["listed"].as_u64() >= Some(2)) {
        let (neo, device) = (
            row["neo"].as_str().unwrap(),
            row["device"].as_str().unwrap(),
        );
        let seen = Seen {
            devices: vec![device.to_owned()],
            kernel_driver: Some("i915".into()),
            api: "OpenCL",
            version: Some(neo.to_owned()),
        };
        let what = format!("NEO {neo} on {device}");
        let cause = row["cause"].as_str().unwrap();
        let refused = NEO_NO_MULTI_ROOT_CONTEXTS.scope.applies(&seen) == Applies::Yes;
        assert_eq!(
            refused,
            cause.contains("in clCreateContext") && cause.contains("(-6)"),
            "{what}: the refused context, known {refused}, measured: {cause}"
        );
        let shared = row["shared"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["devices"] == 2 && p["strategy"] == "create");
        let keeps = NEO_FD_PER_SHARED_BUFFER.scope.applies(&seen) == Applies::Yes;
        match shared {
            Some(p) => {
                let descriptors = p["descriptors"].as_f64().unwrap();
                let want = if keeps { 1.0 } else { 0.0 };
                assert!(
                    (descriptors - want).abs() < 0.05,
                    "{what}: {descriptors} descriptors per shared buffer measured, {want} known"
                );
            }
            None => assert!(
                refused && !keeps,
                "{what}: no shared buffer was made (refused {refused}), yet the fact says one keeps a descriptor ({keeps})"
            ),
        }
        checked.push(format!("{what}: keeps {keeps}, refused {refused}"));
    }
    // The table covers both sides of each bound: a refused context, kept descriptors and
    // none kept.
    let all = checked.join("\n");
    assert!(
        all.contains("refused true")
            && all.contains("keeps true")
            && all.contains("keeps false, refused false"),
        "{all}"
    );
}
