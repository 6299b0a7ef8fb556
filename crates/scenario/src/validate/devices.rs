//! `[devices]`: which platform, which type, which devices, and their partition.

use super::{or_default, positive, problem, word, Problem};
use crate::defs::*;
use crate::model::*;
use crate::raw::*;

/// `[devices]`, validated.
pub(super) fn devices(raw: &RawDevices) -> Result<Devices, Problem> {
    let platform = platform(raw)?;
    let device_type = word(&DEVICES_TYPE, &raw.device_type, &DEVICE_TYPES)?;
    let set = set(raw)?;
    let fallback_to_any_type = word(&DEVICES_FALLBACK, &raw.fallback, &FALLBACKS)?;
    let partition = partition(raw)?;
    Ok(Devices {
        platform,
        device_type,
        set,
        fallback_to_any_type,
        partition,
    })
}

/// `devices.platform`: auto, an index, or one line naming it.
fn platform(raw: &RawDevices) -> Result<Platform, Problem> {
    Ok(match &or_default(raw.platform.clone(), &DEVICES_PLATFORM) {
        RawNumberOrWord::Number(n) => Platform::Index(
            usize::try_from(*n)
                .map_err(|_| problem(DEVICES_PLATFORM.name, "a platform index must be >= 0"))?,
        ),
        RawNumberOrWord::Word(w) if same_word(w, "auto") => Platform::Auto,
        RawNumberOrWord::Word(w) if w.trim().is_empty() => {
            return Err(problem(DEVICES_PLATFORM.name,
                "must not be empty; use \"auto\"",
            ))
        }
        RawNumberOrWord::Word(w) if w.len() > MAX_PLATFORM_NAME || w.chars().any(char::is_control) => {
            return Err(problem(DEVICES_PLATFORM.name,
                format!(
                    "a platform name or vendor substring is one line of at most {MAX_PLATFORM_NAME} bytes ({} given); `clmulti devices` lists the names",
                    w.len()
                ),
            ))
        }
        RawNumberOrWord::Word(w) => Platform::Name(w.clone()),
    })
}

/// `devices.count` or `devices.indices` (each index once), not both.
fn set(raw: &RawDevices) -> Result<DeviceSet, Problem> {
    Ok(match (&raw.count, &raw.indices) {
        (Some(_), Some(_)) => {
            return Err(problem(
                DEVICES_INDICES.name,
                "give either devices.count or devices.indices, not both",
            ))
        }
        (Some(n), None) => {
            let count = positive(&DEVICES_COUNT, *n)?;
            if count > MAX_DEVICE_LIST as u64 {
                return Err(problem(DEVICES_COUNT.name,
                    format!("{count} devices; at most {MAX_DEVICE_LIST} are allowed (more than any machine has)"),
                ));
            }
            DeviceSet::Count(count as usize)
        }
        (None, Some(list)) => {
            if list.is_empty() {
                return Err(problem(
                    DEVICES_INDICES.name,
                    "must name at least one device",
                ));
            }
            if list.len() > MAX_DEVICE_LIST {
                return Err(problem(
                    DEVICES_INDICES.name,
                    format!(
                        "names {} devices; at most {MAX_DEVICE_LIST} are allowed",
                        list.len()
                    ),
                ));
            }
            let mut seen = Vec::with_capacity(list.len());
            let mut listed = std::collections::HashSet::with_capacity(list.len());
            for (i, v) in list.iter().enumerate() {
                let index = usize::try_from(*v).map_err(|_| {
                    problem(&DEVICES_INDICES.item(i), "a device index must be >= 0")
                })?;
                if !listed.insert(index) {
                    return Err(problem(
                        &DEVICES_INDICES.item(i),
                        format!("device {index} is listed twice"),
                    ));
                }
                seen.push(index);
            }
            DeviceSet::Indices(seen)
        }
        (None, None) => DeviceSet::Count(default(&DEVICES_COUNT)),
    })
}

/// `devices.partition`: equally, or a positive compute-unit count per sub-device.
fn partition(raw: &RawDevices) -> Result<Option<Partition>, Problem> {
    Ok(match &raw.partition {
        None => None,
        Some(RawPartition::Word(w)) if same_word(w, "equally") => Some(Partition::Equally(1)),
        Some(RawPartition::Word(w)) => {
            return Err(problem(
                DEVICES_PARTITION.name,
                format!(
                    "expected \"equally\" or a list of compute-unit counts like [1, 1], got {w:?}"
                ),
            ))
        }
        Some(RawPartition::Counts(counts)) => {
            if counts.is_empty() {
                return Err(problem(DEVICES_PARTITION.name, "needs at least one count"));
            }
            if counts.len() > MAX_DEVICE_LIST {
                return Err(problem(
                    DEVICES_PARTITION.name,
                    format!(
                        "{} sub-devices; at most {MAX_DEVICE_LIST} are allowed",
                        counts.len()
                    ),
                ));
            }
            let counts = counts
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    u32::try_from(*c).ok().filter(|c| *c > 0).ok_or_else(|| {
                        problem(
                            &DEVICES_PARTITION.item(i),
                            format!("a compute-unit count must be a positive integer, got {c}"),
                        )
                    })
                })
                .collect::<Result<Vec<u32>, Problem>>()?;
            Some(Partition::ByCounts(counts))
        }
    })
}
