//! The shared build cache: where grading builds, so that every practice directory of a chapter shares one
//! incremental build and one cargo target directory.
//!
//! ```text
//! <cache>/work/<id>-<hash>/slot-<n>/       a build directory: given files + the editable files last graded
//! <cache>/work/<id>-<hash>/slot-<n>.lock   held by the grade that uses that slot
//! <cache>/work/<id>-<hash>/slot-<n>.occupant   whose build the slot holds (grade/occupant.rs)
//! <cache>/target/<id>-<hash>/slot-<n>/     that slot's cargo target directory
//! <cache>/cargo-home/                      every build's CARGO_HOME (track/rust/toolchain.rs)
//! ```
//!
//! `<id>-<hash>` names a chapter and one version of its given files. Each such key has a few *slots*:
//! build directories that keep their incremental state between grades. A grade takes the free slot whose
//! last-graded editable files are most like the ones it grades, so a learner's re-grade lands where their
//! previous version was built (an edit recompiles little), and a fresh practice directory lands where the
//! skeleton was last built (nothing to recompile). A new slot starts from a copy of a built one's target,
//! so dependencies compile once per key, never once per practice directory.
//!
//! Why one target directory per slot, not one for all: cargo leaves the directory a package lives in out
//! of its artifact names and decides freshness by modification times. Two build directories sharing a
//! target would share artifacts, and one whose files are older than the other's last build would be judged
//! up to date: its grade would run the other's test binary. Within one slot every changed file is
//! rewritten, so its modification time only moves forward.
//!
//! `<cache>` is `PI_COURSE_CACHE` if set, else the platform's cache directory + `/pi-course`.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::catalog::Chapter;

pub const ENV: &str = "PI_COURSE_CACHE";

/// The default cache root, when neither `--cache` nor `PI_COURSE_CACHE` (read by the command line) names
/// one: the platform's cache directory by `dirs` (`$XDG_CACHE_HOME` or `~/.cache` on Linux,
/// `~/Library/Caches` on macOS), followed by `pi-course`. `None` when there is none.
pub fn default_root() -> Option<PathBuf> {
    dirs::cache_dir().map(|base| base.join("pi-course"))
}

/// The name of a chapter's build directory: `<id>-<12 hex>` (`<id>.<track>-<12 hex>` for a track other
/// than Rust), the hash taken over the given files (paths and bytes) and the editable paths. Equal given files, equal directory, whichever practice directory.
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
    // A track's builds are kept apart from the chapter's other tracks' (and never removed as their stale
    // versions, see `remove_stale`): `07-<hash>` for Rust, `07.typescript-<hash>`.
    match chapter.track {
        crate::catalog::Track::Rust => format!("{}-{hex}", chapter.id),
        track => format!("{}.{}-{hex}", chapter.id, track.name()),
    }
}

/// Build slots per key for `grade` and `watch`: one for the practice directory a learner works in, one
/// for the next (a fresh start, another learner). Each costs a target directory (about 100 MB for
/// chapter 07). `grade-class --jobs N` uses N slots (at least this many), one per grade running at once.
pub const SLOTS: usize = 2;

/// A build directory, locked for as long as this value lives.
#[derive(Debug)]
pub struct BuildDir {
    pub path: PathBuf,
    /// Its own CARGO_TARGET_DIR.
    pub target: PathBuf,
    _lock: File,
}

/// How well a slot fits the files about to be graded, best first: identical files (nothing to build);
/// a close version, most lines shared (a learner's previous grade: an incremental build redoes little);
/// an unused slot (so a different line of work does not evict a learner's slot); and last a different
/// version, by lines shared (that build redoes most of the loop and its tests).
fn fit(slot: &Path, editable: &[(&str, &[u8])]) -> (u8, usize) {
    let (mut shared, mut lines) = (0, 0);
    let mut identical = true;
    for (path, bytes) in editable {
        let Ok(old) = fs::read(slot.join(path)) else {
            return (1, 0);
        };
        identical &= old == *bytes;
        shared += shared_lines(&old, bytes);
        lines += bytes.split(|&c| c == b'\n').count();
    }
    let tier = if identical {
        3
    } else if shared * 10 >= lines * 9 {
        2
    } else {
        0
    };
    (tier, shared)
}

/// How many lines `a` and `b` have in common, counted as multisets.
pub fn shared_lines(a: &[u8], b: &[u8]) -> usize {
    let mut counts = std::collections::HashMap::new();
    for line in a.split(|&c| c == b'\n') {
        *counts.entry(line).or_insert(0usize) += 1;
    }
    b.split(|&c| c == b'\n')
        .filter(|line| match counts.get_mut(line) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count()
}

fn open_lock(path: &Path) -> io::Result<File> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// Locks and returns the best-fitting free slot among the first `slots` of build key `key` under `root`
/// for the `editable` files (path, bytes) about to be graded. When every slot is busy, calls `on_wait`
/// once and waits for the best-fitting one.
pub async fn acquire(
    root: &Path,
    key: &str,
    editable: &[(&str, &[u8])],
    slots: usize,
    on_wait: impl FnOnce(),
) -> io::Result<BuildDir> {
    let slots = slots.max(1);
    let work = root.join("work").join(key);
    let targets = root.join("target").join(key);
    fs::create_dir_all(&work)?;
    fs::create_dir_all(&targets)?;
    tag(root);

    let mut order: Vec<usize> = (0..slots).collect();
    let fits: Vec<(u8, usize)> = order
        .iter()
        .map(|n| fit(&work.join(format!("slot-{n}")), editable))
        .collect();
    order.sort_by_key(|&n| std::cmp::Reverse(fits[n]));

    let mut chosen = None;
    for &n in &order {
        let lock = open_lock(&work.join(format!("slot-{n}.lock")))?;
        match lock.try_lock() {
            Ok(()) => {
                chosen = Some((n, lock));
                break;
            }
            Err(TryLockError::WouldBlock) => continue,
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
    let (n, lock) = match chosen {
        Some(found) => found,
        None => {
            on_wait();
            let n = order[0];
            let lock = open_lock(&work.join(format!("slot-{n}.lock")))?;
            let lock = tokio::task::spawn_blocking(move || lock.lock().map(|()| lock))
                .await
                .map_err(io::Error::other)??;
            (n, lock)
        }
    };

    let path = work.join(format!("slot-{n}"));
    let target = targets.join(format!("slot-{n}"));
    fs::create_dir_all(&path)?;
    if !is_built(&target) {
        seed(&work, &targets, n, &target);
    }
    fs::create_dir_all(&target)?;
    remove_stale(root, key);
    Ok(BuildDir {
        path,
        target,
        _lock: lock,
    })
}

/// Has this slot's target been built into (dependencies compiled)?
pub fn is_built(target: &Path) -> bool {
    target.join("debug").is_dir()
}

/// The slot numbers of a key that exist on disk, by their lock files.
fn existing_slots(work: &Path) -> Vec<usize> {
    let mut found: Vec<usize> = fs::read_dir(work)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("slot-")?
                .strip_suffix(".lock")?
                .parse()
                .ok()
        })
        .collect();
    found.sort_unstable();
    found
}

/// Makes sure slots `0..slots` of `key` each have a built target, copying one that has: what a class
/// grade does before it starts `slots` grades at once, so that none of them compiles the dependencies
/// again. A slot in use is left as it is. Returns how many slots are built now.
pub fn ensure_built(root: &Path, key: &str, slots: usize) -> io::Result<usize> {
    let work = root.join("work").join(key);
    let targets = root.join("target").join(key);
    fs::create_dir_all(&work)?;
    fs::create_dir_all(&targets)?;
    for n in 0..slots {
        let target = targets.join(format!("slot-{n}"));
        if is_built(&target) {
            continue;
        }
        let lock = open_lock(&work.join(format!("slot-{n}.lock")))?;
        if lock.try_lock().is_err() {
            continue;
        }
        fs::create_dir_all(work.join(format!("slot-{n}")))?;
        seed(&work, &targets, n, &target);
    }
    Ok((0..slots)
        .filter(|n| is_built(&targets.join(format!("slot-{n}"))))
        .count())
}

/// Starts slot `n`'s empty target as a copy of another slot's built one (when that slot is free), so a
/// new slot does not compile the dependencies again. Best effort: on any failure the partial copy is
/// removed and the slot simply builds from scratch.
fn seed(work: &Path, targets: &Path, n: usize, target: &Path) {
    for m in existing_slots(work).into_iter().filter(|&m| m != n) {
        let from = targets.join(format!("slot-{m}"));
        if !is_built(&from) {
            continue;
        }
        let Ok(lock) = open_lock(&work.join(format!("slot-{m}.lock"))) else {
            continue;
        };
        if lock.try_lock().is_err() {
            continue;
        }
        let _ = fs::remove_dir_all(target);
        if copy_tree(&from, target).is_ok() {
            return;
        }
        let _ = fs::remove_dir_all(target);
    }
}

/// Copies the tree `from` to `to`, keeping modification times: cargo judges freshness by them.
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.map_err(io::Error::other)?;
        let rel = entry.path().strip_prefix(from).map_err(io::Error::other)?;
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            fs::create_dir_all(&dest)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &dest)?;
            let modified = entry.metadata().map_err(io::Error::other)?.modified()?;
            File::options()
                .write(true)
                .open(&dest)?
                .set_modified(modified)?;
        } else if kind.is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(fs::read_link(entry.path())?, &dest)?;
        }
    }
    Ok(())
}

/// Removes the slots (and targets) of the same chapter made for other versions of its given files, i.e.
/// by other pi-course versions, unless a grade is using one of them right now. Keeps the cache from
/// growing by one build per upgrade. Best effort: whatever cannot be removed stays.
fn remove_stale(root: &Path, key: &str) {
    let Some((chapter, _)) = key.split_once('-') else {
        return;
    };
    let Ok(entries) = fs::read_dir(root.join("work")) else {
        return;
    };
    for entry in entries.flatten() {
        let other = entry.file_name().to_string_lossy().into_owned();
        if other == key || other.split_once('-').map(|(c, _)| c) != Some(chapter) {
            continue;
        }
        // Hold every slot lock of that key while removing it; give up if any is in use.
        let slots = existing_slots(&entry.path());
        let locks: Vec<File> = slots
            .iter()
            .filter_map(|n| open_lock(&entry.path().join(format!("slot-{n}.lock"))).ok())
            .collect();
        if locks.len() == slots.len() && locks.iter().all(|l| l.try_lock().is_ok()) {
            let _ = fs::remove_dir_all(root.join("target").join(&other));
            let _ = fs::remove_dir_all(entry.path());
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
        let ch = &Catalog::chapter_07();
        let key = build_key(ch);
        assert_eq!(key, build_key(ch));
        assert!(key.starts_with("07-"));
        assert_eq!(key.len(), "07-".len() + 12);
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    const FILE: &str = "src/agent_loop.rs";

    /// Acquires a slot for `text`, writes `text` into it as a grade would, and releases it.
    async fn grade_in_slot(root: &Path, text: &str) -> PathBuf {
        let slot = acquire(root, "07-x", &[(FILE, text.as_bytes())], SLOTS, || {})
            .await
            .unwrap();
        fs::create_dir_all(slot.path.join("src")).unwrap();
        fs::write(slot.path.join(FILE), text).unwrap();
        slot.path.clone()
    }

    /// Acquires a slot under `key` without editable files, never expecting to wait.
    async fn empty_slot(root: &Path, key: &str, slots: usize) -> BuildDir {
        acquire(root, key, &[], slots, || {}).await.unwrap()
    }

    #[test]
    fn a_grade_takes_the_slot_that_fits_its_files() {
        let root = tempfile::tempdir().unwrap();
        let work: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let skeleton = "todo\n".repeat(40);
        runtime().block_on(async {
            let first = grade_in_slot(root.path(), &work).await;
            // A different line of work takes the unused slot instead of evicting the first.
            let fresh = grade_in_slot(root.path(), &skeleton).await;
            assert_ne!(first, fresh);
            // A one-line edit goes back to where its previous version was built...
            let edited = work.replacen("line 7", "line seven", 1);
            assert_eq!(grade_in_slot(root.path(), &edited).await, first);
            // ...and identical files to the slot that built them.
            assert_eq!(grade_in_slot(root.path(), &skeleton).await, fresh);
        });
    }

    #[test]
    fn a_grade_waits_only_when_every_slot_is_busy() {
        let root = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let mut held = Vec::new();
            for _ in 0..SLOTS {
                let slot = acquire(root.path(), "07-x", &[], SLOTS, || {
                    panic!("a slot was free")
                })
                .await
                .unwrap();
                assert!(held.iter().all(|h: &BuildDir| h.path != slot.path));
                held.push(slot);
            }
            // The next grade reports that it waits (the gate), and only then is a slot released.
            let (waiting, waited) = tokio::sync::oneshot::channel();
            let next = acquire(root.path(), "07-x", &[], SLOTS, move || {
                waiting.send(()).unwrap()
            });
            let releaser = async {
                waited.await.expect("the grade reported waiting");
                held.clear();
            };
            let (next, ()) = tokio::join!(next, releaser);
            assert!(next.is_ok());
        });
    }

    #[test]
    fn a_new_slot_starts_from_a_copy_of_a_built_target() {
        let root = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let first = grade_in_slot(root.path(), "one line of work\n").await;
            let built = root
                .path()
                .join("target/07-x/slot-0/debug/deps/libtokio.rlib");
            assert!(first.ends_with("slot-0"));
            fs::create_dir_all(built.parent().unwrap()).unwrap();
            fs::write(&built, b"compiled").unwrap();
            let then = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
            File::options()
                .write(true)
                .open(&built)
                .unwrap()
                .set_modified(then)
                .unwrap();

            let other = acquire(root.path(), "07-x", &[(FILE, b"another\n")], SLOTS, || {})
                .await
                .unwrap();
            assert!(other.path.ends_with("slot-1"));
            let copy = other.target.join("debug/deps/libtokio.rlib");
            assert_eq!(fs::read(&copy).unwrap(), b"compiled");
            assert_eq!(
                fs::metadata(&copy).unwrap().modified().unwrap(),
                then,
                "mtime kept"
            );
        });
    }

    #[test]
    fn a_class_uses_as_many_slots_as_grades_at_once_each_seeded_from_a_built_one() {
        let root = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let mut held = Vec::new();
            for _ in 0..4 {
                let slot = acquire(root.path(), "07-x", &[], 4, || panic!("a slot was free"))
                    .await
                    .unwrap();
                assert!(held.iter().all(|h: &BuildDir| h.path != slot.path));
                held.push(slot);
            }
            // Only slot 0 has compiled anything.
            let built = held[0].target.join("debug/deps/libtokio.rlib");
            fs::create_dir_all(built.parent().unwrap()).unwrap();
            fs::write(&built, b"compiled").unwrap();
            held.clear();
        });
        assert_eq!(ensure_built(root.path(), "07-x", 4).unwrap(), 4);
        for n in 1..4 {
            let copy = root
                .path()
                .join(format!("target/07-x/slot-{n}/debug/deps/libtokio.rlib"));
            assert_eq!(fs::read(&copy).unwrap(), b"compiled", "slot {n}");
        }
        // `grade` keeps looking at its own two.
        runtime().block_on(async {
            let a = empty_slot(root.path(), "07-x", SLOTS).await;
            let b = empty_slot(root.path(), "07-x", SLOTS).await;
            for slot in [&a, &b] {
                let n: usize = slot
                    .path
                    .to_str()
                    .unwrap()
                    .rsplit('-')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(n < SLOTS, "{}", slot.path.display());
            }
        });
    }

    #[test]
    fn other_versions_of_a_chapter_are_removed_unless_in_use() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        runtime().block_on(async {
            let old = empty_slot(root.path(), "07-old", 3).await;
            let old_too = empty_slot(root.path(), "07-old", 3).await;
            let busy = empty_slot(root.path(), "07-busy", SLOTS).await;
            let other_chapter = empty_slot(root.path(), "08-old", SLOTS).await;
            drop(old_too);
            drop(old);
            drop(other_chapter);
            let new = empty_slot(root.path(), "07-new", SLOTS).await;
            assert!(new.path.is_dir() && new.target.is_dir());
            assert!(
                !work.join("07-old").exists(),
                "an unused older version is removed"
            );
            assert!(
                !root.path().join("target/07-old").exists(),
                "and its targets"
            );
            assert!(work.join("07-busy").is_dir(), "a version in use stays");
            assert!(work.join("08-old").is_dir(), "another chapter's stays");
            assert_ne!(new.target, busy.target, "each slot has its own target");
        });
    }

    #[test]
    fn one_track_never_removes_the_other_tracks_builds() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let catalog = crate::catalog::Catalog::embedded();
        let rust = catalog.chapter("07").unwrap().clone();
        let ts = rust.with_track(crate::catalog::Track::TypeScript).unwrap();
        let (rust_key, ts_key) = (build_key(&rust), build_key(&ts));
        assert!(rust_key.starts_with("07-") && ts_key.starts_with("07.typescript-"));
        runtime().block_on(async {
            drop(empty_slot(root.path(), &rust_key, SLOTS).await);
            drop(empty_slot(root.path(), &ts_key, SLOTS).await);
            drop(empty_slot(root.path(), &rust_key, SLOTS).await);
        });
        assert!(work.join(&rust_key).is_dir() && work.join(&ts_key).is_dir());
    }
}
