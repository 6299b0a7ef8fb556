//! One run in one line: how it ended and, from its analysis, why.

use crate::report::{Report, StopReason};
use crate::verdict::Cause;

impl Report {
    /// The buffers the run made, in words: exact, or, for a process that ended
    /// without its report (a crash, a kill), its last sample's count, after which
    /// it ended.
    pub fn buffers_words(&self) -> String {
        match self.stop {
            StopReason::Crashed { .. }
            | StopReason::TimedOut { .. }
            | StopReason::NoReport { .. } => format!(
                "at least {} buffers (its last sample; it ended before the next)",
                self.buffers
            ),
            _ => format!("{} buffers", self.buffers),
        }
    }

    /// One line saying how the run ended and, from the analysis, why: what a person
    /// reads first.
    pub fn headline(&self) -> String {
        let cause = match &self.analysis.cause {
            Some(Cause::Resource {
                resource, limit, ..
            }) => format!(
                "; {} reached {} (confirmed by moving the limit)",
                resource.label(),
                limit.name
            ),
            Some(c @ (Cause::Untested { .. } | Cause::OneSided { .. })) => {
                let how = if matches!(c, Cause::OneSided { .. }) {
                    "lowering its limit moved the failure as predicted, raising it could not be tried, and the failing call names it"
                } else {
                    "at its limit and named by the failing call; its limit was not moved"
                };
                match self.analysis.claim(crate::claim::Topic::Cause) {
                    Some(claim) => match claim.settled() {
                        Some(a) => format!("; {} ({how})", a.words),
                        None => format!(
                            "; not settled: {}",
                            crate::claim::or_list(
                                claim.remaining().iter().map(|a| a.words.as_str())
                            )
                        ),
                    },
                    None => String::new(),
                }
            }
            Some(Cause::NotExplained { .. }) => "; not explained by what was measured".into(),
            Some(Cause::NotReproducible { counts }) => format!(
                "; not reproducible (re-runs failed at {})",
                crate::words::counts(counts)
            ),
            Some(Cause::TimeLimit { seconds, .. }) => {
                format!(
                    "; a time limit (after about {})",
                    crate::words::seconds(*seconds)
                )
            }
            Some(Cause::Persistent { .. }) => {
                "; a limit that persists across processes (re-runs failed earlier and earlier)"
                    .into()
            }
            None => String::new(),
        };
        let ahead = match (&self.stop, &self.analysis.first_limit) {
            (StopReason::Completed | StopReason::Guard { .. }, Some(ahead)) => format!(
                "; first limit ahead: {} at ~{} buffers{}",
                ahead.limit.name,
                clmulti_scenario::format_count(ahead.count as f64),
                if ahead.estimated { " (estimate)" } else { "" }
            ),
            _ => String::new(),
        };
        match &self.stop {
            StopReason::Completed => format!("completed: {} buffers{ahead}", self.buffers),
            StopReason::Failed { error, call, index } if *index > 0 || self.buffers > 0 => format!(
                "FAILED after {} buffers: {error} in {}{cause}",
                self.buffers,
                call.c_name()
            ),
            StopReason::Failed { error, call, .. } => {
                format!(
                    "FAILED before the first buffer: {error} in {}",
                    call.c_name()
                )
            }
            other => format!("{} ({}){ahead}", other.summary(), self.buffers_words()),
        }
    }
}
