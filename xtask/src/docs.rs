//! `cargo xtask docs`: shell completions and man pages from clmulti's clap
//! definitions, and the JSON Schema of scenario files from their raw types. The
//! generated files are committed; `--check` says whether they are current.
//!
//! The man pages are clap_mangen's NAME, DESCRIPTION, OPTIONS and COMMANDS, with a
//! SYNOPSIS that names every value (`--format FORMAT`), and EXIT STATUS,
//! ENVIRONMENT, EXAMPLES and SEE ALSO of their own. Hidden arguments (`run --child`,
//! `--resolved`: clmulti's own, for the child processes it starts) appear nowhere.

use std::path::{Path, PathBuf};

/// Arguments of `cargo xtask docs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Compare with the committed files instead of writing them (exit 1 when stale).
    #[arg(long)]
    check: bool,
}

/// The clmulti command line as people see it: hidden arguments left out, global
/// ones (`-q`, `-v`) on every subcommand; the `help` subcommand only where asked
/// (completions offer it; it has no man page).
fn visible(cmd: &clap::Command, help: bool) -> clap::Command {
    let mut out = clap::Command::new(cmd.get_name().to_owned())
        .disable_help_flag(true)
        .disable_version_flag(true)
        .disable_help_subcommand(true);
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(about) = cmd.get_long_about() {
        out = out.long_about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        out = out.version(version.to_owned());
    }
    // `help` takes command names, not the global options propagated to it.
    if cmd.get_name() != "help" {
        // Not global again: each subcommand already holds its copy.
        out = out.args(
            cmd.get_arguments()
                .filter(|a| !a.is_hide_set())
                .map(|a| a.clone().global(false)),
        );
    }
    out.subcommands(
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set() && (help || s.get_name() != "help"))
            .map(|s| visible(s, help)),
    )
}

/// `clmulti` with every global argument propagated, as its subcommands parse.
fn built(help: bool) -> clap::Command {
    let mut cmd = clmulti::command();
    cmd.build();
    visible(&cmd, help)
}

/// Roff-escaped text: backslashes and leading dots, hyphens as `\-`.
fn roff(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// `` `code` `` in help text as bold, the way man pages set literal text.
fn code_to_bold(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut parts = page.split('`');
    out.push_str(parts.next().unwrap_or(""));
    for (i, part) in parts.enumerate() {
        out.push_str(if i % 2 == 0 { "\\fB" } else { "\\fR" });
        out.push_str(part);
    }
    out
}

/// SYNOPSIS: the command and each visible argument with its value's placeholder.
fn synopsis(name: &str, cmd: &clap::Command) -> String {
    let mut words = vec![format!("\\fB{}\\fR", roff(name))];
    for arg in cmd.get_arguments() {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|v| v.to_string())
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
        let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
        let word = if arg.is_positional() {
            let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
            let w = format!("\\fI{}\\fR{}", roff(&value), if many { "..." } else { "" });
            if arg.is_required_set() {
                w
            } else {
                format!("[{w}]")
            }
        } else {
            let flag = match (arg.get_short(), arg.get_long()) {
                (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR|\\fB\\-\\-{}\\fR", roff(l)),
                (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff(l)),
                (Some(s), None) => format!("\\fB\\-{s}\\fR"),
                (None, None) => continue,
            };
            if takes_value {
                format!("[{flag} \\fI{}\\fR]", roff(&value))
            } else {
                format!("[{flag}]")
            }
        };
        words.push(word);
    }
    if cmd.get_subcommands().next().is_some() {
        words.push("\\fICOMMAND\\fR".into());
    }
    format!(".SH SYNOPSIS\n{}\n", words.join(" "))
}

const EXIT_STATUS: &str = ".SH \"EXIT STATUS\"
.TP
\\fB0\\fR
Done. A run that stopped on an OpenCL error is still a successful measurement: the error is in its report; so is \\fBclmulti axpy\\fR on NEO's emulated devices, which run no kernel (it says \\fBunsupported\\fR).
.TP
\\fB1\\fR
clmulti itself failed: no OpenCL runtime, a runtime whose loading crashed, exited or hung, a run that ended without a report, a file that could not be written, a full or closed stdout, \\fB\\-\\-timeout\\fR passed by a command that reports only at its end.
.TP
\\fB2\\fR
Bad input: an invalid scenario file (the message names file:line:col and the key), an invalid option value, a scenario that loads code nothing trusts (\\fBclmulti trust\\fR).
.TP
\\fB129\\fR, \\fB130\\fR, \\fB143\\fR
SIGHUP, SIGINT or SIGTERM stopped it part way: what finished is reported. A signal inherited ignored (\\fBnohup\\fR) stays ignored.
.PP
\\fBclmulti emulate\\fR is replaced by its program: its exit status is the program's (1 when the program cannot be started, 2 for bad arguments).
";

const ENVIRONMENT: &str = ".SH ENVIRONMENT
clmulti passes its environment to the OpenCL runtime; a scenario's \\fB[env]\\fR table sets more for its run, before the runtime loads.
.TP
\\fBOCL_ICD_VENDORS\\fR, \\fBOCL_ICD_FILENAMES\\fR
Read by the ICD loader: which runtimes it loads (a folder of .icd files or one .icd file; or the libraries themselves).
.TP
\\fBOPENCL_LAYERS\\fR
Read by the ICD loader (ocl\\-icd >= 2.3): layers in the call path. clmulti checks that its emulation layer is in the path when a scenario names it, and reports the run as unsupported when it is not.
.TP
\\fBCLMULTI_LAYER_POLICY\\fR, \\fBCLMULTI_LAYER_*\\fR
Read by clmulti's emulation layer: which candidate cause it models and its knobs (see configs/README.md).
.TP
\\fBPOCL_DEVICES\\fR, \\fBPOCL_MEMORY_LIMIT\\fR
Read by PoCL: its CPU devices (\\fBpthread pthread\\fR gives two) and their memory in GiB.
.TP
\\fBNEOReadDebugKeys\\fR, \\fBSetCommandStreamReceiver\\fR, \\fBProductFamilyOverride\\fR, \\fBCreateMultipleRootDevices\\fR, \\fBAUBDumpCaptureFileName\\fR
Read by Intel's GPU runtime NEO; clmulti reads them too, to say when NEO runs emulated devices (AUB mode).
.TP
\\fBSLURM_MEM_PER_NODE\\fR, \\fBSLURM_MEM_PER_CPU\\fR, \\fBSLURM_CPUS_ON_NODE\\fR
Read by clmulti: a Slurm job's memory, a ceiling for the host-memory guard like RAM and the cgroup's limit.
.TP
\\fBCLMULTI_PROGRESS_FILE\\fR
Set by clmulti for each child process it starts (\\fBrun\\fR with several runs, \\fBdiagnose\\fR, \\fBbench\\fR, sweeps); the child writes its setup and every sample there, so a crash keeps what it measured.
.TP
\\fBCLMULTI_TRUST_FILE\\fR
The record of trusted scenario files (\\fBclmulti trust\\fR), one JSON line per file: its real path and SHA\\-256, and each library's it loads that needs a word; default \\fB$XDG_CONFIG_HOME/clmulti/trusted\\fR, else \\fB~/.config/clmulti/trusted\\fR.
";

/// What each page shows as EXAMPLES: (what it does, the command line).
fn examples(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "clmulti" => &[
            ("List the platforms and devices, with what bounds allocation:", "clmulti devices"),
            ("Check every shipped scenario without running it:", "clmulti check configs/*.toml"),
            ("Run the seed's shared-context case and read its report:", "clmulti run configs/seed-2gpu-shared.toml"),
            ("Ask the seed's question on two GPUs, with a page to share:", "clmulti diagnose --device 0:0 --device 0:1 --out diag"),
        ],
        "clmulti-devices" => &[
            ("The devices as a table:", "clmulti devices"),
            ("Each device's name and memory, with jq:", "clmulti devices --format json | jq '.platforms[].devices[] | {name, global_mem_bytes}'"),
        ],
        "clmulti-check" => &[
            ("Check scenario files (exit 2 and file:line:col: key for the first problem of each):", "clmulti check configs/*.toml"),
            ("The same as JSON, for an editor or CI:", "clmulti check --format json my.toml"),
        ],
        "clmulti-run" => &[
            ("Run a scenario and print its report:", "clmulti run configs/seed-2gpu-shared.toml"),
            ("List the runs a grid expands to, then run the fourth as JSON:", "clmulti run --list configs/scaling/device-count.toml\nclmulti run --index 3 --format json configs/scaling/device-count.toml | jq .stop"),
            ("Say why a run failed, measured, by moving each candidate's limit:", "clmulti run --experiment configs/emulation/fd-per-peer.toml"),
            ("Every sample, the setup's timings and the child's command line on stderr:", "clmulti -v run --isolate configs/seed-1gpu.toml"),
        ],
        "clmulti-axpy" => &[
            ("Verify dAxpy on every device and measure its bandwidth:", "clmulti axpy"),
            ("Split one dAxpy over two devices:", "clmulti axpy --split --device 0:0 --device 0:1"),
        ],
        "clmulti-bench" => &[
            ("Compare the engine's allocation rate with a plain loop on one device:", "clmulti bench --device 0:0 --rounds 11"),
        ],
        "clmulti-diagnose" => &[
            ("Diagnose the first two GPUs and write diag/index.html, .md and .json:", "clmulti diagnose --out diag"),
            ("Quicker, without re-running the fixes:", "clmulti diagnose --count 2000 --no-experiments"),
            ("With the runtime's own debug log, and one archive for its maintainers:", "clmulti diagnose --runtime-log --bundle diagnose.tar.gz"),
            ("Two NEO releases side by side (the newer one diagnosed first, elsewhere):", "clmulti diagnose --compare neo-26.27/diagnose.json --out neo-22.43"),
        ],
        "clmulti-emulate" => &[
            ("NEO's view of two emulated Arc A770s:", "clmulti emulate --devices 2 -- clinfo -l"),
            ("The seed's own program on them (bench/seed; run it under the seed's descriptor limit, ulimit -Sn 1024):", "clmulti emulate -- ./OpenCLMulti --gpus 2"),
            ("The seed's question, answered from Intel's runtime on its kernel path:", "clmulti emulate -- clmulti diagnose --out diag"),
        ],
        "clmulti-reproduce" => &[
            ("A failed run as a C program (build it with cc -O2 -o reproduce reproduce.c -lOpenCL; its first lines say how to run it):", "clmulti run --format json configs/emulation/fd-per-peer.toml > runs.jsonl\nclmulti reproduce runs.jsonl --out reproduce.c"),
        ],
        "clmulti-trust" => &[
            ("See what a scenario from a bug report loads, read it, then trust it as it is now:", "clmulti check bug-report.toml\nclmulti trust bug-report.toml\nclmulti run bug-report.toml"),
            ("Allow one library for one run instead, or take the trust back:", "clmulti run bug-report.toml --allow /opt/hooks/libhook.so\nclmulti trust --revoke bug-report.toml"),
            ("List what is trusted:", "clmulti trust --list"),
        ],
        _ => &[],
    }
}

fn examples_section(name: &str) -> String {
    let mut out = String::from(".SH EXAMPLES\n");
    for (what, command) in examples(name) {
        out.push_str(&format!(
            ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            roff(what),
            roff(command)
        ));
    }
    out
}

fn see_also(name: &str, pages: &[String]) -> String {
    let others: Vec<String> = pages
        .iter()
        .filter(|p| p.as_str() != name)
        .map(|p| format!("\\fB{}\\fR(1)", roff(p)))
        .collect();
    format!(
        ".SH \"SEE ALSO\"\n{}. Scenario files: configs/README.md; JSON output: docs/json.md.\n",
        others.join(", ")
    )
}

/// One man page: clap_mangen's sections with ours between them.
fn man_page(
    name: &str,
    shown: &str,
    cmd: clap::Command,
    pages: &[String],
) -> Result<Vec<u8>, String> {
    let err = |e: std::io::Error| format!("man page {name}: {e}");
    let man = clap_mangen::Man::new(cmd.clone().name(name.to_owned()));
    let mut head = Vec::new();
    man.render_title(&mut head).map_err(err)?;
    man.render_name_section(&mut head).map_err(err)?;
    let mut body = Vec::new();
    man.render_description_section(&mut body).map_err(err)?;
    if cmd.get_arguments().next().is_some() {
        man.render_options_section(&mut body).map_err(err)?;
    }
    if cmd.get_subcommands().next().is_some() {
        man.render_subcommands_section(&mut body).map_err(err)?;
    }
    let mut page = String::from_utf8(head).map_err(|e| e.to_string())?;
    page.push_str(&synopsis(shown, &cmd));
    page.push_str(&code_to_bold(
        &String::from_utf8(body).map_err(|e| e.to_string())?,
    ));
    page.push_str(EXIT_STATUS);
    page.push_str(ENVIRONMENT);
    page.push_str(&examples_section(name));
    page.push_str(&see_also(name, pages));
    Ok(page.into_bytes())
}

/// Every generated file: path relative to the workspace, and its content.
fn generate() -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let mut files = Vec::new();
    let mut command = built(true);
    for (shell, name) in [
        (clap_complete::Shell::Bash, "clmulti.bash"),
        (clap_complete::Shell::Zsh, "_clmulti"),
        (clap_complete::Shell::Fish, "clmulti.fish"),
    ] {
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut command, "clmulti", &mut out);
        files.push((PathBuf::from("docs/completions").join(name), out));
    }
    let command = built(false);
    let mut pages = vec![("clmulti".to_owned(), "clmulti".to_owned(), command.clone())];
    for sub in command.get_subcommands() {
        // Each subcommand's page carries its full name, as man(1) looks it up.
        pages.push((
            format!("clmulti-{}", sub.get_name()),
            format!("clmulti {}", sub.get_name()),
            sub.clone(),
        ));
    }
    let names: Vec<String> = pages.iter().map(|(n, _, _)| n.clone()).collect();
    for (name, shown, cmd) in pages {
        let page = man_page(&name, &shown, cmd, &names)?;
        files.push((PathBuf::from("docs/man").join(format!("{name}.1")), page));
    }
    let schema = serde_json::to_string_pretty(&clmulti_scenario::schema())
        .map_err(|e| format!("schema: {e}"))?;
    files.push((
        PathBuf::from("configs/scenario.schema.json"),
        (schema + "\n").into_bytes(),
    ));
    Ok(files)
}

/// Where the generated files go, and how to read them before installing.
const WHERE: &str = "docs: read a page before installing with `man -l docs/man/clmulti-run.1`; install them with
  install -Dm644 docs/man/*.1 -t ~/.local/share/man/man1        (then `man clmulti-run`)
  install -Dm644 docs/completions/clmulti.bash ~/.local/share/bash-completion/completions/clmulti
  install -Dm644 docs/completions/_clmulti ~/.local/share/zsh/site-functions/_clmulti   (a folder on $fpath)
  install -Dm644 docs/completions/clmulti.fish ~/.config/fish/completions/clmulti.fish
editors find configs/scenario.schema.json through the `#:schema` line at the top of each scenario file";

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
    if !args.check {
        eprintln!("{WHERE}");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn write(path: &Path, content: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, content).map_err(|e| format!("{}: {e}", path.display()))
}
