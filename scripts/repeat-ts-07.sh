#!/usr/bin/env bash
# Runs chapter 07's TypeScript tests N times against a loop (the reference by default) and prints how
# many distinct verdicts came out (a deterministic suite gives exactly 1) and how many runs passed.
#
#   scripts/repeat-ts-07.sh N [LOOP_FILE]
#
# LOOP_FILE is an agent-loop.ts to run instead of the reference, e.g.
# chapters/07-agent-loop/typescript/alternatives/async-generator.ts.
#
# A verdict is the exit status plus every test's name and outcome (sorted, timing left out). The
# directory is assembled and built once, then `node --test` runs N times.
set -euo pipefail

[[ ($# -eq 1 || $# -eq 2) && $1 =~ ^[0-9]+$ && $1 -gt 0 ]] || {
    echo "usage: $0 N [LOOP_FILE]" >&2
    exit 2
}
runs=$1

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
loop_file=${2:-$repo/chapters/07-agent-loop/typescript/solution/src/agent-loop.ts}
[[ -f $loop_file ]] || {
    echo "$loop_file: no such file" >&2
    exit 2
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset PI_COURSE_LANG

"$repo/scripts/assemble-ts-07.sh" "$work/p" "$loop_file" >/dev/null

declare -A verdicts=()
passed=0
start=$(date +%s%N)
for ((i = 1; i <= runs; i++)); do
    status=0
    (cd "$work/p" && timeout 300 node --test --test-reporter=tap dist/test/07-*.test.js) >"$work/out" 2>&1 || status=$?
    # Each test's outcome and name; the TAP numbering depends on which file finished first, so it goes.
    verdict="$status $(sed -nE 's/^ *(ok|not ok) [0-9]+ - (.*)$/\1 \2/p' "$work/out" | sort | sha256sum | cut -c1-16)"
    verdicts[$verdict]=$((${verdicts[$verdict]:-0} + 1))
    [[ $status -eq 0 ]] && passed=$((passed + 1))
done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

tests=$(grep -cE '^ *(ok|not ok) [0-9]+ - .* › ' "$work/out" || true)
echo "loop: $loop_file"
echo "runs: $runs  tests per run: $tests"
echo "distinct verdicts: ${#verdicts[@]}"
for verdict in "${!verdicts[@]}"; do
    echo "  exit ${verdict%% *} (outcomes ${verdict#* }): ${verdicts[$verdict]} runs"
done
echo "passed: $passed of $runs"
echo "wall time: $((elapsed_ms / 1000)).$(printf '%03d' $((elapsed_ms % 1000))) s ($((elapsed_ms / runs)) ms per run)"
[[ ${#verdicts[@]} -eq 1 && $passed -eq $runs ]]
