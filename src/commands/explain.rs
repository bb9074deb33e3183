//! `pi-course explain [DIR] [TEST]`: a failing test of the last grade, its expected and actual timelines
//! side by side (see `report::explain`). With no test named, the first that failed.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::catalog::Catalog;
use crate::error::{Result, UserError};
use crate::grade::last;
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::outcome::Explained;
use crate::report::Style;
use crate::ui::Paint;

pub fn run(catalog: &Catalog, lang: Lang, dir: PathBuf, test: Option<String>) -> Result<ExitCode> {
    // `pi-course explain plain_stop::x` inside a practice directory names a test, not a directory.
    let (dir, test) = match (test, dir.is_dir()) {
        (None, false) => (PathBuf::from("."), Some(dir.display().to_string())),
        (test, _) => (dir, test),
    };
    let practice = Practice::open(catalog, lang, &dir)?;
    let paint = Paint(Style::detect(crate::report::Format::Human).color);
    let Some(traces) = last::load_traces(&practice.dir) else {
        println!("{}", lang.t("explain-no-grade-yet", &[]));
        return Ok(ExitCode::SUCCESS);
    };
    if traces.tests.is_empty() {
        println!("{}", paint.green(&lang.t("explain-nothing-failed", &[])));
        return Ok(ExitCode::SUCCESS);
    }
    let chosen = match &test {
        None => &traces.tests[0],
        Some(query) => pick(&traces.tests, query).ok_or_else(|| {
            let names: Vec<&str> = traces.tests.iter().map(|t| t.name.as_str()).collect();
            UserError::new(lang.t("explain-unknown-test", &[("test", query)])).with_fix(lang.t(
                "explain-unknown-test-fix",
                &[("tests", &names.join("\n  "))],
            ))
        })?,
    };
    let chapter = &practice.chapter.id;
    let about = crate::spec::about(chapter, &chosen.name);
    let freedoms = crate::spec::freedoms_in(chapter, &chosen.evidence.expected, lang == Lang::En);
    let text = crate::report::explain::render(chosen, about.as_deref(), &freedoms, lang, paint);
    print!("{text}");
    if let Some(seed) = traces.seed {
        println!(
            "\n{}",
            paint.dim(&lang.t("explain-seed", &[("seed", &seed)]))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The test named exactly, or else the one test whose name contains `query`.
fn pick<'a>(tests: &'a [Explained], query: &str) -> Option<&'a Explained> {
    if let Some(exact) = tests.iter().find(|t| t.name == query) {
        return Some(exact);
    }
    let mut found = tests.iter().filter(|t| t.name.contains(query));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}
