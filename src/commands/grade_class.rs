//! `pi-course grade-class SUBMISSIONS --out RESULTS`: grade every learner of a class (the part in
//! `crate::class`), then say what it came to.

use std::process::ExitCode;

use crate::catalog::Catalog;
use crate::class::{self, ClassRequest};
use crate::error::Result;
use crate::i18n::Lang;
use crate::report::{self, Format};

/// Exit 0 when every learner was graded and every result written, 1 otherwise, 2 bad input.
pub fn run(
    catalog: &Catalog,
    lang: Lang,
    chosen_lang: Option<Lang>,
    args: ClassRequest,
) -> Result<ExitCode> {
    let (format, out) = (args.format, args.out.clone());
    let graded = class::grade_class(catalog, lang, chosen_lang, args)?;
    let summary = &graded.summary;
    match format {
        Format::Json => report::emit(&format!("{}\n", summary.to_json())),
        _ => report::emit(&class::human_summary(
            summary,
            lang,
            graded.skipped,
            graded.graded_now,
            &out,
        )),
    }
    for (file, error) in &graded.unwritten {
        eprintln!(
            "{}{}",
            lang.t("error-prefix", &[]),
            lang.t("class-report-failed", &[("file", file), ("error", error)])
        );
    }
    let all_graded = summary.learners.iter().all(|r| r.graded);
    Ok(if all_graded && graded.unwritten.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
