//! Noticing saves of the editable files.
//!
//! Two sources feed one check. File-system events (the `notify` crate) on the directory holding each
//! editable file arrive within milliseconds; the directory rather than the file, because an editor that
//! saves by writing a temporary file and renaming it over the original replaces the file's inode. Events do
//! not arrive everywhere (network drives, some WSL set-ups, some editors), so the files are also checked
//! every [`POLL`]. Either way a change counts only when a file's content differs from the last check: an
//! event for another file in the directory, or a save that changed nothing, never starts a grade.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::metadata::fingerprint;

/// How often the files are read and compared, events or not.
pub const POLL: Duration = Duration::from_millis(500);

/// Where change notices come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// File-system events, and polling as a safety net.
    Events,
    /// Polling only, because `--poll` asked for it.
    Polling,
    /// Polling only, because file-system events could not be set up (the error says why).
    PollingFallback(String),
}

/// The editable files of one practice directory and what they last held.
pub struct Changes {
    files: Vec<PathBuf>,
    /// A fingerprint of each file's content; `None` when it could not be read (e.g. missing).
    seen: Vec<Option<String>>,
    pub mode: Mode,
    /// A notice per file-system event in a watched directory: time to check.
    events: mpsc::UnboundedReceiver<()>,
    /// Keeps the event channel open when there is no watcher.
    _sender: mpsc::UnboundedSender<()>,
    _watcher: Option<notify::RecommendedWatcher>,
}

fn read(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| fingerprint(&bytes))
}

impl Changes {
    /// Starts watching `editable` (paths relative to `dir`). With `poll_only`, no file-system events are
    /// used.
    pub fn start(dir: &Path, editable: &[String], poll_only: bool) -> Changes {
        let files: Vec<PathBuf> = editable.iter().map(|rel| dir.join(rel)).collect();
        let seen = files.iter().map(|f| read(f)).collect();
        let (tx, events) = mpsc::unbounded_channel();
        let (mode, watcher) = if poll_only {
            (Mode::Polling, None)
        } else {
            match watch_parents(&files, tx.clone()) {
                Ok(watcher) => (Mode::Events, Some(watcher)),
                Err(e) => (Mode::PollingFallback(e.to_string()), None),
            }
        };
        Changes {
            files,
            seen,
            mode,
            events,
            _sender: tx,
            _watcher: watcher,
        }
    }

    /// Waits for the next file-system event in a watched directory. Pending forever in polling mode.
    pub async fn event(&mut self) {
        // The channel never closes: `_sender` lives as long as `self`.
        let _ = self.events.recv().await;
        // One check covers a burst of events.
        while self.events.try_recv().is_ok() {}
    }

    /// Reads every file again; true when any content differs from the last check (a file that appeared
    /// or disappeared counts).
    pub fn check(&mut self) -> bool {
        let mut changed = false;
        for (file, seen) in self.files.iter().zip(self.seen.iter_mut()) {
            let now = read(file);
            if now != *seen {
                *seen = now;
                changed = true;
            }
        }
        changed
    }
}

/// A watcher on the directory of each file (not the files themselves, whose inode a rename-based save
/// replaces), sending a notice for every event.
fn watch_parents(
    files: &[PathBuf],
    tx: mpsc::UnboundedSender<()>,
) -> notify::Result<notify::RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // An error event still means something happened: check.
        let _ = event;
        let _ = tx.send(());
    })?;
    let mut dirs: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.parent())
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.to_path_buf()))
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    }
    Ok(watcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A directory with one watched file, `src/a.rs`, that says "one".
    fn one_file() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let file = dir.path().join("src/a.rs");
        std::fs::write(&file, "one").unwrap();
        (dir, file)
    }

    #[test]
    fn only_content_changes_count() {
        let (dir, file) = one_file();
        let mut changes = Changes::start(dir.path(), &["src/a.rs".into()], true);
        assert_eq!(changes.mode, Mode::Polling);
        assert!(!changes.check());
        std::fs::write(&file, "one").unwrap();
        assert!(!changes.check(), "same content is no change");
        std::fs::write(dir.path().join("src/other.rs"), "x").unwrap();
        assert!(!changes.check(), "another file is no change");
        std::fs::write(&file, "two").unwrap();
        assert!(changes.check());
        assert!(!changes.check(), "seen once");
        std::fs::remove_file(&file).unwrap();
        assert!(changes.check(), "a missing file is a change");
        std::fs::write(&file, "two").unwrap();
        assert!(changes.check(), "and so is its return");
    }

    #[test]
    fn a_rename_over_the_file_is_an_event() {
        let (dir, file) = one_file();
        let rt = runtime();
        rt.block_on(async {
            let mut changes = Changes::start(dir.path(), &["src/a.rs".into()], false);
            if changes.mode != Mode::Events {
                // No file-system events here (e.g. inotify limits); polling covers it.
                return;
            }
            let tmp = dir.path().join("src/.a.rs.tmp");
            std::fs::write(&tmp, "two").unwrap();
            std::fs::rename(&tmp, &file).unwrap();
            tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    changes.event().await;
                    if changes.check() {
                        break;
                    }
                }
            })
            .await
            .expect("an event for the rename");
        });
    }
}
