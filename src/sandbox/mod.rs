//! The sandbox: the one place that decides what a process running learner code may do.
//!
//! Two kinds of process run the learner's code: the **build** (cargo and rustc compile it; constant
//! evaluation, `include_str!` and `#[path]` run at that time) and the **tests** (the test executable runs
//! it). The build and test runners ask this module for a confined command and never restrict anything
//! themselves.
//!
//! On Linux, with Landlock:
//! - the build reads only the toolchain, the packages it needs and its own build slot, and writes only
//!   its own target directory; it cannot connect anywhere;
//! - a test process reads only its executable and the system libraries, writes only a fresh scratch
//!   directory of its own, starts no process, opens no network socket, cannot see `/proc` or `/dev`;
//! - both die with the grader and are bounded by resource limits (CPU for the build; memory, file size
//!   and core dumps for the tests), and give up every capability, also when the grader runs as root.
//!
//! Where Landlock is missing (an old kernel, macOS), grades still run with the limits that the platform
//! has, and every report says plainly that the grade was not sandboxed, and why. `--sandbox require`
//! refuses to grade there instead. See docs/SECURITY.md for the threat model.

#[cfg(target_os = "linux")]
mod linux;

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::process::Command;

/// `--sandbox`: what to do when the platform cannot confine learner code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Confine when the platform can; otherwise grade anyway and say so.
    #[default]
    Auto,
    /// Refuse to grade unconfined.
    Require,
    /// Never confine (for debugging the grader).
    Off,
}

/// Set to `1` to make this process behave as if the kernel had no Landlock: how the fallback is tested
/// on a machine that has it.
pub const PRETEND_MISSING_ENV: &str = "PI_COURSE_SANDBOX_PRETEND_MISSING";

/// What protected a grade, as every report states it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Protection {
    /// Learner code ran confined (file system, processes, network).
    pub active: bool,
    /// Each layer that applied, e.g. `landlock-fs`, `no-network`, `memory-limit`.
    pub layers: Vec<String>,
    /// Why the grade was not confined, when it was not.
    pub reason: Option<String>,
}

/// Limits on the processes that run learner code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Address space a test process may use for data (heap, thread stacks), in bytes.
    pub memory: u64,
    /// The largest file a test may write to its scratch directory, in bytes.
    pub file_size: u64,
    /// CPU seconds any one build process (cargo, rustc, the linker) may use: a bound that holds even if
    /// the grader itself is killed and cannot stop the build.
    pub build_cpu_secs: u64,
    /// CPU seconds any one test process may use, all its threads together (`RLIMIT_CPU`): a test takes
    /// milliseconds, and a process that spins threads on every core is ended once it has used what two
    /// timeouts of one core give, rather than taking the machine from the classmates graded beside it.
    pub test_cpu_secs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory: 1 << 30,
            file_size: 16 << 20,
            build_cpu_secs: 300,
            test_cpu_secs: 11,
        }
    }
}

/// What a chapter's tests may do beyond what every test may (the `[sandbox]` table of its `chapter.toml`).
/// Chapter 07's tests run a loop and start nothing; a chapter whose tools run a shell declares how many
/// tasks its tests may have at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// How many tasks (processes and threads, as the kernel counts them against `RLIMIT_NPROC`) a test
    /// may have alive at once, itself and its own threads included. 0, the default, lets it start no
    /// process at all. With any other value the test runs as the first process of a process-ID and user
    /// namespace of its own, under that limit, and may run the system's programs; when it ends, the
    /// kernel kills everything it started, daemons included.
    #[serde(default)]
    pub tasks: u32,
}

impl Policy {
    /// Whether a test may start processes.
    pub fn starts_processes(self) -> bool {
        self.tasks > 0
    }
}

/// What a build may read and write, and the environment it runs with.
#[derive(Debug, Clone)]
pub struct BuildPaths {
    /// The build slot: the package to build (read only).
    pub package: PathBuf,
    /// Its cargo target directory, or where tsc writes (read and write).
    pub target: PathBuf,
    /// The toolchain's own files and directories, as the toolchain reported them (read and execute),
    /// besides the system's.
    pub toolchain: Vec<PathBuf>,
    /// More the build may read: the downloaded packages, the TypeScript track's installed dependencies.
    pub read: Vec<PathBuf>,
    /// The toolchain's variables (`RUSTC`, `CARGO_HOME`, a `PATH` of its own), set after the
    /// environment is cleared.
    pub env: Vec<(String, std::ffi::OsString)>,
}

/// What a test process may read and write.
#[derive(Debug, Clone)]
pub struct TestPaths {
    /// The test executable, or node (read and execute).
    pub exe: PathBuf,
    /// More the process may read: node's compiled code and harness.
    pub read: Vec<PathBuf>,
    /// A fresh directory for this process alone (read and write).
    pub scratch: PathBuf,
    /// What the chapter lets its tests do.
    pub policy: Policy,
}

/// Confines commands that run learner code; made once per grade.
#[derive(Debug, Clone)]
pub struct Sandbox {
    limits: Limits,
    /// `Err(reason)` when this platform cannot confine.
    support: Result<(), String>,
}

/// `--sandbox require` on a platform that cannot confine: the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl Sandbox {
    /// The sandbox for `mode` on this machine. Fails only for [`Mode::Require`] where confinement is
    /// impossible.
    pub fn new(mode: Mode, limits: Limits) -> Result<Sandbox, Unavailable> {
        let support = match mode {
            Mode::Off => Err("--sandbox off".to_string()),
            _ => support(),
        };
        if let (Mode::Require, Err(reason)) = (mode, &support) {
            return Err(Unavailable(reason.clone()));
        }
        Ok(Sandbox { limits, support })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether learner code runs confined.
    pub fn is_active(&self) -> bool {
        self.support.is_ok()
    }

    /// What protects a grade made with this sandbox, of a chapter with this `policy`.
    pub fn protection(&self, policy: Policy) -> Protection {
        let mut layers: Vec<String> = Vec::new();
        if self.is_active() {
            layers.extend(["landlock-fs", "no-network"].map(String::from));
            if policy.starts_processes() {
                layers.push("own-pid-namespace".into());
                #[cfg(target_os = "linux")]
                if linux::task_bound().is_some() {
                    layers.push("process-limit".into());
                }
            } else {
                layers.push("no-new-processes".into());
            }
            layers.push("no-proc".into());
        }
        layers.push("verdict-channel".into());
        layers.extend(["memory-limit", "file-size-limit", "build-cpu-limit"].map(String::from));
        if cfg!(target_os = "linux") {
            layers.extend(["die-with-grader", "no-privileges"].map(String::from));
        }
        Protection {
            active: self.is_active(),
            layers,
            reason: self.support.clone().err(),
        }
    }

    /// Confines a build command (cargo): see the module docs. Also clears its environment down to what a
    /// build needs, so nothing of the grader's environment (RUSTFLAGS, a rustc wrapper, the home) reaches
    /// it.
    pub fn confine_build(&self, cmd: &mut Command, paths: &BuildPaths) -> io::Result<()> {
        std::fs::create_dir_all(home_dir(paths))?;
        build_environment(cmd, paths);
        #[cfg(target_os = "linux")]
        {
            linux::confine_build(cmd, paths, self.limits, self.is_active())
        }
        #[cfg(not(target_os = "linux"))]
        {
            unix_limits(cmd, &[(libc::RLIMIT_CPU, self.limits.build_cpu_secs)]);
            Ok(())
        }
    }

    /// Confines a test process: see the module docs. Keep what it returns until the process has ended.
    pub fn confine_test(&self, cmd: &mut Command, paths: &TestPaths) -> io::Result<Confined> {
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &paths.scratch)
            .env("TMPDIR", &paths.scratch)
            .env("RUST_BACKTRACE", "0")
            // glibc reserves address space per malloc arena; a few arenas keep the memory limit about
            // memory, not about reservations.
            .env("MALLOC_ARENA_MAX", "2")
            .current_dir(&paths.scratch);
        #[cfg(target_os = "linux")]
        {
            let tasks = linux::confine_test(cmd, paths, self.limits, self.is_active())?;
            Ok(Confined { _tasks: tasks })
        }
        #[cfg(not(target_os = "linux"))]
        {
            unix_limits(
                cmd,
                &[
                    (libc::RLIMIT_DATA, self.limits.memory),
                    (libc::RLIMIT_FSIZE, self.limits.file_size),
                    (libc::RLIMIT_CPU, self.limits.test_cpu_secs),
                    (libc::RLIMIT_CORE, 0),
                ],
            );
            Ok(Confined {})
        }
    }
}

/// What a confined test process holds outside itself (the cgroup that bounds its tasks, where one
/// does), released when dropped, after the process ended.
#[derive(Debug)]
pub struct Confined {
    #[cfg(target_os = "linux")]
    _tasks: Option<linux::TaskGroup>,
}

/// The first `name` among the directories of `PATH` (a program a build or test runs).
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Whether this machine can confine learner code; `Err` says why not.
fn support() -> Result<(), String> {
    if std::env::var_os(PRETEND_MISSING_ENV).is_some_and(|v| v == "1") {
        return Err(format!(
            "Landlock is not available ({PRETEND_MISSING_ENV}=1 pretends so)"
        ));
    }
    #[cfg(target_os = "linux")]
    {
        linux::support()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(format!(
            "{} has no Landlock: learner code runs with your rights",
            std::env::consts::OS
        ))
    }
}

/// The environment of a build: nothing of the grader's. `env!` in the learner's code sees only these:
/// the home and the temporary directory are the build's own (inside its target directory), and the
/// toolchain's variables name the toolchain and the cache's cargo home.
fn build_environment(cmd: &mut Command, paths: &BuildPaths) {
    let tmp = tmp_dir(paths);
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home_dir(paths))
        .env("TMPDIR", &tmp)
        .env("CARGO_TERM_PROGRESS_WHEN", "never")
        .env("CARGO_TERM_COLOR", "never")
        .envs(paths.env.iter().map(|(k, v)| (k, v)));
}

/// Where a build keeps temporary files (the linker's, rustc's): inside its own target directory.
pub fn tmp_dir(paths: &BuildPaths) -> PathBuf {
    paths.target.join("tmp")
}

/// The build's home: an empty directory of its own, so nothing reads the grader's.
fn home_dir(paths: &BuildPaths) -> PathBuf {
    tmp_dir(paths).join("home")
}

/// `path` with symbolic links resolved, or as it is when it does not exist.
fn resolved(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(not(target_os = "linux"))]
fn unix_limits(cmd: &mut Command, limits: &[(libc::c_int, u64)]) {
    let limits: Vec<(libc::c_int, u64)> = limits.to_vec();
    // SAFETY: between fork and exec the closure only calls setrlimit, an async-signal-safe system call,
    // on a Vec allocated before the fork; it allocates and frees nothing.
    unsafe {
        cmd.pre_exec(move || {
            for &(resource, value) in &limits {
                let limit = libc::rlimit {
                    rlim_cur: value as libc::rlim_t,
                    rlim_max: value as libc::rlim_t,
                };
                if libc::setrlimit(resource, &limit) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Policy;

    #[test]
    fn a_chapter_policy_names_its_tasks_and_nothing_else() {
        let read = |text: &str| toml::from_str::<Policy>(text);
        assert_eq!(read("").unwrap(), Policy { tasks: 0 });
        assert!(!read("").unwrap().starts_processes());
        assert_eq!(read("tasks = 64").unwrap(), Policy { tasks: 64 });
        assert!(read("tasks = 64").unwrap().starts_processes());
        // A misspelt limit is an error, not a chapter whose tests start nothing by accident.
        let wrong = read("processes = 64").unwrap_err().to_string();
        assert!(wrong.contains("unknown field `processes`"), "{wrong}");
    }
}
