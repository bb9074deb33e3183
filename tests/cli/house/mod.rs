//! The house's own shape: the layout of `src/` and the documents that describe it, and the command-line
//! conventions users expect.

mod conventions;
mod layout;
