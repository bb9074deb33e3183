//! Reading a file that a learner controls: from inside their directory only, never through a symbolic
//! link, without ever blocking and without reading without end. It must be a regular file (not a FIFO,
//! whose open waits for a writer, nor a device like `/dev/zero`) of bounded size.
//!
//! A link is refused wherever it is: `src/agent_loop.rs -> ../../alice/src/agent_loop.rs` would grade a
//! classmate's loop, and `src -> /home/instructor` would hand the instructor's files to the compiler.
//! The root (the directory the grader was given) is the only path whose links are followed.

use std::fs;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Component, Path};

use rustix::fs::{Mode, OFlags};

/// What [`read`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    Bytes(Vec<u8>),
    /// Not a regular file: "FIFO", "device", "directory", "socket" or "special file".
    NotAFile(&'static str),
    /// Larger than the limit: its size in bytes (or as much as was read).
    TooLarge(u64),
    /// The file, or a directory on the way to it, is a symbolic link: it was not read.
    Link,
}

/// Reads `rel` inside `root` if it is a regular file of at most `limit` bytes, reached without any
/// symbolic link. The open never blocks, and no more than `limit + 1` bytes are read even if the file
/// grows meanwhile. `rel` must be a plain relative path (no `..`, not absolute): anything else is
/// `InvalidInput`.
pub fn read(root: &Path, rel: impl AsRef<Path>, limit: u64) -> io::Result<Contents> {
    let file = match open_beneath(root, rel.as_ref()) {
        Ok(fd) => fs::File::from(fd),
        Err(e) if is_link_error(&e) => return Ok(Contents::Link),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Ok(Contents::NotAFile(if kind.is_fifo() {
            "FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "device"
        } else if kind.is_dir() {
            "directory"
        } else if kind.is_socket() {
            "socket"
        } else {
            "special file"
        }));
    }
    if meta.len() > limit {
        return Ok(Contents::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(Contents::TooLarge(bytes.len() as u64));
    }
    Ok(Contents::Bytes(bytes))
}

/// Whether `path` (its last component, not the directories above it) is a symbolic link.
pub fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The error the kernel gives for a link met where none may be (`O_NOFOLLOW`, `RESOLVE_NO_SYMLINKS`).
fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Opens `rel` beneath `root` for reading: no component may be a symbolic link, and the path may not
/// leave `root`. Linux 5.6 and newer check the whole path in the kernel (`openat2` with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`); elsewhere the path is walked one directory at a time, each
/// opened relative to the one before with `O_NOFOLLOW`, which refuses the same links.
fn open_beneath(root: &Path, rel: &Path) -> io::Result<OwnedFd> {
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(part) => Ok(part),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a plain relative path", rel.display()),
            )),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, dirs)) = parts.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    };
    let directory = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let file =
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = rustix::fs::open(root, directory, Mode::empty())?;
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::ResolveFlags;
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&dir, rel, file, Mode::empty(), resolve) {
            // Older kernels (and some container sandboxes) lack openat2: walk instead.
            Err(rustix::io::Errno::NOSYS) | Err(rustix::io::Errno::PERM) => {}
            opened => return Ok(opened?),
        }
    }
    walk(dir, dirs, last, file)
}

/// Opens `dirs/last` below `dir` one component at a time, refusing a link at each (`O_NOFOLLOW`).
fn walk(
    mut dir: OwnedFd,
    dirs: &[&std::ffi::OsStr],
    last: &std::ffi::OsStr,
    flags: OFlags,
) -> io::Result<OwnedFd> {
    let directory = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for part in dirs {
        dir = match rustix::fs::openat(&dir, *part, directory, Mode::empty()) {
            Ok(next) => next,
            // A linked directory fails as "not a directory": say what it is.
            Err(e) => {
                let stat = rustix::fs::statat(&dir, *part, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
                let link = stat.is_ok_and(|s| {
                    rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::Symlink
                });
                return Err(if link { rustix::io::Errno::LOOP } else { e }.into());
            }
        };
    }
    Ok(rustix::fs::openat(&dir, last, flags, Mode::empty())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("small"), b"fn main() {}").unwrap();
        assert_eq!(
            read(d, "small", 100).unwrap(),
            Contents::Bytes(b"fn main() {}".to_vec())
        );
        assert_eq!(read(d, "small", 4).unwrap(), Contents::TooLarge(12));
        assert!(std::process::Command::new("mkfifo")
            .arg(d.join("fifo"))
            .status()
            .unwrap()
            .success());
        assert_eq!(read(d, "fifo", 100).unwrap(), Contents::NotAFile("FIFO"));
        assert_eq!(
            read(Path::new("/dev"), "zero", 100).unwrap(),
            Contents::NotAFile("device")
        );
        fs::create_dir(d.join("sub")).unwrap();
        assert_eq!(
            read(d, "sub", 100).unwrap(),
            Contents::NotAFile("directory")
        );
        assert_eq!(
            read(d, "missing", 100).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn no_link_is_followed_and_no_path_leaves_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("real/src")).unwrap();
        fs::write(d.join("real/src/a.rs"), "real").unwrap();
        fs::write(d.join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(d.join("secret"), d.join("real/src/link.rs")).unwrap();
        std::os::unix::fs::symlink("real", d.join("linked")).unwrap();
        let root = d.join("real");
        assert_eq!(
            read(&root, "src/a.rs", 100).unwrap(),
            Contents::Bytes(b"real".to_vec())
        );
        assert_eq!(read(&root, "src/link.rs", 100).unwrap(), Contents::Link);
        // A linked directory on the way, and the root's own links (the root is followed).
        assert_eq!(read(d, "linked/src/a.rs", 100).unwrap(), Contents::Link);
        assert_eq!(
            read(&d.join("linked"), "src/a.rs", 100).unwrap(),
            Contents::Bytes(b"real".to_vec())
        );
        for escape in ["../secret", "/etc/passwd", ""] {
            assert_eq!(
                read(&root, escape, 100).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{escape}"
            );
        }
        assert!(is_link(&d.join("linked")) && !is_link(&root));

        // The walk that kernels without openat2 use refuses the same links.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK;
        let open = |at: &Path| rustix::fs::open(at, OFlags::DIRECTORY, Mode::empty()).unwrap();
        let name = std::ffi::OsStr::new;
        assert!(walk(open(&root), &[name("src")], name("a.rs"), flags).is_ok());
        let link = walk(open(&root), &[name("src")], name("link.rs"), flags).unwrap_err();
        assert!(is_link_error(&link), "{link}");
        let under = walk(open(d), &[name("linked"), name("src")], name("a.rs"), flags).unwrap_err();
        assert!(is_link_error(&under), "{under}");
    }
}
