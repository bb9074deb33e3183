//! Stage 2, prepare: make the build directory hold the pristine given files plus the learner's editable
//! files, touching only what differs (cargo decides what to rebuild by modification time, so a file that
//! did not change must keep its time).

use std::fs;
use std::io;
use std::path::Path;

use crate::catalog::Chapter;
use crate::outcome::Problem;

/// Writes `bytes` to `path` unless it already holds exactly them. Returns whether it wrote.
fn sync_file(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, bytes)?;
    Ok(true)
}

/// Brings `build_dir` in line with the chapter's given files and the learner's `editable` files.
/// Returns how many files it wrote.
pub fn prepare(
    chapter: &Chapter,
    editable: &[(String, Vec<u8>)],
    build_dir: &Path,
) -> Result<usize, Problem> {
    let io_problem = |path: &str, e: io::Error| Problem::Io {
        what: build_dir.join(path).display().to_string(),
        error: e.to_string(),
    };
    let mut written = 0;
    for file in chapter.given_files() {
        let replaced = test_build::replaced_given(file.path);
        let bytes = replaced.as_deref().unwrap_or(file.bytes);
        written += sync_file(&build_dir.join(file.path), bytes)
            .map_err(|e| io_problem(file.path, e))? as usize;
    }
    for (path, bytes) in editable {
        written +=
            sync_file(&build_dir.join(path), bytes).map_err(|e| io_problem(path, e))? as usize;
    }
    Ok(written)
}

/// The attack tests' way to give the learner's code what no grade gives it (the key, the channel, code
/// before `main`), to prove that the judge holds even then (docs/SECURITY.md, "Forged traces"). Only a
/// debug build of pi-course has it, and only its operator's environment turns it on: learner code runs
/// after this stage, inside the sandbox, and cannot set the grader's environment; a release build (what
/// is installed and graded with) has no such code.
mod test_build {
    /// Set to a directory: each of its files replaces the given file of the same path in the build slot.
    #[cfg(debug_assertions)]
    pub const ENV: &str = "PI_COURSE_TEST_REPLACE_GIVEN";

    /// The bytes that replace given file `path`, when this debug build was asked to replace it.
    #[cfg(debug_assertions)]
    pub fn replaced_given(path: &str) -> Option<Vec<u8>> {
        let dir = std::env::var_os(ENV)?;
        std::fs::read(std::path::Path::new(&dir).join(path)).ok()
    }

    #[cfg(not(debug_assertions))]
    pub fn replaced_given(_path: &str) -> Option<Vec<u8>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn writes_only_what_differs_and_keeps_mtimes() {
        let chapter = &Catalog::chapter_07();
        let practice = tempfile::tempdir().unwrap();
        let build = tempfile::tempdir().unwrap();
        for f in chapter.skeleton_files() {
            let p = practice.path().join(f.path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, f.bytes).unwrap();
        }
        // Brings the build directory in line with the practice directory; returns the files it wrote.
        let sync = || {
            let editable: Vec<(String, Vec<u8>)> = chapter
                .editable
                .iter()
                .map(|p| (p.clone(), fs::read(practice.path().join(p)).unwrap()))
                .collect();
            prepare(chapter, &editable, build.path()).unwrap()
        };
        let n = sync();
        assert_eq!(n, chapter.given_files().len() + chapter.editable.len());

        let editable = build.path().join(&chapter.editable[0]);
        let before = fs::metadata(&editable).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(sync(), 0);
        assert_eq!(fs::metadata(&editable).unwrap().modified().unwrap(), before);

        // A tampered given file in the build directory is put back; the learner's edit is copied.
        let given = chapter.given_files()[0];
        fs::write(build.path().join(given.path), b"tampered").unwrap();
        fs::write(practice.path().join(&chapter.editable[0]), b"// edited").unwrap();
        assert_eq!(sync(), 2);
        assert_eq!(
            fs::read(build.path().join(given.path)).unwrap(),
            given.bytes
        );
        assert_eq!(fs::read(&editable).unwrap(), b"// edited");
    }
}
