//! Reading a file that a learner controls without ever blocking or reading without end: it must be a
//! regular file (not a FIFO, whose open waits for a writer, nor a device like `/dev/zero`) of bounded size.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What [`read`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    Bytes(Vec<u8>),
    /// Not a regular file: "FIFO", "device", "directory", "socket" or "special file".
    NotAFile(&'static str),
    /// Larger than the limit: its size in bytes (or as much as was read).
    TooLarge(u64),
}

/// Reads `path` (symbolic links followed) if it is a regular file of at most `limit` bytes. The open
/// never blocks, and no more than `limit + 1` bytes are read even if the file grows meanwhile.
pub fn read(path: &Path, limit: u64) -> io::Result<Contents> {
    let file = fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        fs::write(&small, b"fn main() {}").unwrap();
        assert_eq!(
            read(&small, 100).unwrap(),
            Contents::Bytes(b"fn main() {}".to_vec())
        );
        assert_eq!(read(&small, 4).unwrap(), Contents::TooLarge(12));
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert_eq!(read(&fifo, 100).unwrap(), Contents::NotAFile("FIFO"));
        assert_eq!(
            read(Path::new("/dev/zero"), 100).unwrap(),
            Contents::NotAFile("device")
        );
        assert_eq!(
            read(dir.path(), 100).unwrap(),
            Contents::NotAFile("directory")
        );
    }
}
