//! The split's plan: every device count, context mode, layout and kernel in order,
//! each run asking `stop` first, and what the runs say about the layouts.

use super::*;

/// What every run of one split shares: the devices, the whole vectors, and the
/// single-device figures each run is measured against.
pub(super) struct Split<'a> {
    devices: &'a [Device],
    options: &'a SplitOptions,
    stop: &'a dyn Fn() -> bool,
    weights: Vec<f64>,
    align: u64,
    whole_x: Vec<f32>,
    whole_y: Vec<f32>,
    /// The same kernel on device 0 alone, per mode and kernel: the base of every count.
    one_device: Vec<(ContextMode, KernelRan, f64, Strategy)>,
    /// Every run, in order, to name those a stop leaves out.
    pub(super) planned: Vec<String>,
}

impl<'a> Split<'a> {
    pub(super) fn new(
        devices: &'a [Device],
        options: &'a SplitOptions,
        stop: &'a dyn Fn() -> bool,
        weights: Vec<f64>,
        counts: &[usize],
    ) -> Self {
        Self {
            devices,
            options,
            stop,
            weights,
            align: align_floats(devices),
            // Made once: at n = 2^29 each vector is 2 GiB.
            whole_x: test_data(options.n, 1),
            whole_y: test_data(options.n, 2),
            one_device: Vec::new(),
            planned: planned_runs(counts, options, devices.len()),
        }
    }

    /// Every run over the first `k` devices, each mode in turn; false once a stop
    /// left runs out (named in `report.not_run`).
    pub(super) fn run_count(
        &mut self,
        k: usize,
        report: &mut SplitReport,
    ) -> Result<bool, AxpyError> {
        let devices = &self.devices[..k];
        let parts = parts(self.options.n, &self.weights[..k], self.align)?;
        for &mode in &self.options.modes {
            let contexts = contexts(devices, mode)?;
            let runners: Vec<Runner<'_>> =
                contexts.iter().map(Runner::new).collect::<Result<_, _>>()?;
            for &layout in layouts(mode, k, self.devices.len()) {
                for (i, &choice) in self.options.kernels.iter().enumerate() {
                    let way = Way {
                        mode,
                        layout,
                        choice,
                        first_kernel: i == 0,
                    };
                    if !self.run_one(devices, &parts, way, &runners, report)? {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }

    /// One run, reported with the runs over every device or with the scaling runs;
    /// false when a stop came before it or cut it short.
    fn run_one(
        &mut self,
        devices: &[Device],
        parts: &[u64],
        way: Way,
        runners: &[Runner<'_>],
        report: &mut SplitReport,
    ) -> Result<bool, AxpyError> {
        let index = report.runs.len() + report.scaling.len();
        if (self.stop)() {
            report.not_run = self.planned[index..].to_vec();
            return Ok(false);
        }
        let everything = devices.len() == self.devices.len();
        // Data movement is timed once per mode: first kernel, own buffers.
        let time_transfers = self.options.include_transfers
            && everything
            && way.layout == Layout::Buffers
            && way.first_kernel;
        let runner_of = |d: usize| {
            &runners[if way.mode == ContextMode::Shared {
                0
            } else {
                d
            }]
        };
        let run = run_split(
            devices,
            parts,
            (&self.whole_x, &self.whole_y),
            way.mode,
            way.layout,
            way.choice,
            &runner_of,
            self.options,
            time_transfers,
            &mut self.one_device,
            self.stop,
        )?;
        let Some((run, transfers)) = run else {
            // Its repetitions cut short by a stop: not reported.
            report.not_run = std::iter::once(format!(
                "{} (stopped part way: best-of figures of fewer repetitions do not compare)",
                self.planned[index]
            ))
            .chain(self.planned[index + 1..].iter().cloned())
            .collect();
            return Ok(false);
        };
        if everything {
            report.runs.push(run);
        } else {
            report.scaling.push(run);
        }
        report.transfers.extend(transfers);
        Ok(true)
    }
}

/// How one run launches: its context mode, layout and kernel.
#[derive(Clone, Copy)]
struct Way {
    mode: ContextMode,
    layout: Layout,
    choice: KernelChoice,
    /// The first kernel of its mode and layout (the run that times transfers).
    first_kernel: bool,
}

/// The contexts of one mode: one over every device, or one per device.
fn contexts(devices: &[Device], mode: ContextMode) -> Result<Vec<Context>, AxpyError> {
    Ok(match mode {
        ContextMode::Shared => {
            let ids: Vec<_> = devices.iter().map(Device::id).collect();
            vec![Context::from_devices(&ids, &[], None, std::ptr::null_mut())
                .map_err(cl3("clCreateContext"))?]
        }
        ContextMode::PerDevice => devices
            .iter()
            .map(Context::from_device)
            .collect::<Result<_, _>>()
            .map_err(cl3("clCreateContext"))?,
    })
}

/// Every run of the plan by name, in the order they run.
fn planned_runs(counts: &[usize], options: &SplitOptions, all: usize) -> Vec<String> {
    counts
        .iter()
        .flat_map(|&k| options.modes.iter().map(move |&mode| (k, mode)))
        .flat_map(|(k, mode)| {
            layouts(mode, k, all).iter().flat_map(move |&layout| {
                options.kernels.iter().map(move |&choice| {
                    format!(
                        "{k} device(s), {} context, {}, {}",
                        mode.name(),
                        layout.name(),
                        choice_name(choice)
                    )
                })
            })
        })
        .collect()
}

/// Which layout of the shared context was faster, on this runtime, per kernel.
pub(super) fn layout_notes(report: &mut SplitReport) {
    for kernel in [KernelRan::Seed, KernelRan::Fast] {
        let of = |layout| {
            report
                .runs
                .iter()
                .find(|r| {
                    r.context == ContextMode::Shared && r.layout == layout && r.kernel == kernel
                })
                .map(|r| r.aggregate_gb_per_s_best)
        };
        if let (Some(b), Some(s)) = (of(Layout::Buffers), of(Layout::SubBuffers)) {
            // On two H200s the faster layout changed between two runs with 1.4% and
            // 1.5% differences: below 3% a winner is not claimed.
            let text = if (b - s).abs() / b.min(s) < LAYOUT_DIFFERENCE {
                format!(
                    "{} in the shared context: no difference beyond {:.0}% between buffers per device ({b:.1} GB/s) and sub-buffers of one buffer ({s:.1} GB/s)",
                    kernel.name(),
                    LAYOUT_DIFFERENCE * 100.0
                )
            } else {
                format!(
                    "{} in the shared context: {} were faster ({:.1} vs {:.1} GB/s)",
                    kernel.name(),
                    if b >= s {
                        "buffers per device"
                    } else {
                        "sub-buffers of one buffer"
                    },
                    b.max(s),
                    b.min(s)
                )
            };
            report.notes.push(text);
        }
    }
}
