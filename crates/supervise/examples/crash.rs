//! A child that prints, then crashes: what the harness reports of it (its signal, what
//! it printed, how long it ran), and a child that outlives its time limit, killed.
//!
//! `cargo run -p clmulti-supervise --example crash`

use clmulti_supervise::{run_child, ChildCommand};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

fn shell(script: &str, timeout: Duration) -> ChildCommand {
    ChildCommand {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: Default::default(),
        timeout,
        interrupt: None,
        interrupt_grace: Duration::ZERO,
        abandon_when: None,
        resolved: None,
        placement: Default::default(),
        inherit: Vec::new(),
    }
}

fn main() -> std::io::Result<()> {
    let crashed = run_child(&shell(
        "echo measured; kill -SEGV $$",
        Duration::from_secs(10),
    ))?;
    println!(
        "crashed: signal {:?}, printed {:?}, in {:.3} s",
        crashed.status.signal(),
        crashed.stdout.trim(),
        crashed.wall_seconds
    );
    let hung = run_child(&shell("sleep 30", Duration::from_millis(300)))?;
    println!(
        "hung: killed at the time limit: {}, signal {:?}",
        hung.timed_out,
        hung.status.signal()
    );
    Ok(())
}
