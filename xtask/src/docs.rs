//! `cargo xtask docs`: shell completions and man pages from clmulti's clap
//! definitions, and the JSON Schema of scenario files from their raw types. The
//! generated files are committed; `--check` says whether they are current.

use std::path::{Path, PathBuf};

/// Arguments of `cargo xtask docs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Compare with the committed files instead of writing them (exit 1 when stale).
    #[arg(long)]
    check: bool,
}

/// Every generated file: path relative to the workspace, and its content.
fn generate() -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let mut files = Vec::new();
    let mut command = clmulti::command();
    for (shell, name) in [
        (clap_complete::Shell::Bash, "clmulti.bash"),
        (clap_complete::Shell::Zsh, "_clmulti"),
        (clap_complete::Shell::Fish, "clmulti.fish"),
    ] {
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut command, "clmulti", &mut out);
        files.push((PathBuf::from("docs/completions").join(name), out));
    }
    let command = clmulti::command();
    let mut pages = vec![("clmulti".to_owned(), command.clone())];
    for sub in command.get_subcommands() {
        // Each subcommand's page carries its full name, as man(1) looks it up.
        let name = format!("clmulti-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name)));
    }
    for (name, page) in pages {
        let mut out = Vec::new();
        clap_mangen::Man::new(page)
            .render(&mut out)
            .map_err(|e| format!("man page {name}: {e}"))?;
        files.push((PathBuf::from("docs/man").join(format!("{name}.1")), out));
    }
    let schema = serde_json::to_string_pretty(&clmulti_scenario::schema())
        .map_err(|e| format!("schema: {e}"))?;
    files.push((
        PathBuf::from("configs/scenario.schema.json"),
        (schema + "\n").into_bytes(),
    ));
    Ok(files)
}

pub fn docs(args: &Args) -> Result<std::process::ExitCode, String> {
    let root = crate::workspace::root()?;
    let mut stale = Vec::new();
    for (path, content) in generate()? {
        let full = root.join(&path);
        if args.check {
            if std::fs::read(&full).ok().as_deref() != Some(content.as_slice()) {
                stale.push(path.display().to_string());
            }
            continue;
        }
        write(&full, &content)?;
        eprintln!("docs: {}", path.display());
    }
    if !stale.is_empty() {
        eprintln!(
            "docs: stale or missing: {}; run `cargo xtask docs`",
            stale.join(", ")
        );
        return Ok(std::process::ExitCode::from(1));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn write(path: &Path, content: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, content).map_err(|e| format!("{}: {e}", path.display()))
}
