//! The process a run gets: its `[env]` (paths resolved, the layer's knobs checked)
//! and its `[limits]` (against this machine's hard limits).

use super::{positive, problem, size, Context, Problem};
use super::{DEVICE_COUNT_TOKEN, MAX_ENV_ENTRY_BYTES, MAX_ENV_VARS, PATH_ENV_KEYS};
use crate::model::{Limits, Rlimit};
use crate::raw::{RawLimits, RawSize};
use clmulti_contract::{LAYER, PROJECT_LIBRARIES};
use std::collections::BTreeMap;
use std::path::Path;

use crate::defs::*;

pub(super) fn limits(raw: &RawLimits, context: &Context) -> Result<Limits, Problem> {
    let mut soft = BTreeMap::new();
    let count = |key: &Key, v: Option<i64>| v.map(|n| positive(key, n)).transpose();
    let bytes = |key: &Key, v: &Option<RawSize>| v.as_ref().map(|s| size(key, s)).transpose();
    let values = [
        (
            Rlimit::NoFile,
            &LIMITS_NOFILE,
            count(&LIMITS_NOFILE, raw.nofile)?,
        ),
        (
            Rlimit::AddressSpace,
            &LIMITS_AS,
            bytes(&LIMITS_AS, &raw.address_space)?,
        ),
        (
            Rlimit::MemLock,
            &LIMITS_MEMLOCK,
            bytes(&LIMITS_MEMLOCK, &raw.memlock)?,
        ),
        (
            Rlimit::NProc,
            &LIMITS_NPROC,
            count(&LIMITS_NPROC, raw.nproc)?,
        ),
        (Rlimit::Data, &LIMITS_DATA, bytes(&LIMITS_DATA, &raw.data)?),
    ];
    for (which, key, value) in values {
        let Some(value) = value else { continue };
        let key = key.name;
        if matches!(which, Rlimit::AddressSpace | Rlimit::Data) && value < MIN_ADDRESS_SPACE {
            return Err(problem(
                key,
                format!(
                    "below {} the process cannot even load the OpenCL runtime",
                    crate::size::format_size(MIN_ADDRESS_SPACE)
                ),
            ));
        }
        if which == Rlimit::NoFile && value < MIN_NOFILE {
            return Err(problem(
                key,
                format!("at least {MIN_NOFILE}: the standard streams alone take 3 descriptors"),
            ));
        }
        if let Some(hard) = context.hard_limits.get(&which).filter(|h| value > **h) {
            let unit = if which.in_bytes() { " bytes" } else { "" };
            return Err(problem(
                key,
                format!(
                    "{value}{unit} is above the most this process may set {} to ({hard}{unit}: its hard limit, `ulimit -H`; or fs.nr_open for nofile where it may raise hard limits, as root)",
                    which.name()
                ),
            ));
        }
        soft.insert(which, value);
    }
    Ok(Limits { soft })
}

pub(super) fn env(
    raw: BTreeMap<String, String>,
    device_count: usize,
    context: &Context,
) -> Result<BTreeMap<String, String>, Problem> {
    if raw.len() > MAX_ENV_VARS {
        return Err(problem(
            ENV.name,
            format!(
                "{} variables; at most {MAX_ENV_VARS} are allowed",
                raw.len()
            ),
        ));
    }
    layer_settings(&raw, device_count)?;
    known_names(&raw)?;
    let mut env = BTreeMap::new();
    for (key, value) in raw {
        let at = format!("env.{key}");
        one_line(&at, &key, &value)?;
        let value = value.replace(DEVICE_COUNT_TOKEN, &device_count.to_string());
        known_placeholders(&at, &key, &value)?;
        if key.len() + 1 + value.len() > MAX_ENV_ENTRY_BYTES {
            return Err(problem(
                &at,
                format!(
                    "{} bytes as KEY=VALUE; Linux starts no process with an entry over {MAX_ENV_ENTRY_BYTES}",
                    key.len() + 1 + value.len()
                ),
            ));
        }
        let value = if PATH_ENV_KEYS.contains(&key.as_str()) {
            resolve_paths(&at, &value, context)?
        } else {
            value
        };
        env.insert(key, value);
    }
    Ok(env)
}

/// The layer's knobs, checked first: they are words and numbers, not paths, so a
/// mistake in them reads the same on every machine. The layer and its policy come
/// together.
fn layer_settings(raw: &BTreeMap<String, String>, device_count: usize) -> Result<(), Problem> {
    crate::layer::LayerSettings::read(|k| {
        raw.get(k)
            .map(|v| v.replace(DEVICE_COUNT_TOKEN, &device_count.to_string()))
    })
    .map_err(|(key, message)| problem(&format!("env.{key}"), message))?;
    let names_layer = raw.get("OPENCL_LAYERS").is_some_and(|l| {
        l.split(':')
            .any(|p| p.trim() == LAYER.token || p.ends_with(LAYER.file_name))
    });
    if names_layer && !raw.contains_key(clmulti_contract::layer::POLICY) {
        let names: Vec<&str> = crate::layer::Policy::ALL.iter().map(|(n, _)| *n).collect();
        return Err(problem(
            "env.OPENCL_LAYERS",
            format!(
                "names clmulti's layer but no {} ({})",
                clmulti_contract::layer::POLICY,
                names.join(", ")
            ),
        ));
    }
    if raw.contains_key(clmulti_contract::layer::POLICY) && !names_layer {
        return Err(problem(
            &format!("env.{}", clmulti_contract::layer::POLICY),
            format!(
                "sets what clmulti's emulation layer models, but OPENCL_LAYERS does not load the layer: the run would measure the runtime without it; add OPENCL_LAYERS = \"{}\"",
                LAYER.token
            ),
        ));
    }
    Ok(())
}

/// A name a process can be given, and a value of one line of printable text.
fn one_line(at: &str, key: &str, value: &str) -> Result<(), Problem> {
    if key.is_empty()
        || key.contains('=')
        || key.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(problem(
            at,
            "an environment variable name must be non-empty, without '=', spaces or control characters",
        ));
    }
    if value.contains('\0') {
        return Err(problem(
            at,
            "an environment variable value cannot contain NUL",
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(problem(
            at,
            format!(
                "an environment variable value is one line of printable text; it holds the control character U+{:04X}",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

/// A placeholder spelled wrong would reach the runtime as literal text.
fn known_placeholders(at: &str, key: &str, value: &str) -> Result<(), Problem> {
    let others = PROJECT_LIBRARIES
        .iter()
        .filter(|l| l.env_key == key)
        .fold(value.to_owned(), |v, l| v.replace(l.token, ""));
    if let Some(start) = others.find("{devices.").or_else(|| others.find("{clmulti")) {
        let rest = &others[start..];
        let token = &rest[..rest.find('}').map_or(rest.len(), |e| e + 1)];
        let libraries: Vec<String> = PROJECT_LIBRARIES
            .iter()
            .map(|l| format!("{} (in {})", l.token, l.env_key))
            .collect();
        return Err(problem(
            at,
            format!(
                "unknown placeholder {token}; the placeholders are {DEVICE_COUNT_TOKEN} (the run's device count, in any value), {}{}",
                libraries.join(", "),
                crate::suggest::hint(
                    token,
                    std::iter::once(DEVICE_COUNT_TOKEN).chain(PROJECT_LIBRARIES.iter().map(|l| l.token))
                )
            ),
        ));
    }
    Ok(())
}

/// Resolves each `:`-separated path against the scenario's folder and checks it exists
/// (LD_PRELOAD: also space-separated, and a bare name is the dynamic linker's to find).
fn resolve_paths(key: &str, value: &str, context: &Context) -> Result<String, Problem> {
    let preload = key == "env.LD_PRELOAD";
    let mut resolved = Vec::new();
    for entry in value
        .split(|c| c == ':' || (preload && c == ' '))
        .filter(|e| !e.is_empty())
    {
        let library = PROJECT_LIBRARIES.iter().find(|l| l.token == entry);
        if preload && library.is_none() && !entry.contains('/') {
            resolved.push(entry.to_owned());
            continue;
        }
        let path = if let Some(library) = library {
            context.libraries.as_ref().map(|dir| dir.join(library.file_name)).ok_or_else(|| {
                problem(key, format!("{} names {} built beside clmulti; this tool does not know where that is", library.token, library.what))
            })?
        } else {
            let path = Path::new(entry);
            match (&context.base_dir, path.is_relative()) {
                (Some(base), true) => base.join(path),
                _ => path.to_path_buf(),
            }
        };
        if !path.exists() {
            let built = PROJECT_LIBRARIES
                .iter()
                .find(|l| path.file_name().is_some_and(|n| n == l.file_name));
            let hint = if let Some(library) = built {
                format!(
                    "; build it with `cargo build{} -p {}` (`cargo xtask sweep` builds it too)",
                    if path.to_string_lossy().contains("/release/") {
                        " --release"
                    } else {
                        ""
                    },
                    library.package
                )
            } else if path.to_string_lossy().contains(".intel-opencl") {
                "; install Intel's CPU runtime there with scripts/setup-intel-opencl.sh".into()
            } else if path.to_string_lossy().contains(".intel-gpu") {
                "; install Intel's GPU runtime NEO and its vendors folder with scripts/setup-intel-gpu.sh"
                    .into()
            } else {
                String::new()
            };
            return Err(problem(
                key,
                format!("{} does not exist{hint}", path.display()),
            ));
        }
        resolved.push(path.to_string_lossy().into_owned());
    }
    Ok(resolved.join(":"))
}

/// `[env]` names are case-sensitive: a name clmulti knows written in another case
/// (`ld_preload`) would reach the runtime as a variable nothing reads.
fn known_names(raw: &BTreeMap<String, String>) -> Result<(), Problem> {
    for key in raw.keys() {
        if let Some(known) = crate::env_keys::other_case(key) {
            return Err(problem(
                &format!("env.{key}"),
                format!(
                    "environment variables are case-sensitive, and nothing reads {key}: did you mean {known}?"
                ),
            ));
        }
    }
    Ok(())
}
