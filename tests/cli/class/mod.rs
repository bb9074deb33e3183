//! An instructor's class: `grade-class` on real classes, the class page in a real browser, and a class
//! graded as shards and merged.

mod grading;
mod report;
mod shards;
