//! `pi-course skeleton CHAPTER`: print the editable files of a fresh practice directory.

use std::process::ExitCode;

use crate::catalog::{Catalog, Track};
use crate::error::Result;
use crate::i18n::Lang;
use crate::practice;

/// `pi-course skeleton CHAPTER`: the editable files as a fresh practice directory gets them, in `lang`,
/// on stdout. It writes no file, so it can never overwrite a learner's work; a shell redirect puts a
/// deleted file back.
pub fn run(catalog: &Catalog, lang: Lang, query: &str, track: Track) -> Result<ExitCode> {
    use std::io::Write;
    let chapter = practice::chapter_in(catalog, lang, query, track)?;
    let mut out = std::io::stdout().lock();
    for file in chapter.skeleton_files_in(lang) {
        // A closed pipe (`| head`) is the reader's choice, not a failure of this command.
        if out
            .write_all(file.bytes)
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}
