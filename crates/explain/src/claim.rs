//! Claims: what a verdict says about a mechanism, with everything else that could have
//! given the same readings.
//!
//! A rule that names a mechanism ("a cache", "per process", "another limit") is only
//! as good as the experiment behind it, and an experiment tells apart only the
//! alternatives it was built to separate. So a claim is data: a [`Topic`], the
//! [`Alternative`]s that could explain the runs (a leak that stopped beside a bounded
//! cache, a per-user count beside a per-process one, bytes in 2 MiB granules beside a
//! count of buffers), and for each the evidence that [`Judged`] it: supported,
//! excluded, or left open. Its sentence ([`Claim::sentence`]) names one mechanism only
//! when every other alternative was excluded; otherwise it names what remains. No
//! reasoning step builds a sentence about a mechanism by itself: it builds a claim.
//!
//! The tests hold every claim the engine makes to this (no alternative left neither
//! excluded nor named), and judge claims against faults with known truth: a claim is
//! contradicted when the truth is not among its remaining alternatives
//! ([`Claim::admits`]).

use serde::{Deserialize, Serialize};

/// What a claim is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topic {
    /// Whether the failure holds still when re-run unchanged: a steady limit, chance,
    /// a time limit, something kept outside the process.
    Reproduction,
    /// Whether the failure follows buffers, time, or a budget restored with time.
    TimeOrCount,
    /// Which limit stopped the run.
    Cause,
    /// What the limit counts: buffers, bytes, bytes in granules.
    Unit,
    /// Whether capacity comes back after release: at once, later, never.
    Lifetime,
    /// Who shares the limit: a context, the process, the user, a cgroup, the system.
    Scope,
    /// How the limit depends on the devices in the context.
    Peers,
    /// What stayed after release: a cache, a leak, the C library's freed heap.
    Kept,
    /// What sharing a context costs per buffer.
    Cost,
    /// Which system call failed inside the OpenCL call that failed.
    FailingCall,
    /// What a fix's run shows.
    Fix,
}

impl Topic {
    /// The topic in words: `what the limit counts`.
    pub fn words(self) -> &'static str {
        match self {
            Topic::Reproduction => "whether the failure holds still",
            Topic::TimeOrCount => "time or count",
            Topic::Cause => "the cause",
            Topic::Unit => "what the limit counts",
            Topic::Lifetime => "whether capacity comes back after release",
            Topic::Scope => "who shares the limit",
            Topic::Peers => "how the limit depends on the devices",
            Topic::Kept => "what stayed after release",
            Topic::Cost => "the cost of sharing",
            Topic::FailingCall => "the failing call",
            Topic::Fix => "the fix",
        }
    }
}

/// A range of a parameter an alternative covers: a granule of at least 4 MiB, a
/// release given back later than 1 s. Inclusive at both ends; `max: None` is
/// unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    /// The least value.
    pub min: f64,
    /// The greatest value, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl Range {
    /// `min..=max`.
    pub fn between(min: f64, max: f64) -> Range {
        Range {
            min,
            max: Some(max),
        }
    }

    /// `min..`.
    pub fn at_least(min: f64) -> Range {
        Range { min, max: None }
    }

    /// Whether `value` lies in it.
    pub fn holds(&self, value: f64) -> bool {
        value >= self.min && self.max.is_none_or(|max| value <= max)
    }
}

/// How the runs judged one alternative.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Judged {
    /// A reading or an experiment agrees with it, and said so.
    Supported {
        /// What agrees, in words.
        by: String,
    },
    /// A reading or an experiment rules it out.
    Excluded {
        /// What rules it out, in words.
        by: String,
    },
    /// Nothing here tells: not tested, or the runs fit it as well as another.
    Open {
        /// Why it stays open.
        why: String,
    },
}

/// One thing that could explain the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    /// A stable name (`bytes`, `per-process`, `resource:open_fds`), what tests and
    /// tools match on.
    pub key: String,
    /// The parameter range it covers, for one that has a parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    /// It in words, as a clause: `the limit counts bytes`.
    pub words: String,
    /// What the runs say of it.
    #[serde(flatten)]
    pub judged: Judged,
}

impl Alternative {
    /// An alternative, open until judged.
    pub fn new(key: impl Into<String>, words: impl Into<String>) -> Self {
        Alternative {
            key: key.into(),
            range: None,
            words: words.into(),
            judged: Judged::Open {
                why: "not tested".into(),
            },
        }
    }

    /// With a parameter range.
    pub fn over(mut self, range: Range) -> Self {
        self.range = Some(range);
        self
    }

    /// Judged supported by `by`.
    pub fn supported(mut self, by: impl Into<String>) -> Self {
        self.judged = Judged::Supported { by: by.into() };
        self
    }

    /// Judged excluded by `by`.
    pub fn excluded(mut self, by: impl Into<String>) -> Self {
        self.judged = Judged::Excluded { by: by.into() };
        self
    }

    /// Left open, because `why`.
    pub fn open(mut self, why: impl Into<String>) -> Self {
        self.judged = Judged::Open { why: why.into() };
        self
    }

    /// Whether the runs ruled it out.
    pub fn is_excluded(&self) -> bool {
        matches!(self.judged, Judged::Excluded { .. })
    }

    /// Whether it matches a truth: the same key, and the value (when the truth has
    /// one) within its range.
    pub fn matches(&self, key: &str, value: Option<f64>) -> bool {
        self.key == key
            && match (self.range, value) {
                (Some(range), Some(v)) => range.holds(v),
                _ => true,
            }
    }
}

/// A statement about a mechanism: its topic, what it is about, and every alternative
/// considered, each judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// What kind of question it answers.
    pub topic: Topic,
    /// What it is about, in words: `the shared context's failure at 989 buffers`.
    pub subject: String,
    /// The alternatives, in the order they are said.
    pub alternatives: Vec<Alternative>,
}

impl Claim {
    /// A claim over `alternatives`.
    pub fn new(topic: Topic, subject: impl Into<String>, alternatives: Vec<Alternative>) -> Self {
        Claim {
            topic,
            subject: subject.into(),
            alternatives,
        }
    }

    /// The alternatives the runs did not rule out.
    pub fn remaining(&self) -> Vec<&Alternative> {
        self.alternatives
            .iter()
            .filter(|a| !a.is_excluded())
            .collect()
    }

    /// The one alternative left, when exactly one is (or several of one key, each a
    /// part of it: every device's memory): what the claim asserts.
    pub fn settled(&self) -> Option<&Alternative> {
        match self.remaining().as_slice() {
            [one] => Some(one),
            [first, rest @ ..]
                if rest
                    .iter()
                    .all(|a| a.key == first.key && a.range == first.range) =>
            {
                Some(first)
            }
            _ => None,
        }
    }

    /// Whether the one alternative left is `key`.
    pub fn settles_on(&self, key: &str) -> bool {
        self.settled().is_some_and(|a| a.key == key)
    }

    /// Whether `key` is among the alternatives left.
    pub fn leaves(&self, key: &str) -> bool {
        self.remaining().iter().any(|a| a.key == key)
    }

    /// Whether a truth (`key`, with its value where it has one) is among the
    /// alternatives left: a claim that does not admit the truth is false.
    pub fn admits(&self, key: &str, value: Option<f64>) -> bool {
        self.remaining().iter().any(|a| a.matches(key, value))
    }

    /// The claim as a clause: the one alternative left; or those left, said as what
    /// these runs cannot tell apart; or that none fits. What judged each is in
    /// [`Claim::evidence`].
    pub fn sentence(&self) -> String {
        let remaining = self.remaining();
        match remaining.as_slice() {
            [] => format!(
                "{}: none of the alternatives considered fits the runs ({})",
                self.subject,
                or_list(self.alternatives.iter().map(|a| a.words.as_str()))
            ),
            [one] => format!("{}: {}", self.subject, one.words),
            several if self.settled().is_some() => format!(
                "{}: {}",
                self.subject,
                several
                    .iter()
                    .map(|a| a.words.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            several => format!(
                "{}: {}; these runs cannot tell which",
                self.subject,
                or_list(several.iter().map(|a| a.words.as_str())),
            ),
        }
    }

    /// The evidence, one line per alternative: what supported, excluded or left each
    /// open (the page shows it on request).
    pub fn evidence(&self) -> Vec<String> {
        self.alternatives
            .iter()
            .map(|a| match &a.judged {
                Judged::Supported { by } => format!("fits: {} ({by})", a.words),
                Judged::Excluded { by } => format!("ruled out: {} ({by})", a.words),
                Judged::Open { why } => format!("open: {} ({why})", a.words),
            })
            .collect()
    }

    /// Rules out every alternative still open that `keep` does not accept, with the
    /// same evidence: what a model that fits every point leaves behind.
    pub fn exclude_others(&mut self, keep: impl Fn(&Alternative) -> bool, by: &str) {
        for a in &mut self.alternatives {
            if !a.is_excluded() && !keep(a) {
                a.judged = Judged::Excluded { by: by.to_owned() };
            }
        }
    }
}

/// `a, b or c`.
pub fn or_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.into_iter().collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit() -> Claim {
        Claim::new(
            Topic::Unit,
            "what the limit counts",
            vec![
                Alternative::new("buffers", "buffers"),
                Alternative::new("bytes", "bytes"),
                Alternative::new("granules", "bytes in granules of at least 2.00 MiB")
                    .over(Range::at_least(2.0 * 1048576.0)),
            ],
        )
    }

    #[test]
    fn a_claim_names_one_mechanism_only_when_every_other_is_ruled_out() {
        let mut c = unit();
        c.alternatives[1] = c.alternatives[1]
            .clone()
            .excluded("2 MiB failed at the same count");
        let s = c.sentence();
        assert!(
            s.contains("buffers or bytes in granules of at least 2.00 MiB"),
            "{s}"
        );
        assert!(s.contains("cannot tell which"), "{s}");
        assert!(c.settled().is_none());
        c.alternatives[2] = c.alternatives[2]
            .clone()
            .excluded("4 MiB failed at the same count");
        c.alternatives[0] = c.alternatives[0]
            .clone()
            .supported("three sizes failed at 812");
        assert!(c.settles_on("buffers"));
        assert_eq!(c.sentence(), "what the limit counts: buffers");
        let evidence = c.evidence().join("\n");
        assert!(
            evidence.contains("fits: buffers (three sizes failed at 812)"),
            "{evidence}"
        );
        assert!(
            evidence.contains("ruled out: bytes (2 MiB failed at the same count)"),
            "{evidence}"
        );
    }

    #[test]
    fn a_truth_outside_what_is_left_is_a_contradiction() {
        let mut c = unit();
        c.exclude_others(|a| a.key == "granules", "only granules fit");
        assert!(c.admits("granules", Some(4.0 * 1048576.0)));
        assert!(!c.admits("granules", Some(1048576.0)), "below the range");
        assert!(!c.admits("buffers", None));
        assert_eq!(c.evidence().len(), 3);
        assert!(c.sentence().contains("granules"));
    }

    #[test]
    fn none_left_says_so() {
        let mut c = unit();
        c.exclude_others(|_| false, "nothing fits");
        assert!(c
            .sentence()
            .contains("none of the alternatives considered fits"));
        assert!(!c.admits("bytes", None));
    }
}
