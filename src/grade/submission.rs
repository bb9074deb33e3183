//! Stage 1, read: the practice directory, read once, into the one value every later stage takes. After
//! this stage no stage reads the learner's directory again: the pipeline prepares, builds, runs and
//! judges what was read here, and records the verdict beside the record read here.
//!
//! Everything is read from inside the directory through no link (see [`crate::regular_file`]), each
//! editable file bounded by [`MAX_EDITABLE_BYTES`].

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::last::{self, LastGrade};
use crate::metadata::Practice;
use crate::outcome::{Problem, Unreadable, MAX_EDITABLE_BYTES};
use crate::regular_file::{self, Contents};

/// A practice directory as one grade sees it.
#[derive(Debug, Clone)]
pub struct Submission {
    /// Where it is, its metadata and its chapter.
    pub practice: Practice,
    /// Each editable file, in the chapter's order: its bytes, or why it cannot be graded.
    files: Vec<(String, Result<Vec<u8>, Problem>)>,
    /// Each editable file as the learner names it in messages (see [`shown_path`]).
    pub shown: BTreeMap<String, String>,
    /// Given files the learner changed (or removed), sorted.
    pub changed_given: Vec<String>,
    /// Who is graded: the submitted file in a class, else the directory, resolved. A build slot records
    /// it (hashed) to know whose outputs it holds.
    pub identity: String,
    /// The last grade's record, which this grade's record updates.
    pub last: Option<LastGrade>,
}

impl Submission {
    /// Reads what a grade of `practice` needs from its directory.
    pub fn read(practice: Practice) -> Submission {
        let dir = &practice.dir;
        let shown: BTreeMap<String, String> = practice
            .chapter
            .editable
            .iter()
            .map(|path| {
                let named = practice.shown_as.get(path).cloned();
                (path.clone(), named.unwrap_or_else(|| shown_path(dir, path)))
            })
            .collect();
        let files = practice
            .chapter
            .editable
            .iter()
            .map(|path| {
                let read = read_editable(dir, path)
                    .and_then(|bytes| nested_within_bounds(&practice, &shown[path], path, bytes));
                (path.clone(), read)
            })
            .collect();
        // A class grades a submitted file in a practice directory made for it: the file is the learner.
        let submitted = practice
            .chapter
            .editable
            .first()
            .and_then(|path| practice.shown_as.get(path));
        let identity = match submitted {
            Some(file) => format!("file\0{file}"),
            None => {
                let resolved = std::fs::canonicalize(dir).unwrap_or(dir.clone());
                format!("dir\0{}", resolved.display())
            }
        };
        Submission {
            changed_given: practice.changed_given_files(),
            last: last::load(dir),
            files,
            shown,
            identity,
            practice,
        }
    }

    /// The first editable file that exists but cannot be graded (not a regular file, too large, a
    /// link): bad input, said before any grade starts. A missing one is the grade's to report.
    pub fn unreadable(&self) -> Option<&Unreadable> {
        self.files.iter().find_map(|(_, read)| match read {
            Err(Problem::Unreadable(unreadable)) => Some(unreadable),
            _ => None,
        })
    }

    /// The first editable file that is missing, as the learner names it.
    pub fn missing(&self) -> Option<&str> {
        self.files.iter().find_map(|(_, read)| match read {
            Err(Problem::MissingEditable { path }) => Some(path.as_str()),
            _ => None,
        })
    }

    /// The editable files (path inside the practice directory, bytes), or the first one's problem.
    pub fn editable(&self) -> Result<Vec<(String, Vec<u8>)>, Problem> {
        self.files
            .iter()
            .map(|(path, read)| Ok((path.clone(), read.clone()?)))
            .collect()
    }

    /// `path` as the learner names it.
    pub fn shown(&self, path: &str) -> String {
        self.shown
            .get(path)
            .cloned()
            .unwrap_or_else(|| shown_path(&self.practice.dir, path))
    }
}

/// Reads the editable file `rel` of `practice_dir`. What is wrong with it names the file inside the
/// directory, where the learner can mend it.
fn read_editable(practice_dir: &Path, rel: &str) -> Result<Vec<u8>, Problem> {
    let unreadable = |u| Err(Problem::Unreadable(u));
    let path = shown_path(practice_dir, rel);
    match regular_file::read(practice_dir, rel, MAX_EDITABLE_BYTES) {
        Ok(Contents::Bytes(bytes)) => Ok(bytes),
        Ok(Contents::NotAFile(kind)) => unreadable(Unreadable::NotAFile { path, kind }),
        Ok(Contents::TooLarge(bytes)) => unreadable(Unreadable::TooLarge { path, bytes }),
        Ok(Contents::Link) => unreadable(Unreadable::Link { path }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Problem::MissingEditable { path }),
        Err(e) => Err(Problem::Io {
            what: path,
            error: e.to_string(),
        }),
    }
}

/// `bytes` of the editable file `rel`, unless the track parses it and it nests deeper than the parse is
/// allowed to go: then bad input naming the line (`shown` names the file as the learner knows it). A
/// Rust file is parsed by the grader itself (the refusal check), so its depth is bounded before any grade.
fn nested_within_bounds(
    practice: &Practice,
    shown: &str,
    rel: &str,
    bytes: Vec<u8>,
) -> Result<Vec<u8>, Problem> {
    if practice.chapter.track != crate::catalog::Track::Rust || !rel.ends_with(".rs") {
        return Ok(bytes);
    }
    let deep = std::str::from_utf8(&bytes)
        .ok()
        .and_then(crate::track::rust::refuse::too_deep);
    match deep {
        Some(deep) => Err(Problem::Unreadable(crate::track::rust::too_deep(
            shown, deep,
        ))),
        None => Ok(bytes),
    }
}

/// `rel` (a `/`-separated path inside the practice directory) as the learner would type it from where they
/// ran pi-course: plain `src/agent_loop.rs` for the current directory, else `<dir>/src/agent_loop.rs`.
pub fn shown_path(practice_dir: &Path, rel: &str) -> String {
    let is_here = practice_dir
        .components()
        .all(|c| matches!(c, std::path::Component::CurDir));
    if is_here {
        rel.to_string()
    } else {
        let dir = practice_dir.to_string_lossy();
        format!("{}/{rel}", dir.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::i18n::Lang;
    use crate::metadata::Metadata;

    #[test]
    fn a_missing_editable_file_is_the_grades_problem_and_a_fifo_is_bad_input() {
        let chapter = Catalog::chapter_07();
        let dir = tempfile::tempdir().unwrap();
        let practice = Practice {
            dir: dir.path().to_path_buf(),
            metadata: Metadata::for_chapter(&chapter, Lang::En),
            chapter: chapter.clone(),
            shown_as: BTreeMap::new(),
        };
        let missing = Submission::read(practice.clone());
        assert!(missing.unreadable().is_none());
        let err = missing.editable().unwrap_err();
        assert!(matches!(err, Problem::MissingEditable { .. }), "{err:?}");

        let editable = dir.path().join(&chapter.editable[0]);
        std::fs::create_dir_all(editable.parent().unwrap()).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(&editable)
            .status()
            .unwrap();
        assert!(fifo.success());
        let fifo = Submission::read(practice);
        assert!(
            matches!(
                fifo.unreadable(),
                Some(Unreadable::NotAFile { kind: "FIFO", .. })
            ),
            "{:?}",
            fifo.unreadable()
        );
    }

    #[test]
    fn paths_are_shown_from_where_the_learner_is() {
        assert_eq!(shown_path(Path::new("."), "src/a.rs"), "src/a.rs");
        assert_eq!(shown_path(Path::new("./"), "src/a.rs"), "src/a.rs");
        assert_eq!(shown_path(Path::new("p"), "src/a.rs"), "p/src/a.rs");
        assert_eq!(shown_path(Path::new("/t/p/"), "src/a.rs"), "/t/p/src/a.rs");
    }
}
