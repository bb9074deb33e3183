//! Child processes that never outlive pi-course.
//!
//! Every child (cargo, a test binary) starts as the leader of its own process group, so a kill reaches
//! whatever it started in turn (rustc, the linker, threads and children of a test). A registry keeps the
//! live groups; dropping a [`ProcessGroup`] kills its group, and the signal handler kills every registered
//! group before pi-course exits. Process groups work the same on Linux and macOS.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

struct Registry {
    groups: BTreeSet<i32>,
    /// Live scratch directories (see [`ScratchDir`]): removed before pi-course exits on a signal.
    scratch: BTreeSet<PathBuf>,
    /// Set once a signal arrived: no new child may start after that.
    stopping: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    groups: BTreeSet::new(),
    scratch: BTreeSet::new(),
    stopping: false,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A live process group. Dropping it kills every process left in the group.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: i32,
}

impl ProcessGroup {
    #[cfg(test)]
    pub fn id(&self) -> i32 {
        self.pgid
    }

    /// Kills every process of the group (`SIGKILL`). Harmless when the group is already gone.
    pub fn kill(&self) {
        kill_group(self.pgid);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        kill_group(self.pgid);
        registry().groups.remove(&self.pgid);
    }
}

/// A group that no longer exists (ESRCH) is fine: there is nothing left to kill.
fn kill_group(pgid: i32) {
    if let Some(pgid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

/// Starts `cmd` as the leader of a new process group and registers the group.
///
/// The registry lock is held across the spawn, so a signal handler that runs concurrently either sees the
/// new group or makes this call fail: no child can slip past a shutdown.
pub fn spawn(cmd: &mut Command) -> io::Result<(Child, ProcessGroup)> {
    cmd.process_group(0).kill_on_drop(true);
    let mut registry = registry();
    if registry.stopping {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
    }
    let child = cmd.spawn()?;
    let pgid = child
        .id()
        .map(|id| id as i32)
        .ok_or_else(|| io::Error::other("child exited at once"))?;
    registry.groups.insert(pgid);
    Ok((child, ProcessGroup { pgid }))
}

/// A new directory in the system's temporary directory (`TMPDIR`) that a child may write in: removed,
/// whatever was left in it, when dropped, and also when pi-course exits on a signal (where nothing is
/// dropped), so that no interruption leaves one behind.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Makes and registers the directory, named `prefix` and a random part. Made under the registry's
    /// lock, so a signal handler that runs concurrently either sees it or makes this call fail.
    pub fn new(prefix: &str) -> io::Result<ScratchDir> {
        let mut registry = registry();
        if registry.stopping {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        let path = tempfile::Builder::new().prefix(prefix).tempdir()?.keep();
        registry.scratch.insert(path.clone());
        Ok(ScratchDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Nothing else to do about a directory that cannot be removed; the class's scratch root (or
        // the system's temporary directory) still holds it.
        let _ = crate::remove_tree::remove_tree(&self.path);
        registry().scratch.remove(&self.path);
    }
}

/// Removes every registered scratch directory; for a signal handler, after [`kill_all`]. A killed
/// process may still finish the call it was in (a file made after the directory was read), so each is
/// tried again for a moment until it is gone.
pub fn remove_all_scratch() {
    let dirs = std::mem::take(&mut registry().scratch);
    for dir in dirs {
        for _ in 0..50 {
            if crate::remove_tree::remove_tree(&dir).is_ok() && !dir.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Kills every registered process group and refuses new ones. Returns how many groups it signalled.
pub fn kill_all() -> usize {
    let mut registry = registry();
    registry.stopping = true;
    for &pgid in &registry.groups {
        kill_group(pgid);
    }
    registry.groups.len()
}

/// Listens for SIGINT, SIGTERM and SIGHUP on the current tokio runtime. On the first one it kills every
/// child process group, removes every scratch directory, runs `before_exit` (e.g. to clear a spinner line) and exits with 128 + the signal
/// number (130 for Ctrl-C).
pub fn install_signal_handlers(before_exit: impl Fn() + Send + 'static) -> io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        let signo = tokio::select! {
            _ = int.recv() => libc::SIGINT,
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
        };
        kill_all();
        remove_all_scratch();
        before_exit();
        std::process::exit(128 + signo);
    });
    Ok(())
}

/// This machine's memory in bytes, if the platform tells.
pub fn total_memory() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let info = rustix::system::sysinfo();
        Some(info.totalram as u64 * info.mem_unit as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// What a child wrote to one of its pipes: the beginning and the end, with the middle dropped past a limit
/// (a test stuck printing in a loop must not exhaust memory).
#[derive(Debug, Default, Clone)]
pub struct Captured {
    head: Vec<u8>,
    tail: Vec<u8>,
    dropped: u64,
}

impl Captured {
    const HALF: usize = 64 * 1024;

    fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < Self::HALF {
            let n = bytes.len().min(Self::HALF - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * Self::HALF {
            let excess = self.tail.len() - Self::HALF;
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// The text, lossily decoded, with a marker where bytes were dropped.
    pub fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[… {} bytes not kept …]\n", self.dropped));
        }
        s.push_str(&String::from_utf8_lossy(&self.tail));
        s
    }
}

/// Reads `reader` to its end.
pub async fn capture(mut reader: impl AsyncRead + Unpin) -> Captured {
    let mut captured = Captured::default();
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => captured.push(&buf[..n]),
        }
    }
    captured
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::time::Duration;

    /// Is a live (not zombie) process left in the group? Orphaned zombies wait for init to reap them,
    /// which some container inits never do, so `killpg(pgid, 0)` alone cannot tell.
    fn group_exists(pgid: i32) -> bool {
        let ps = std::process::Command::new("ps")
            .args(["-A", "-o", "pgid=,stat="])
            .output()
            .unwrap();
        String::from_utf8_lossy(&ps.stdout).lines().any(|l| {
            let mut f = l.split_whitespace();
            f.next() == Some(&pgid.to_string()) && f.next().is_some_and(|s| !s.starts_with('Z'))
        })
    }

    #[test]
    fn dropping_the_group_kills_grandchildren_too() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "sleep 30 & sleep 30; wait"])
                .stdout(Stdio::null());
            let (child, group) = spawn(&mut cmd).unwrap();
            let pgid = group.id();
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(group_exists(pgid));
            drop(group);
            drop(child);
            for _ in 0..50 {
                if !group_exists(pgid) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(!group_exists(pgid), "process group {pgid} still exists");
            assert!(!registry().groups.contains(&pgid));
        });
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Captured::default();
        for i in 0..100_000u32 {
            c.push(format!("{i}\n").as_bytes());
        }
        let text = c.text();
        assert!(text.starts_with("0\n1\n"));
        assert!(text.ends_with("99999\n"));
        assert!(text.contains("bytes not kept"));
        assert!(text.len() < 3 * Captured::HALF);
    }
}
