//! What a class's submissions folder holds: one entry per learner, named after the entry.
//!
//! An entry is a practice directory (it has `.pi-course/practice.toml`), a folder holding the editable
//! file by its name (`agent_loop.rs`) or by its path (`src/agent_loop.rs`), or a file `<name>.rs`; or
//! the same of another track of the chapter (`agent-loop.ts`, `<name>.ts`). A class may mix tracks.
//! Anything else is still a learner's entry, one that cannot be graded: it gets a row that says why.
//! Hidden entries (`.DS_Store`, `.git`) are not learners and are left out.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::catalog::{Chapter, Track};
use crate::error::{Result, UserError};
use crate::i18n::Lang;
use crate::metadata;
use crate::outcome::MAX_EDITABLE_BYTES;
use crate::regular_file::{self, Contents};

/// One learner's entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    /// The entry itself, inside the submissions folder.
    pub path: PathBuf,
    pub shape: Shape,
}

#[derive(Debug, Clone)]
pub enum Shape {
    /// A practice directory, graded as it is (read only).
    Practice,
    /// The learner's file: `<name>.rs` or `<name>.ts`, or found in the learner's folder; the track its
    /// name says it is in.
    File(PathBuf, Track),
    /// Not something that can be graded: why, in the chosen language.
    Malformed(String),
}

/// The entries of `dir`, sorted by name. Bad input: `dir` cannot be read, it holds no entry, or two
/// entries would be the same learner.
pub fn scan(dir: &Path, chapter: &Chapter, lang: Lang) -> Result<Vec<Entry>> {
    let shown = dir.display();
    let listing = fs::read_dir(dir).map_err(|e| {
        UserError::new(lang.t(
            "class-submissions-unreadable",
            &[("dir", &shown), ("error", &e)],
        ))
        .with_fix(lang.t("class-submissions-fix", &[]))
    })?;
    let mut by_name: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for item in listing {
        let item = item.map_err(|e| {
            UserError::new(lang.t(
                "class-submissions-unreadable",
                &[("dir", &shown), ("error", &e)],
            ))
        })?;
        let file_name = item.file_name();
        let raw = file_name.to_string_lossy().into_owned();
        if raw.starts_with('.') {
            continue;
        }
        let entry = classify(
            &item.path(),
            &raw,
            file_name.to_str().is_some(),
            chapter,
            lang,
        );
        by_name.entry(entry.name.clone()).or_default().push(entry);
    }
    if by_name.is_empty() {
        return Err(UserError::new(lang.t("class-empty", &[("dir", &shown)]))
            .with_fix(lang.t("class-submissions-fix", &[])));
    }
    if let Some((name, twins)) = by_name.iter().find(|(_, entries)| entries.len() > 1) {
        let list: Vec<String> = twins.iter().map(|e| e.path.display().to_string()).collect();
        return Err(UserError::new(lang.t(
            "class-duplicate-name",
            &[("name", name), ("entries", &list.join(", "))],
        ))
        .with_fix(lang.t("class-duplicate-name-fix", &[])));
    }
    Ok(by_name.into_values().flatten().collect())
}

fn classify(path: &Path, raw: &str, utf8: bool, chapter: &Chapter, lang: Lang) -> Entry {
    // Each track's editable file: `src/agent_loop.rs` (Rust), `src/agent-loop.ts` (TypeScript). A class
    // may mix tracks; each learner's file says which one is theirs.
    let tracks: Vec<(Track, String)> = chapter
        .tracks()
        .into_iter()
        .filter_map(|t| Some((t, chapter.with_track(t)?.editable.first()?.clone())))
        .collect();
    let file_name = |editable: &str| editable.rsplit('/').next().unwrap_or(editable).to_string();
    let malformed = |name: String, reason: String| Entry {
        name,
        path: path.to_path_buf(),
        shape: Shape::Malformed(reason),
    };
    if !utf8 {
        return malformed(raw.to_string(), lang.t("class-entry-not-utf8", &[]));
    }
    let names = |of: &dyn Fn(&str) -> String| -> String {
        tracks
            .iter()
            .map(|(_, e)| of(e))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    // The entry itself, not what it may link to: a linked entry is graded as nobody's work.
    match fs::symlink_metadata(path) {
        Err(e) => malformed(
            raw.to_string(),
            lang.t("class-entry-unreadable", &[("error", &e)]),
        ),
        Ok(meta) if meta.file_type().is_symlink() => {
            // Named as the learner it pretends to be: `eve.rs` is eve.
            let name = tracks
                .iter()
                .find_map(|(_, editable)| {
                    let extension = Path::new(editable).extension()?.to_str()?;
                    raw.strip_suffix(&format!(".{extension}"))
                })
                .filter(|stem| !stem.is_empty())
                .unwrap_or(raw);
            malformed(name.to_string(), lang.t("class-entry-link", &[]))
        }
        Ok(meta) if meta.is_dir() => {
            let name = raw.to_string();
            // A practice directory whose metadata is a link is still one: opening it says why it
            // cannot be graded.
            if fs::symlink_metadata(path.join(metadata::FILE)).is_ok() {
                return Entry {
                    name,
                    path: path.to_path_buf(),
                    shape: Shape::Practice,
                };
            }
            let found: Vec<(PathBuf, Track)> = tracks
                .iter()
                .flat_map(|(t, editable)| {
                    [path.join(editable), path.join(file_name(editable))]
                        .into_iter()
                        .map(move |p| (p, *t))
                })
                .filter(|(p, _)| fs::symlink_metadata(p).is_ok())
                .collect();
            let files = names(&file_name);
            let paths = names(&|e| e.to_string());
            match found.as_slice() {
                [(one, track)] => Entry {
                    name,
                    path: path.to_path_buf(),
                    shape: Shape::File(one.clone(), *track),
                },
                [] => malformed(
                    name,
                    lang.t("class-entry-no-file", &[("file", &files), ("path", &paths)]),
                ),
                _ => malformed(
                    name,
                    lang.t(
                        "class-entry-two-files",
                        &[("file", &files), ("path", &paths)],
                    ),
                ),
            }
        }
        Ok(_) => {
            let by_extension = tracks.iter().find_map(|(t, editable)| {
                let extension = Path::new(editable).extension()?.to_str()?;
                let stem = raw.strip_suffix(&format!(".{extension}"))?;
                (!stem.is_empty()).then(|| (stem.to_string(), *t))
            });
            match by_extension {
                Some((stem, track)) => Entry {
                    name: stem,
                    path: path.to_path_buf(),
                    shape: Shape::File(path.to_path_buf(), track),
                },
                None => malformed(
                    raw.to_string(),
                    lang.t(
                        "class-entry-not-a-submission",
                        &[("file", &names(&file_name))],
                    ),
                ),
            }
        }
    }
}

/// A learner's file as read for grading.
#[derive(Debug, Clone)]
pub struct Read {
    pub bytes: Vec<u8>,
    /// sha256 of the bytes, lowercase hex.
    pub sha256: String,
}

/// Reads the file of a [`Shape::File`] entry (a path inside `submissions`) without blocking, without
/// reading past the size limit, and through no symbolic link (neither the file nor a directory on the
/// way to it from `submissions`); `Err` says, in the chosen language, why it cannot be graded.
pub fn read_file(submissions: &Path, path: &Path, lang: Lang) -> std::result::Result<Read, String> {
    let shown = path.display().to_string();
    let rel = path.strip_prefix(submissions).unwrap_or(path);
    match regular_file::read(submissions, rel, MAX_EDITABLE_BYTES) {
        Ok(Contents::Bytes(bytes)) => Ok(Read {
            sha256: sha256(&bytes),
            bytes,
        }),
        Ok(Contents::NotAFile(kind)) => Err(lang.t(
            "grade-editable-not-a-file",
            &[("path", &shown), ("kind", &kind)],
        )),
        Ok(Contents::TooLarge(bytes)) => Err(lang.t(
            "grade-editable-too-large",
            &[
                ("path", &shown),
                ("kib", &(bytes / 1024)),
                ("max_kib", &(MAX_EDITABLE_BYTES / 1024)),
            ],
        )),
        Ok(Contents::Link) => Err(lang.t("grade-editable-link", &[("path", &shown)])),
        Err(e) => Err(lang.t(
            "class-entry-unreadable",
            &[("error", &format!("{shown}: {e}"))],
        )),
    }
}

/// The fingerprint of a practice directory's editable files, as they will be graded: the sha256 of the
/// one editable file (what `sha256sum` prints for it), or of every one's path and bytes when there are
/// several. Empty when one cannot be read: the grade then says why.
pub fn practice_sha256(dir: &Path, chapter: &Chapter) -> String {
    // The directory's own track decides which file is its editable one.
    let Some(chapter) = chapter.with_track(practice_track(dir)) else {
        return String::new();
    };
    let mut files = Vec::new();
    for path in &chapter.editable {
        match regular_file::read(dir, path, MAX_EDITABLE_BYTES) {
            Ok(Contents::Bytes(bytes)) => files.push((path, bytes)),
            _ => return String::new(),
        }
    }
    match files.as_slice() {
        [(_, bytes)] => sha256(bytes),
        _ => {
            let mut all = Vec::new();
            for (path, bytes) in &files {
                all.extend_from_slice(path.as_bytes());
                all.push(0);
                all.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                all.extend_from_slice(bytes);
            }
            sha256(&all)
        }
    }
}

/// The track a practice directory says it is in (Rust when its metadata cannot be read: the grade then
/// says why).
fn practice_track(dir: &Path) -> Track {
    match regular_file::read(dir, metadata::FILE, MAX_EDITABLE_BYTES) {
        Ok(Contents::Bytes(bytes)) => String::from_utf8(bytes)
            .ok()
            .and_then(|text| toml::from_str::<metadata::Metadata>(&text).ok())
            .map_or(Track::Rust, |m| m.track),
        _ => Track::Rust,
    }
}

/// A practice directory's track and the bytes of its editable files, read as they will be graded (for the
/// expected cost of its grade); `None` when one cannot be read.
pub fn practice_size(dir: &Path, chapter: &Chapter) -> Option<(Track, u64)> {
    let track = practice_track(dir);
    let chapter = chapter.with_track(track)?;
    let mut size = 0;
    for path in &chapter.editable {
        match regular_file::read(dir, path, MAX_EDITABLE_BYTES) {
            Ok(Contents::Bytes(bytes)) => size += bytes.len() as u64,
            _ => return None,
        }
    }
    Some((track, size))
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn every_shape_is_one_learner_named_after_its_entry() {
        let chapter = &Catalog::chapter_07();
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        fs::write(d.join("ann.rs"), "// ann").unwrap();
        fs::create_dir_all(d.join("bob/src")).unwrap();
        fs::write(d.join("bob/src/agent_loop.rs"), "// bob").unwrap();
        fs::create_dir(d.join("cy")).unwrap();
        fs::write(d.join("cy/agent_loop.rs"), "// cy").unwrap();
        fs::create_dir_all(d.join("dee/.pi-course")).unwrap();
        fs::write(d.join("dee/.pi-course/practice.toml"), "").unwrap();
        fs::write(d.join("notes.txt"), "hello").unwrap();
        fs::create_dir(d.join("empty")).unwrap();
        fs::write(d.join(".DS_Store"), "").unwrap();
        let entries = scan(d, chapter, Lang::En).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["ann", "bob", "cy", "dee", "empty", "notes.txt"]);
        assert!(matches!(&entries[0].shape, Shape::File(p, Track::Rust) if p.ends_with("ann.rs")));
        assert!(
            matches!(&entries[1].shape, Shape::File(p, Track::Rust) if p.ends_with("src/agent_loop.rs"))
        );
        assert!(
            matches!(&entries[2].shape, Shape::File(p, Track::Rust) if p.ends_with("cy/agent_loop.rs"))
        );
        assert!(matches!(entries[3].shape, Shape::Practice));
        assert!(matches!(&entries[4].shape, Shape::Malformed(r) if r.contains("agent_loop.rs")));
        assert!(matches!(entries[5].shape, Shape::Malformed(_)));

        fs::create_dir(d.join("ann")).unwrap();
        let err = scan(d, chapter, Lang::En).unwrap_err();
        assert!(err.problem.contains("ann"), "{err}");
        assert!(err.fix.is_some());

        let empty = tempfile::tempdir().unwrap();
        fs::write(empty.path().join(".hidden"), "").unwrap();
        assert!(scan(empty.path(), chapter, Lang::En).is_err());
    }

    #[test]
    fn a_single_file_is_fingerprinted_as_sha256sum_would() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
