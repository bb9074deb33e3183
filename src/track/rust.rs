//! The Rust track's adapter: cargo builds the slot, the test executable runs.

pub mod build;
pub mod refuse;
pub mod toolchain;
