//! `pi-course explain [DIR] [WHAT]`: a failing test of the last grade, its expected and actual timelines
//! side by side (see `report::explain`). WHAT is a group (by Lab number, slug or name: its first failing
//! test), a test's full name, or a part of a name that only one failing test has; with none, the first
//! failing test.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::catalog::{Catalog, Chapter, Group};
use crate::error::{Result, UserError};
use crate::grade::last;
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::outcome::Explained;
use crate::report::Style;
use crate::ui::Paint;

/// At most this many failing tests are listed when a name matches none of them; past it, the groups.
const LISTED: usize = 12;

pub fn run(catalog: &Catalog, lang: Lang, dir: PathBuf, test: Option<String>) -> Result<ExitCode> {
    // `pi-course explain plain_stop` inside a practice directory names a test, not a directory.
    let (dir, test) = match (test, dir.is_dir()) {
        (None, false) => (crate::metadata::find(), Some(dir.display().to_string())),
        (test, _) => (dir, test),
    };
    let practice = Practice::open(catalog, lang, &dir)?;
    let paint = Paint(Style::detect(crate::report::Format::Human).color);
    let Some(traces) = last::load_traces(&practice.dir) else {
        match last::can_record(&practice.dir) {
            true => println!("{}", lang.t("explain-no-grade-yet", &[])),
            false => println!("{}", last::read_only_note(&practice.dir, lang)),
        }
        return Ok(ExitCode::SUCCESS);
    };
    if traces.tests.is_empty() {
        println!("{}", paint.green(&lang.t("explain-nothing-failed", &[])));
        return Ok(ExitCode::SUCCESS);
    }
    let chapter = &practice.chapter;
    let chosen = match &test {
        None => &traces.tests[0],
        Some(query) => match pick(chapter, &traces.tests, query) {
            Pick::One(test) => test,
            Pick::GroupPassed(group) => {
                println!(
                    "{}",
                    paint.green(&lang.t(
                        "explain-group-nothing-failed",
                        &[("lab", &group.lab), ("name", &group.title(lang))],
                    ))
                );
                return Ok(ExitCode::SUCCESS);
            }
            Pick::Several(tests) => {
                let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
                return Err(UserError::new(lang.t(
                    "explain-ambiguous-test",
                    &[("test", query), ("n", &tests.len())],
                ))
                .with_fix(lang.t(
                    "explain-ambiguous-test-fix",
                    &[("tests", &names.join("\n  "))],
                )));
            }
            Pick::None => return Err(unknown(chapter, &traces.tests, query, lang)),
        },
    };
    let about = crate::spec::about(&chapter.id, &chosen.name);
    let freedoms =
        crate::spec::freedoms_in(&chapter.id, &chosen.evidence.expected, lang == Lang::En);
    let text = crate::report::explain::render(chosen, about.as_deref(), &freedoms, lang, paint);
    let seed = traces.seed.map(|seed| {
        format!(
            "\n{}\n",
            paint.dim(&lang.t("explain-seed", &[("seed", &seed)]))
        )
    });
    // As one write that may meet a closed pipe (`pi-course explain | head`) without a panic.
    crate::report::emit(&format!("{text}{}", seed.unwrap_or_default()));
    Ok(ExitCode::SUCCESS)
}

/// What a query named among the failing tests.
enum Pick<'a> {
    One(&'a Explained),
    /// A group none of whose tests failed.
    GroupPassed(&'a Group),
    Several(Vec<&'a Explained>),
    None,
}

/// The test named exactly; else the first failing test of the group named (Lab number, slug in either
/// spelling, name); else the one test whose name contains `query` (`_` and spaces alike, any case).
fn pick<'a>(chapter: &'a Chapter, tests: &'a [Explained], query: &str) -> Pick<'a> {
    if let Some(exact) = tests.iter().find(|t| t.name == query) {
        return Pick::One(exact);
    }
    if let Some(group) = chapter.group(query) {
        let prefix = chapter.test_prefix(group);
        return match tests.iter().find(|t| t.name.starts_with(&prefix)) {
            Some(first) => Pick::One(first),
            None => Pick::GroupPassed(group),
        };
    }
    let plain = |s: &str| s.trim().to_lowercase().replace('_', " ");
    let wanted = plain(query);
    let found: Vec<&Explained> = tests
        .iter()
        .filter(|t| plain(&t.name).contains(&wanted))
        .collect();
    match found.len() {
        0 => Pick::None,
        1 => Pick::One(found[0]),
        _ => Pick::Several(found),
    }
}

/// A query that names no failing test: the failing tests when they are few, else the groups to name.
fn unknown(chapter: &Chapter, tests: &[Explained], query: &str, lang: Lang) -> UserError {
    let problem = lang.t("explain-unknown-test", &[("test", &query)]);
    if tests.len() <= LISTED {
        let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
        return UserError::new(problem).with_fix(lang.t(
            "explain-unknown-test-fix",
            &[("tests", &names.join("\n  "))],
        ));
    }
    let groups: Vec<String> = chapter
        .groups
        .iter()
        .map(|g| {
            let prefix = chapter.test_prefix(g);
            let failing = tests.iter().filter(|t| t.name.starts_with(&prefix)).count();
            let count = lang.t("explain-group-failing", &[("n", &failing)]);
            let count = crate::ui::pad(&count, 12);
            format!("  {:<5} {:<20} {count} {}", g.lab, g.slug, g.title(lang))
        })
        .collect();
    UserError::new(problem).with_fix(lang.t(
        "explain-unknown-test-groups-fix",
        &[("n", &tests.len()), ("groups", &groups.join("\n"))],
    ))
}
