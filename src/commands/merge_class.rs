//! `pi-course merge-class PART... --out RESULTS`: join the parts of a class graded apart (the part in
//! `crate::class::merge`), then say what the class came to.

use std::process::ExitCode;

use crate::catalog::Catalog;
use crate::class::{self, merge::MergeRequest};
use crate::error::Result;
use crate::i18n::Lang;
use crate::report::{self, Format};

/// Exit 0 when every learner of the class was graded, 1 otherwise, 2 bad input.
pub fn run(catalog: &Catalog, lang: Lang, args: MergeRequest) -> Result<ExitCode> {
    let summary = class::merge::merge(catalog, lang, &args)?;
    let learners = summary.learners.len();
    match args.format {
        Format::Json => report::emit(&format!("{}\n", summary.to_json())),
        _ => report::emit(&class::human_summary(
            &summary, lang, 0, learners, &args.out,
        )),
    }
    Ok(if summary.learners.iter().all(|r| r.graded) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
