//! The commands `main` dispatches that join the pipeline to a renderer. Each takes what the command line
//! gave (`cli` turns arguments into these requests) and returns the exit code.

pub mod explain;
pub mod grade;
pub mod hint;
pub mod list;
pub mod status;
