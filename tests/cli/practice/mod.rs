//! `pi-course practice`: the directories it makes, and those an earlier release made.

mod layouts;
mod making;
