//! Which file a path is, and whether it changed since: for build outputs a grade reuses (a test
//! executable, the toolchain's programs), without reading their megabytes.

use std::path::Path;

/// Which file `path` is, and whether it changed: its inode, size, and modification and status-change
/// times. Any write to the file, or a file put in its place, moves the status-change time to the present,
/// and no call lets a program set it back; so this tells a changed executable as surely as hashing its
/// megabytes would, in microseconds.
pub fn of(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok(format!(
        "{} {} {}.{} {}.{}",
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}
