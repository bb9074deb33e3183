//! Whose build a slot holds, and clearing it before the slot builds for another learner.
//!
//! A slot's target directory keeps what the last build made of the learner's file: the test executable,
//! the crate's library, its incremental data and fingerprints (Rust), the compiled `dist/` (TypeScript).
//! The next build may read its whole target directory (the dependencies' outputs are there), and the
//! file names are the same in every slot, so `include_bytes!` of the previous executable would show the
//! previous learner's compiled loop. So each slot records whose build it holds, and before it builds for
//! another learner, that learner's outputs are removed ([`crate::track::clear_learner_outputs`]):
//! what stays is compiled from the locked packages and the given files only, the same for everyone.
//!
//! A learner is a practice directory, or a submitted file in a class (by its path). One exception keeps
//! a fresh start fast: outputs that a successful build made from exactly the bytes about to be graded
//! (the untouched skeleton, say) hold nothing the new learner's file does not.

use std::path::{Path, PathBuf};

use crate::cache::BuildDir;
use crate::metadata::fingerprint;

/// Who is graded, and what.
pub struct Occupant {
    /// A hash of the learner's identity (never the path itself: the record sits in the cache).
    learner: String,
    /// A hash of the editable files graded.
    files: String,
}

impl Occupant {
    /// The learner `identity` (see [`super::submission::Submission::identity`]), graded on `editable`.
    pub fn of(identity: &str, editable: &[(String, Vec<u8>)]) -> Occupant {
        let mut files = Vec::new();
        for (path, bytes) in editable {
            files.extend((path.len() as u64).to_le_bytes());
            files.extend(path.as_bytes());
            files.extend((bytes.len() as u64).to_le_bytes());
            files.extend(bytes);
        }
        Occupant {
            learner: fingerprint(identity.as_bytes()),
            files: fingerprint(&files),
        }
    }

    /// Whether the slot's outputs are this learner's to reuse: theirs, or built from these very files.
    pub fn may_reuse(&self, slot: &BuildDir) -> bool {
        let record = std::fs::read_to_string(record(slot)).unwrap_or_default();
        let mut lines = record.lines();
        let (learner, built) = (lines.next(), lines.next());
        learner == Some(self.learner.as_str()) || built == Some(self.files.as_str())
    }

    /// Records that the slot now builds for this learner: before the build (whatever it leaves is theirs)
    /// and after it, with `built` when it succeeded (its outputs are those of these files).
    pub fn record(&self, slot: &BuildDir, built: bool) -> std::io::Result<()> {
        let files = if built { self.files.as_str() } else { "" };
        crate::atomic_file::write(
            &record(slot),
            format!("{}\n{files}\n", self.learner).as_bytes(),
        )
    }
}

/// `<slot>.occupant`, beside the slot's lock: outside what a build may read.
fn record(slot: &BuildDir) -> PathBuf {
    let name = slot
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    slot.path
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!("{name}.occupant"))
}
