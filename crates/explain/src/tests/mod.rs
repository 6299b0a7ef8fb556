//! The reasoning over hand-built reports: no OpenCL, no child process, milliseconds.

mod analysis;
mod diagnosis;
mod experiment;
mod rigor;

/// Every statement of a report's analysis, one a line.
fn text(r: &crate::Report) -> String {
    r.analysis
        .statements
        .iter()
        .map(|s| format!("{s}\n"))
        .collect()
}
