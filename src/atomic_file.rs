//! Writing a file that a reader never sees half written: the bytes go to a temporary file in the same
//! directory, which is then renamed over the target (`tempfile`'s `persist`).

use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` all at once for any reader. No fsync: these are reports and records that can
/// be made again, and the learner waits for every millisecond.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Same directory, so the rename stays on one file system. Readable as a file `File::create` makes
    // (0666 less the umask, so usually 0644), not private as a temporary file: reports and class pages
    // are for a TA or a web server to read too.
    let mut tmp = tempfile::Builder::new()
        .prefix(".pi-course-")
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("report.json");
        write(&file, b"first").unwrap();
        write(&file, b"second").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["report.json"]);
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write(&dir.path().join("no/such/file"), b"x").is_err());
    }
}
