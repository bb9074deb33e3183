//! The small metadata file every practice directory carries: `.pi-course/practice.toml`.
//!
//! It names the chapter and fingerprints every given file, so `grade` and `status` can tell which given
//! files a learner changed (grading still uses the pristine copies from the catalog). The last grade's
//! verdict per Lab is kept beside it in `.pi-course/last-grade.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::catalog::{Catalog, Chapter, Track};
use crate::error::{Result, UserError};
use crate::i18n::Lang;
use crate::regular_file::{self, Contents};

pub const DIR: &str = ".pi-course";
pub const FILE: &str = ".pi-course/practice.toml";
/// Far more than any metadata file holds; one this large is damaged.
const METADATA_LIMIT: u64 = 256 << 10;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metadata {
    /// The chapter id, e.g. "07".
    pub chapter: String,
    /// The pi-course version that made the directory.
    pub made_by: String,
    /// Seconds since the Unix epoch when the directory was made.
    pub created: u64,
    /// The layout of the directory's given files (see `chapter.toml`); directories made before layouts
    /// were recorded have layout 1.
    #[serde(default = "first_layout")]
    pub layout: u32,
    /// The track the directory is in (`rust`, `typescript`); directories made before there were tracks
    /// are Rust.
    #[serde(default)]
    pub track: Track,
    /// The language the directory was made in (`zh`, `en`): every command run on it speaks it unless
    /// `--lang` or `PI_COURSE_LANG` says otherwise. Absent in directories made before it was recorded,
    /// which speak the default. The learner may edit this file, so anything but a language this
    /// pi-course knows reads as absent: the language only ever chooses words, never a verdict.
    #[serde(
        default,
        deserialize_with = "lenient_lang",
        serialize_with = "lang_code",
        skip_serializing_if = "Option::is_none"
    )]
    pub lang: Option<Lang>,
    /// sha256 (hex) of every given file, by path relative to the directory.
    pub given: BTreeMap<String, String>,
}

/// A `lang` value of any shape: the language it names, or none.
fn lenient_lang<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Lang>, D::Error> {
    let value = toml::Value::deserialize(d)?;
    Ok(value.as_str().and_then(Lang::from_prefix))
}

fn lang_code<S: serde::Serializer>(
    lang: &Option<Lang>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match lang {
        Some(lang) => s.serialize_str(lang.code()),
        None => s.serialize_none(),
    }
}

/// sha256 of `bytes`, as lowercase hex.
fn first_layout() -> u32 {
    1
}

pub fn fingerprint(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Bytes as lower-case hex digits (a digest as fingerprints print it).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Metadata {
    pub fn for_chapter(chapter: &Chapter, lang: Lang) -> Metadata {
        let created = crate::time::now();
        Metadata {
            chapter: chapter.id.clone(),
            made_by: env!("CARGO_PKG_VERSION").to_string(),
            created,
            layout: chapter.layout,
            track: chapter.track,
            lang: Some(lang),
            given: chapter
                .given_files()
                .iter()
                .map(|f| (f.path.to_string(), fingerprint(f.bytes)))
                .collect(),
        }
    }

    pub fn to_toml(&self) -> String {
        let mut s = String::from(
            "# Made by pi-course. Do not edit: grading uses it to find the chapter and the pristine files.\n",
        );
        s.push_str(&toml::to_string(self).expect("metadata serializes"));
        s
    }
}

/// The language practice directory `dir` was made in, when it records one. Read before the directory is
/// opened, to speak its language from the first message on; anything unreadable is simply no language
/// here (opening the directory reports it).
pub fn lang_of(dir: &Path) -> Option<Lang> {
    #[derive(Deserialize)]
    struct OnlyLang {
        #[serde(default, deserialize_with = "lenient_lang")]
        lang: Option<Lang>,
    }
    let Ok(Contents::Bytes(bytes)) = regular_file::read(dir, FILE, METADATA_LIMIT) else {
        return None;
    };
    let text = String::from_utf8(bytes).ok()?;
    toml::from_str::<OnlyLang>(&text).ok()?.lang
}

/// Set when [`find`] looked upward from the current directory and found no practice directory: opening
/// the current directory then says that none above it is one either.
static NONE_ABOVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The practice directory a command works on when none is named: the current directory, or the nearest
/// folder above it that holds `.pi-course/practice.toml`, as cargo looks for `Cargo.toml` and git for
/// `.git`. Named relative to the current directory (`..`, `../..`), so that the paths in messages are
/// still the learner's own. The current directory when none does: opening it says why.
pub fn find() -> PathBuf {
    if let Ok(here) = std::env::current_dir() {
        let mut rel = PathBuf::from(".");
        for (depth, ancestor) in here.ancestors().enumerate() {
            // Any entry counts, a link or a damaged file included: opening it says what is wrong.
            if std::fs::symlink_metadata(ancestor.join(FILE)).is_ok() {
                return rel;
            }
            rel = if depth == 0 {
                PathBuf::from("..")
            } else {
                rel.join("..")
            };
        }
    }
    NONE_ABOVE.store(true, std::sync::atomic::Ordering::Relaxed);
    PathBuf::from(".")
}

/// An opened practice directory: where it is, its metadata and its chapter from the catalog.
#[derive(Debug, Clone)]
pub struct Practice {
    pub dir: PathBuf,
    pub metadata: Metadata,
    pub chapter: Chapter,
    /// How to name an editable file in messages, when not as `<dir>/<path>`: a class grade builds a
    /// submitted `alice.rs` in a practice directory of its own, and compile errors point at `alice.rs`.
    pub shown_as: BTreeMap<String, String>,
}

impl Practice {
    /// Opens `dir` as a practice directory, or says clearly why it is not one.
    pub fn open(catalog: &Catalog, lang: Lang, dir: &Path) -> Result<Practice> {
        let shown = dir.display();
        if !dir.is_dir() {
            let problem = match std::fs::symlink_metadata(dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "dir-does-not-exist",
                _ => "not-a-directory",
            };
            return Err(UserError::new(lang.t(problem, &[("dir", &shown)]))
                .with_fix(lang.t("fix-make-practice", &[])));
        }
        let file = dir.join(FILE);
        // Absent, unreadable, not text and not valid TOML are four different problems, each with its
        // own message: only an absent file means "not a practice directory".
        let damaged = |error: &dyn std::fmt::Display| {
            UserError::new(lang.t(
                "metadata-invalid",
                &[("file", &file.display()), ("error", error)],
            ))
            .with_fix(lang.t("fix-metadata-damaged", &[]))
        };
        let unreadable = |error: &dyn std::fmt::Display| {
            UserError::new(lang.t(
                "metadata-unreadable",
                &[("file", &file.display()), ("error", error)],
            ))
            .with_fix(lang.t("fix-metadata-unreadable", &[]))
        };
        // Read from inside the directory, through no link: a linked `.pi-course` could make any
        // directory (a classmate's) look like this one.
        let bytes = match regular_file::read(dir, FILE, METADATA_LIMIT) {
            Ok(Contents::Bytes(bytes)) => bytes,
            Ok(Contents::Link) => {
                return Err(
                    UserError::new(lang.t("metadata-link", &[("file", &file.display())]))
                        .with_fix(lang.t("fix-metadata-link", &[])),
                )
            }
            Ok(Contents::NotAFile(kind)) => return Err(unreadable(&kind)),
            Ok(Contents::TooLarge(bytes)) => {
                return Err(damaged(&format!("{} KiB", bytes.div_ceil(1024))))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                let searched =
                    dir == Path::new(".") && NONE_ABOVE.load(std::sync::atomic::Ordering::Relaxed);
                let problem = if searched {
                    "not-in-a-practice-dir"
                } else {
                    "not-a-practice-dir"
                };
                return Err(UserError::new(lang.t(problem, &[("dir", &shown)]))
                    .with_fix(lang.t("fix-make-practice", &[])));
            }
            Err(e) => return Err(unreadable(&e)),
        };
        let text =
            String::from_utf8(bytes).map_err(|_| damaged(&lang.t("metadata-not-text", &[])))?;
        let metadata: Metadata = toml::from_str(&text).map_err(|e| damaged(&e.message()))?;
        let chapter = catalog.chapter(&metadata.chapter).cloned().ok_or_else(|| {
            UserError::new(lang.t(
                "metadata-unknown-chapter",
                &[("chapter", &metadata.chapter)],
            ))
            .with_fix(lang.t("fix-upgrade", &[]))
        })?;
        // A directory is graded in its own track, against the given files of the layout it was made with.
        let chapter = chapter.with_track(metadata.track).ok_or_else(|| {
            UserError::new(lang.t(
                "metadata-unknown-track",
                &[
                    ("track", &metadata.track.name()),
                    ("made_by", &metadata.made_by),
                ],
            ))
            .with_fix(lang.t("fix-upgrade", &[]))
        })?;
        let chapter = chapter.with_layout(metadata.layout).ok_or_else(|| {
            UserError::new(lang.t(
                "metadata-unknown-layout",
                &[("layout", &metadata.layout), ("made_by", &metadata.made_by)],
            ))
            .with_fix(lang.t("fix-upgrade", &[]))
        })?;
        Ok(Practice {
            dir: dir.to_path_buf(),
            metadata,
            chapter,
            shown_as: BTreeMap::new(),
        })
    }

    /// Given files the learner changed (or removed), sorted. A file that still holds what this directory
    /// was made with is not a change of the learner's, even when a newer pi-course ships a newer version
    /// of it (grading uses the newer one either way); nor is a file the release that made the directory
    /// never wrote (a newer release's addition to an old layout, such as today's driver), when absent.
    pub fn changed_given_files(&self) -> Vec<String> {
        /// Larger than any given file: one this large was changed.
        const GIVEN_LIMIT: u64 = 4 << 20;
        self.chapter
            .given_files()
            .iter()
            // A given file replaced by a FIFO, a device or a link is changed, and never read.
            .filter(
                |f| match regular_file::read(&self.dir, f.path, GIVEN_LIMIT) {
                    Ok(Contents::Bytes(bytes)) if bytes == f.bytes => false,
                    Ok(Contents::Bytes(bytes)) => {
                        self.metadata.given.get(f.path) != Some(&fingerprint(&bytes))
                    }
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            && !self.metadata.given.contains_key(f.path) =>
                    {
                        false
                    }
                    _ => true,
                },
            )
            .map(|f| f.path.to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A practice directory made from `chapter`, written under a temporary directory.
    fn made(chapter: &Chapter) -> (tempfile::TempDir, Practice) {
        let tmp = tempfile::tempdir().unwrap();
        for f in chapter.given_files() {
            let path = tmp.path().join(f.path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, f.bytes).unwrap();
        }
        let practice = Practice {
            dir: tmp.path().to_path_buf(),
            metadata: Metadata::for_chapter(chapter, Lang::Zh),
            chapter: chapter.clone(),
            shown_as: BTreeMap::new(),
        };
        (tmp, practice)
    }

    #[test]
    fn only_the_learners_changes_count_not_a_newer_course() {
        let chapter = &Catalog::chapter_07();
        let (_tmp, mut practice) = made(chapter);
        assert_eq!(practice.changed_given_files(), Vec::<String>::new());

        // Made by an older pi-course whose guide was different: the directory still holds that guide,
        // untouched, so it is no change of the learner's.
        let guide = practice.dir.join("GUIDE.md");
        fs::write(&guide, "an older guide").unwrap();
        practice
            .metadata
            .given
            .insert("GUIDE.md".into(), fingerprint(b"an older guide"));
        assert_eq!(practice.changed_given_files(), Vec::<String>::new());

        // Edited by the learner, or removed: a change.
        fs::write(&guide, "my notes").unwrap();
        assert_eq!(practice.changed_given_files(), vec!["GUIDE.md".to_string()]);
        fs::remove_file(&guide).unwrap();
        assert_eq!(practice.changed_given_files(), vec!["GUIDE.md".to_string()]);
    }
}
