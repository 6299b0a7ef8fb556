//! The uapi against the C headers, one binary for all.

mod headers;
mod xe_header;
