//! The `pi-course` command: everything it does is in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    pi_course::run()
}
