#!/usr/bin/env bash
# Runs chapter 07's test target N times against a loop (the reference by default) and prints how many
# distinct verdicts came out (a deterministic target gives exactly 1) and how many runs passed.
#
#   scripts/repeat-07.sh N THREADS [LOOP]
#
# LOOP is an agent_loop.rs to run instead of the reference, e.g.
# chapters/07-agent-loop/alternatives/os_threads.rs (tools on OS threads).
#
# A verdict is the exit status plus every test's name and outcome (sorted, timing left out). The test
# binary is built once, then run N times with --test-threads=THREADS.
set -euo pipefail

[[ ($# -eq 2 || $# -eq 3) && $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $1 -gt 0 && $2 -gt 0 ]] || {
    echo "usage: $0 N THREADS [LOOP]" >&2
    exit 2
}
runs=$1
threads=$2

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
loop_file=${3:-$repo/chapters/07-agent-loop/solution/src/agent_loop.rs}
[[ -f $loop_file ]] || {
    echo "$loop_file: no such file" >&2
    exit 2
}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target/content/repeat-07}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$repo/scripts/assemble-07.sh" "$work/p" solution >/dev/null
cp "$loop_file" "$work/p/src/agent_loop.rs"
# The target directory may hold a build of an earlier directory with the same layout; a fresh mtime on
# the loop makes this build its own, and the build must say so (see check-mutants.sh).
touch "$work/p/src/agent_loop.rs"
(cd "$work/p" && cargo test --test ch07 --no-run --message-format=json-render-diagnostics) \
    >"$work/build.json" 2>"$work/build.log" || {
    cat "$work/build.log" >&2
    exit 1
}
exe=$(python3 - "$work/build.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "ch07":
        if msg["fresh"]:
            sys.exit("the test binary was not built from this directory")
        print(msg["executable"])
PY
)
cp "$exe" "$work/ch07"

declare -A verdicts=()
passed=0
start=$(date +%s%N)
for ((i = 1; i <= runs; i++)); do
    status=0
    (cd "$work/p" && "$work/ch07" --test-threads="$threads") >"$work/out" 2>&1 || status=$?
    verdict="$status $(grep -E '^test .* \.\.\. ' "$work/out" | sort | sha256sum | cut -c1-16)"
    verdicts[$verdict]=$((${verdicts[$verdict]:-0} + 1))
    [[ $status -eq 0 ]] && passed=$((passed + 1))
done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

tests=$(grep -cE '^test .* \.\.\. ' "$work/out")
echo "loop: $loop_file"
echo "runs: $runs  threads: $threads  tests per run: $tests"
echo "distinct verdicts: ${#verdicts[@]}"
for verdict in "${!verdicts[@]}"; do
    echo "  exit ${verdict%% *} (outcomes ${verdict#* }): ${verdicts[$verdict]} runs"
done
echo "passed: $passed of $runs"
echo "wall time: $((elapsed_ms / 1000)).$(printf '%03d' $((elapsed_ms % 1000))) s ($((elapsed_ms / runs)) ms per run)"
[[ ${#verdicts[@]} -eq 1 && $passed -eq $runs ]]
