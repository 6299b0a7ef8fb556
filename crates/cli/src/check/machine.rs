//! What only this machine's runtime can say of a file, asked through `clmulti
//! devices` children (one per distinct `[env]`, and per `[env]` and `[limits]` for a
//! run that limits its address space; at most [`MOST_ASKS`] a file): devices beyond the machine (an error: `run`
//! refuses such a run with exit 2, a sweep records it as skipped; a warning where a
//! grid varies the devices, a scaling file for machines of several sizes), a buffer above
//! its device's largest allocation, an address space the runtime does not load in
//! (warnings: the run goes ahead and fails at once).

use super::{list_platforms, Listings};
use clmulti_probe::{DeviceInfo, DeviceRequest, PlatformInfo, SelectError};
use clmulti_scenario::{format_bytes, format_size, Rlimit, Scenario, ScenarioError, ScenarioFile};
use std::collections::{BTreeMap, HashMap};

/// Whether each `[env]` and `[limits]` met so far loads a runtime (or why not).
pub(super) type UnderLimits = HashMap<(BTreeMap<String, String>, String), Result<bool, String>>;

/// The most runs of one file asked about (each is cheap; a 100 000-run grid is not).
const MOST_RUNS: usize = 4096;

/// The most children one file's check starts to ask the runtime (each loads it: 0.1 to
/// 1 s), one per distinct `[env]` (and `[env]` with an address-space limit): a grid of
/// 100 000 environments is checked in seconds, its runs past these when they run.
const MOST_ASKS: usize = 8;

/// The runtime's children one file's check started, and the runs it did not ask about.
#[derive(Default)]
struct Asks {
    made: usize,
    /// Runs left unasked: how many, and the first (its index and a key that differs
    /// from the first run's).
    skipped: usize,
    first_skipped: Option<(usize, String)>,
}

impl Asks {
    /// Whether one more child may start; else the run `index` is counted unasked.
    fn may_ask(&mut self, file: &ScenarioFile, index: usize, run: &Scenario) -> bool {
        if self.made < MOST_ASKS {
            self.made += 1;
            return true;
        }
        self.skipped += 1;
        if self.first_skipped.is_none() {
            let first = file.run(0).map(|r| r.env).unwrap_or_default();
            let key = run
                .env
                .iter()
                .find(|(k, v)| first.get(*k) != Some(*v))
                .map_or("env".to_owned(), |(k, _)| format!("env.{k}"));
            self.first_skipped = Some((index, key));
        }
        false
    }

    /// A warning at the first run left unasked, saying how many were.
    fn said(&self, file: &ScenarioFile, beyond: usize, said: &mut Said) {
        let Some((index, key)) = &self.first_skipped else {
            return;
        };
        let message = format!(
            "this machine's runtime was asked about {} environments of this file (each ask loads it in a child); {} more runs{} are not asked here: `run` and `sweep` check each when it runs",
            self.made,
            self.skipped + beyond,
            if beyond > 0 {
                format!(" (past the first {MOST_RUNS} included)")
            } else {
                String::new()
            }
        );
        Said::add(&mut said.warnings, file.error_in_run(*index, key, &message));
    }
}

/// What the machine says of a file's runs: errors and warnings, each at its key.
#[derive(Debug, Default)]
pub(super) struct Said {
    pub errors: Vec<ScenarioError>,
    pub warnings: Vec<ScenarioError>,
}

impl Said {
    fn add(list: &mut Vec<ScenarioError>, e: ScenarioError) {
        if !list.contains(&e) {
            list.push(e);
        }
    }
}

/// Asks this machine's runtime about every run of `file` that can differ in what
/// it asks of the machine (the first run alone when the grid varies none of it).
pub(super) fn said(
    file: &ScenarioFile,
    binding: &crate::trust::Binding,
    listings: &mut Listings,
    under: &mut UnderLimits,
) -> Said {
    let mut said = Said::default();
    let varies = ["devices.", "env.", "allocation.", "limits."]
        .iter()
        .any(|prefix| file.varies_under(prefix));
    let runs = if varies { file.len().min(MOST_RUNS) } else { 1 };
    let mut asks = Asks::default();
    for index in 0..runs {
        let Ok(run) = file.run(index) else { continue };
        if !listings.contains_key(&run.env) && !asks.may_ask(file, index, &run) {
            continue;
        }
        let listed = listings
            .entry(run.env.clone())
            .or_insert_with(|| list_platforms(&run.env, binding, None));
        // No runtime to ask: nothing the machine can say.
        let Ok(platforms) = listed else { continue };
        devices(file, index, &run, platforms, &mut said);
        address_space(
            file,
            index,
            &run,
            platforms,
            binding,
            (under, &mut asks),
            &mut said,
        );
    }
    let beyond = if asks.skipped > 0 {
        file.len() - runs
    } else {
        0
    };
    asks.said(file, beyond, &mut said);
    said
}

/// The devices the run asks for, on the platforms listed under its `[env]`.
fn devices(
    file: &ScenarioFile,
    index: usize,
    run: &Scenario,
    platforms: &[PlatformInfo],
    said: &mut Said,
) {
    match clmulti_probe::select_listed(platforms, &DeviceRequest::from(&run.devices)) {
        Ok(Some(devices)) => too_large(file, index, run, &devices, said),
        Ok(None) | Err(SelectError::UnknownPlatform { .. } | SelectError::Partition { .. }) => {}
        Err(e) => {
            let request = DeviceRequest::from(&run.devices);
            for e in e.each_missing(&request) {
                let key = e.key_in(&request);
                not_here(file, index, platforms, (&e, &key), said);
            }
        }
    }
}

/// A device the run asks for that this machine lacks, said at `key`.
fn not_here(
    file: &ScenarioFile,
    index: usize,
    platforms: &[PlatformInfo],
    (e, key): (&SelectError, &str),
    said: &mut Said,
) {
    // A grid over devices is meant for machines of several sizes (a scaling
    // sweep over Slurm nodes): its runs beyond this one are skipped here, said
    // as a warning. A file that asks for more everywhere is an error.
    let scaling = file.varies_under("devices.");
    // On PoCL, one setting gives a second device.
    let pocl = platforms
        .iter()
        .any(|p| p.name.value().is_some_and(|n| clmulti_probe::is_pocl(n)))
        && std::env::var_os("POCL_DEVICES").is_none();
    let message = format!(
        "{e}: `clmulti run` refuses this run here (exit 2); a sweep records it as skipped{}{}",
        if scaling {
            ", as it must on a node with fewer devices (a Slurm node), and says so"
        } else {
            ""
        },
        if pocl {
            "; PoCL gives two devices with POCL_DEVICES=\"cpu cpu\" (\"pthread pthread\" on PoCL 3)"
        } else {
            ""
        }
    );
    let list = if scaling {
        &mut said.warnings
    } else {
        &mut said.errors
    };
    Said::add(list, file.error_in_run(index, key, &message));
}

/// A buffer (or pool) larger than a selected device allocates at once.
fn too_large(
    file: &ScenarioFile,
    index: usize,
    run: &Scenario,
    devices: &[DeviceInfo],
    said: &mut Said,
) {
    let Some((most, device)) = devices
        .iter()
        .filter_map(|d| d.max_alloc_bytes.value().map(|m| (*m, d)))
        .min_by_key(|(m, _)| *m)
    else {
        return;
    };
    let alloc = &run.allocation;
    for (key, bytes) in [
        ("allocation.size", Some(alloc.size_bytes)),
        ("allocation.pool_size", alloc.pool_size_bytes),
    ] {
        let Some(bytes) = bytes.filter(|b| *b > most) else {
            continue;
        };
        let message = format!(
            "{} is above the {} that device {} ({}) allocates at once (CL_DEVICE_MAX_MEM_ALLOC_SIZE): its first clCreateBuffer fails with CL_INVALID_BUFFER_SIZE (-61), measuring nothing else",
            format_size(bytes),
            format_bytes(most as f64),
            device.index,
            device.display_name()
        );
        Said::add(&mut said.warnings, file.error_in_run(index, key, &message));
    }
}

/// An address-space or data limit under which the runtime does not load here: the
/// run then finds no platform.
fn address_space(
    file: &ScenarioFile,
    index: usize,
    run: &Scenario,
    platforms: &[PlatformInfo],
    binding: &crate::trust::Binding,
    (under, asks): (&mut UnderLimits, &mut Asks),
    said: &mut Said,
) {
    let Some((which, value)) = [Rlimit::AddressSpace, Rlimit::Data]
        .into_iter()
        .find_map(|w| run.limits.soft.get(&w).map(|v| (w, *v)))
    else {
        return;
    };
    if platforms.is_empty() {
        return;
    }
    let asked = (run.env.clone(), format!("{:?}", run.limits.soft));
    if !under.contains_key(&asked) && !asks.may_ask(file, index, run) {
        return;
    }
    let loads = under.entry(asked).or_insert_with(|| {
        list_platforms(&run.env, binding, Some(&run.limits)).map(|p| !p.is_empty())
    });
    if matches!(loads, Ok(true)) {
        return;
    }
    let why = match loads {
        Err(why) => why.clone(),
        Ok(_) => "the ICD loader listed no platform".to_owned(),
    };
    let names: Vec<&str> = platforms.iter().map(PlatformInfo::display_name).collect();
    let known = minimum_words(&names);
    let key = format!("limits.{}", which.key());
    let message = format!(
        "under {} = {} the OpenCL runtime does not load here ({}), so the run finds no platform (CL_PLATFORM_NOT_FOUND_KHR (-1001)) and measures nothing; without the limit the loader lists {}{known}",
        key,
        format_size(value),
        why.split([':', '\n']).next().unwrap_or_default(),
        names.join(", "),
    );
    Said::add(&mut said.warnings, file.error_in_run(index, &key, &message));
}

/// The least address space each runtime was measured to load in, on this project's
/// 2-core Debian 12 VM (`prlimit --as=N clmulti devices`, halving between 16 MiB
/// and 8 GiB; `clinfo -l` alike for PoCL): a runtime starts threads per core, each
/// with its stack, so more cores need more. NEO 22.43 in AUB mode loaded in 36 MiB,
/// below clmulti's own 64 MiB: nothing to say for it.
const MEASURED_MINIMUM: [(&str, u64, &str); 2] = [
    (
        "Portable Computing Language",
        301 << 20,
        "PoCL 3.1 (2 pthread devices)",
    ),
    ("Intel(R) OpenCL", 296 << 20, "Intel's CPU runtime 2026.22"),
];

/// `; PoCL 3.1 needed 180 MiB to load here [measured ...]`, for the runtimes listed.
fn minimum_words(names: &[&str]) -> String {
    let known: Vec<String> = MEASURED_MINIMUM
        .iter()
        .filter(|(name, bytes, _)| *bytes > 0 && names.iter().any(|n| n == name))
        .map(|(_, bytes, runtime)| format!("{runtime} needed {}", format_size(*bytes)))
        .collect();
    if known.is_empty() {
        return String::new();
    }
    format!(
        "; {} to load [measured: clmulti devices under prlimit --as on a 2-core VM; more cores need more]",
        known.join(", ")
    )
}
