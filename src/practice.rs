//! Making a fresh, isolated practice directory (`pi-course practice`, in `crate::commands::practice`).
//!
//! The directory is written whole into a hidden staging directory on the same file system and only then
//! put in place, by one `rename`. No one (the learner, an editor, `pi-course grade`) ever sees a half-made
//! practice directory: any failure removes the staging directory and the disk is left as it was.
//!
//! Files are not fsync'ed: the promise is "whole or nothing" against failures and interrupts of this
//! process, which the rename gives; surviving a power cut would cost more than the 30 ms budget.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::catalog::{Catalog, Chapter, Track};
use crate::error::{Result, UserError};
use crate::i18n::Lang;
use crate::metadata::{self, Metadata};

/// Where the practice directory goes, once DIR has been checked.
pub enum Target {
    /// DIR does not exist: build a hidden sibling in `parent`, then rename it to DIR.
    New { dir: PathBuf, parent: PathBuf },
    /// DIR is an existing empty directory: fill it rather than rename over it. Renaming over it would
    /// replace the directory the learner made (its permissions, and the shell that already `cd`ed into it,
    /// as in `mkdir p && cd p && pi-course practice 07 .`, would be left in a deleted directory). The
    /// staging directory is made inside DIR, so only DIR has to be writable and the renames never cross
    /// a file system (DIR may be a mount point). See [`move_entries`] for how this stays all or nothing.
    Empty { dir: PathBuf },
}

impl Target {
    /// Decides where the directory goes, or says why DIR cannot be used. Writes nothing.
    pub fn check(lang: Lang, chapter: &Chapter, dir: &Path) -> Result<Target> {
        let shown = dir.display();
        let start_over = || {
            let suggestion = free_sibling(chapter, dir);
            lang.t(
                "fix-practice-new-dir",
                &[
                    ("chapter", &chapter.id),
                    ("suggestion", &shell_quote(&suggestion.to_string_lossy())),
                ],
            )
        };
        match fs::symlink_metadata(dir) {
            // Exists (a symlink counts by what it points to).
            Ok(_) => match fs::metadata(dir) {
                Ok(meta) if meta.is_dir() => {
                    match fs::read_dir(dir).map(|mut e| e.next().is_none()) {
                        Ok(true) => Ok(Target::Empty {
                            dir: dir.to_path_buf(),
                        }),
                        Ok(false) => Err(UserError::new(
                            lang.t("practice-dir-not-empty", &[("dir", &shown)]),
                        )
                        .with_fix(start_over())),
                        Err(e) => Err(no_access(lang, chapter, dir, &e)),
                    }
                }
                Ok(meta) if meta.is_file() => Err(UserError::new(
                    lang.t("practice-dir-is-file", &[("dir", &shown)]),
                )
                .with_fix(start_over())),
                _ => Err(
                    UserError::new(lang.t("practice-dir-not-dir", &[("dir", &shown)]))
                        .with_fix(start_over()),
                ),
            },
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                let parent = parent_of(dir);
                let parent_shown = parent.display();
                match fs::metadata(&parent) {
                    Ok(meta) if meta.is_dir() => Ok(Target::New {
                        dir: dir.to_path_buf(),
                        parent,
                    }),
                    Ok(_) => Err(UserError::new(
                        lang.t("practice-parent-not-dir", &[("parent", &parent_shown)]),
                    )
                    .with_fix(lang.t("fix-practice-existing-dir", &[]))),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                        ) =>
                    {
                        Err(UserError::new(
                            lang.t("practice-parent-missing", &[("parent", &parent_shown)]),
                        )
                        .with_fix(lang.t(
                            "fix-practice-parent-missing",
                            &[("parent", &shell_quote(&parent.to_string_lossy()))],
                        )))
                    }
                    Err(e) => Err(no_access(lang, chapter, &parent, &e)),
                }
            }
            Err(e) => Err(no_access(lang, chapter, dir, &e)),
        }
    }
}

/// How making the directory failed.
pub enum Failure {
    /// The place cannot be written to: bad input, nothing was changed.
    Input(UserError),
    /// The file system failed part way. `leftover` is the staging directory if it could not be removed.
    Io {
        error: io::Error,
        leftover: Option<PathBuf>,
    },
}

/// Builds the practice directory in a staging directory and puts it in place, or leaves nothing.
pub fn make(
    lang: Lang,
    chapter: &Chapter,
    target: &Target,
    extra: &[(&str, Vec<u8>)],
) -> std::result::Result<(), Failure> {
    let (staging_in, prefix) = match target {
        Target::New { dir, parent } => {
            let name = dir
                .file_name()
                .map_or(Cow::Borrowed(chapter.default_dir.as_str()), |n| {
                    n.to_string_lossy()
                });
            (parent.as_path(), format!(".{name}.tmp-"))
        }
        Target::Empty { dir } => (dir.as_path(), ".pi-course-staging-".to_string()),
    };
    // Declared before the staging directory, so it is dropped after it: interrupts wait until the staging
    // directory has been renamed into place or removed.
    let _interrupts = interrupts::Deferred::new();
    let staging = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(staging_in)
        // Nothing was made yet: a place that takes no new directory (read-only, or like /proc) is bad
        // input, said without the staging directory's name.
        .map_err(|e| {
            // tempfile adds the staging directory's path to the system's error ("... at path ..."): the
            // system's error alone.
            let text = e.to_string();
            let error = io::Error::other(text.split(" at path ").next().unwrap_or_default());
            Failure::Input(no_access(lang, chapter, staging_in, &error))
        })?;
    let placed = write_files(staging.path(), chapter, lang, extra).and_then(|()| match target {
        Target::New { dir, .. } => fs::rename(staging.path(), dir),
        Target::Empty { dir } => move_entries(staging.path(), dir),
    });
    match placed {
        Ok(()) => {
            match target {
                // The staging directory is DIR now: keep it.
                Target::New { .. } => drop(staging.keep()),
                // Emptied by the moves. Removing an empty directory we just made cannot reasonably fail,
                // and if it did the practice directory is still whole, so it is not worth failing for.
                Target::Empty { .. } => drop(staging.close()),
            }
            Ok(())
        }
        Err(error) => {
            let path = staging.path().to_path_buf();
            let leftover = staging.close().err().map(|_| path);
            Err(Failure::Io { error, leftover })
        }
    }
}

/// Writes the given files, the skeleton in `lang`, the `extra` files (path, bytes) and, last, the metadata
/// under `root`: a practice directory, as `practice` makes one (and `grade-class` for a submitted file).
pub fn write_files(
    root: &Path,
    chapter: &Chapter,
    lang: Lang,
    extra: &[(&str, Vec<u8>)],
) -> io::Result<()> {
    let metadata = Metadata::for_chapter(chapter, lang).to_toml();
    let files = chapter
        .given_files()
        .into_iter()
        .chain(chapter.skeleton_files_in(lang))
        .map(|f| (f.path, f.bytes))
        .chain(extra.iter().map(|(path, bytes)| (*path, bytes.as_slice())))
        .chain([(metadata::FILE, metadata.as_bytes())]);
    let with_path = |rel: &str, e: io::Error| io::Error::new(e.kind(), format!("{rel}: {e}"));
    let mut made: HashSet<PathBuf> = HashSet::new();
    for (rel, bytes) in files {
        let path = rel
            .split('/')
            .fold(root.to_path_buf(), |path, part| path.join(part));
        if let Some(parent) = path.parent() {
            if !made.contains(parent) {
                fs::create_dir_all(parent).map_err(|e| with_path(rel, e))?;
                made.insert(parent.to_path_buf());
            }
        }
        fs::write(&path, bytes).map_err(|e| with_path(rel, e))?;
    }
    Ok(())
}

/// Moves everything from `staging` up into the empty `dir`, the metadata last: until it arrives `dir` is
/// not a practice directory, so `grade` refuses it. If a move fails, what was moved goes back into
/// `staging` (which the caller then removes), leaving `dir` empty as it was.
fn move_entries(staging: &Path, dir: &Path) -> io::Result<()> {
    let mut names: Vec<OsString> = fs::read_dir(staging)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<io::Result<_>>()?;
    names.sort_by_key(|name| name.as_os_str() == OsStr::new(metadata::DIR));
    let mut moved: Vec<OsString> = Vec::new();
    for name in names {
        if let Err(e) = fs::rename(staging.join(&name), dir.join(&name)) {
            for name in moved.iter().rev() {
                let path = dir.join(name);
                if fs::rename(&path, staging.join(name)).is_err() {
                    let _ = fs::remove_dir_all(&path).or_else(|_| fs::remove_file(&path));
                }
            }
            return Err(e);
        }
        moved.push(name);
    }
    Ok(())
}

/// Ctrl-C (or a closed terminal, or `kill`) while the directory is being made must not leave half of it.
/// For the few milliseconds from creating the staging directory to its rename (or removal), SIGINT,
/// SIGTERM, SIGHUP and SIGQUIT are blocked rather than handled: the kernel holds a signal that arrives
/// pending, and it takes effect with its usual meaning the moment the mask is restored, when the directory
/// is whole or gone. Blocking needs no handler, no flag to poll and no cleanup running inside a signal
/// handler, and this command is single-threaded, so the thread's mask is the process's. SIGKILL cannot be
/// blocked; it can leave only the hidden staging directory behind, never a half-made DIR.
///
/// SIGXFSZ (a write past `ulimit -f`) is ignored in the same window instead, so such a write fails with
/// EFBIG like any other failed write, and is cleaned up and reported rather than killing the process.
#[cfg(unix)]
mod interrupts {
    pub struct Deferred {
        previous_mask: libc::sigset_t,
        previous_xfsz: libc::sigaction,
    }

    impl Deferred {
        pub fn new() -> Deferred {
            // No crate in the tree masks signals or sets a disposition without `unsafe` (rustix keeps
            // both in its runtime module, for C libraries).
            // SAFETY: sigset_t and sigaction are plain C structs for which all zeroes is a valid value,
            // and each set is emptied by sigemptyset before use. Every pointer is to a local that
            // outlives the call. SIG_IGN installs no handler, so no code runs inside a signal.
            unsafe {
                let mut block: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut block);
                for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                    libc::sigaddset(&mut block, signal);
                }
                let mut previous_mask: libc::sigset_t = std::mem::zeroed();
                libc::pthread_sigmask(libc::SIG_BLOCK, &block, &mut previous_mask);

                let mut ignore: libc::sigaction = std::mem::zeroed();
                ignore.sa_sigaction = libc::SIG_IGN;
                libc::sigemptyset(&mut ignore.sa_mask);
                let mut previous_xfsz: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGXFSZ, &ignore, &mut previous_xfsz);
                Deferred {
                    previous_mask,
                    previous_xfsz,
                }
            }
        }
    }

    impl Drop for Deferred {
        fn drop(&mut self) {
            // SAFETY: restores the mask and the SIGXFSZ action that `new` had the kernel fill in; the
            // pointers are to fields of `self`, and no old value is asked for (null).
            unsafe {
                libc::sigaction(libc::SIGXFSZ, &self.previous_xfsz, std::ptr::null_mut());
                libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous_mask, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(not(unix))]
mod interrupts {
    pub struct Deferred;

    impl Deferred {
        pub fn new() -> Deferred {
            Deferred
        }
    }
}

/// The directory DIR goes in: `.` for a bare name.
fn parent_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A name beside `dir` that is still free: `pi-practice-07-2`, `-3`, ... (`p-2` is followed by `p-3`, not
/// `p-2-2`), or the chapter's default name when `dir` has none, as for `.`. Used wherever a learner is
/// told to start over in a new directory.
pub fn free_sibling(chapter: &Chapter, dir: &Path) -> PathBuf {
    let (parent, base, first) = match dir.file_name() {
        Some(name) => {
            let parent = dir.parent().map(Path::to_path_buf).unwrap_or_default();
            let name = name.to_string_lossy().into_owned();
            // A counter this function added (2 or more, no leading zero: `-07` is a chapter number).
            let base = match name.rsplit_once('-') {
                Some((stem, n))
                    if !stem.is_empty()
                        && !n.starts_with('0')
                        && n.parse::<u32>().is_ok_and(|n| n >= 2) =>
                {
                    stem.to_string()
                }
                _ => name,
            };
            (parent, base, 2)
        }
        None => (PathBuf::new(), chapter.default_dir.clone(), 1),
    };
    let candidate = |n: u32| {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        parent.join(name)
    };
    (first..1000)
        .map(candidate)
        .find(|path| fs::symlink_metadata(path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound))
        .unwrap_or_else(|| candidate(1000))
}

/// `path` cannot be read or written (permissions, a read-only file system).
fn no_access(lang: Lang, chapter: &Chapter, path: &Path, error: &io::Error) -> UserError {
    UserError::new(lang.t(
        "practice-no-access",
        &[("path", &path.display()), ("error", error)],
    ))
    .with_fix(lang.t("fix-practice-elsewhere", &[("chapter", &chapter.id)]))
}

/// The chapter `query` names, in `track`; bad input when there is no such chapter or track.
pub fn chapter_in(catalog: &Catalog, lang: Lang, query: &str, track: Track) -> Result<Chapter> {
    let chapter = catalog
        .chapter(query)
        .ok_or_else(|| unknown_chapter(catalog, lang, query))?;
    chapter.with_track(track).ok_or_else(|| {
        let tracks: Vec<&str> = chapter.tracks().iter().map(|t| t.name()).collect();
        UserError::new(lang.t(
            "practice-unknown-track",
            &[("chapter", &chapter.id), ("track", &track.name())],
        ))
        .with_fix(lang.t("fix-practice-tracks", &[("tracks", &tracks.join(", "))]))
    })
}

fn unknown_chapter(catalog: &Catalog, lang: Lang, query: &str) -> UserError {
    let chapters: Vec<String> = catalog
        .chapters
        .iter()
        .map(|c| format!("  {}  {}", c.id, c.title.get(lang)))
        .collect();
    UserError::new(lang.t("practice-unknown-chapter", &[("chapter", &query)])).with_fix(lang.t(
        "fix-practice-known-chapters",
        &[("chapters", &chapters.join("\n"))],
    ))
}

/// `text` as one word for a POSIX shell: unchanged when that is safe (non-ASCII letters included),
/// otherwise in single quotes.
pub fn shell_quote(text: &str) -> Cow<'_, str> {
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./+,:@%=".contains(c));
    if safe {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("pi-practice-07"), "pi-practice-07");
        assert_eq!(shell_quote("练习/第七章"), "练习/第七章");
        assert_eq!(shell_quote("练习 目录/第七章"), "'练习 目录/第七章'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("~/x"), "'~/x'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn parent_of_a_bare_name_is_the_current_directory() {
        assert_eq!(parent_of(Path::new("pi-practice-07")), PathBuf::from("."));
        assert_eq!(parent_of(Path::new("a/b")), PathBuf::from("a"));
        assert_eq!(parent_of(Path::new("/b")), PathBuf::from("/"));
    }
}
