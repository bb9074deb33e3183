//! `pi-course status [DIR]`: the chapter, each Lab's last verdict and when, the given files that differ
//! from the pristine ones (grading ignores them), and how to start over.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use crate::catalog::{Catalog, Chapter};
use crate::error::Result;
use crate::grade::last;
use crate::grade::outcome::GroupStatus;
use crate::i18n::Lang;
use crate::metadata::Practice;
use crate::practice::free_sibling;
use crate::report::{title_width, Style};
use crate::ui::{display_width, pad, verdict_mark, verdict_word, Paint};

pub fn run(catalog: &Catalog, lang: Lang, dir: PathBuf) -> Result<ExitCode> {
    let practice = Practice::open(catalog, lang, &dir)?;
    let paint = Paint(Style::detect(crate::cli::Format::Human).color);
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
        match crate::hint::first_not_passing(ch, last) {
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
            (
                "suggestion",
                &new_dir_suggestion(&practice.chapter, &practice.dir),
            ),
            ("editable", &ch.editable.join(", ")),
        ],
    ));
    out
}

/// Seconds since the Unix epoch when `path` was last modified.
fn modified(path: &Path) -> Option<u64> {
    let time = std::fs::metadata(path).ok()?.modified().ok()?;
    time.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
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

/// When `time` (seconds since the Unix epoch) was, for a person: "just now", "5 minutes ago", ... and
/// past a day the local date and time.
pub fn ago(time: u64, lang: Lang) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let secs = now.saturating_sub(time);
    match secs {
        0..60 => lang.t("time-just-now", &[]),
        60..120 => lang.t("time-minute-ago", &[]),
        120..3600 => lang.t("time-minutes-ago", &[("n", &(secs / 60))]),
        3600..7200 => lang.t("time-hour-ago", &[]),
        7200..86400 => lang.t("time-hours-ago", &[("n", &(secs / 3600))]),
        _ => local_time(time)
            .map(|t| {
                format!(
                    "{:04}-{:02}-{:02} {:02}:{:02}",
                    t.year, t.month, t.day, t.hour, t.minute
                )
            })
            .unwrap_or_else(|| lang.t("time-days-ago", &[("n", &(secs / 86400))])),
    }
}

/// A moment in the local time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// `time` (seconds since the Unix epoch) in the local time zone, by the C library (which reads `TZ` and
/// the system's zone).
pub fn local_time(time: u64) -> Option<LocalTime> {
    let t = libc::time_t::try_from(time).ok()?;
    // SAFETY: tm is plain data; localtime_r reads `t` and fills `tm`, and is thread-safe.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return None;
    }
    Some(LocalTime {
        year: tm.tm_year + 1900,
        month: (tm.tm_mon + 1) as u32,
        day: tm.tm_mday as u32,
        hour: tm.tm_hour as u32,
        minute: tm.tm_min as u32,
        second: tm.tm_sec as u32,
    })
}

/// The local time of day now, `HH:MM:SS`.
pub fn clock_now() -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    local_time(now)
        .map(|t| format!("{:02}:{:02}:{:02}", t.hour, t.minute, t.second))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn times_read_as_people_say_them() {
        assert_eq!(ago(now(), Lang::En), "just now");
        assert_eq!(ago(now() - 5 * 60, Lang::En), "5 minutes ago");
        assert_eq!(ago(now() - 5 * 60, Lang::Zh), "5 分钟前");
        assert_eq!(ago(now() - 90, Lang::En), "1 minute ago");
        assert_eq!(ago(now() - 3 * 3600, Lang::En), "3 hours ago");
        let old = ago(now() - 3 * 86400, Lang::En);
        assert!(
            old.len() == "2025-01-02 14:03".len() && old.contains('-'),
            "{old}"
        );
        // A clock that went backwards is not "in the future".
        assert_eq!(ago(now() + 100, Lang::En), "just now");
    }

    #[test]
    fn local_time_is_a_calendar_date() {
        let t = local_time(now()).unwrap();
        assert!(t.year >= 2024 && (1..=12).contains(&t.month) && (1..=31).contains(&t.day));
        assert_eq!(clock_now().len(), "12:03:04".len());
    }

    #[test]
    fn a_new_directory_is_suggested_beside_the_old_one() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path().join("p");
        std::fs::create_dir(&p).unwrap();
        let catalog = crate::catalog::Catalog::embedded();
        let ch = catalog.chapter("07").unwrap();
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
