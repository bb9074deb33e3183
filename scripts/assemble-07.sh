#!/usr/bin/env bash
# Assemble a chapter-07 practice directory by hand, the way `pi-course practice 07` lays it out:
# the test harness, the chapter-06 snapshot, then the chapter's given files, then the chosen agent_loop.rs.
# For checking course content; learners use the CLI.
#
#   scripts/assemble-07.sh DIR [solution|skeleton|skeleton.en|FILE]     (default: solution)
#
# FILE is any agent_loop.rs, e.g. chapters/07-agent-loop/alternatives/os_threads.rs.
#
# Build assembled directories under target/content, one subdirectory per assembled directory:
#   CARGO_TARGET_DIR=/work/main/target/content/NAME cargo test --manifest-path DIR/Cargo.toml
# Every practice directory has the same package name and layout, and cargo's cache key for a path package
# does not include where it lives: two directories built into one target dir can pick up each other's
# artifacts (a skeleton "passing" with the solution's test binary) when their files are not newer.
set -euo pipefail

usage() { echo "usage: $0 DIR [solution|skeleton|skeleton.en|FILE]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
dir=$1
variant=${2:-solution}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chapter=$repo/chapters/07-agent-loop
case $variant in
    solution | skeleton | skeleton.en) loop_file=$chapter/$variant/src/agent_loop.rs ;;
    *) [[ -f $variant ]] || usage; loop_file=$variant ;;
esac

if [[ -e $dir && -n $(ls -A "$dir" 2>/dev/null) ]]; then
    echo "$dir exists and is not empty; choose a new directory" >&2
    exit 1
fi
mkdir -p "$dir/src"
# A content crate someone built in place may hold a target/; never copy it.
copy_tree() { (cd "$1" && tar --exclude=./target --exclude='*/target' -cf - .) | (cd "$dir" && tar -xf -); }
mkdir -p "$dir/harness"
(cd "$repo/harness" && tar --exclude=./target -cf - .) | (cd "$dir/harness" && tar -xf -)
copy_tree "$repo/snapshots/06"
copy_tree "$chapter/files"
cp "$loop_file" "$dir/src/agent_loop.rs"
echo "assembled $dir ($variant)"
