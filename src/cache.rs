//! The shared build cache: where grading builds, so that every practice directory of a chapter shares one
//! incremental build and one cargo target directory.
//!
//! ```text
//! <cache>/target/<id>-<hash>/     the CARGO_TARGET_DIR of that build directory
//! <cache>/work/<id>-<hash>/       a build directory per chapter and set of given files
//! <cache>/work/<id>-<hash>.lock   held by the grade that uses that build directory
//! ```
//!
//! Why one target directory per build directory, not one for all: cargo leaves the directory a package
//! lives in out of its artifact names and decides freshness by modification times. Two build directories
//! sharing a target would share artifacts, and a build directory whose files are older than the other's
//! last build would be judged up to date: its grade would run the other's test binary. Within one build
//! directory every changed file is rewritten, so its modification time always moves forward.
//!
//! `<cache>` is `PI_COURSE_CACHE` if set, else the platform's cache directory + `/pi-course`.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::catalog::Chapter;

pub const ENV: &str = "PI_COURSE_CACHE";

/// The cache root: `PI_COURSE_CACHE`, else `$XDG_CACHE_HOME` or `~/.cache` (Linux and other Unix),
/// `~/Library/Caches` (macOS), followed by `pi-course`. `None` when neither is known.
pub fn root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let base = if cfg!(target_os = "macos") {
        home?.join("Library/Caches")
    } else {
        match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => dir,
            _ => home?.join(".cache"),
        }
    };
    Some(base.join("pi-course"))
}

/// The name of a chapter's build directory: `<id>-<12 hex>`, the hash taken over the given files (paths
/// and bytes) and the editable paths. Equal given files, equal directory, whichever practice directory.
pub fn build_key(chapter: &Chapter) -> String {
    let mut hash = Sha256::new();
    for f in chapter.given_files() {
        hash.update((f.path.len() as u64).to_le_bytes());
        hash.update(f.path.as_bytes());
        hash.update((f.bytes.len() as u64).to_le_bytes());
        hash.update(f.bytes);
    }
    for e in &chapter.editable {
        hash.update(b"editable\0");
        hash.update(e.as_bytes());
    }
    let hex: String = hash
        .finalize()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}-{hex}", chapter.id)
}

/// A build directory, locked for as long as this value lives.
#[derive(Debug)]
pub struct BuildDir {
    pub path: PathBuf,
    /// Its CARGO_TARGET_DIR.
    pub target: PathBuf,
    _lock: File,
}

/// Locks and returns the build directory `key` under `root`, creating it if needed. Calls `on_wait` once
/// if another grade holds it, then waits for that grade to finish.
pub async fn acquire(root: &Path, key: &str, on_wait: impl FnOnce()) -> io::Result<BuildDir> {
    let work = root.join("work");
    fs::create_dir_all(&work)?;
    let target = root.join("target").join(key);
    fs::create_dir_all(&target)?;
    tag(root);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(work.join(format!("{key}.lock")))?;
    let lock = match lock.try_lock() {
        Ok(()) => lock,
        Err(TryLockError::WouldBlock) => {
            on_wait();
            tokio::task::spawn_blocking(move || lock.lock().map(|()| lock))
                .await
                .map_err(io::Error::other)??
        }
        Err(TryLockError::Error(e)) => return Err(e),
    };
    let path = work.join(key);
    fs::create_dir_all(&path)?;
    remove_stale(root, key);
    Ok(BuildDir {
        path,
        target,
        _lock: lock,
    })
}

/// Removes the build directories (and their targets) of the same chapter made by other versions of the
/// given files, i.e. by other pi-course versions, unless a grade is using them right now. Keeps the cache
/// from growing by one build per upgrade. Best effort: whatever cannot be removed stays.
fn remove_stale(root: &Path, key: &str) {
    let Some((chapter, _)) = key.split_once('-') else {
        return;
    };
    let work = root.join("work");
    let Ok(entries) = fs::read_dir(&work) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(other) = name.strip_suffix(".lock") else {
            continue;
        };
        if other == key || other.split_once('-').map(|(c, _)| c) != Some(chapter) {
            continue;
        }
        let Ok(lock) = File::options().write(true).open(entry.path()) else {
            continue;
        };
        if lock.try_lock().is_ok() {
            let _ = fs::remove_dir_all(work.join(other));
            let _ = fs::remove_dir_all(root.join("target").join(other));
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Marks the cache as such for backup tools (<https://bford.info/cachedir/>).
fn tag(root: &Path) {
    let tag = root.join("CACHEDIR.TAG");
    if !tag.exists() {
        let _ = fs::write(
            tag,
            "Signature: 8a477f597d28d172789f06886806bc55\n# pi-course build cache: safe to delete.\n",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn key_is_stable_and_names_the_chapter() {
        let catalog = Catalog::embedded();
        let ch = catalog.chapter("07").unwrap();
        let key = build_key(ch);
        assert_eq!(key, build_key(ch));
        assert!(key.starts_with("07-"));
        assert_eq!(key.len(), "07-".len() + 12);
    }

    #[test]
    fn a_second_acquire_waits_for_the_first() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let first = acquire(root.path(), "07-x", || panic!("no wait expected"))
                .await
                .unwrap();
            assert!(first.path.is_dir());
            // The second grade reports that it waits (the gate), and only then is the first released.
            let (waiting, waited) = tokio::sync::oneshot::channel();
            let second = acquire(root.path(), "07-x", move || waiting.send(()).unwrap());
            let releaser = async {
                waited.await.expect("the second acquire reported waiting");
                drop(first);
            };
            let (second, ()) = tokio::join!(second, releaser);
            assert!(second.is_ok());
        });
    }

    #[test]
    fn other_versions_of_a_chapter_are_removed_unless_in_use() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        rt.block_on(async {
            let old = acquire(root.path(), "07-old", || {}).await.unwrap();
            let busy = acquire(root.path(), "07-busy", || {}).await.unwrap();
            let other_chapter = acquire(root.path(), "08-old", || {}).await.unwrap();
            drop(old);
            drop(other_chapter);
            let new = acquire(root.path(), "07-new", || {}).await.unwrap();
            assert!(new.path.is_dir() && new.target.is_dir());
            assert!(
                !work.join("07-old").exists(),
                "an unused older build directory is removed"
            );
            assert!(
                !root.path().join("target/07-old").exists(),
                "and its target"
            );
            assert!(
                work.join("07-busy").is_dir(),
                "a build directory in use stays"
            );
            assert!(
                work.join("08-old").is_dir(),
                "another chapter's build directory stays"
            );
            assert_ne!(
                new.target, busy.target,
                "each build directory has its own target"
            );
        });
    }
}
