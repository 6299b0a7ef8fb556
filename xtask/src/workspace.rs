//! Where the workspace is, found at run time: a copied checkout runs its own
//! binaries, and `cargo xtask` works from any sub-folder.

use std::path::{Path, PathBuf};

/// The workspace root: cargo's `CARGO_MANIFEST_DIR` for this run (xtask's folder)
/// when set, else the nearest folder upwards from the current one whose Cargo.toml
/// has a `[workspace]`.
pub fn root() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        let xtask = PathBuf::from(dir);
        if let Some(parent) = xtask.parent().filter(|p| is_workspace(p)) {
            return Ok(parent.to_path_buf());
        }
    }
    let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    cwd.ancestors()
        .find(|d| is_workspace(d))
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            format!(
                "no Cargo workspace above {}; run cargo xtask inside the clmulti repository",
                cwd.display()
            )
        })
}

fn is_workspace(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]"))
}

/// The folder cargo builds into (`CARGO_TARGET_DIR` or `<root>/target`).
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Builds the release `clmulti` and the emulation layer once; returns clmulti's path.
pub fn build_release(root: &Path, features: Option<&str>) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--release", "-p", "clmulti"]);
    for library in clmulti_contract::PROJECT_LIBRARIES {
        cmd.args(["-p", library.package]);
    }
    if let Some(f) = features {
        // Several packages are built: features are named per package.
        let named: Vec<String> = f
            .split(',')
            .map(|f| {
                if f.contains('/') {
                    f.to_owned()
                } else {
                    format!("clmulti/{f}")
                }
            })
            .collect();
        cmd.args(["--features", &named.join(",")]);
    }
    let with = match features {
        Some(f) => format!("with features {f}"),
        // Cargo rebuilds a binary built with other features: say how to keep them.
        None => "without features (--features nvml keeps NVIDIA's device-memory readings)".into(),
    };
    eprintln!("sweep: building the release clmulti and its libraries (emulation layer, emulated i915 driver, tracer) {with}");
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("building clmulti failed".into());
    }
    Ok(target_dir(root).join("release").join("clmulti"))
}
