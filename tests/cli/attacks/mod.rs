//! Attacks through the real practice-and-grade path, one module per track: each first shows that the
//! attack compiled and ran, then that it got nothing.

mod rust;
mod typescript;
