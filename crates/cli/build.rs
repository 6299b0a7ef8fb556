//! Records the git commit the binary is built from, for `clmulti --version`.

fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    println!(
        "cargo:rustc-env=CLMULTI_GIT_COMMIT={commit}{}",
        if dirty { "-dirty" } else { "" }
    );
    let features: Vec<&str> = [("CARGO_FEATURE_NVML", "nvml")]
        .into_iter()
        .filter(|(var, _)| std::env::var_os(var).is_some())
        .map(|(_, name)| name)
        .collect();
    println!(
        "cargo:rustc-env=CLMULTI_FEATURES={}",
        if features.is_empty() {
            "none".to_owned()
        } else {
            features.join(",")
        }
    );
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
}
