//! axpy
