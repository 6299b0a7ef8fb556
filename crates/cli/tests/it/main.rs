//! The cli's integration tests, one binary (one link) for all: each module is what
//! one file of tests is about. None changes process-wide state (limits and signals are
//! set in children, between fork and exec), so they may share one process. `faults`
//! keeps a binary of its own: its runtimes must load within seconds, and beside the
//! NEO tests here oclgrind's loading once took longer than its 6 s limit.

#[path = "../common/mod.rs"]
mod common;

mod axpy;
mod bench;
mod devices;
mod diagnose;
mod editing;
mod exit_codes;
mod failing_call;
mod fault_space;
mod hostile;
mod hostile_loads;
mod intel;
mod neo;
mod neo_kernel_path;
mod neo_versions;
mod neo_xe;
mod rigor;
mod run;
mod seed_emulation;
mod trust;
mod verbose;
