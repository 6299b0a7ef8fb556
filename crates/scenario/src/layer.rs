//! The knobs of clmulti's emulation layer (crate `clmulti-layer`), read from a
//! scenario's `[env]`: one place parses them, for the layer itself, for validation
//! and for the engine that sets its readings against the layer's limits.

use crate::size::parse_size;

use clmulti_contract::layer::{
    BYTE_BUDGET, DEVICE_MEMORY, FAIL_AFTER, FAIL_ERROR, FAIL_SCOPE, KNOBS, MIRROR_LIMIT, POLICY,
};

/// The mirror limit when none is given: a quarter of RAM.
pub const DEFAULT_MIRROR_FRACTION: f64 = 0.25;
/// fail-after's count when none is given: about where the seed failed.
pub const DEFAULT_FAIL_AFTER: u64 = 1000;
/// byte-budget's budget when none is given.
pub const DEFAULT_BYTE_BUDGET: u64 = 1 << 30;

/// A candidate explanation of the seed's failure, as the layer models it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Each buffer of a multi-device context holds one exported file descriptor per
    /// peer device; CL_OUT_OF_HOST_MEMORY (-6) when none is left.
    FdPerPeer,
    /// Each buffer of a multi-device context gets a host copy of its size that the
    /// kernel accounts (Shmem, MemAvailable) but the process's RSS does not show.
    HostMirror,
    /// Each buffer is made resident on every device of its context at creation;
    /// -6 when a device is full.
    Eager,
    /// Creation fails after N buffers of multi-device contexts, consuming nothing.
    FailAfter,
    /// Creation fails when the live bytes of multi-device buffers would pass a budget.
    ByteBudget,
    /// Every buffer keeps a touched host block of its size that release never frees:
    /// release succeeds, memory stays.
    Leak,
    /// Each buffer of a multi-device context has a thread of its own until release;
    /// -6 when no thread can be made (`RLIMIT_NPROC`).
    ThreadPerBuffer,
    /// Each buffer of a multi-device context locks a host block of its size
    /// (`mlock`); -6 when the lock is refused (`RLIMIT_MEMLOCK`).
    LockPerBuffer,
}

impl Policy {
    /// Every policy with its name.
    pub const ALL: [(&'static str, Policy); 8] = [
        ("fd-per-peer", Policy::FdPerPeer),
        ("host-mirror", Policy::HostMirror),
        ("eager", Policy::Eager),
        ("fail-after", Policy::FailAfter),
        ("byte-budget", Policy::ByteBudget),
        ("leak", Policy::Leak),
        ("thread-per-buffer", Policy::ThreadPerBuffer),
        ("lock-per-buffer", Policy::LockPerBuffer),
    ];

    /// Its name in `CLMULTI_LAYER_POLICY`.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("?", |(n, _)| n)
    }
}

/// How large the host mirror may grow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MirrorLimit {
    /// Bytes.
    Bytes(u64),
    /// A fraction of physical RAM.
    FractionOfRam(f64),
}

impl MirrorLimit {
    /// The limit in bytes on a machine with `ram` bytes of RAM.
    pub fn bytes(self, ram: u64) -> u64 {
        match self {
            MirrorLimit::Bytes(b) => b,
            MirrorLimit::FractionOfRam(f) => (ram as f64 * f) as u64,
        }
    }
}

/// What fail-after's count is kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailScope {
    /// One count for the whole process.
    Process,
    /// One count per context.
    Context,
}

/// The layer's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerSettings {
    /// The policies, in the order given.
    pub policies: Vec<Policy>,
    /// host-mirror's limit.
    pub mirror_limit: MirrorLimit,
    /// Each device's memory, when the layer overrides it.
    pub device_memory: Option<u64>,
    /// fail-after's count.
    pub fail_after: u64,
    /// fail-after's error.
    pub fail_error: i32,
    /// fail-after's scope.
    pub fail_scope: FailScope,
    /// byte-budget's budget, bytes.
    pub byte_budget: u64,
}

impl LayerSettings {
    /// Whether a policy is among the settings'.
    pub fn has(&self, policy: Policy) -> bool {
        self.policies.contains(&policy)
    }

    /// The policies' names, as `CLMULTI_LAYER_POLICY` gives them.
    pub fn names(&self) -> String {
        self.policies
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl LayerSettings {
    /// Reads the knobs through `lookup` (the process environment, or a scenario's
    /// `[env]`): `Ok(None)` when no policy is set; errors name the knob.
    // long: a flat table: each knob parsed where its error is named, in the order of [`KNOBS`]
    pub fn read(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, (String, String)> {
        let Some(name) = lookup(POLICY) else {
            if let Some(knob) = KNOBS.iter().find(|k| lookup(k).is_some()) {
                return Err((knob.to_string(), format!("only applies with {POLICY} set")));
            }
            return Ok(None);
        };
        let mut policies = Vec::new();
        for word in name.split(',').map(str::trim) {
            let policy = Policy::ALL
                .iter()
                .find(|(n, _)| *n == word)
                .map(|(_, p)| *p)
                .ok_or_else(|| {
                    let names: Vec<&str> = Policy::ALL.iter().map(|(n, _)| *n).collect();
                    (
                        POLICY.to_owned(),
                        format!(
                            "unknown policy {word:?}; expected one or more (comma-separated) of: {}",
                            names.join(", ")
                        ),
                    )
                })?;
            if !policies.contains(&policy) {
                policies.push(policy);
            }
        }
        let size = |key: &str| -> Result<Option<u64>, (String, String)> {
            lookup(key)
                .map(|v| parse_size(&v).map_err(|e| (key.to_owned(), e.to_string())))
                .transpose()
        };
        let mirror_limit = match lookup(MIRROR_LIMIT) {
            None => MirrorLimit::FractionOfRam(DEFAULT_MIRROR_FRACTION),
            Some(v) if v.trim().ends_with('%') => {
                let pct: f64 = v.trim().trim_end_matches('%').trim().parse().map_err(|_| {
                    (
                        MIRROR_LIMIT.to_owned(),
                        format!("{v:?} is not a percentage like \"25%\""),
                    )
                })?;
                if !(pct > 0.0 && pct <= 100.0) {
                    return Err((
                        MIRROR_LIMIT.to_owned(),
                        "a percentage of RAM must be in (0, 100]".into(),
                    ));
                }
                MirrorLimit::FractionOfRam(pct / 100.0)
            }
            Some(_) => MirrorLimit::Bytes(size(MIRROR_LIMIT)?.unwrap_or(0)),
        };
        let fail_after = match lookup(FAIL_AFTER) {
            None => DEFAULT_FAIL_AFTER,
            Some(v) => v.trim().parse().map_err(|_| {
                (
                    FAIL_AFTER.to_owned(),
                    format!("{v:?} is not a count of buffers"),
                )
            })?,
        };
        let fail_error = match lookup(FAIL_ERROR) {
            None => -6,
            Some(v) => v
                .trim()
                .parse::<i32>()
                .ok()
                .filter(|c| *c < 0)
                .ok_or_else(|| {
                    (
                        FAIL_ERROR.to_owned(),
                        format!("{v:?} is not an OpenCL error code (a negative integer)"),
                    )
                })?,
        };
        let fail_scope = match lookup(FAIL_SCOPE).as_deref().map(str::trim) {
            None | Some("process") => FailScope::Process,
            Some("context") => FailScope::Context,
            Some(other) => {
                return Err((
                    FAIL_SCOPE.to_owned(),
                    format!("{other:?}: expected \"process\" or \"context\""),
                ))
            }
        };
        Ok(Some(LayerSettings {
            policies,
            mirror_limit,
            device_memory: size(DEVICE_MEMORY)?.filter(|b| *b > 0),
            fail_after,
            fail_error,
            fail_scope,
            byte_budget: size(BYTE_BUDGET)?
                .filter(|b| *b > 0)
                .unwrap_or(DEFAULT_BYTE_BUDGET),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<LayerSettings>, (String, String)> {
        LayerSettings::read(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn knobs_parse_and_errors_name_the_knob() {
        assert_eq!(read(&[]).unwrap(), None);
        let s = read(&[(POLICY, "host-mirror"), (MIRROR_LIMIT, "256MiB")])
            .unwrap()
            .unwrap();
        assert_eq!(s.policies, [Policy::HostMirror]);
        assert_eq!(s.mirror_limit.bytes(1 << 40), 256 << 20);
        let s = read(&[(POLICY, "fail-after, fd-per-peer"), (FAIL_SCOPE, "context")])
            .unwrap()
            .unwrap();
        assert_eq!(s.policies, [Policy::FailAfter, Policy::FdPerPeer]);
        assert_eq!(s.fail_scope, FailScope::Context);
        assert_eq!(s.names(), "fail-after,fd-per-peer");
        assert_eq!(read(&[(POLICY, "leak,magic")]).unwrap_err().0, POLICY);
        let s = read(&[(POLICY, "eager")]).unwrap().unwrap();
        assert_eq!(s.mirror_limit.bytes(1000), 250);
        assert_eq!(read(&[(POLICY, "magic")]).unwrap_err().0, POLICY);
        assert_eq!(read(&[(FAIL_AFTER, "5")]).unwrap_err().0, FAIL_AFTER);
        assert_eq!(
            read(&[(POLICY, "fail-after"), (FAIL_ERROR, "6")])
                .unwrap_err()
                .0,
            FAIL_ERROR
        );
        assert_eq!(
            read(&[(POLICY, "eager"), (DEVICE_MEMORY, "lots")])
                .unwrap_err()
                .0,
            DEVICE_MEMORY
        );
    }
}
