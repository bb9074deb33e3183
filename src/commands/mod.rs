//! Every command `main` dispatches, one file each and thin: take what the command line gave (`cli` turns
//! arguments into these requests), call the part that does the work (`practice`, `grade`, `class`,
//! `watch`, `grade::last`...), render what it returns, and give the exit code.

pub mod completions;
pub mod explain;
pub mod grade;
pub mod grade_class;
pub mod hint;
pub mod list;
pub mod merge_class;
pub mod practice;
pub mod skeleton;
pub mod status;
pub mod watch;
