//! `pi-course practice`: make a fresh, isolated practice directory.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::catalog::Catalog;
use crate::error::{Result, UserError};
use crate::i18n::Lang;

pub fn run(_catalog: &Catalog, _lang: Lang, _chapter: &str, _dir: Option<PathBuf>) -> Result<ExitCode> {
    Err(UserError::new("practice: not yet implemented"))
}
