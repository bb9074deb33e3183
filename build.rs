//! Embeds the course content (snapshots/ and chapters/) into the binary, so an installed `pi-course`
//! works from any directory. A chapter's `solution/`, `alternatives/`, `mutants.toml` and `staged.toml`
//! are left out on purpose: the reference answer, the other correct loops, the deliberate bugs and the
//! reference's code Lab by Lab live in this repository only.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

const ROOTS: &[&str] = &[
    "snapshots",
    "chapters",
    "templates",
    "harness",
    "harness-node",
];

fn is_repo_only(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.first() != Some(&"chapters") || parts.len() < 3 {
        return false;
    }
    // A chapter's Rust track lives at its top; another track in a folder of its own (`typescript/`).
    let within = if parts[2] == "typescript" { 3 } else { 2 };
    parts.get(within).is_some_and(|part| {
        matches!(
            *part,
            "solution" | "alternatives" | "mutants.toml" | "staged.toml"
        )
    })
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            // Build output of a content crate or package, if a developer built inside it.
            if path
                .file_name()
                .is_some_and(|n| n == "target" || n == "node_modules" || n == "dist")
            {
                continue;
            }
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let mut files = Vec::new();
    for root in ROOTS {
        let dir = manifest_dir.join(root);
        println!("cargo:rerun-if-changed={}", dir.display());
        if dir.is_dir() {
            walk(&dir, &mut files);
        }
    }
    let mut code = String::from(
        "/// Every embedded content file: (path relative to the repository, bytes).\n",
    );
    code.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    for path in files {
        let rel = path
            .strip_prefix(&manifest_dir)
            .unwrap()
            .to_str()
            .expect("content paths are UTF-8")
            .replace('\\', "/");
        if is_repo_only(&rel) {
            continue;
        }
        // Directories are watched above; files too, so edits to existing files re-run this script.
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("embedded.rs");
    fs::write(out, code).unwrap();
}
