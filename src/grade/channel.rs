//! The grader's end of the channel (see the judge crate's `protocol`, which both sides use): start a test
//! process with its orders (a per-grade key and each test's instance), then read its records: the steps
//! the driver observed, never a verdict.
//!
//! The test process is assumed to be the attacker's (docs/JUDGE.md): what it sends is only ever a trace
//! that the grader judges. The key keeps stray lines of output apart from records; it is not what makes a
//! pass earned.

use pi_course_judge::protocol;

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;

use tokio::net::UnixStream;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

pub use protocol::Record;

use super::bounded_lines::BoundedLines;
use crate::outcome::bounds::RECORD_BYTES;
use crate::process::{self, Captured, ProcessGroup};
use crate::sandbox::{Confined, Policy, Sandbox, TestPaths};
use crate::track::test_command::TestCommand;

/// A fresh secret for one grade: 32 hex digits from the system's random source.
pub fn new_key() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A fresh seed for one grade's instances, from the system's random source.
pub fn new_seed() -> io::Result<u64> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    // Seeds up to 2^53 print the same in every JSON reader.
    Ok(u64::from_le_bytes(bytes) >> 11)
}

/// What a test process is told to do: run these tests, each a name and its instance (one line of JSON).
pub struct Orders<'a>(pub &'a [(String, String)]);

/// A running test process.
pub struct TestProcess {
    pub child: Child,
    pub group: ProcessGroup,
    pub verdicts: Verdicts,
    pub stdout: JoinHandle<Captured>,
    pub stderr: JoinHandle<Captured>,
    /// What confines the process outside it: dropped after the process ended, before its scratch.
    _confined: Confined,
    /// The process's own scratch directory, removed when this value is dropped (after the process group
    /// was killed: nothing writes in it any more) or when pi-course exits on a signal.
    _scratch: process::ScratchDir,
}

impl TestProcess {
    /// Starts `command` confined by `sandbox`, with `orders` and `key`.
    pub fn start(
        command: &TestCommand,
        sandbox: &Sandbox,
        policy: Policy,
        key: &str,
        orders: Orders<'_>,
        envs: &[(&str, &str)],
    ) -> io::Result<TestProcess> {
        let scratch = process::ScratchDir::new("pi-course-test-")?;
        let (orders_read, mut orders_write) = io::pipe()?;
        // A socket, not a pipe: a pipe can be opened again through /proc/self/fd (for reading, too), a
        // socket cannot; and what the harness writes on its end can only be read on ours.
        let (verdicts_read, verdicts_write) = std::os::unix::net::UnixStream::pair()?;
        let text = protocol::orders(key, orders.0);
        // The orders are small, but a pipe holds only so much: write them beside the child, not before.
        let writer = std::thread::spawn(move || {
            let _ = orders_write.write_all(text.as_bytes());
        });

        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let confined = sandbox.confine_test(
            &mut cmd,
            &TestPaths {
                exe: command.program.clone(),
                read: command.read.clone(),
                scratch: scratch.path().to_path_buf(),
                policy,
            },
        )?;
        cmd.env(protocol::ENV, "1");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        hand_over(
            &mut cmd,
            [
                (high_fd(orders_read.into())?, protocol::ORDERS_FD),
                (high_fd(verdicts_write.into())?, protocol::VERDICTS_FD),
            ],
        );
        let spawned = process::spawn(&mut cmd);
        // Our copies of the child's ends: closing them lets the verdict pipe end when the child does.
        drop(cmd);
        let (mut child, group) = spawned?;
        let _ = writer.join();
        verdicts_read.set_nonblocking(true)?;
        let verdicts = UnixStream::from_std(verdicts_read)?;
        Ok(TestProcess {
            stdout: tokio::spawn(process::capture(child.stdout.take().expect("piped stdout"))),
            stderr: tokio::spawn(process::capture(child.stderr.take().expect("piped stderr"))),
            child,
            group,
            verdicts: Verdicts {
                lines: BoundedLines::new(verdicts, RECORD_BYTES),
                key: key.to_string(),
            },
            _confined: confined,
            _scratch: scratch,
        })
    }
}

/// What arrived on the channel.
#[derive(Debug)]
pub enum Received {
    Record(Record),
    /// A line too long to be a record (see [`BoundedLines`]): read to its end and dropped, so the
    /// grader's memory stays bounded.
    Oversized,
}

/// The grader's end of a test process's channel. Every string in a record is cut to [`RECORD_BYTES`]
/// as it is read, and a line too long outside its strings is dropped: a step of any size costs the
/// grader no more.
pub struct Verdicts {
    lines: BoundedLines<UnixStream>,
    key: String,
}

impl Verdicts {
    /// The next record with this grade's key; `None` once the process closed the channel (it ended).
    /// Lines without the key are not records and are skipped; a line too long to be one is
    /// [`Received::Oversized`].
    pub async fn next(&mut self) -> Option<Received> {
        loop {
            match self.lines.next_line().await {
                Ok(Some(line)) if line.is_empty() => return Some(Received::Oversized),
                Ok(Some(line)) => {
                    if let Some(record) = Record::decode(&line, &self.key) {
                        return Some(Received::Record(record));
                    }
                }
                Ok(None) | Err(_) => return None,
            }
        }
    }
}

/// `fd` moved to a descriptor number of 10 or more (close-on-exec), so that placing it at 3 or 4 in the
/// child never overwrites the other one.
fn high_fd(fd: OwnedFd) -> io::Result<OwnedFd> {
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 10)?)
}

/// Places each `(descriptor, number)` at `number` in the child (without close-on-exec). The descriptors
/// stay owned by the command, so they are closed in the grader once the command is dropped.
fn hand_over(cmd: &mut Command, fds: [(OwnedFd, i32); 2]) {
    // SAFETY: between fork and exec the closure only calls dup2, an async-signal-safe system call, and
    // allocates nothing. The descriptors are owned by the closure, so they are open in the child; each is
    // 10 or more (`high_fd`), never the number it goes to, so dup2 always makes a copy without
    // close-on-exec, and the first copy cannot overwrite the second descriptor.
    unsafe {
        cmd.pre_exec(move || {
            for (fd, number) in &fds {
                if libc::dup2(fd.as_raw_fd(), *number) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}
