/work/main/harness/target/debug/deps/pi_course_harness-8814538b0de8744c.d: src/lib.rs src/judge.rs src/protocol.rs

/work/main/harness/target/debug/deps/pi_course_harness-8814538b0de8744c: src/lib.rs src/judge.rs src/protocol.rs

src/lib.rs:
src/judge.rs:
src/protocol.rs:
