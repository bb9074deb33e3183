#!/usr/bin/env bash
# Check chapter 07's tests against its reference loop and its mutants:
#   - the reference (solution/) passes every group, the optional one included;
#   - the skeleton fails each of the five groups, and the failure output names a Lab;
#   - every mutant in mutants.toml compiles and fails the group it names (other groups that also
#     catch it are listed).
# Exits non-zero if anything is off. A developer script: the CLI's own tests prove the same through
# the real practice-and-grade path.
#
#   scripts/check-mutants.sh [MUTANT_NAME...]     (default: every mutant)
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chapter=$repo/chapters/07-agent-loop
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target/content/check-mutants}
export CARGO_TERM_COLOR=never

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

modules=(plain_stop single_tool non_executing concurrent_tools cancel_and_limits)
bonus=duplicate_call_ids
problems=0
problem() { echo "  !! $*"; problems=$((problems + 1)); }

# The mutant catalog, read and applied with Python's TOML reader.
cat >"$work/mutants.py" <<'PY'
import sys, tomllib

def load(path):
    with open(path, "rb") as f:
        return tomllib.load(f)["mutant"]

cmd, path = sys.argv[1], sys.argv[2]
mutants = load(path)
if cmd == "list":
    for m in mutants:
        print(f"{m['name']}\t{m['group']}")
elif cmd == "apply":
    name, source, target = sys.argv[3:6]
    (m,) = [m for m in mutants if m["name"] == name]
    text = open(source, encoding="utf-8").read()
    for n, edit in enumerate(m["edit"], 1):
        count = text.count(edit["find"])
        if count != 1:
            sys.exit(f"edit {n}: `find` occurs {count} times in the reference (must be exactly once)")
        text = text.replace(edit["find"], edit["replace"])
    open(target, "w", encoding="utf-8").write(text)
PY

# Builds the practice directory's test target and copies the binary to $work/ch07. Cargo's cache key
# for a path package does not include where it lives, so a build made in another directory with the
# same layout (an earlier run of this script) can look fresh here. A variant is therefore written (new
# mtime) just before its build, the build must report the library and the test target as compiled now
# (not fresh), and the binary is copied at once so a later build cannot replace it.
build() {
    (cd "$work/p" && timeout 600 cargo test --test ch07 --no-run --message-format=json-render-diagnostics) \
        >"$work/build.json" 2>"$work/out" || return 1
    python3 - "$work/build.json" "$work/ch07" <<'PY'
import json, shutil, sys
exe, stale = None, []
for line in open(sys.argv[1]):
    msg = json.loads(line)
    if msg.get("reason") != "compiler-artifact" or msg["target"]["name"] not in ("pi_course", "ch07"):
        continue
    if msg["fresh"]:
        stale.append(msg["target"]["name"])
    if msg["target"]["name"] == "ch07" and msg.get("executable"):
        exe = msg["executable"]
if stale or not exe:
    sys.exit(f"build reused artifacts it did not make: {stale or 'no executable'}")
shutil.copy(exe, sys.argv[2])
PY
}
# run_tests FILTER: runs the built test binary with FILTER; output in $work/out.
run_tests() {
    (cd "$work/p" && timeout 300 "$work/ch07" "$1") >"$work/out" 2>&1
}
# failing_groups: the modules with a failing test in $work/out, space separated.
failing_groups() {
    sed -n 's/^test \([a-z_]*\)::.* \.\.\. FAILED$/\1/p' "$work/out" | sort -u | tr '\n' ' '
}

echo "== assembling"
"$repo/scripts/assemble-07.sh" "$work/p" solution >/dev/null || exit 1
# use_variant FILE: writes FILE as the loop and builds it.
use_variant() {
    cp "$1" "$work/p/src/agent_loop.rs"
    touch "$work/p/src/agent_loop.rs"
    build
}

echo "== reference: every group passes"
if ! use_variant "$chapter/solution/src/agent_loop.rs"; then
    problem "reference does not build"
    cat "$work/out"
    exit 1
fi
for module in "${modules[@]}" "$bonus"; do
    if run_tests "$module::" && grep -q "test result: ok. [1-9]" "$work/out"; then
        echo "  pass  $module ($(grep -o '[0-9]* passed' "$work/out" | head -1))"
    else
        problem "reference fails $module"
        tail -40 "$work/out"
    fi
done

echo "== skeleton: every group fails and names its Lab"
if ! use_variant "$chapter/skeleton/src/agent_loop.rs"; then
    problem "skeleton does not build"
    grep -A5 '^error' "$work/out" | head -20
else
    for module in "${modules[@]}"; do
        if run_tests "$module::"; then
            problem "skeleton passes $module"
        else
            labs=$(grep -o 'Lab 7\.[0-9]' "$work/out" | sort -u | tr '\n' ' ')
            if [[ -z $labs ]]; then
                problem "skeleton fails $module without naming a Lab"
            else
                echo "  fail  $module (names: $labs)"
            fi
        fi
    done
fi

echo "== mutants"
mapfile -t catalog < <(python3 "$work/mutants.py" list "$chapter/mutants.toml") || exit 1
caught=0
total=0
for entry in "${catalog[@]}"; do
    name=${entry%%$'\t'*}
    group=${entry#*$'\t'}
    if [[ $# -gt 0 && ! " $* " == *" $name "* ]]; then
        continue
    fi
    total=$((total + 1))
    module=${group//-/_}
    if ! python3 "$work/mutants.py" apply "$chapter/mutants.toml" "$name" \
        "$chapter/solution/src/agent_loop.rs" "$work/mutant.rs" 2>"$work/out"; then
        problem "$name: $(cat "$work/out")"
        continue
    fi
    if ! use_variant "$work/mutant.rs"; then
        problem "$name does not build: $(grep -m1 -A3 '^error' "$work/out")"
        continue
    fi
    if ! run_tests "$module::" && grep -q "test result: FAILED" "$work/out"; then
        run_tests ""
        also=$(failing_groups)
        also=${also//$module /}
        printf '  caught      %-40s by %-18s also: %s\n' "$name" "$group" "${also:-none}"
        caught=$((caught + 1))
    else
        problem "NOT caught  $name (group $group)"
    fi
done
echo "== $caught of $total mutants caught"

if [[ $problems -ne 0 ]]; then
    echo "== $problems problem(s)"
    exit 1
fi
echo "== all good"
