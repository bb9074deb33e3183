//! `pi-course status [DIR]`: the chapter, each Lab's last verdict and when, the given files that differ
//! from the pristine ones (grading ignores them), and how to start over.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::catalog::{Catalog, Chapter};
use crate::error::Result;
use crate::grade::last;
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::outcome::GroupStatus;
use crate::practice::free_sibling;
use crate::report::{title_width, Style};
use crate::time::ago;
use crate::ui::{display_width, pad, verdict_mark, verdict_word, Paint};

pub fn run(catalog: &Catalog, lang: Lang, dir: PathBuf) -> Result<ExitCode> {
    let practice = Practice::open(catalog, lang, &dir)?;
    let paint = Paint(Style::detect(crate::report::Format::Human).color);
    print!("{}", render(&practice, lang, paint));
    Ok(ExitCode::SUCCESS)
}

fn render(practice: &Practice, lang: Lang, paint: Paint) -> String {
    let ch = &practice.chapter;
    let mut out = String::new();
    let mut line = |s: &str| {
        out.push_str(s);
        out.push('\n');
    };
    line(&paint.bold(&lang.t(
        "status-chapter",
        &[("chapter", &ch.id), ("title", &ch.title.get(lang))],
    )));
    let absolute = practice
        .dir
        .canonicalize()
        .unwrap_or_else(|_| practice.dir.clone());
    let made = ago(practice.metadata.created, lang);
    line(&paint.dim(&lang.t(
        "status-dir",
        &[("dir", &absolute.display()), ("made", &made)],
    )));
    line("");

    let last = last::load(&practice.dir);
    match &last {
        None if !last::can_record(&practice.dir) => {
            line(&last::read_only_note(&practice.dir, lang))
        }
        None => line(&lang.t("status-never-graded", &[])),
        Some(last) => {
            if let Some(time) = last.unbuilt {
                let text = lang.t("status-unbuilt", &[("ago", &ago(time, lang))]);
                line(&format!("{} {text}", paint.red("✗")));
            }
            line(&lang.t("status-last-grade", &[]));
            let name_width = title_width(&ch.groups, lang);
            let word_width = [
                GroupStatus::Pass,
                GroupStatus::Fail,
                GroupStatus::Timeout,
                GroupStatus::Error,
            ]
            .map(|s| display_width(&verdict_word(s, lang)))
            .into_iter()
            .chain([display_width(&lang.t("status-not-built", &[]))])
            .max()
            .unwrap_or(0);
            for g in &ch.groups {
                let lab = format!("Lab {:<4}", g.lab);
                let row = match last.labs.get(&g.lab) {
                    Some(v) => {
                        // No tests ran: the code did not build.
                        let (count, word) = if v.total == 0 {
                            ("–".to_string(), lang.t("status-not-built", &[]))
                        } else {
                            (
                                format!("{}/{}", v.passed, v.total),
                                verdict_word(v.status, lang),
                            )
                        };
                        format!(
                            "  {} {} {}  {count:>5}  {}  {}",
                            verdict_mark(v.status, paint),
                            paint.dim(&lab),
                            pad(&g.title(lang), name_width),
                            pad(&word, word_width),
                            paint.dim(&ago(v.time, lang)),
                        )
                    }
                    None => format!(
                        "  {} {} {}  {}",
                        paint.dim("·"),
                        paint.dim(&lab),
                        pad(&g.title(lang), name_width),
                        paint.dim(&lang.t("lab-not-graded", &[])),
                    ),
                };
                line(row.trim_end());
            }
            let newest = last
                .labs
                .values()
                .map(|v| v.time)
                .chain(last.unbuilt)
                .max()
                .unwrap_or(0);
            let stale: Vec<&str> = ch
                .editable
                .iter()
                .filter(|rel| modified(&practice.dir.join(rel)).is_some_and(|t| t > newest))
                .map(String::as_str)
                .collect();
            if !stale.is_empty() {
                line("");
                let text = lang.t("status-stale", &[("files", &stale.join(", "))]);
                line(&format!("{} {text}", paint.yellow("⚠")));
            }
        }
    }
    line("");

    let changed = practice.changed_given_files();
    if changed.is_empty() {
        line(&lang.t("status-given-pristine", &[]));
    } else {
        let text = lang.t("status-given-changed", &[]);
        line(&format!("{} {text}", paint.yellow("⚠")));
        for path in &changed {
            let missing = !practice.dir.join(path).exists();
            let note = if missing {
                lang.t("status-given-deleted", &[])
            } else {
                String::new()
            };
            line(&format!("    {path}{note}"));
        }
    }
    line("");

    if let Some(last) = &last {
        match last.first_not_passing(ch) {
            Some(g) => line(&paint.bold(&lang.t(
                "status-next",
                &[("lab", &g.lab), ("name", &g.name.get(lang))],
            ))),
            None => line(&paint.green(&lang.t("status-all-passed", &[]))),
        }
    }
    line(&lang.t(
        "status-start-over",
        &[
            ("chapter", &ch.id),
            ("suggestion", &start_over_args(practice, lang)),
            ("editable", &ch.editable.join(", ")),
        ],
    ));
    out
}

/// Seconds since the Unix epoch when `path` was last modified.
fn modified(path: &Path) -> Option<u64> {
    let time = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(crate::time::epoch_secs(time))
}

/// What follows `pi-course practice CHAPTER` to make a directory like this one: a new name, and the
/// track and language when they are not the defaults, so the new directory is done the same way.
fn start_over_args(practice: &Practice, lang: Lang) -> String {
    // Pasted into a shell as it is: a name with a space or a quote is quoted.
    let mut args =
        crate::practice::shell_quote(&new_dir_suggestion(&practice.chapter, &practice.dir))
            .into_owned();
    if practice.chapter.track != crate::catalog::Track::Rust {
        args.push_str(&format!(" --track {}", practice.chapter.track.name()));
    }
    if lang != Lang::default() {
        args.push_str(&format!(" --lang {}", lang.code()));
    }
    args
}

/// A sibling of the practice directory that does not exist yet (see [`free_sibling`]), shown relative to
/// where the learner is when the practice directory is the current one or beside it.
fn new_dir_suggestion(chapter: &Chapter, dir: &Path) -> String {
    let absolute = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let candidate = free_sibling(chapter, &absolute);
    let parent = absolute.parent().map(Path::to_path_buf);
    let name = candidate
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let here = std::env::current_dir()
        .ok()
        .and_then(|d| d.canonicalize().ok());
    match (&here, &parent) {
        (Some(here), Some(parent)) if here == parent => name,
        (Some(here), _) if *here == absolute => format!("../{name}"),
        _ => candidate.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_directory_is_suggested_beside_the_old_one() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path().join("p");
        std::fs::create_dir(&p).unwrap();
        let ch = &Catalog::chapter_07();
        let s = new_dir_suggestion(ch, &p);
        assert!(s.ends_with("p-2"), "{s}");
        std::fs::create_dir(parent.path().join("p-2")).unwrap();
        assert!(new_dir_suggestion(ch, &p).ends_with("p-3"));
        assert!(new_dir_suggestion(ch, &parent.path().join("p-2")).ends_with("p-3"));
        // A chapter number is not a counter.
        let seven = parent.path().join("pi-practice-07");
        std::fs::create_dir(&seven).unwrap();
        assert!(new_dir_suggestion(ch, &seven).ends_with("pi-practice-07-2"));
    }
}
