//! A fault space with ground truth: faults generated over every dimension the fault
//! layer (`crates/cli/tests/fault_space/layer.c`) has, each with the truth about it,
//! and a judge that holds a diagnosis's claims against that truth.
//!
//! A claim is contradicted when the truth is not among the alternatives it leaves
//! ([`Claim::admits`]): a claim that names one mechanism must name the true one, a
//! claim that leaves several must leave the true one among them. "Cannot tell" is
//! never a contradiction; a wrong mechanism always is.

use crate::claim::{Claim, Topic};
use crate::diagnosis::Diagnosis;
use std::collections::BTreeMap;
use std::fmt;

/// A small deterministic generator (xorshift64*): the same seed, the same faults.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; 0 is moved off the fixed point).
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `low..=high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }

    /// True with chance `percent` in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// The truth of one dimension: the key a claim's alternative must carry, and the
/// value its range must hold, where it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// The alternative's key.
    pub key: String,
    /// The parameter (granule bytes, delay seconds, rate per second).
    pub value: Option<f64>,
}

impl Fact {
    fn new(key: &str) -> Fact {
        Fact {
            key: key.into(),
            value: None,
        }
    }

    fn with(key: &str, value: f64) -> Fact {
        Fact {
            key: key.into(),
            value: Some(value),
        }
    }
}

/// What is true of a fault, topic by topic (a topic it says nothing of is not judged).
#[derive(Debug, Clone, Default)]
pub struct Truth {
    /// Topic -> the truth.
    pub facts: BTreeMap<Topic, Fact>,
    /// Resource labels whose memory the fault keeps after release, and how
    /// (`C heap in use` -> `leak`).
    pub kept: Vec<(String, Fact)>,
    /// Whether more than one limit can stop a run (a second limit behind the first, a
    /// real resource under the layer's own budget): "another limit" may then be true.
    pub several_limits: bool,
}

/// One generated fault: what to set, and what is true.
#[derive(Debug, Clone)]
pub struct Fault {
    /// A name that says its dimensions.
    pub name: String,
    /// The fault layer's variables (`CLMULTI_FS_*`).
    pub env: BTreeMap<String, String>,
    /// Soft and hard RLIMIT_NOFILE to start diagnose under, when the fault sets them.
    pub nofile: Option<(u64, u64)>,
    /// `--count` for diagnose.
    pub count: u64,
    /// `--size` for diagnose.
    pub size: u64,
    /// The truth.
    pub truth: Truth,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        write!(f, "{}: {}", self.name, env.join(" "))?;
        if let Some((soft, hard)) = self.nofile {
            write!(f, " nofile={soft}/{hard}")?;
        }
        write!(f, " --count {} --size {}", self.count, self.size)
    }
}

/// The buffer size every fault runs at.
pub const SIZE: u64 = 64 << 10;
/// The descriptors a run child has open before its first buffer, about (PoCL's, the
/// tracer's, clmulti's own): a nofile limit leaves this much room below it.
const BASE_FDS: u64 = 13;

/// A fault drawn from the whole space.
pub fn generate(rng: &mut Rng, index: u64) -> Fault {
    match rng.range(0, 99) {
        0..=44 => budget(rng, index),
        45..=64 => descriptors(rng, index),
        65..=71 => timed(rng, index),
        72..=79 => random(rng, index),
        80..=84 => maps(rng, index),
        _ => kept(rng, index),
    }
}

fn fault(name: String, env: &[(&str, String)], count: u64, truth: Truth) -> Fault {
    Fault {
        name,
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
        nofile: None,
        count,
        size: SIZE,
        truth,
    }
}

fn set(truth: &mut Truth, topic: Topic, fact: Fact) {
    truth.facts.insert(topic, fact);
}

/// The layer's own budget: every dimension of a limit no reading shows.
fn budget(rng: &mut Rng, index: u64) -> Fault {
    let n = rng.range(300, 1200);
    let unit = rng.pick(&["count", "bytes", "granules"]);
    let granule = rng.pick(&[128u64, 192, 256, 512, 1024, 2048]) << 10;
    let lifetime = rng.pick(&["live", "live", "cumulative", "delayed", "rate"]);
    let scope = rng.pick(&["context", "process", "process", "user", "cgroup", "system"]);
    let peers = rng.pick(&["none", "none", "linear", "quadratic", "device"]);
    let call = rng.pick(&["none", "hooked", "unhooked", "raw"]);
    let mut truth = Truth::default();
    let (unit_env, per_buffer, unit_fact) = match unit {
        "count" => ("count".to_owned(), 1.0, Fact::new("buffers")),
        "bytes" => ("bytes".to_owned(), SIZE as f64, Fact::new("bytes")),
        _ => (
            format!("granules:{granule}"),
            (SIZE as f64 / granule as f64).ceil() * granule as f64,
            Fact::with("granules", granule as f64),
        ),
    };
    let limit = n as f64 * per_buffer;
    let delay_ms = rng.pick(&[30u64, 100, 300]);
    let rate = rng.pick(&[0.05, 0.3, 2.0]) * n as f64;
    let lifetime_env = match lifetime {
        "delayed" => format!("delayed:{delay_ms}"),
        "rate" => format!("rate:{}", rate * per_buffer),
        other => other.to_owned(),
    };
    budget_truth(
        &mut truth,
        (unit_fact, lifetime, scope, peers, call),
        delay_ms,
        rate,
    );
    let mut env = vec![
        ("CLMULTI_FS_LIMIT", format!("{limit}")),
        ("CLMULTI_FS_UNIT", unit_env),
        ("CLMULTI_FS_LIFETIME", lifetime_env),
        ("CLMULTI_FS_SCOPE", scope.to_owned()),
        (
            "CLMULTI_FS_PEERS",
            if peers == "device" {
                "device:1".into()
            } else {
                peers.to_owned()
            },
        ),
        ("CLMULTI_FS_CALL", call.to_owned()),
    ];
    if rng.chance(20) {
        let behind = n + (n * rng.range(3, 15) / 100).max(20);
        env.push(("CLMULTI_FS_SECOND", behind.to_string()));
        truth.several_limits = true;
    }
    let name = format!("{index:03}-budget-{unit}-{lifetime}-{scope}-{peers}-{call}");
    fault(name, &env, 4 * n, truth)
}

/// The truth of a budget fault, dimension by dimension.
fn budget_truth(
    truth: &mut Truth,
    (unit_fact, lifetime, scope, peers, call): (Fact, &str, &str, &str, &str),
    delay_ms: u64,
    rate: f64,
) {
    set(truth, Topic::Unit, unit_fact);
    set(
        truth,
        Topic::Lifetime,
        match lifetime {
            "delayed" => Fact::with("given-back", delay_ms as f64 / 1000.0),
            "live" => Fact::with("given-back", 0.0),
            "rate" => Fact::new("rate"),
            other => Fact::new(other),
        },
    );
    set(truth, Topic::Scope, Fact::new(scope));
    set(truth, Topic::Peers, Fact::new(peers));
    set(truth, Topic::Cause, Fact::new(crate::cause::UNSEEN));
    let shared_scope = matches!(scope, "user" | "cgroup" | "system");
    let reproduction = match (lifetime, shared_scope) {
        ("cumulative", true) => Fact::new("outside-kept"),
        ("rate", true) => Fact::with("outside-restored", rate),
        ("rate", false) => Fact::new("pace"),
        _ => Fact::new("steady"),
    };
    set(truth, Topic::Reproduction, reproduction);
    set(
        truth,
        Topic::TimeOrCount,
        if lifetime == "rate" {
            Fact::with("rate", rate)
        } else {
            Fact::new("count")
        },
    );
    set(
        truth,
        Topic::FailingCall,
        Fact::new(if call == "none" { "none" } else { "unseen" }),
    );
}

/// Real descriptors, K a buffer (times the device multiplier), under RLIMIT_NOFILE;
/// sometimes with the hard limit at the soft one, a raise that hurts, or a budget of
/// the layer's own right behind (a decoy: descriptors at their limit, yet not what
/// failed).
fn descriptors(rng: &mut Rng, index: u64) -> Fault {
    let per = rng.pick(&[1u64, 2, 4]);
    let peers = rng.pick(&["none", "linear", "quadratic"]);
    let call = rng.pick(&["hooked", "unhooked", "raw"]);
    let n = rng.range(150, 700);
    let soft = BASE_FDS + n * per;
    let hard_too = rng.chance(30);
    let decoy = rng.chance(25);
    let mut truth = Truth::default();
    let mut env = vec![
        ("CLMULTI_FS_CONSUME", format!("fds:{per}")),
        ("CLMULTI_FS_PEERS", peers.to_owned()),
        ("CLMULTI_FS_CALL", call.to_owned()),
    ];
    let mut name = format!("{index:03}-fds-{per}-{peers}-{call}");
    if decoy {
        // The budget fails first, a few buffers before the descriptors would run out.
        env.push(("CLMULTI_FS_LIMIT", (n - 3).to_string()));
        set(&mut truth, Topic::Cause, Fact::new(crate::cause::UNSEEN));
        set(&mut truth, Topic::FailingCall, Fact::new("none"));
        truth.several_limits = true;
        name.push_str("-decoy");
    } else {
        set(&mut truth, Topic::Cause, Fact::new("resource:open_fds"));
        set(&mut truth, Topic::Unit, Fact::new("buffers"));
        set(&mut truth, Topic::Lifetime, Fact::with("given-back", 0.0));
        set(&mut truth, Topic::Scope, Fact::new("process"));
        set(&mut truth, Topic::Peers, Fact::new(peers));
    }
    if !decoy && rng.chance(20) {
        env.push(("CLMULTI_FS_RAISE_HURTS", soft.to_string()));
        name.push_str("-raise-hurts");
    }
    if !decoy && rng.chance(20) {
        // Behind the descriptors whatever the run's own descriptors at its start.
        let behind = n + (n * rng.range(2, 10) / 100).max(30);
        env.push(("CLMULTI_FS_SECOND", behind.to_string()));
        truth.several_limits = true;
        name.push_str("-second");
    }
    set(&mut truth, Topic::Reproduction, Fact::new("steady"));
    set(&mut truth, Topic::TimeOrCount, Fact::new("count"));
    let mut f = fault(name, &env, 4 * n, truth);
    f.nofile = Some((soft, if hard_too { soft } else { soft * 4 }));
    f
}

/// A deadline: every buffer after some time fails (buffers slowed so it comes at a
/// few hundred).
fn timed(rng: &mut Rng, index: u64) -> Fault {
    let seconds = rng.pick(&[0.08, 0.15, 0.3]);
    let delay_us = rng.pick(&[150u64, 300]);
    let mut truth = Truth::default();
    set(&mut truth, Topic::TimeOrCount, Fact::new("time"));
    let env = [
        ("CLMULTI_FS_TIME", format!("deadline:{seconds}")),
        ("CLMULTI_FS_DELAY_US", delay_us.to_string()),
    ];
    let expected = (seconds * 1e6 / delay_us as f64) as u64;
    fault(
        format!("{index:03}-deadline-{seconds}s-{delay_us}us"),
        &env,
        20 * expected.max(200),
        truth,
    )
}

/// Chance: each buffer fails with 1 in N, or with a hazard rising with the count.
fn random(rng: &mut Rng, index: u64) -> Fault {
    let kind = rng.pick(&["rate", "hazard"]);
    let n = rng.range(300, 900);
    let mut truth = Truth::default();
    set(&mut truth, Topic::Reproduction, Fact::new("random"));
    fault(
        format!("{index:03}-random-{kind}"),
        &[("CLMULTI_FS_RANDOM", format!("{kind}:{n}"))],
        10 * n,
        truth,
    )
}

/// Real mappings, K a buffer, against vm.max_map_count (a setting clmulti never moves).
fn maps(rng: &mut Rng, index: u64) -> Fault {
    let per = rng.pick(&[64u64, 96]);
    let mut truth = Truth::default();
    set(&mut truth, Topic::Cause, Fact::new("resource:memory_maps"));
    set(&mut truth, Topic::Reproduction, Fact::new("steady"));
    set(&mut truth, Topic::TimeOrCount, Fact::new("count"));
    fault(
        format!("{index:03}-maps-{per}"),
        &[
            ("CLMULTI_FS_CONSUME", format!("maps:{per}")),
            ("CLMULTI_FS_CALL", "hooked".to_owned()),
        ],
        65530 / per * 2,
        truth,
    )
}

/// Memory kept after release, nothing failing: a leak, a cache, a leak that stops, or
/// nothing kept; in the C library's heap or in mappings of the layer's own.
fn kept(rng: &mut Rng, index: u64) -> Fault {
    let lifetime = rng.pick(&["cumulative", "cache", "leak-first", "live"]);
    let holder = rng.pick(&["heap", "mem"]);
    let bytes = rng.pick(&[32u64, 64]) << 10;
    let count = rng.range(600, 1500);
    let env_lifetime = if lifetime == "leak-first" {
        format!("leak-first:{}", count / 10 * 3)
    } else {
        lifetime.to_owned()
    };
    let mut truth = Truth::default();
    let how = match lifetime {
        "cumulative" => Some("leak"),
        "cache" => Some("reused"),
        "leak-first" => Some("stopped"),
        _ => None,
    };
    // Only readings the layer alone moves are judged: the C library's heap in use for
    // heap blocks; host RSS (which the runtime's freed heap moves too) only for a leak
    // of mappings far larger than that.
    match (how, holder) {
        (Some(how), "heap") => truth.kept.push(("C heap in use".into(), Fact::new(how))),
        (Some("leak"), _) => truth.kept.push(("host RSS".into(), Fact::new("leak"))),
        _ => {}
    }
    fault(
        format!("{index:03}-kept-{holder}-{lifetime}"),
        &[
            ("CLMULTI_FS_CONSUME", format!("{holder}:{bytes}")),
            ("CLMULTI_FS_LIFETIME", env_lifetime),
        ],
        count,
        truth,
    )
}

/// A claim the truth contradicts.
#[derive(Debug, Clone)]
pub struct Contradiction {
    /// The claim's topic.
    pub topic: Topic,
    /// What is true.
    pub truth: String,
    /// What the claim said.
    pub said: String,
}

impl fmt::Display for Contradiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}: true is {}, but it said: {}",
            self.topic, self.truth, self.said
        )
    }
}

/// What the judge made of one diagnosis.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    /// Claims the truth contradicts.
    pub contradictions: Vec<Contradiction>,
    /// Topic -> whether a claim settled on the truth (`true`) or left it open.
    pub answered: BTreeMap<Topic, bool>,
}

/// The claims of a diagnosis that speak of the failing shared case, or of what rounds
/// kept: its verdict's and its investigation's.
fn claims(d: &Diagnosis) -> Vec<&Claim> {
    let mut out: Vec<&Claim> = d.verdict.iter().filter_map(|s| s.claim.as_ref()).collect();
    if let Some(inv) = &d.investigation {
        out.extend(inv.shape.iter().filter_map(|f| f.claim.as_ref()));
    }
    out.extend(d.fixes.iter().filter_map(|f| f.claim.as_ref()));
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|c| seen.insert((c.topic, c.sentence())));
    out
}

fn fact_words(f: &Fact) -> String {
    match f.value {
        Some(v) => format!("{} ({v})", f.key),
        None => f.key.clone(),
    }
}

/// Holds every claim of `d` against `truth`.
pub fn judge(d: &Diagnosis, truth: &Truth) -> Judgement {
    let mut j = Judgement::default();
    for claim in claims(d) {
        let fact = match claim.topic {
            Topic::Kept => truth
                .kept
                .iter()
                .find(|(label, _)| claim.subject.contains(&format!("what {label} kept")))
                .map(|(_, f)| f.clone()),
            Topic::Fix => (!truth.several_limits).then(|| Fact::new("same-limit")),
            Topic::Cost => None,
            // Two limits: each shape run may meet either, so no shape is judged.
            Topic::Unit | Topic::Lifetime | Topic::Scope | Topic::Peers | Topic::TimeOrCount
                if truth.several_limits =>
            {
                None
            }
            topic => truth.facts.get(&topic).cloned(),
        };
        let Some(fact) = fact else { continue };
        // A fix run past the limit that stopped the shared case may meet one the
        // fault does not have (the runtime's own): only "another limit" said with
        // nothing else left is judged.
        if claim.topic == Topic::Fix && !claim.settles_on("other-limit") {
            continue;
        }
        // A second limit behind a budget is a count charged in the process: re-runs
        // that meet it each time fail steadily, whatever the budget's own truth.
        let second = truth.several_limits
            && claim.topic == Topic::Reproduction
            && claim.admits("steady", None);
        // A budget of the run's own that time restores holds still at a steady pace:
        // re-runs that held still are right to say so.
        let held_still = fact.key == "pace" && claim.admits("steady", None);
        if second || held_still || claim.admits(&fact.key, fact.value) {
            j.answered
                .entry(claim.topic)
                .and_modify(|v| *v &= claim.settled().is_some())
                .or_insert(claim.settled().is_some());
        } else {
            j.contradictions.push(Contradiction {
                topic: claim.topic,
                truth: fact_words(&fact),
                said: claim.sentence(),
            });
        }
    }
    j
}
