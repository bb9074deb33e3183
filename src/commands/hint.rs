//! `pi-course hint [DIR] [LAB]`: the hint for the first Lab that does not pass yet (by the last grade), or
//! for the Lab named. Hints come from the chapter manifest and point at the rule in the guide, never at
//! code.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::catalog::{Catalog, Chapter, Group};
use crate::error::{Result, UserError};
use crate::grade::last::{self, LabVerdict};
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::report::Style;
use crate::time::ago;
use crate::ui::Paint;
use crate::ui::{verdict_mark, verdict_word};

pub fn run(catalog: &Catalog, lang: Lang, dir: PathBuf, lab: Option<String>) -> Result<ExitCode> {
    let (practice, query) = resolve(catalog, lang, dir, lab)?;
    let chapter = &practice.chapter;
    let last = last::load(&practice.dir);
    let paint = Paint(Style::detect(crate::report::Format::Human).color);

    let group = match &query {
        Some(q) => chapter
            .group(q)
            .ok_or_else(|| unknown_lab(chapter, lang, q))?,
        None => match &last {
            None if !last::can_record(&practice.dir) => {
                println!("{}\n", last::read_only_note(&practice.dir, lang));
                &chapter.groups[0]
            }
            None => {
                println!("{}\n", lang.t("hint-no-grade-yet", &[]));
                &chapter.groups[0]
            }
            Some(last) => match last.first_not_passing(chapter) {
                Some(g) => g,
                None => {
                    println!("{}", paint.green(&lang.t("hint-all-passed", &[])));
                    return Ok(ExitCode::SUCCESS);
                }
            },
        },
    };

    let verdict = last.as_ref().map(|l| l.labs.get(&group.lab));
    print!("{}", render(chapter, group, verdict, lang, paint));
    Ok(ExitCode::SUCCESS)
}

/// The practice directory and the Lab asked for. `pi-course hint 7.3` inside a practice directory names
/// a Lab, not a directory: a single argument that is not a directory is taken as the Lab when the current
/// directory is a practice directory.
fn resolve(
    catalog: &Catalog,
    lang: Lang,
    dir: PathBuf,
    lab: Option<String>,
) -> Result<(Practice, Option<String>)> {
    if lab.is_some() || dir.is_dir() {
        return Ok((Practice::open(catalog, lang, &dir)?, lab));
    }
    let arg = dir.to_string_lossy().into_owned();
    match Practice::open(catalog, lang, &crate::metadata::find()) {
        Ok(here) => {
            if here.chapter.group(&arg).is_none() {
                let mut e = unknown_lab(&here.chapter, lang, &arg);
                e.problem = lang.t("hint-neither", &[("arg", &arg)]);
                return Err(e);
            }
            Ok((here, Some(arg)))
        }
        // A Lab named outside any practice directory: that is what is wrong.
        Err(here) if catalog.chapters.iter().any(|c| c.group(&arg).is_some()) => Err(here),
        // Neither: say what is wrong with the argument as a directory.
        Err(_) => Err(Practice::open(catalog, lang, &dir).expect_err("not a directory")),
    }
}

fn render(
    chapter: &Chapter,
    group: &Group,
    // `None`: never graded at all (already said); `Some(None)`: this Lab was not graded.
    verdict: Option<Option<&LabVerdict>>,
    lang: Lang,
    paint: Paint,
) -> String {
    let heading = lang.t(
        "hint-heading",
        &[("lab", &group.lab), ("name", &group.title(lang))],
    );
    let last = match verdict {
        None => String::new(),
        Some(Some(v)) => {
            let verdict = if v.total == 0 {
                // No tests ran: the code did not build.
                format!(
                    "{} {}",
                    verdict_mark(v.status, paint),
                    lang.t("status-not-built", &[])
                )
            } else {
                format!(
                    "{} {}/{} {}",
                    verdict_mark(v.status, paint),
                    v.passed,
                    v.total,
                    verdict_word(v.status, lang)
                )
            };
            lang.t(
                "hint-last-verdict",
                &[("verdict", &verdict), ("when", &ago(v.time, lang))],
            )
        }
        Some(None) => lang.t(
            "hint-last-verdict-none",
            &[("not-graded", &lang.t("lab-not-graded", &[]))],
        ),
    };
    let mut out = String::new();
    out.push_str(&paint.bold(&heading));
    if !last.is_empty() {
        out.push_str(&format!("  {}", paint.dim(&last)));
    }
    out.push_str("\n\n");
    out.push_str(group.hint.get(lang).trim());
    out.push_str("\n\n");
    let one = lang.t(
        "hint-grade-one",
        &[("lab", &group.lab), ("guide", &chapter.guide.get(lang))],
    );
    out.push_str(&paint.dim(&one));
    out.push('\n');
    out
}

fn unknown_lab(chapter: &Chapter, lang: Lang, query: &str) -> UserError {
    UserError::new(lang.t("hint-unknown-lab", &[("lab", &query)])).with_fix(format!(
        "{}\n{}",
        lang.t("hint-valid-labs", &[]),
        chapter.group_lines(lang)
    ))
}
