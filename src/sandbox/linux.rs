//! Linux: Landlock for the file system and TCP, seccomp for processes and sockets, resource limits, and
//! `PR_SET_PDEATHSIG` so that no confined process outlives the grader.
//!
//! Everything that allocates (the Landlock ruleset and its rules, the seccomp programs) is built in the
//! grader before it forks; between fork and exec the child only makes system calls, which is all that is
//! safe in the child of a multi-threaded process.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use rustix::process::{Pid, Resource, Rlimit, Signal};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use tokio::process::Command;

use super::{resolved, BuildPaths, Limits, Policy, TestPaths};

/// The highest Landlock ABI whose rights this grader knows how to use.
const KNOWN_ABI: i32 = 6;

/// The Landlock ABI of the running kernel (0: none).
fn kernel_abi() -> i32 {
    // The landlock crate keeps this query to itself, so it is made here.
    // SAFETY: with LANDLOCK_CREATE_RULESET_VERSION (flags = 1) the call only returns the ABI version: the
    // attribute pointer must be null and the size 0, so the kernel reads and writes no memory of ours.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    abi.max(0) as i32
}

pub fn support() -> Result<(), String> {
    let abi = kernel_abi();
    if abi < 1 {
        return Err(
            "this Linux kernel has no Landlock (Linux 5.13 or newer with Landlock enabled, \
                    e.g. lsm=landlock, is needed): learner code runs with your rights"
                .to_string(),
        );
    }
    if rustix::thread::secure_computing_mode().is_err() {
        return Err(
            "this Linux kernel has no seccomp filters: learner code runs with your rights"
                .to_string(),
        );
    }
    Ok(())
}

fn abi() -> ABI {
    ABI::from(kernel_abi().min(KNOWN_ABI))
}

/// A ruleset that handles every file-system right and TCP, and confines signals and abstract sockets to
/// the sandbox where the kernel can.
fn ruleset() -> io::Result<RulesetCreated> {
    let abi = abi();
    let created = || -> Result<RulesetCreated, landlock::RulesetError> {
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))?
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessNet::from_all(abi))?;
        if abi >= ABI::V6 {
            ruleset = ruleset.scope(Scope::from_all(abi))?;
        }
        ruleset.create()
    };
    created().map_err(landlock_error)
}

fn add(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> io::Result<RulesetCreated> {
    match PathFd::new(path) {
        // A file gets only the rights that apply to files.
        Ok(fd) => {
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(abi())
            };
            ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(landlock_error)
        }
        // A path this machine does not have (no /lib64, no ~/.cargo/git): nothing to allow.
        Err(_) => Ok(ruleset),
    }
}

fn landlock_error(e: landlock::RulesetError) -> io::Error {
    io::Error::other(format!("sandbox: {e}"))
}

/// Read and execute: code a confined process may run or load.
fn code() -> BitFlags<AccessFs> {
    AccessFs::Execute | AccessFs::ReadFile | AccessFs::ReadDir
}

fn read() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::ReadDir
}

/// Where the system keeps shared libraries (read by the dynamic loader, never executed).
const LIBRARIES: &[&str] = &["/lib", "/lib64", "/usr/lib", "/usr/lib64"];
/// The dynamic loaders: the kernel executes one to start a dynamically linked program.
const LOADERS: &[&str] = &[
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/ld-musl-x86_64.so.1",
    "/lib/ld-musl-aarch64.so.1",
];

pub fn confine_test(
    cmd: &mut Command,
    paths: &TestPaths,
    limits: Limits,
    active: bool,
) -> io::Result<Option<TaskGroup>> {
    let policy = paths.policy;
    let confinement = if active {
        Some((test_ruleset(paths)?, test_filters(policy)?))
    } else {
        None
    };
    let rlimits = [
        (Resource::Data, limits.memory),
        (Resource::Fsize, limits.file_size),
        (Resource::Cpu, limits.test_cpu_secs),
        (Resource::Core, 0),
    ];
    // Unconfined, a test that starts processes still runs in its own process group, which the grader
    // kills when the test ends; confined, the namespace makes sure of it.
    if !(active && policy.starts_processes()) {
        confine(cmd, rlimits, confinement, None);
        return Ok(None);
    }
    let (namespace, group) = OwnNamespace::new(policy.tasks)?;
    confine(cmd, rlimits, confinement, Some(namespace));
    Ok(group)
}

/// How the tasks of a test that may start processes are bounded on this machine, if they can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskBound {
    /// `RLIMIT_NPROC`, which the kernel counts per user namespace: for a grader that is not root.
    Rlimit,
    /// A cgroup of the `pids` controller: for a grader run as root, whom the kernel exempts from
    /// `RLIMIT_NPROC`, where the v1 `pids` hierarchy is mounted and writable.
    Cgroup,
}

/// Where this machine's v1 `pids` cgroups are.
const PIDS_CGROUPS: &str = "/sys/fs/cgroup/pids";

/// How this machine bounds a test's tasks; `None` when it cannot (root without a writable `pids`
/// cgroup hierarchy, e.g. in a container): then the test's tasks are bounded only by its timeout,
/// and the grade says so.
pub fn task_bound() -> Option<TaskBound> {
    if !rustix::process::geteuid().is_root() {
        return Some(TaskBound::Rlimit);
    }
    let procs = Path::new(PIDS_CGROUPS).join("cgroup.procs");
    let writable = rustix::fs::access(PIDS_CGROUPS, rustix::fs::Access::WRITE_OK).is_ok();
    (writable && procs.is_file()).then_some(TaskBound::Cgroup)
}

/// A `pids` cgroup of one test: the test and everything it starts are in it, and it holds at most
/// its chapter's tasks. Removed when dropped (by then the test and its namespace are gone).
#[derive(Debug)]
pub struct TaskGroup {
    dir: std::path::PathBuf,
}

impl TaskGroup {
    /// A new cgroup that holds at most `tasks` tasks.
    fn new(tasks: u64) -> io::Result<TaskGroup> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let grader = std::process::id();
        sweep_task_groups(grader);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = Path::new(PIDS_CGROUPS).join(format!("pi-course-{grader}-{n}"));
        std::fs::create_dir(&dir)?;
        let group = TaskGroup { dir };
        std::fs::write(group.dir.join("pids.max"), tasks.to_string())?;
        Ok(group)
    }
}

impl Drop for TaskGroup {
    fn drop(&mut self) {
        // The grader waited for the test's stand-in, and the stand-in for the namespace's first
        // process, whose end the kernel holds until every other process in the namespace is gone: the
        // cgroup is empty. If it is not yet, a later grade of this grader's sweeps it.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Removes the cgroups of graders that are no longer running (a grader killed before it could), and
/// this one's that have emptied since.
fn sweep_task_groups(grader: u32) {
    let Ok(entries) = std::fs::read_dir(PIDS_CGROUPS) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("pi-course-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if owner == grader || !Path::new(&format!("/proc/{owner}")).exists() {
            // Fails, harmlessly, while the cgroup still holds a process.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// What a test process may touch: the system libraries and loaders, its executable, its scratch
/// directory.
fn test_ruleset(paths: &TestPaths) -> io::Result<RulesetCreated> {
    let mut ruleset = ruleset()?;
    for dir in LIBRARIES {
        ruleset = add(ruleset, Path::new(dir), read())?;
    }
    for loader in LOADERS {
        ruleset = add(ruleset, &resolved(Path::new(loader)), code())?;
    }
    ruleset = add(ruleset, Path::new("/etc/ld.so.cache"), read())?;
    ruleset = add(ruleset, &paths.exe, code())?;
    for path in &paths.read {
        ruleset = add(ruleset, path, read())?;
    }
    if paths.policy.starts_processes() {
        // A chapter whose tools run a shell: the system's programs, what they look up in /etc, and
        // /dev/null, which shell commands redirect to. Nothing else outside the scratch directory.
        for dir in SYSTEM {
            ruleset = add(ruleset, &resolved(Path::new(dir)), code())?;
        }
        for file in SHELL_ETC {
            ruleset = add(ruleset, Path::new(file), read())?;
        }
        ruleset = add(
            ruleset,
            Path::new("/dev/null"),
            AccessFs::ReadFile | AccessFs::WriteFile,
        )?;
    }
    add(ruleset, &paths.scratch, AccessFs::from_all(abi()))
}

/// What the system's programs read in /etc (user and group names, the time zone): no secrets.
const SHELL_ETC: &[&str] = &[
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
];

pub fn confine_build(
    cmd: &mut Command,
    paths: &BuildPaths,
    limits: Limits,
    active: bool,
) -> io::Result<()> {
    let confinement = if active {
        Some((build_ruleset(paths)?, Vec::new()))
    } else {
        None
    };
    // RLIMIT_CPU is the one bound on a compiler that evaluates a constant forever after the grader was
    // killed: each process of the build gets at most this much CPU time.
    let rlimits = [(Resource::Cpu, limits.build_cpu_secs), (Resource::Core, 0)];
    confine(cmd, rlimits, confinement, None);
    Ok(())
}

/// What a build may touch: the system, the toolchain, the downloaded packages, its package (read) and
/// its target directory (write).
fn build_ruleset(paths: &BuildPaths) -> io::Result<RulesetCreated> {
    let mut ruleset = ruleset()?;
    for dir in SYSTEM {
        ruleset = add(ruleset, Path::new(dir), code())?;
    }
    for path in &paths.toolchain {
        ruleset = add(ruleset, &resolved(path), code())?;
    }
    for file in ["/etc/ld.so.cache", "/dev/urandom"] {
        ruleset = add(ruleset, Path::new(file), read())?;
    }
    let write = AccessFs::from_all(abi());
    ruleset = add(ruleset, Path::new("/dev/null"), write)?;
    ruleset = add(ruleset, &paths.package, read())?;
    for path in &paths.read {
        ruleset = add(ruleset, path, read())?;
    }
    add(ruleset, &paths.target, write)
}

/// The system's directories a build runs code from (the linker, the C library).
const SYSTEM: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib64"];

/// The seccomp programs of a test process: no socket but a local one, no tracing or reading of other
/// processes, no kernel facilities a test has no use for; and, unless its chapter lets it start
/// processes, no new process (threads are fine). A test that may start processes still makes no
/// namespace of its own: it runs in the one the grader made for it.
fn test_filters(policy: Policy) -> io::Result<Vec<BpfProgram>> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| io::Error::other(format!("sandbox: seccomp: {e}")))?;
    let seccomp_error = |e: seccompiler::BackendError| io::Error::other(format!("seccomp: {e}"));
    let condition = |arg, op, value| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value).map_err(seccomp_error)
    };

    let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for syscall in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_mount,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        // Device nodes (and FIFOs): nothing a test needs, and a device node is a way out of any sandbox.
        libc::SYS_mknodat,
    ] {
        denied.insert(syscall, Vec::new());
    }
    #[cfg(target_arch = "x86_64")]
    denied.insert(libc::SYS_mknod, Vec::new());
    if policy.starts_processes() {
        // clone with a CLONE_NEW* flag makes a namespace: one rule a flag, any of which denies.
        let rules = NAMESPACE_FLAGS
            .iter()
            .map(|&flag| {
                let flag = flag as u64;
                let set = condition(0, SeccompCmpOp::MaskedEq(flag), flag)?;
                SeccompRule::new(vec![set]).map_err(seccomp_error)
            })
            .collect::<io::Result<Vec<_>>>()?;
        denied.insert(libc::SYS_clone, rules);
    } else {
        denied.insert(libc::SYS_vfork, Vec::new());
        #[cfg(target_arch = "x86_64")]
        denied.insert(libc::SYS_fork, Vec::new());
        // clone without CLONE_THREAD makes a process; with it, a thread.
        let not_a_thread = condition(0, SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64), 0)?;
        denied.insert(
            libc::SYS_clone,
            vec![SeccompRule::new(vec![not_a_thread]).map_err(seccomp_error)?],
        );
    }
    let not_local = condition(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
    denied.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![not_local]).map_err(seccomp_error)?],
    );
    let deny = SeccompFilter::new(
        denied,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| io::Error::other(format!("seccomp: {e}")))?;

    // clone3 passes its flags in memory, where a filter cannot look: "not implemented" makes the C
    // library fall back to clone, whose flags the filter above sees.
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| io::Error::other(format!("seccomp: {e}")))?;

    [deny, clone3]
        .into_iter()
        .map(|f| BpfProgram::try_from(f).map_err(|e| io::Error::other(format!("seccomp: {e}"))))
        .collect()
}

/// Gives up every capability, for good: a grader run as root (as hosted autograders run) must not hand
/// root's privileges to learner code or its compiler. `PR_SET_NO_NEW_PRIVS` first, so that no later
/// `exec` (of a set-user-id program, or as root) can give any back; then the bounding set (which needs
/// `CAP_SETPCAP`: a grader without it has nothing to drop), the ambient set, and the effective,
/// permitted and inheritable sets. Only system calls: this runs between fork and exec.
fn drop_privileges() -> io::Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    rustix::thread::set_no_new_privs(true)?;
    for cap in 0..64 {
        let one = CapabilitySet::from_bits_retain(1 << cap);
        // EINVAL: past the last capability this kernel knows. EPERM (no CAP_SETPCAP): nothing to lose.
        if let Err(rustix::io::Errno::INVAL) =
            rustix::thread::remove_capability_from_bounding_set(one)
        {
            break;
        }
    }
    let _ = rustix::thread::clear_ambient_capability_set();
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )?;
    Ok(())
}

/// Installs what runs between fork and exec: resource limits, death with the grader, no capability,
/// a namespace of its own when `namespace` is given, then Landlock and seccomp when `confinement` is.
fn confine<const N: usize>(
    cmd: &mut Command,
    rlimits: [(Resource, u64); N],
    confinement: Option<(RulesetCreated, Vec<BpfProgram>)>,
    namespace: Option<OwnNamespace>,
) {
    let grader = Pid::from_raw(std::process::id() as i32);
    let (mut ruleset, filters) = match confinement {
        Some((ruleset, filters)) => (Some(ruleset), filters),
        None => (None, Vec::new()),
    };
    // SAFETY: the closure runs in the child between fork and exec, where other threads of the grader may
    // have left locks (the allocator's too) held, so it only makes system calls: setrlimit, prctl and
    // getppid through rustix, signal (async-signal-safe), restrict_self and apply_filter (prctl plus one
    // Landlock or seccomp call each), `drop_privileges`' prctl and capset, and `OwnNamespace::enter`'s
    // open, write, close, clone, prctl, setrlimit and (in the stand-in) close_range, waitpid, kill and
    // _exit. It allocates and frees nothing: the ruleset (a descriptor), the seccomp programs and the
    // cgroup's path were built before the fork and are consumed or borrowed, and every error is a raw OS
    // error.
    unsafe {
        cmd.pre_exec(move || {
            for (resource, value) in rlimits {
                let limit = Rlimit {
                    current: Some(value),
                    maximum: Some(value),
                };
                rustix::process::setrlimit(resource, limit)?;
            }
            drop_privileges()?;
            // A write past the file-size limit fails with EFBIG instead of killing the process.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The grader may have died before the line above: then nothing would kill this process.
            if rustix::process::getppid() != grader {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(namespace) = &namespace {
                // Returns only in the namespace's first process, which goes on to be the test.
                namespace.enter()?;
                // A new user namespace hands its first process every capability in it.
                drop_privileges()?;
            }
            if let Some(ruleset) = ruleset.take() {
                if ruleset.restrict_self().is_err() {
                    return Err(io::Error::from_raw_os_error(libc::EPERM));
                }
                for filter in &filters {
                    if seccompiler::apply_filter(filter).is_err() {
                        return Err(io::Error::from_raw_os_error(libc::EPERM));
                    }
                }
            }
            Ok(())
        });
    }
}

/// The flags of `clone` that make a namespace. (`CLONE_NEWTIME` is left out: in `clone`'s flags its bit
/// is part of the exit signal, and only `clone3` and `unshare`, both refused, take it.)
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// Where a test that may start processes runs: as the first process (PID 1) of a user and process-ID
/// namespace of its own. When PID 1 of a namespace ends, the kernel kills every other process in it, so
/// nothing the test started (a daemon that left its process group, a child that ignores SIGTERM)
/// outlives it; and `RLIMIT_NPROC`, which the kernel counts per user namespace, bounds the tasks in it
/// alone, not every process of the grader's user.
///
/// The process the grader started stays outside as the test's stand-in: it holds none of the test's
/// descriptors, waits for it, and ends as it ended, so the grader sees the test's exit status; it is in
/// the test's process group, so killing the group kills both.
///
/// The namespace maps no user: inside, the test and its programs are the overflow user ("nobody",
/// 65534), whoever runs the grader. (A grader run as root could not map itself anyway: the kernel lets
/// only a process that could set file capabilities map root, and the test has given up every
/// capability by then.) Outside, its files are the grader's user's, as every test's are.
struct OwnNamespace {
    /// How the tasks are bounded: `RLIMIT_NPROC` at this value, or the cgroup whose `cgroup.procs`
    /// the stand-in joins before it makes the namespace.
    bound: Option<Bound>,
}

enum Bound {
    Rlimit(u64),
    Cgroup(std::ffi::CString),
}

impl OwnNamespace {
    /// The namespace for a test of `tasks` tasks, and the cgroup that bounds them where this machine
    /// bounds them with one.
    fn new(tasks: u32) -> io::Result<(OwnNamespace, Option<TaskGroup>)> {
        let tasks = u64::from(tasks);
        Ok(match task_bound() {
            Some(TaskBound::Rlimit) => (
                OwnNamespace {
                    bound: Some(Bound::Rlimit(tasks)),
                },
                None,
            ),
            Some(TaskBound::Cgroup) => {
                // One more than the test's: the stand-in is in the cgroup too.
                let group = TaskGroup::new(tasks + 1)?;
                let procs = group.dir.join("cgroup.procs");
                let procs = std::ffi::CString::new(procs.into_os_string().into_encoded_bytes())
                    .map_err(io::Error::other)?;
                (
                    OwnNamespace {
                        bound: Some(Bound::Cgroup(procs)),
                    },
                    Some(group),
                )
            }
            None => (OwnNamespace { bound: None }, None),
        })
    }

    /// Makes the namespace's first process and returns in it; never returns in the stand-in.
    ///
    /// # Safety
    /// Between fork and exec only: it makes system calls and nothing else.
    unsafe fn enter(&self) -> io::Result<()> {
        if let Some(Bound::Cgroup(procs)) = &self.bound {
            // "0": the process that writes.
            write_file(procs, b"0")?;
        }
        // The raw system call, not the C library's fork: that one runs fork handlers and takes the
        // allocator's locks, which another thread of the grader may have held at the first fork.
        let flags = (libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::SIGCHLD) as libc::c_ulong;
        let pid = libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize);
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid > 0 {
            stand_in(pid as libc::pid_t);
        }
        // The stand-in is killed with the grader; the test with the stand-in.
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        if let Some(Bound::Rlimit(tasks)) = self.bound {
            let limit = Rlimit {
                current: Some(tasks),
                maximum: Some(tasks),
            };
            rustix::process::setrlimit(Resource::Nproc, limit)?;
        }
        Ok(())
    }
}

/// Writes `bytes` to the file at `path` in one call. Only system calls.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    let error = io::Error::last_os_error();
    libc::close(fd);
    if written != bytes.len() as isize {
        return Err(error);
    }
    Ok(())
}

/// The stand-in's life: close every descriptor, wait for the test `pid`, end as it ended. Only system
/// calls.
unsafe fn stand_in(pid: libc::pid_t) -> ! {
    libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
    let mut status = 0;
    loop {
        let waited = libc::waitpid(pid, &mut status, 0);
        if waited == pid {
            break;
        }
        if waited < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            libc::_exit(127);
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
    libc::_exit(libc::WEXITSTATUS(status))
}

#[cfg(test)]
mod tests {
    use super::super::{Mode, Policy, Sandbox, TestPaths};
    use super::{confine, task_bound, Bound, OwnNamespace, Resource};
    use std::path::Path;

    /// A program that tries what no test may: make a FIFO and a device node in its directory, and keep
    /// a capability. It needs `unsafe` and libc's own functions, which a learner's crate cannot reach
    /// (it forbids `unsafe`, std has no stable `mknod`): these are the layers under that one.
    const PROGRAM: &str = r#"
use std::ffi::CString;
#[repr(C)] struct Header { version: u32, pid: i32 }
#[repr(C)] #[derive(Clone, Copy, Default)] struct Data { effective: u32, permitted: u32, inheritable: u32 }
extern "C" {
    fn mknod(path: *const std::ffi::c_char, mode: u32, dev: u64) -> i32;
    fn capget(header: *mut Header, data: *mut Data) -> i32;
    fn prctl(option: i32, arg: u64, ...) -> i32;
}
fn node(name: &str, mode: u32, dev: u64) -> String {
    let path = CString::new(name).unwrap();
    // SAFETY: a valid C string; mknod reads nothing else.
    if unsafe { mknod(path.as_ptr(), mode, dev) } == 0 { "made".into() } else { std::io::Error::last_os_error().to_string() }
}
fn main() {
    println!("fifo: {}", node("fifo", 0o010644, 0));
    println!("device: {}", node("null", 0o020666, (1 << 8) | 3));
    let mut header = Header { version: 0x20080522, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: version 3 fills two data structs.
    unsafe { capget(&mut header, data.as_mut_ptr()) };
    let bounding = (0..64).filter(|&cap| unsafe { prctl(23, cap) } == 1).count();
    println!("effective: {} permitted: {} inheritable: {} bounding: {bounding}",
        data[0].effective | data[1].effective, data[0].permitted | data[1].permitted,
        data[0].inheritable | data[1].inheritable);
}
"#;

    fn run_confined(exe: &Path, sandbox: &Sandbox) -> String {
        run_with(exe, &[], sandbox, Policy::default())
    }

    /// Runs `exe` with `args` as a test of a chapter with `policy`, and returns its output once the
    /// process ended and every copy of its output pipe was closed.
    fn run_with(exe: &Path, args: &[&Path], sandbox: &Sandbox, policy: Policy) -> String {
        let scratch = tempfile::tempdir().unwrap();
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args(args);
        let paths = TestPaths {
            exe: exe.to_path_buf(),
            read: Vec::new(),
            scratch: scratch.path().to_path_buf(),
            policy,
        };
        let _confined = sandbox.confine_test(&mut cmd, &paths).unwrap();
        output_of(cmd)
    }

    /// The output of `cmd`, once it ended and every copy of its output pipe was closed.
    fn output_of(mut cmd: tokio::process::Command) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Not a measure of speed: a guard that turns "something outlived the test and holds its
        // output open" into a failure instead of a hang.
        let guard = std::time::Duration::from_secs(120);
        let out = rt
            .block_on(async { tokio::time::timeout(guard, cmd.output()).await })
            .expect("a process the test started outlived it and kept its output open")
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn compiled(dir: &Path, program: &str) -> std::path::PathBuf {
        let (src, exe) = (dir.join("p.rs"), dir.join("p"));
        std::fs::write(&src, program).unwrap();
        let built = std::process::Command::new("rustc")
            .args(["--edition", "2021", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap();
        assert!(built.success());
        exe
    }

    /// A test of a chapter whose tools run a shell, trying every way out that it has: it runs the
    /// system's programs, then reads and writes outside its directory (itself and through a shell),
    /// connects to the network, makes a namespace, starts processes without bound, and leaves a
    /// daemon in a session of its own and children that ignore SIGTERM, all holding its output open.
    const SHELL_TEST: &str = r#"
use std::process::{Command, Stdio};
extern "C" { fn unshare(flags: i32) -> i32; }
fn show<T>(r: std::io::Result<T>, ok: &str) -> String { r.map(|_| ok.to_string()).unwrap_or_else(|e| e.to_string()) }
fn main() {
    let outside = std::env::args().nth(1).unwrap();
    println!("pid: {}", std::process::id());
    let sh = Command::new("/bin/sh").args(["-c", "echo shell ran as $(id -u); echo x > /dev/null"]).output().unwrap();
    print!("{}", String::from_utf8_lossy(&sh.stdout));
    println!("read outside: {}", show(std::fs::read(format!("{outside}/secret")), "read"));
    println!("write outside: {}", show(std::fs::write(format!("{outside}/planted"), "x"), "written"));
    let by_shell = Command::new("/bin/sh").arg("-c").arg(format!("cat {outside}/secret; echo x > {outside}/planted-by-shell")).output().unwrap();
    println!("shell outside: {}", String::from_utf8_lossy(&by_shell.stdout).trim());
    println!("connect: {}", show(std::net::TcpStream::connect("127.0.0.1:9"), "connected"));
    // SAFETY: a plain system call.
    println!("unshare: {}", if unsafe { unshare(0x10000000) } == 0 { "made".to_string() } else { std::io::Error::last_os_error().to_string() });
    Command::new("/bin/sh").args(["-c", "trap '' TERM; exec setsid /bin/sleep 1000"]).spawn().unwrap();
    let mut waiting = Command::new("/bin/sh").args(["-c", "trap '' TERM; /bin/sleep 1000 & echo started; wait"]).stdout(Stdio::piped()).spawn().unwrap();
    // Once the second shell said so, its sleep runs: the test, the first shell (now its sleep), the
    // second shell and its sleep make four tasks.
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(waiting.stdout.take().unwrap()), &mut line).unwrap();
    std::mem::forget(waiting);
    let mut started = 4;
    let refused = loop {
        match Command::new("/bin/sleep").arg("1000").spawn() {
            Ok(child) => { std::mem::forget(child); started += 1; }
            Err(e) => break e.to_string(),
        }
        if started > 1000 { break "never".to_string(); }
    };
    println!("processes: {started}, then {refused}");
}
"#;

    #[test]
    fn a_test_that_may_start_processes_keeps_to_its_namespace_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let exe = compiled(dir.path(), SHELL_TEST);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "the grader's").unwrap();
        let sandbox = Sandbox::new(Mode::Auto, Default::default()).unwrap();
        if !sandbox.is_active() {
            eprintln!("no sandbox on this machine: nothing to check");
            return;
        }
        let policy = Policy { tasks: 16 };
        // The run ends only once every process the test started is gone: they all hold its output.
        let out = run_with(&exe, &[outside.path()], &sandbox, policy);
        eprintln!("{out}");
        let layers = sandbox.protection(policy).layers;
        assert!(
            layers.contains(&"own-pid-namespace".to_string()),
            "{layers:?}"
        );
        assert!(
            !layers.contains(&"no-new-processes".to_string()),
            "{layers:?}"
        );
        let nobody = std::fs::read_to_string("/proc/sys/kernel/overflowuid").unwrap();
        assert!(out.contains("pid: 1\n"), "{out}");
        assert!(
            out.contains(&format!("shell ran as {}\n", nobody.trim())),
            "{out}"
        );
        assert!(out.contains("read outside: Permission denied"), "{out}");
        assert!(out.contains("write outside: Permission denied"), "{out}");
        assert!(
            out.contains("shell outside: \n") || out.ends_with("shell outside:"),
            "{out}"
        );
        assert!(out.contains("connect: Operation not permitted"), "{out}");
        assert!(out.contains("unshare: Operation not permitted"), "{out}");
        // 16 tasks: the test, its two shells and their sleeps, and the rest of the limit in sleeps.
        // Where this machine cannot bound them, the grade says so instead.
        match task_bound() {
            Some(_) => {
                assert!(out.contains("processes: 16, then "), "{out}");
                assert!(layers.contains(&"process-limit".to_string()), "{layers:?}");
            }
            None => assert!(!layers.contains(&"process-limit".to_string()), "{layers:?}"),
        }
        let left: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("secret")]);
        // Nor does the cgroup that bounded it outlive it.
        if task_bound() == Some(super::TaskBound::Cgroup) {
            let ours = format!("pi-course-{}-", std::process::id());
            let cgroups: Vec<_> = std::fs::read_dir(super::PIDS_CGROUPS)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&ours))
                .collect();
            assert!(cgroups.is_empty(), "{cgroups:?}");
        }
    }

    #[test]
    fn test_processes_make_no_node_and_keep_no_capability() {
        let dir = tempfile::tempdir().unwrap();
        let exe = compiled(dir.path(), PROGRAM);

        let confined = Sandbox::new(Mode::Auto, Default::default()).unwrap();
        if confined.is_active() {
            let out = run_confined(&exe, &confined);
            assert!(out.contains("fifo: Operation not permitted"), "{out}");
            assert!(out.contains("device: Operation not permitted"), "{out}");
            assert!(
                out.contains("effective: 0 permitted: 0 inheritable: 0 bounding: 0"),
                "{out}"
            );
        }
        // Unconfined (`--sandbox off`, or no Landlock), a test process still has no capability: a
        // FIFO in its own directory is fine, a device node is not.
        let off = Sandbox::new(Mode::Off, Default::default()).unwrap();
        let out = run_confined(&exe, &off);
        assert!(out.contains("device: Operation not permitted"), "{out}");
        assert!(
            out.contains("effective: 0 permitted: 0 inheritable: 0"),
            "{out}"
        );
        eprintln!(
            "graded as root: {}; unconfined: {out}",
            rustix::process::geteuid().is_root()
        );
    }

    /// A grader that is not root bounds a test's tasks with `RLIMIT_NPROC` in the test's own user
    /// namespace (root is exempt from it: see [`TaskBound`]). Run here as an unprivileged user, whoever
    /// runs the suite: the bound holds, and counts the test's namespace alone.
    #[test]
    fn an_unprivileged_grader_bounds_a_tests_tasks_in_its_namespace() {
        use std::os::unix::fs::PermissionsExt;
        if !Sandbox::new(Mode::Auto, Default::default())
            .unwrap()
            .is_active()
        {
            eprintln!("no sandbox on this machine: nothing to check");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let exe = compiled(dir.path(), SHELL_TEST);
        let scratch = tempfile::tempdir().unwrap();
        for (path, mode) in [(dir.path(), 0o755), (scratch.path(), 0o777)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.arg(scratch.path()).current_dir(scratch.path());
        if rustix::process::geteuid().is_root() {
            // SAFETY: only system calls, between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    let nobody = 65534;
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setresgid(nobody, nobody, nobody) != 0
                        || libc::setresuid(nobody, nobody, nobody) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let rlimits = [(Resource::Core, 0)];
        let namespace = OwnNamespace {
            bound: Some(Bound::Rlimit(16)),
        };
        confine(&mut cmd, rlimits, None, Some(namespace));
        let out = output_of(cmd);
        eprintln!("{out}");
        assert!(out.contains("pid: 1\n"), "{out}");
        assert!(out.contains("processes: 16, then "), "{out}");
    }
}
