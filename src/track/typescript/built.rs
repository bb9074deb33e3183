//! What the slot's last successful compile compiled from, so that a grade of the same files does not
//! run the compiler again (a re-grade under another seed, `watch`'s `r`, a class graded twice).
//!
//! Why skipping is sound: only the compiler writes `dist/` (the tests read it and nothing else), the
//! compiler is deterministic, and everything it reads in the slot is in the fingerprint: the learner's
//! file, the given files, `tsconfig.json`, and `package.json` with its lock file, which name the compiler
//! and the dependencies. The record lives inside `dist/`, so clearing a slot for another learner
//! clears it too, and it is written only after the compiler succeeded: a build that failed, or was
//! stopped half-way, always compiles again.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The record, inside `dist/`.
const RECORD: &str = ".pi-course-compiled";

/// The slot's own outputs and links, which are not inputs: `dist/`, `node_modules` (a link to the
/// installed dependencies, named by the lock file) and tsc's incremental records.
fn is_output(top: &str) -> bool {
    top == super::DIST || top == "node_modules" || top.ends_with(".tsbuildinfo")
}

/// A fingerprint of every file of the slot but its outputs: path, kind and bytes, in a fixed order.
/// Links are hashed as links (their target's text), never followed.
pub fn fingerprint(build_dir: &Path) -> std::io::Result<String> {
    let mut hash = Sha256::new();
    let mut pending = vec![build_dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let relative = path.strip_prefix(build_dir).unwrap_or(&path);
            if dir == build_dir && is_output(&entry.file_name().to_string_lossy()) {
                continue;
            }
            let kind = entry.file_type()?;
            let name = relative.to_string_lossy();
            let mut field = |tag: &[u8], bytes: &[u8]| {
                hash.update(tag);
                hash.update((name.len() as u64).to_le_bytes());
                hash.update(name.as_bytes());
                hash.update((bytes.len() as u64).to_le_bytes());
                hash.update(bytes);
            };
            if kind.is_dir() {
                field(b"d", b"");
                pending.push(path);
            } else if kind.is_symlink() {
                field(
                    b"l",
                    std::fs::read_link(&path)?.as_os_str().as_encoded_bytes(),
                );
            } else {
                field(b"f", &std::fs::read(&path)?);
            }
        }
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether the last successful compile of the slot was of exactly these inputs.
pub fn is_current(build_dir: &Path, fingerprint: &str) -> bool {
    std::fs::read(build_dir.join(super::DIST).join(RECORD))
        .is_ok_and(|r| r == fingerprint.as_bytes())
}

/// Forgets the last compile (before compiling again): a compile that fails or stops leaves no record.
pub fn forget(build_dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(build_dir.join(super::DIST).join(RECORD)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Records a successful compile of these inputs.
pub fn record(build_dir: &Path, fingerprint: &str) -> std::io::Result<()> {
    std::fs::write(build_dir.join(super::DIST).join(RECORD), fingerprint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot() -> tempfile::TempDir {
        let slot = tempfile::tempdir().unwrap();
        for (path, text) in [
            ("src/agent-loop.ts", "export const a = 1;\n"),
            ("test/07.test.ts", "import './x';\n"),
            ("tsconfig.json", "{}"),
            ("package-lock.json", "{}"),
        ] {
            let path = slot.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(slot.path().join("dist")).unwrap();
        slot
    }

    #[test]
    fn any_change_of_an_input_changes_the_fingerprint_and_outputs_do_not() {
        let slot = slot();
        let p = slot.path();
        let first = fingerprint(p).unwrap();
        assert_eq!(fingerprint(p).unwrap(), first);
        // Outputs are not inputs.
        std::fs::write(p.join("dist/agent-loop.js"), "x").unwrap();
        std::fs::write(p.join("tsconfig.tsbuildinfo"), "x").unwrap();
        std::os::unix::fs::symlink("/elsewhere", p.join("node_modules")).unwrap();
        assert_eq!(fingerprint(p).unwrap(), first);
        // Every input is.
        let mut seen = vec![first.clone()];
        let mut changed = |change: &dyn Fn(&Path)| {
            change(p);
            let now = fingerprint(p).unwrap();
            assert!(!seen.contains(&now), "a change kept an earlier fingerprint");
            seen.push(now);
        };
        changed(&|p| std::fs::write(p.join("src/agent-loop.ts"), "export const a = 2;\n").unwrap());
        changed(&|p| std::fs::write(p.join("package-lock.json"), "{ }").unwrap());
        changed(&|p| std::fs::write(p.join("test/more.ts"), "").unwrap());
        changed(&|p| std::fs::create_dir(p.join("test/sub")).unwrap());
        changed(&|p| std::os::unix::fs::symlink("a", p.join("src/link")).unwrap());
        // The same bytes under another name are another input.
        changed(&|p| std::fs::rename(p.join("test/more.ts"), p.join("test/other.ts")).unwrap());
    }

    #[test]
    fn only_a_recorded_compile_of_the_same_inputs_is_current() {
        let slot = slot();
        let p = slot.path();
        let inputs = fingerprint(p).unwrap();
        assert!(!is_current(p, &inputs), "nothing was compiled yet");
        record(p, &inputs).unwrap();
        assert!(is_current(p, &inputs));
        assert!(!is_current(p, "another"));
        forget(p).unwrap();
        assert!(!is_current(p, &inputs));
        forget(p).unwrap();
        // A cleared slot (its dist/ removed for another learner) has no record either.
        record(p, &inputs).unwrap();
        std::fs::remove_dir_all(p.join("dist")).unwrap();
        assert!(!is_current(p, &inputs));
    }
}
