//! Chapter 08's executable specification, as it is built: each Lab's tool as a function from what it is
//! given to every result the chapter allows (docs/chapters/08-coding-tools.md states the rules these
//! follow). The scenarios that draw instances, and the chapter itself, come later; until then nothing
//! grades with this module, and `SPECS` does not list it.

pub mod bash;
pub mod edit;
pub mod paths;
pub mod read;
pub mod tree;
pub mod write;
