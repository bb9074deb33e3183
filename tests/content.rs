//! The chapter content as a learner gets it: the skeleton and the reference compile without a warning
//! (clippy included), and the given course crate's own tests pass, in a real practice directory.

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

/// cargo in `dir` with its own target under the test scratch space (shared by runs of this test).
fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(args)
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("content-target"),
        )
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("cargo runs")
}

#[test]
fn skeleton_and_reference_are_warning_free_and_the_given_crate_passes_its_tests() {
    // One directory, edited in place, so the target is never shared between two directories: cargo
    // would judge one's artifacts fresh for the other.
    let (_tmp, dir) = practice();
    let clippy = [
        "clippy",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ];

    let out = cargo(&dir, &clippy);
    assert!(
        out.status.success(),
        "the skeleton has warnings\n{}",
        describe(&out)
    );

    write_loop(&dir, &solution());
    let out = cargo(&dir, &clippy);
    assert!(
        out.status.success(),
        "the reference has warnings\n{}",
        describe(&out)
    );

    let out = cargo(&dir, &["test", "--locked", "-p", "pi-course-base"]);
    assert!(
        out.status.success(),
        "the given course crate's tests fail\n{}",
        describe(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("test ") && l.ends_with(" ... ok")),
        "no course crate test ran\n{text}"
    );
}

/// The skeleton and the reference start with the same public surface, byte for byte, up to the marker
/// that ends it. The tests compile against that surface: identical text keeps a learner's edits (and a
/// fresh directory after a finished one) from recompiling the whole test crate, and it proves the
/// reference declares exactly what the skeleton promises.
#[test]
fn skeleton_and_reference_share_the_public_surface() {
    let chapter = chapter_dir();
    let read = |p: &str| std::fs::read_to_string(chapter.join(p)).unwrap();
    let (skeleton, reference) = (
        read("skeleton/src/agent_loop.rs"),
        read("solution/src/agent_loop.rs"),
    );
    let marker = "// Above is the public surface the tests compile against.";
    let end = |s: &str| {
        s.find(marker)
            .expect("the surface ends with the marker comment")
    };
    assert_eq!(
        &skeleton[..end(&skeleton)],
        &reference[..end(&reference)],
        "the skeleton and the reference declare different public surfaces"
    );
}
