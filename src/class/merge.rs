//! `pi-course merge-class PART... --out RESULTS`: the parts of one class (`grade-class --shard K/N`)
//! joined into the results a whole run writes: `summary.json`, `summary.csv`, `index.html` and every
//! learner's files, the same bytes but for the timing columns.
//!
//! Nothing is written until every part has been checked against the others (see [`shard`]): one chapter,
//! one pi-course version (this one), one language, one seed policy, one N and one class (the same entries
//! and files); every part from 0 to N-1 present; every learner in the part that should hold them, once.
//! A part given twice (a job that ran twice) merges once when both copies graded the same files. Any other
//! disagreement is bad input that names the parts. The results are made in a temporary sibling of
//! `--out` and renamed into place, so an interrupted merge leaves nothing half written.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::catalog::Catalog;
use crate::error::{Result, UserError};
use crate::i18n::Lang;
use crate::report::Format;

use super::html;
use super::shard::{self, PartFile};
use super::summary::{self, LearnerFiles, Row, Summary};

/// What `pi-course merge-class` was asked to do.
#[derive(Debug, Clone)]
pub struct MergeRequest {
    /// The parts' results folders, as `grade-class --shard K/N --out` wrote them.
    pub parts: Vec<PathBuf>,
    /// Where the class's results go: a new or empty folder.
    pub out: PathBuf,
    pub format: Format,
}

/// One part as found on disk.
struct Part {
    dir: PathBuf,
    record: PartFile,
    summary: Summary,
}

impl Part {
    /// `dir (K/N)`, as every message names a part.
    fn shown(&self) -> String {
        format!("{} ({})", self.dir.display(), self.record.shard())
    }
}

/// Joins the parts `args` names into one class's results under `args.out`, and returns its summary;
/// `pi-course merge-class` (`crate::commands::merge_class`) renders it.
pub fn merge(catalog: &Catalog, lang: Lang, args: &MergeRequest) -> Result<Summary> {
    if args.format == Format::Gradescope {
        return Err(UserError::new(lang.t("class-bad-format", &[]))
            .with_fix(lang.t("class-bad-format-fix", &[])));
    }
    let parts = args
        .parts
        .iter()
        .map(|dir| load(dir, lang))
        .collect::<Result<Vec<_>>>()?;
    let first = &parts[0];
    for part in &parts {
        agree(first, part, lang)?;
    }
    let parts = once_each(parts, lang)?;
    let rows = learners(&parts, lang)?;
    check_out(&args.out, &parts, lang)?;

    let record = &parts[0].record;
    let chapter = catalog.chapter(&record.chapter).ok_or_else(|| {
        UserError::new(lang.t("class-unknown-chapter", &[("chapter", &record.chapter)]))
    })?;
    let class_lang = Lang::from_prefix(&record.lang).unwrap_or(lang);
    let mut summary = parts[0].summary.clone();
    summary.learners = rows.iter().map(|(row, _)| row.clone()).collect();
    let mut reports = BTreeMap::new();
    for (row, part) in &rows {
        let text = fs::read_to_string(part.join(&row.report))
            .map_err(|e| unreadable(part, &row.report, &e, lang))?;
        let report =
            serde_json::from_str(&text).map_err(|e| unreadable(part, &row.report, &e, lang))?;
        reports.insert(row.name.clone(), report);
    }
    let index = html::index(
        &summary,
        &reports,
        class_lang,
        chapter.title.get(class_lang),
    )
    .map_err(|e| {
        UserError::new(lang.t(
            "class-report-failed",
            &[("file", &"index.html"), ("error", &e)],
        ))
    })?;
    // Parts graded from one submissions folder make results that came from it, as a whole run's do.
    let sources: Vec<Option<String>> = parts
        .iter()
        .map(|p| super::recorded_source(&p.dir))
        .collect();
    let source = match sources.first() {
        Some(Some(first)) if sources.iter().all(|s| s.as_ref() == Some(first)) => {
            Some(first.clone())
        }
        _ => None,
    };
    write(&args.out, &summary, &rows, &index, source.as_deref(), lang)?;
    Ok(summary)
}

fn unreadable(dir: &Path, file: &str, error: &dyn std::fmt::Display, lang: Lang) -> UserError {
    UserError::new(lang.t(
        "merge-part-unreadable",
        &[("dir", &dir.display()), ("file", &file), ("error", error)],
    ))
    .with_fix(lang.t("merge-part-unreadable-fix", &[]))
}

/// A part's record and summary; bad input when `dir` is not a part, or not one this pi-course made.
fn load(dir: &Path, lang: Lang) -> Result<Part> {
    let not_a_part = || {
        UserError::new(lang.t("merge-not-a-part", &[("dir", &dir.display())]))
            .with_fix(lang.t("merge-not-a-part-fix", &[]))
    };
    if !dir.join(shard::FILE).is_file() {
        return Err(not_a_part());
    }
    let text = fs::read_to_string(dir.join(shard::FILE))
        .map_err(|e| unreadable(dir, shard::FILE, &e, lang))?;
    let record: PartFile =
        serde_json::from_str(&text).map_err(|e| unreadable(dir, shard::FILE, &e, lang))?;
    if record.format != shard::FORMAT {
        return Err(not_a_part());
    }
    let version = env!("CARGO_PKG_VERSION");
    if record.pi_course != version {
        return Err(UserError::new(lang.t(
            "merge-other-version",
            &[
                ("dir", &dir.display()),
                ("found", &record.pi_course),
                ("version", &version),
            ],
        ))
        .with_fix(lang.t("merge-other-version-fix", &[])));
    }
    let text = fs::read_to_string(dir.join(summary::JSON))
        .map_err(|e| unreadable(dir, summary::JSON, &e, lang))?;
    let summary: Summary =
        serde_json::from_str(&text).map_err(|e| unreadable(dir, summary::JSON, &e, lang))?;
    // A record and a summary of different runs, or a name that is not a plain file name, is no part.
    let plain =
        |name: &str| !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\']);
    let consistent = summary.format == summary::FORMAT
        && summary.pi_course == record.pi_course
        && summary.chapter == record.chapter
        && summary.lang == record.lang
        && record.part < record.parts
        && record
            .class
            .iter()
            .all(|e| plain(&e.name) && e.part < record.parts)
        && summary.learners.iter().all(|r| plain(&r.name));
    if !consistent {
        return Err(unreadable(
            dir,
            shard::FILE,
            &lang.t("merge-part-inconsistent", &[]),
            lang,
        ));
    }
    Ok(Part {
        dir: dir.to_path_buf(),
        record,
        summary,
    })
}

/// Bad input unless `b` is a part of the class `a` is a part of, graded the same way.
fn agree(a: &Part, b: &Part, lang: Lang) -> Result<()> {
    let (x, y) = (&a.record, &b.record);
    let differ = |what: &str, left: String, right: String| -> Result<()> {
        if left == right {
            return Ok(());
        }
        Err(UserError::new(lang.t(
            "merge-disagree",
            &[
                ("what", &lang.t(what, &[])),
                ("a", &a.shown()),
                ("b", &b.shown()),
                ("x", &left),
                ("y", &right),
            ],
        ))
        .with_fix(lang.t("merge-disagree-fix", &[])))
    };
    differ("merge-what-chapter", x.chapter.clone(), y.chapter.clone())?;
    differ("merge-what-lang", x.lang.clone(), y.lang.clone())?;
    differ("merge-what-seeds", x.seeds.to_string(), y.seeds.to_string())?;
    differ("merge-what-parts", x.parts.to_string(), y.parts.to_string())?;
    let groups =
        |p: &Part| serde_json::to_string(&(&p.summary.groups, p.summary.max)).unwrap_or_default();
    differ("merge-what-groups", groups(a), groups(b))?;
    if x.class != y.class {
        // Name the first entry whose file differs, so the instructor knows where to look.
        let file = |p: &PartFile, name: &str| {
            p.class
                .iter()
                .find(|e| e.name == name)
                .map(|e| e.sha256.clone())
        };
        let names: BTreeSet<&str> = x
            .class
            .iter()
            .chain(&y.class)
            .map(|e| e.name.as_str())
            .collect();
        let entry = |p: &PartFile, name: &str| match file(p, name) {
            Some(sha256) if sha256.is_empty() => {
                lang.t("merge-entry-ungradable", &[("name", &name)])
            }
            Some(sha256) => lang.t("merge-entry-file", &[("name", &name), ("sha256", &sha256)]),
            None => lang.t("merge-entry-absent", &[("name", &name)]),
        };
        let (left, right) = match names.into_iter().find(|n| file(x, n) != file(y, n)) {
            Some(name) => (entry(x, name), entry(y, name)),
            // The same files, dealt to the parts another way: not parts of one run of this tool.
            None => (
                lang.t("merge-dealt", &[("dir", &a.shown())]),
                lang.t("merge-dealt", &[("dir", &b.shown())]),
            ),
        };
        return Err(UserError::new(lang.t(
            "merge-disagree",
            &[
                ("what", &lang.t("merge-what-class", &[])),
                ("a", &a.shown()),
                ("b", &b.shown()),
                ("x", &left),
                ("y", &right),
            ],
        ))
        .with_fix(lang.t("merge-disagree-fix", &[])));
    }
    Ok(())
}

/// One part per K: a part given twice that graded the same learners' same files (a job that ran twice)
/// merges once, from the copy given first; copies that differ are the same learners graded twice.
fn once_each(parts: Vec<Part>, lang: Lang) -> Result<Vec<Part>> {
    let mut by_k: BTreeMap<usize, Part> = BTreeMap::new();
    for part in parts {
        match by_k.get(&part.record.part) {
            None => {
                by_k.insert(part.record.part, part);
            }
            Some(kept) => {
                let files = |p: &Part| -> BTreeMap<String, String> {
                    p.summary
                        .learners
                        .iter()
                        .map(|r| (r.name.clone(), r.sha256.clone()))
                        .collect()
                };
                let (a, b) = (files(kept), files(&part));
                if a != b {
                    let name = a
                        .keys()
                        .chain(b.keys())
                        .find(|n| a.get(*n) != b.get(*n))
                        .cloned()
                        .unwrap_or_default();
                    return Err(twice(&name, kept, &part, lang));
                }
                eprintln!(
                    "{}",
                    lang.t(
                        "merge-part-again",
                        &[("a", &kept.shown()), ("b", &part.shown())]
                    )
                );
            }
        }
    }
    let n = by_k.values().next().map_or(0, |p| p.record.parts);
    let given: Vec<String> = by_k.values().map(|p| p.shown()).collect();
    if let Some(k) = (0..n).find(|k| !by_k.contains_key(k)) {
        return Err(UserError::new(lang.t(
            "merge-missing-part",
            &[("k", &k), ("n", &n), ("given", &given.join(", "))],
        ))
        .with_fix(lang.t("merge-missing-part-fix", &[("k", &k), ("n", &n)])));
    }
    Ok(by_k.into_values().collect())
}

fn twice(name: &str, a: &Part, b: &Part, lang: Lang) -> UserError {
    UserError::new(lang.t(
        "merge-twice",
        &[("name", &name), ("a", &a.shown()), ("b", &b.shown())],
    ))
    .with_fix(lang.t("merge-twice-fix", &[]))
}

/// Every learner's row, by name, with the part folder that holds their files: each in the part that
/// should hold them, once, with the file the class records, and every file of theirs there.
fn learners(parts: &[Part], lang: Lang) -> Result<Vec<(Row, PathBuf)>> {
    let class = &parts[0].record.class;
    let owner: BTreeMap<&str, &shard::ClassEntry> =
        class.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut rows: BTreeMap<String, (Row, &Part)> = BTreeMap::new();
    for part in parts {
        for row in &part.summary.learners {
            if let Some((_, other)) = rows.get(&row.name) {
                return Err(twice(&row.name, other, part, lang));
            }
            let holder = parts.iter().find(|p| {
                !std::ptr::eq(*p, part) && p.summary.learners.iter().any(|r| r.name == row.name)
            });
            if let Some(other) = holder {
                return Err(twice(&row.name, part, other, lang));
            }
            let Some(entry) = owner.get(row.name.as_str()) else {
                return Err(UserError::new(lang.t(
                    "merge-not-in-class",
                    &[("name", &row.name), ("dir", &part.shown())],
                ))
                .with_fix(lang.t("merge-twice-fix", &[])));
            };
            if entry.part != part.record.part {
                return Err(UserError::new(lang.t(
                    "merge-wrong-part",
                    &[
                        ("name", &row.name),
                        ("dir", &part.shown()),
                        (
                            "owner",
                            &shard::Shard {
                                k: entry.part,
                                n: part.record.parts,
                            },
                        ),
                    ],
                ))
                .with_fix(lang.t("merge-twice-fix", &[])));
            }
            if entry.sha256 != row.sha256 {
                return Err(UserError::new(lang.t(
                    "merge-other-file",
                    &[("name", &row.name), ("dir", &part.shown())],
                ))
                .with_fix(lang.t("merge-missing-learner-fix", &[])));
            }
            let files = LearnerFiles::of(&row.name);
            let complete = [&files.report, &files.junit, &files.page]
                .iter()
                .all(|f| part.dir.join(f).is_file())
                && (row.report.as_str(), row.junit.as_str(), row.page.as_str())
                    == (
                        files.report.as_str(),
                        files.junit.as_str(),
                        files.page.as_str(),
                    );
            if !complete {
                return Err(missing(&row.name, part, lang));
            }
            rows.insert(row.name.clone(), (row.clone(), part));
        }
    }
    for part in parts {
        if let Some(entry) = part.record.own().find(|e| !rows.contains_key(&e.name)) {
            return Err(missing(&entry.name, part, lang));
        }
    }
    Ok(rows
        .into_values()
        .map(|(row, part)| (row, part.dir.clone()))
        .collect())
}

fn missing(name: &str, part: &Part, lang: Lang) -> UserError {
    UserError::new(lang.t(
        "merge-missing-learner",
        &[("name", &name), ("dir", &part.shown())],
    ))
    .with_fix(lang.t("merge-missing-learner-fix", &[]))
}

/// `--out` must be new or empty, and neither inside a part nor holding one.
fn check_out(out: &Path, parts: &[Part], lang: Lang) -> Result<()> {
    let absolute = |p: &Path| -> PathBuf {
        match fs::canonicalize(p) {
            Ok(p) => p,
            Err(_) => {
                let parent = p
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                fs::canonicalize(parent)
                    .unwrap_or_else(|_| parent.to_path_buf())
                    .join(p.file_name().unwrap_or_default())
            }
        }
    };
    let target = absolute(out);
    for part in parts {
        let dir = absolute(&part.dir);
        if target.starts_with(&dir) || dir.starts_with(&target) {
            return Err(UserError::new(lang.t(
                "merge-out-in-part",
                &[("out", &out.display()), ("dir", &part.dir.display())],
            ))
            .with_fix(lang.t("merge-out-fix", &[])));
        }
    }
    let parent = target.parent().unwrap_or(Path::new("/"));
    if !parent.is_dir() {
        return Err(UserError::new(
            lang.t("class-out-parent-missing", &[("parent", &parent.display())]),
        )
        .with_fix(lang.t(
            "fix-practice-parent-missing",
            &[("parent", &parent.display())],
        )));
    }
    match fs::symlink_metadata(out) {
        Err(_) => Ok(()),
        Ok(meta) if meta.is_dir() && fs::read_dir(out).is_ok_and(|mut d| d.next().is_none()) => {
            Ok(())
        }
        Ok(_) => Err(
            UserError::new(lang.t("merge-out-not-new", &[("out", &out.display())]))
                .with_fix(lang.t("merge-out-fix", &[])),
        ),
    }
}

/// Writes the class's results into a temporary sibling of `out`, then renames it into place (over an
/// empty `out` too).
fn write(
    out: &Path,
    summary: &Summary,
    rows: &[(Row, PathBuf)],
    index: &str,
    source: Option<&str>,
    lang: Lang,
) -> Result<()> {
    let failed = |e: std::io::Error| {
        UserError::new(lang.t(
            "class-out-unwritable",
            &[("out", &out.display()), ("error", &e)],
        ))
    };
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".pi-course-merge-")
        .tempdir_in(parent)
        .map_err(failed)?;
    fs::create_dir(tmp.path().join(LearnerFiles::DIR)).map_err(failed)?;
    for (row, part) in rows {
        for file in [&row.report, &row.junit, &row.page] {
            fs::copy(part.join(file), tmp.path().join(file)).map_err(failed)?;
        }
    }
    fs::write(tmp.path().join(summary::JSON), summary.to_json()).map_err(failed)?;
    fs::write(tmp.path().join(summary::CSV), summary.to_csv()).map_err(failed)?;
    fs::write(tmp.path().join("index.html"), index).map_err(failed)?;
    if let Some(source) = source {
        fs::write(tmp.path().join(super::SOURCE), super::source_json(source)).map_err(failed)?;
    }
    // tempfile makes the folder private; results are as readable as grade-class leaves them.
    set_mode(tmp.path()).map_err(failed)?;
    fs::rename(tmp.path(), out).map_err(failed)?;
    // Renamed away: nothing left for the guard to remove.
    let _ = tmp.keep();
    Ok(())
}

/// `rwxr-xr-x` (less the umask), as `create_dir` would have made the folder.
fn set_mode(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let probe = dir.join(".mode");
    fs::DirBuilder::new().mode(0o777).create(&probe)?;
    let mode = fs::metadata(&probe)?.permissions().mode();
    fs::remove_dir(&probe)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(mode))
}
