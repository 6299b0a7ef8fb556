//! The probe's integration tests that leave the process as they found it, one binary
//! for all. `fd_limit` (lowers the process's descriptor limit) and `real_devices` (sets
//! the ICD loader's environment) keep binaries of their own.

mod drm_fixtures;
mod maps;
mod neo_log;
