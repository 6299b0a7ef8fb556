//! The reasoning over hand-built reports: no OpenCL, no child process, milliseconds.

mod analysis;
mod diagnosis;
mod experiment;
