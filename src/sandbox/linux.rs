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

use super::{resolved, BuildPaths, Limits, TestPaths};

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
) -> io::Result<()> {
    let confinement = if active {
        Some((test_ruleset(paths)?, test_filters()?))
    } else {
        None
    };
    let rlimits = [
        (Resource::Data, limits.memory),
        (Resource::Fsize, limits.file_size),
        (Resource::Cpu, limits.test_cpu_secs),
        (Resource::Core, 0),
    ];
    confine(cmd, rlimits, confinement);
    Ok(())
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
    add(ruleset, &paths.scratch, AccessFs::from_all(abi()))
}

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
    confine(cmd, rlimits, confinement);
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

/// The seccomp programs of a test process: no new process (threads are fine), no socket but a local
/// one, no tracing or reading of other processes, no kernel facilities a test has no use for.
fn test_filters() -> io::Result<Vec<BpfProgram>> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| io::Error::other(format!("sandbox: seccomp: {e}")))?;
    let seccomp_error = |e: seccompiler::BackendError| io::Error::other(format!("seccomp: {e}"));
    let condition = |arg, op, value| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value).map_err(seccomp_error)
    };

    let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for syscall in [
        libc::SYS_vfork,
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
    for syscall in [libc::SYS_fork, libc::SYS_mknod] {
        denied.insert(syscall, Vec::new());
    }
    // clone without CLONE_THREAD makes a process; with it, a thread.
    let not_a_thread = condition(0, SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64), 0)?;
    denied.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![not_a_thread]).map_err(seccomp_error)?],
    );
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
/// then Landlock and seccomp when `confinement` is given.
fn confine<const N: usize>(
    cmd: &mut Command,
    rlimits: [(Resource, u64); N],
    confinement: Option<(RulesetCreated, Vec<BpfProgram>)>,
) {
    let grader = Pid::from_raw(std::process::id() as i32);
    let (mut ruleset, filters) = match confinement {
        Some((ruleset, filters)) => (Some(ruleset), filters),
        None => (None, Vec::new()),
    };
    // SAFETY: the closure runs in the child between fork and exec, where other threads of the grader may
    // have left locks (the allocator's too) held, so it only makes system calls: setrlimit, prctl and
    // getppid through rustix, signal (async-signal-safe), restrict_self and apply_filter (prctl plus one
    // Landlock or seccomp call each), and `drop_privileges`' prctl and capset. It allocates and frees nothing: the ruleset (a descriptor) and the
    // seccomp programs were built before the fork and are consumed or borrowed, and every error is a raw
    // OS error.
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

#[cfg(test)]
mod tests {
    use super::super::{Mode, Sandbox, TestPaths};
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
        let scratch = tempfile::tempdir().unwrap();
        let mut cmd = tokio::process::Command::new(exe);
        let paths = TestPaths {
            exe: exe.to_path_buf(),
            read: Vec::new(),
            scratch: scratch.path().to_path_buf(),
        };
        sandbox.confine_test(&mut cmd, &paths).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let out = rt.block_on(async { cmd.output().await }).unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn test_processes_make_no_node_and_keep_no_capability() {
        let dir = tempfile::tempdir().unwrap();
        let (src, exe) = (dir.path().join("p.rs"), dir.path().join("p"));
        std::fs::write(&src, PROGRAM).unwrap();
        let built = std::process::Command::new("rustc")
            .args(["--edition", "2021", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap();
        assert!(built.success());

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
}
