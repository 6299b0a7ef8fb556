//! One device's dAxpy: verified over its cases, its bandwidth against a plain copy,
//! and the cross-device check; the words its kernels go by.

use super::*;

fn context_for(devices: &[&Device]) -> Result<Context, String> {
    let ids: Vec<_> = devices.iter().map(|d| d.id()).collect();
    Context::from_devices(&ids, &[], None, std::ptr::null_mut())
        .map_err(|e| format!("clCreateContext: {}", clmulti_probe::ClCode(e.0)))
}

/// dAxpy's verification cases and bandwidth runs on one device; none starts once a
/// signal asked to stop, and what that left out goes to `not_run`.
pub(super) fn run_device(
    device: &Device,
    args: &Args,
    kernels: &[KernelChoice],
    not_run: &mut Vec<String>,
) -> DeviceResult {
    let info = device.info();
    let mut result = new_result(device, args);
    let context = match context_for(&[device]) {
        Ok(c) => c,
        Err(e) => {
            result.errors.push(e);
            return result;
        }
    };
    let runner = match Runner::new(&context) {
        Ok(r) => r,
        // A stop can make the build in flight fail (PoCL's compiler, on the signal,
        // deletes its temporary files): then the device's runs are not run.
        Err(_) if stop_asked() => {
            not_run.push(format!(
                "device {}: every verification case and bandwidth run (the kernels' build was in flight)",
                info.selector
            ));
            return result;
        }
        Err(e) => {
            result.errors.push(e.to_string());
            return result;
        }
    };
    let mut run = DeviceRun {
        selector: &info.selector,
        cl_device: opencl3::device::Device::new(device.id()),
        args,
        kernels,
        runner,
        result,
        not_run,
    };
    for (index, &kernel) in kernels.iter().enumerate() {
        if !run.kernel(index, kernel) {
            break;
        }
    }
    run.result
}

/// A device's result before anything ran, with a note when x and y fit in its cache.
fn new_result(device: &Device, args: &Args) -> DeviceResult {
    let info = device.info();
    let mut result = DeviceResult {
        device: info.display_name().to_owned(),
        selector: info.selector.clone(),
        working_set_bytes: 2 * 4 * args.n.min(MAX_N),
        cache_bytes: info.global_mem_cache_bytes.value().copied(),
        verified: Vec::new(),
        bandwidth: Vec::new(),
        notes: Vec::new(),
        errors: Vec::new(),
    };
    if let Some(cache) = result
        .cache_bytes
        .filter(|c| result.working_set_bytes <= *c)
    {
        result.notes.push(format!(
            "x and y ({}) fit in the device's global memory cache ({}): these figures are cache bandwidth, not memory bandwidth; use --n {} or more",
            format_bytes(result.working_set_bytes as f64),
            format_bytes(cache as f64),
            (cache / 2).next_power_of_two()
        ));
    }
    result
}

/// One device's runs as they go: what ran, and what a stop left out.
struct DeviceRun<'a> {
    selector: &'a str,
    cl_device: opencl3::device::Device,
    args: &'a Args,
    kernels: &'a [KernelChoice],
    runner: Runner<'a>,
    result: DeviceResult,
    not_run: &'a mut Vec<String>,
}

impl DeviceRun<'_> {
    /// Kernel `index`'s verification cases, then its bandwidth run; false once a
    /// stop left the rest out.
    fn kernel(&mut self, index: usize, kernel: KernelChoice) -> bool {
        let n = self.args.n;
        if kernel == KernelChoice::Seed && n > i32::MAX as u64 {
            self.result.notes.push(format!(
                "seed kernel not run at n = {n}: its `int elements` (and int index arithmetic) stop at 2^31 - 1; the fast kernel uses 64-bit counts"
            ));
            return true;
        }
        if !self.verify(index, kernel) {
            return false;
        }
        if stop_asked() {
            let what = format!("the {} kernel's bandwidth run", kernel_word(kernel));
            self.stopped_at(index, what);
            return false;
        }
        self.bandwidth(index, kernel)
    }

    /// Kernel `index`'s verification cases; false once a stop left the rest out.
    fn verify(&mut self, index: usize, kernel: KernelChoice) -> bool {
        let mut cases = verification_cases(self.args.n);
        if kernel == KernelChoice::Fast && self.args.n > i32::MAX as u64 {
            // Past the seed kernel's range: verify the whole vector once.
            cases.push(AxpyCase::contiguous(self.args.n, 1.25));
        }
        let total = cases.len();
        let cases_from = |first: usize| {
            format!(
                "the {} kernel's verification {} and bandwidth run",
                kernel_word(kernel),
                if first == total {
                    format!("case {total}")
                } else {
                    format!("cases {first} to {total}")
                }
            )
        };
        for (done, case) in cases.into_iter().enumerate() {
            if stop_asked() {
                self.stopped_at(index, cases_from(done + 1));
                return false;
            }
            // The fast kernel only takes the contiguous, aligned cases.
            let choice = if kernel == KernelChoice::Fast {
                KernelChoice::Auto
            } else {
                kernel
            };
            match self.runner.verify(&self.cl_device, &case, choice) {
                Ok(v) => self.result.verified.push(v),
                // Failed as the stop came (see the build in `run_device`): not run.
                Err(_) if stop_asked() => {
                    self.stopped_at(index, cases_from(done + 1));
                    return false;
                }
                Err(e) => self.result.errors.push(format!(
                    "verify n = {} (x from {} step {}, y from {} step {}): {e}",
                    case.n, case.x_offset, case.inc_x, case.y_offset, case.inc_y
                )),
            }
        }
        true
    }

    /// Kernel `index`'s timed repetitions; false when a stop cut them short.
    fn bandwidth(&mut self, index: usize, kernel: KernelChoice) -> bool {
        let repeat = self.args.repeat;
        crate::verbose!(
            "axpy: {} {} kernel: timing {repeat} repetitions of axpy and copy",
            self.selector,
            kernel_word(kernel)
        );
        let timed = self.runner.bandwidth_until(
            &self.cl_device,
            self.args.n,
            repeat as usize,
            kernel,
            &stop_asked,
        );
        match timed {
            Ok(b) => {
                let done = b.repeat;
                self.result.notes.extend(b.notes.iter().cloned());
                self.result.bandwidth.push(b);
                if done < repeat as usize {
                    let what = format!(
                        "the {} kernel's timed repetitions {} to {repeat}",
                        kernel_word(kernel),
                        done + 1
                    );
                    self.stopped_at(index, what);
                    return false;
                }
            }
            Err(_) if stop_asked() => {
                let what = format!("the {} kernel's bandwidth run", kernel_word(kernel));
                self.stopped_at(index, what);
                return false;
            }
            Err(e) => self
                .result
                .errors
                .push(format!("bandwidth ({kernel:?}): {e}")),
        }
        true
    }

    /// What kernel `index` left undone, then the kernels after it.
    fn stopped_at(&mut self, index: usize, what: String) {
        let later: Vec<&str> = self.kernels[index + 1..]
            .iter()
            .map(|&k| kernel_word(k))
            .collect();
        self.not_run.push(format!(
            "device {}: {what}{}",
            self.selector,
            if later.is_empty() {
                String::new()
            } else {
                format!(", then the {} kernel", later.join(" and "))
            }
        ));
    }
}

/// A kernel as `--kernel` names it.
fn kernel_word(kernel: KernelChoice) -> &'static str {
    match kernel {
        KernelChoice::Seed => "seed",
        KernelChoice::Fast => "fast",
        KernelChoice::Auto => "auto",
    }
}

pub(super) fn cross(
    devices: &[Device],
    n: u64,
    kernel: KernelChoice,
) -> Result<CrossDevice, String> {
    let context = context_for(&devices.iter().collect::<Vec<_>>())?;
    let runner = Runner::new(&context).map_err(|e| e.to_string())?;
    let first = opencl3::device::Device::new(devices[0].id());
    let second = opencl3::device::Device::new(devices[1].id());
    runner
        .cross_device(&first, &second, n, kernel)
        .map_err(|e| e.to_string())
}
