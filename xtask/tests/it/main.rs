//! xtask's integration tests (house rules, docs, examples, sweeps, Slurm), one binary
//! (one link) for all. None changes process-wide state: limits and signals are set in
//! children, between fork and exec.

#[path = "../common/mod.rs"]
mod common;

mod docs;
mod examples;
mod hostile;
mod pages;
mod slurm;
mod sweep;
mod tidy;
