//! The course content as an instrument: the reference passes, the skeleton and every mutant fail in the
//! group that owns their rule, every correct alternative passes, the staged path walks Lab by Lab, and the
//! given files compile clean.

mod alternatives;
mod cases;
mod content;
mod mutants;
mod staged;
