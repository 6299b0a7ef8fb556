//! Where and how a page's runs ran, for the header every page opens with: the
//! machine, its OS and kernel, the runtime and its driver, clmulti's version and
//! commit, the date, and every part clmulti emulated (so that a failure under an
//! emulation never reads as a runtime's own).

use crate::Report;
use serde::{Deserialize, Serialize};

/// A page's header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageContext {
    /// The host's name.
    pub host: String,
    /// The OS and its kernel: `Debian GNU/Linux 12 (bookworm), kernel 6.1.0-27-amd64`.
    pub os: String,
    /// The OpenCL platform, its version and its devices' driver versions.
    pub runtime: String,
    /// `clmulti 0.1.0 (commit 1a2b3c4d5e6f, features: none)`.
    pub clmulti: String,
    /// When the page was made, UTC: `2026-12-01 19:40 UTC`.
    pub date: String,
    /// Every part of the system clmulti emulated, in words; empty: none.
    pub emulated: Vec<String>,
}

impl PageContext {
    /// The parts the reports ran under that clmulti emulated: NEO's emulated devices
    /// (AUB mode, or its kernel-driver path over the emulated i915 driver), clmulti's
    /// emulation layer with its policy and knobs, any other OpenCL layer.
    pub fn emulated_parts<'a>(reports: impl IntoIterator<Item = &'a Report>) -> Vec<String> {
        let mut parts: Vec<String> = Vec::new();
        for r in reports {
            if let Some(neo) = &r.neo_emulation {
                parts.push(neo.label());
            }
            if let Some(layers) = &r.layers {
                let ours = layers
                    .opencl_layers
                    .contains(clmulti_contract::LAYER.file_name);
                let knobs: Vec<String> = layers
                    .emulation
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                // By file name: a page never carries the folder it was built in.
                let names: Vec<&str> = layers
                    .opencl_layers
                    .split(':')
                    .filter(|l| !l.is_empty())
                    .map(|l| l.rsplit('/').next().unwrap_or(l))
                    .collect();
                let names = names.join(":");
                parts.push(match (ours, knobs.is_empty()) {
                    (true, false) => format!(
                        "clmulti's emulation layer ({names}) with {}: what it models is part of what was measured",
                        knobs.join(" ")
                    ),
                    _ => format!("the OpenCL layers named in OPENCL_LAYERS ({names})"),
                });
            }
        }
        let mut seen = std::collections::HashSet::new();
        parts.retain(|p| seen.insert(p.clone()));
        parts
    }

    /// The header's lines, in words: `Machine: ...`, `Emulated: ...` last.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let emulated = if self.emulated.is_empty() {
            "nothing: the runtime ran on this machine's own driver".to_owned()
        } else {
            self.emulated.join("; ")
        };
        vec![
            ("Machine", self.host.clone()),
            ("OS", self.os.clone()),
            ("OpenCL", self.runtime.clone()),
            ("clmulti", self.clmulti.clone()),
            ("Date", self.date.clone()),
            ("Emulated", emulated),
        ]
    }

    /// As text lines: `Machine: ...`.
    pub fn text(&self) -> String {
        self.lines()
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}\n"))
            .collect()
    }
}

/// `2026-12-01 19:40 UTC` for Unix seconds (Howard Hinnant's civil-date algorithm).
pub fn utc_date(unix: u64) -> String {
    let days = (unix / 86400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        unix % 86400 / 3600,
        unix % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(super::utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(super::utc_date(1_796_154_000), "2026-12-01 19:40 UTC");
    }
}
