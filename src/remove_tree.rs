//! Removing a directory that learner code wrote in, whatever it made there.
//!
//! A test's scratch directory may hold a chain of directories thousands deep (a removal that recurses, or
//! holds a descriptor per level, runs out of stack or descriptors), directories with every permission
//! taken away (`chmod 000`: a grader that is not root can neither list nor empty them), and links to
//! anywhere. This removal follows no link, gives each directory back its owner's rights before it opens
//! it, and never goes deeper than one level: every directory found below the top is first moved up to
//! the top (a rename within the tree), so a chain of any depth becomes a row of siblings. It holds at
//! most two directories open and a bounded batch of names at a time.

use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Names read from a directory at a time: its entries are acted on, then it is read again.
const BATCH: usize = 1024;

/// Removes `path` and everything under it. A `path` that is already gone is fine.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    // The top is a directory the grader made; its mode may have been taken away from inside.
    if let Err(rustix::io::Errno::NOENT) = rustix::fs::chmod(path, Mode::RWXU) {
        return Ok(());
    }
    let top = open_dir(rustix::fs::CWD, path.as_os_str())?;
    let mut moved = Moved::new();
    loop {
        let batch = read_batch(&top)?;
        if batch.is_empty() {
            break;
        }
        let mut pending = Vec::new();
        for (name, kind) in batch {
            if kind == FileType::Directory {
                let _ = rustix::fs::chmodat(&top, name.as_c_str(), Mode::RWXU, AtFlags::empty());
                pending.push(name);
            } else {
                remove_entry(&top, &name)?;
            }
        }
        // Each directory is emptied with its subdirectories moved up beside it, and those in turn.
        while let Some(name) = pending.pop() {
            if let Ok(dir) = open_dir(&top, name.as_c_str()) {
                empty_into(&dir, &top, &mut moved, &mut pending)?;
            }
            match rustix::fs::unlinkat(&top, name.as_c_str(), AtFlags::REMOVEDIR) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    drop(top);
    Ok(rustix::fs::rmdir(path)?)
}

/// Empties `dir`: removes its files, and moves each subdirectory (its rights restored) to `top` under a
/// fresh name, which joins `pending`.
fn empty_into(
    dir: &OwnedFd,
    top: &OwnedFd,
    moved: &mut Moved,
    pending: &mut Vec<CString>,
) -> io::Result<()> {
    loop {
        let batch = read_batch(dir)?;
        if batch.is_empty() {
            return Ok(());
        }
        for (name, kind) in batch {
            if kind != FileType::Directory {
                remove_entry(dir, &name)?;
                continue;
            }
            let _ = rustix::fs::chmodat(dir, name.as_c_str(), Mode::RWXU, AtFlags::empty());
            pending.push(moved.up(dir, &name, top)?);
        }
    }
}

/// Fresh names at the top for the directories moved there: the learner cannot guess them ahead.
struct Moved {
    prefix: String,
    next: u64,
}

impl Moved {
    fn new() -> Moved {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Moved {
            prefix: format!(".pi-course-rm-{}-{nanos}-", std::process::id()),
            next: 0,
        }
    }

    /// Moves directory `name` of `dir` to `top`; returns its new name.
    fn up(&mut self, dir: &OwnedFd, name: &CString, top: &OwnedFd) -> io::Result<CString> {
        let mut last = None;
        for _ in 0..16 {
            let fresh =
                CString::new(format!("{}{}", self.prefix, self.next)).expect("no NUL in a number");
            self.next += 1;
            // `RENAME_NOREPLACE` would be neater, but not every kernel and file system has it; a name
            // taken already fails or (an empty directory) is replaced, and either way nothing is lost.
            match rustix::fs::renameat(dir, name.as_c_str(), top, fresh.as_c_str()) {
                Ok(()) => return Ok(fresh),
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or_else(|| io::Error::other("rename"), io::Error::from))
    }
}

/// Opens a directory of `at` without following a link.
fn open_dir(at: impl std::os::fd::AsFd, name: impl rustix::path::Arg) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(at, name, flags, Mode::empty())?)
}

/// Up to [`BATCH`] entries of `dir` (never `.` or `..`), each with its type (a link is a link).
fn read_batch(dir: &OwnedFd) -> io::Result<Vec<(CString, FileType)>> {
    // A descriptor of its own, read from the start: entries acted on since the last batch are gone.
    let fresh = open_dir(dir, c".")?;
    let mut entries = rustix::fs::Dir::read_from(&fresh)?;
    let mut batch = Vec::new();
    while batch.len() < BATCH {
        let Some(entry) = entries.read() else { break };
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => {
                let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
                FileType::from_raw_mode(stat.st_mode)
            }
            kind => kind,
        };
        batch.push((name.to_owned(), kind));
    }
    Ok(batch)
}

/// Removes a file, link, FIFO or socket `name` of `dir`; one already gone is fine.
fn remove_entry(dir: &OwnedFd, name: &CString) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name.as_c_str(), AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn deep_chains_locked_directories_and_links_all_go_and_nothing_outside() {
        let outside = tempfile::tempdir().unwrap();
        let kept = outside.path().join("kept");
        fs::create_dir(&kept).unwrap();
        fs::write(kept.join("file"), "mine").unwrap();

        let root = outside.path().join("scratch");
        fs::create_dir(&root).unwrap();
        // 1,500 levels, made relative to each other (a path that long is past PATH_MAX).
        let mut dir = open_dir(rustix::fs::CWD, root.as_os_str()).unwrap();
        for _ in 0..1500 {
            rustix::fs::mkdirat(&dir, c"d", Mode::RWXU).unwrap();
            dir = open_dir(&dir, c"d").unwrap();
        }
        rustix::fs::openat(
            &dir,
            c"deepest",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::RUSR,
        )
        .unwrap();
        drop(dir);
        let locked = root.join("locked");
        fs::create_dir_all(locked.join("inner")).unwrap();
        fs::write(locked.join("inner/file"), "x").unwrap();
        fs::set_permissions(locked.join("inner"), fs::Permissions::from_mode(0o000)).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        std::os::unix::fs::symlink(&kept, root.join("link")).unwrap();
        for i in 0..(BATCH + 10) {
            fs::write(root.join(format!("f{i}")), "").unwrap();
        }
        fs::set_permissions(&root, fs::Permissions::from_mode(0o000)).unwrap();

        remove_tree(&root).unwrap();
        assert!(!root.exists());
        assert_eq!(fs::read_to_string(kept.join("file")).unwrap(), "mine");
        remove_tree(&root).unwrap();
    }
}
