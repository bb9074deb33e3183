//! `pi-course completions SHELL`: the shell's completion script for `command` (the command line as
//! `crate::cli` defines it, handed in by `main`, so that the commands never import the command line).

use std::process::ExitCode;

use crate::error::Result;

pub fn run(mut command: clap::Command, shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "pi-course", &mut script);
    crate::report::emit(&String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}
