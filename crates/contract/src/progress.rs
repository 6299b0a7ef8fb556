//! The progress envelope: what a run's child tells its supervisor, one line at a time,
//! through a file it inherits (stdout and stderr stay the runtime's). The supervisor
//! moves the payloads as JSON text; what they hold (setup, samples, report) is the
//! caller's to read.
//!
//! Lines, in the order a child writes them: [`LOADING`] and [`LOADED`] around the
//! runtime's loading, then `started\tJSON` (its setup), `sample\tJSON` (each sample),
//! `report\tJSON` (its report, last). Each line is written with one `write`: a crash
//! leaves whole lines.

/// The environment variable naming the progress file a child writes: a path, or
/// `/dev/fd/N` for a descriptor it inherited.
pub const PROGRESS_ENV: &str = "CLMULTI_PROGRESS_FILE";

/// The arguments a harness starts a run's child with (`clmulti` then these, then
/// the resolved scenario's path): one list, so that the child can know them without
/// building its whole command line first.
pub const RESOLVED_CHILD_ARGS: [&str; 6] =
    ["run", "--format", "json", "--child", "-q", "--resolved"];

/// The line written as the child is about to load the OpenCL runtime (with its
/// newline: a hook writes it with one `write`, without allocating).
pub const LOADING: &str = "loading\n";
/// The line written once loading returned.
pub const LOADED: &str = "loaded\n";

/// What a line with a payload carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The child's setup: platform, devices, limits (a report with nothing measured).
    Started,
    /// One sample.
    Sample,
    /// The child's report.
    Report,
}

impl Kind {
    /// The word that starts its lines.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Started => "started",
            Kind::Sample => "sample",
            Kind::Report => "report",
        }
    }

    /// A whole line: `kind\tJSON\n`.
    pub fn line(self, json: &str) -> String {
        format!("{}\t{json}\n", self.word())
    }

    /// The kind and payload of a line (without its newline), if it carries one.
    pub fn parse(line: &str) -> Option<(Kind, &str)> {
        let (word, json) = line.split_once('\t')?;
        let kind = [Kind::Started, Kind::Sample, Kind::Report]
            .into_iter()
            .find(|k| k.word() == word)?;
        Some((kind, json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_written() {
        let line = Kind::Sample.line("{\"allocations\":3}");
        assert_eq!(line, "sample\t{\"allocations\":3}\n");
        assert_eq!(
            Kind::parse(line.trim_end()),
            Some((Kind::Sample, "{\"allocations\":3}"))
        );
        assert_eq!(Kind::parse(LOADING.trim_end()), None);
        assert_eq!(Kind::parse("other\t{}"), None);
    }
}
