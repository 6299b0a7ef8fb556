//! The scenario crate's integration tests, one binary for all.

mod editing;
mod malformed;
