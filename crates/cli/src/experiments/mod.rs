//! Experiments run for real: each changed case of a failed run in a fresh child
//! process of this binary ([`clmulti_explain::experiment`] plans and judges them).

use crate::note;
use crate::trust::Binding;
use clmulti_explain::experiment::{apply, NotRun, Runner};
use clmulti_explain::verdict::{Change, Knob, Place};

mod beside;
use clmulti_explain::{Report, StopReason};
use clmulti_scenario::Scenario;

/// PoCL makes one CPU device per word of this variable.
const POCL_DEVICES: &str = "POCL_DEVICES";
/// NEO (AUB mode) makes this many root devices.
const NEO_ROOT_DEVICES: &str = "CreateMultipleRootDevices";
/// The emulated kernel driver makes this many GPUs.
const KMD_EMU_DEVICES: &str = clmulti_contract::kmd_emu::DEVICES;

/// Runs changed copies of one failed run's scenario in child processes.
#[derive(Debug)]
pub struct ChildRunner {
    base: Scenario,
    platform: String,
    platform_version: String,
    /// What the runs may load: what the failed run's file was trusted with.
    binding: Binding,
}

impl ChildRunner {
    /// A runner for the failed run `report`.
    pub fn for_report(report: &Report, binding: &Binding) -> Self {
        ChildRunner {
            base: report.scenario.clone(),
            platform: report.platform.clone(),
            platform_version: report.platform_version.clone(),
            binding: binding.clone(),
        }
    }

    /// What a runtime needs to expose `devices` devices: PoCL one word per device,
    /// NEO in AUB mode a root-device count; other platforms have what they have (a
    /// run asking for more is skipped, and the experiment says so).
    fn expose(&self, scenario: &mut Scenario, devices: u64) {
        let env_or_process = |key: &str| {
            scenario
                .env
                .get(key)
                .cloned()
                .or_else(|| std::env::var(key).ok())
        };
        if clmulti_probe::is_pocl(&self.platform) {
            let word = env_or_process(POCL_DEVICES)
                .and_then(|v| v.split_whitespace().next().map(str::to_owned))
                .unwrap_or_else(|| {
                    clmulti_probe::pocl_cpu_driver(&self.platform_version).to_owned()
                });
            let words = vec![word; devices as usize].join(" ");
            scenario.env.insert(POCL_DEVICES.into(), words);
        } else if env_or_process(KMD_EMU_DEVICES).is_some() {
            // NEO on the emulated kernel driver sees as many GPUs as it emulates.
            scenario
                .env
                .insert(KMD_EMU_DEVICES.into(), devices.to_string());
        } else if env_or_process(NEO_ROOT_DEVICES).is_some() {
            scenario
                .env
                .insert(NEO_ROOT_DEVICES.into(), devices.to_string());
        }
    }
}

/// What a runner does around one run beside applying its changes to the scenario.
#[derive(Debug, Default)]
struct Around {
    wait_ms: Option<u64>,
    observe: bool,
    sibling: Option<(Place, u64)>,
}

impl Runner for ChildRunner {
    fn run(&mut self, changes: &[Change], count: u64) -> Result<Report, NotRun> {
        // Asked to stop: no further run, and none stopped part way is judged.
        if let Some(signal) = clmulti_supervise::INTERRUPT.signal() {
            return Err(NotRun::Stopped(signal));
        }
        let mut scenario = self.base.clone();
        let mut around = Around::default();
        for change in changes {
            scenario = apply(&scenario, change, count).map_err(NotRun::Failed)?;
            match change.knob {
                Knob::Devices => self.expose(&mut scenario, change.to),
                Knob::Wait => around.wait_ms = Some(change.to),
                Knob::Observe => around.observe = true,
                Knob::Sibling { place } => around.sibling = Some((place, change.to)),
                _ => {}
            }
        }
        if let Some(ms) = around.wait_ms {
            beside::wait(std::time::Duration::from_millis(ms))?;
        }
        note!("experiment: {}", scenario.name);
        let report = match around {
            Around {
                sibling: Some((place, held)),
                ..
            } => beside::run_beside(&scenario, place, held, &self.binding)?,
            Around { observe: true, .. } => beside::run_observed(&scenario, &self.binding)?,
            _ => crate::child::run_child_bound(&scenario, None, &self.binding)
                .map_err(|e| NotRun::Failed(e.into_message()))?,
        };
        // Where it stopped only: its own analysis would answer another question.
        note!(
            "experiment:   {} ({})",
            report.stop.summary(),
            report.buffers_words()
        );
        match report.stop {
            StopReason::Interrupted { signal, .. } => Err(NotRun::Stopped(signal)),
            _ => Ok(report),
        }
    }
}

/// [`investigate_bound`] for a run clmulti made itself (a diagnose case).
pub fn investigate(report: &mut Report) {
    investigate_bound(report, &Binding::own());
}

/// Tests the causes of a failed run by experiment, its runs loading what its file
/// was trusted with (`binding`); for a completed run whose readings stayed up after
/// release, runs it in two rounds (a cache or a leak).
pub fn investigate_bound(report: &mut Report, binding: &Binding) {
    let mut runner = ChildRunner::for_report(report, binding);
    if report.analysis.cause.is_some() {
        note!("experiment: testing what stopped {}", report.run_name);
        clmulti_explain::experiment::investigate(report, &mut runner);
    } else if matches!(report.stop, StopReason::Completed)
        && !report.leak_check.not_returned.is_empty()
    {
        note!(
            "experiment: {} in {} rounds (what stayed after release: reused or added to?)",
            report.run_name,
            clmulti_explain::experiment::ROUNDS
        );
        clmulti_explain::experiment::second_round(report, &mut runner);
    }
}
