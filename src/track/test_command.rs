//! How to start a test process once a track's build is done: what every adapter returns and what the
//! runner and the channel start. Its own module, below the adapters and the table of them, so that the
//! table (`toolchain`) and an adapter (`node`) never import each other.

use std::ffi::OsString;
use std::path::PathBuf;

/// How a test process of a built slot starts.
#[derive(Debug, Clone)]
pub struct TestCommand {
    /// The program: the test executable (Rust) or node (TypeScript).
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// What the process may read besides its program and the system's libraries (the compiled code).
    pub read: Vec<PathBuf>,
    /// Environment of the toolchain's own, besides what every test process gets.
    pub envs: Vec<(String, String)>,
}

impl TestCommand {
    /// A test executable that needs nothing but itself.
    pub fn executable(exe: PathBuf) -> TestCommand {
        TestCommand {
            program: exe,
            args: Vec::new(),
            read: Vec::new(),
            envs: Vec::new(),
        }
    }
}
