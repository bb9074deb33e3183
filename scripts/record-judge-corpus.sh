#!/usr/bin/env bash
# Records the real traces that tests/cli/judge/agreement.rs feeds to both comparisons (the grader's
# harness/judge/src/compare.rs and the TypeScript track's test/judge.ts): chapter 07's hand-run tests, run with
# PI_COURSE_TRACE=1 by both drivers on the reference, every alternative and some mutants, each trace
# kept once. Writes tests/fixtures/judge-corpus.jsonl, one trace a line:
#
#   {"source":"ts/mutant/second-turn-end","test":"<scenario name>","trace":[STEP, …]}
#
# The expected trace of each is the hand fixture's (the scenario of that name, seed 7). Slow (every
# variant is built and run): a developer script, run again when the drivers or the scenarios change.
#
#   scripts/record-judge-corpus.sh [MUTANTS_PER_GROUP]    (default 2; "all" for every mutant)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chapter=$repo/chapters/07-agent-loop
out=$repo/tests/fixtures/judge-corpus.jsonl
per_group=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset PI_COURSE_LANG

(cd "$repo" && cargo build -q)
pi=${CARGO_TARGET_DIR:-$repo/target}/debug/pi-course

# The mutant catalog (Python's TOML reader), and the steps of a trace printout.
cat >"$work/tool.py" <<'PY'
import json, re, sys, tomllib

cmd = sys.argv[1]
if cmd == "pick":
    # The first N mutants of each group (all with "all"), as name<TAB>group.
    path, per_group = sys.argv[2], sys.argv[3]
    seen = {}
    for m in tomllib.load(open(path, "rb"))["mutant"]:
        seen.setdefault(m["group"], 0)
        if per_group == "all" or seen[m["group"]] < int(per_group):
            seen[m["group"]] += 1
            print(m["name"])
elif cmd == "apply":
    path, name, source, target = sys.argv[2:6]
    (m,) = [m for m in tomllib.load(open(path, "rb"))["mutant"] if m["name"] == name]
    text = open(source, encoding="utf-8").read()
    for edit in m["edit"]:
        assert text.count(edit["find"]) == 1, f"{name}: an edit does not apply once"
        text = text.replace(edit["find"], edit["replace"])
    open(target, "w", encoding="utf-8").write(text)
elif cmd == "collect":
    # stderr of a hand run → corpus lines. Rust prints "[group::name] STEP", TypeScript
    # "<group's Chinese name> › <name with spaces>: STEP"; both become the scenario's name.
    track, source, fixture, printout = sys.argv[2:6]
    tests = json.load(open(fixture, encoding="utf-8"))["tests"]
    names = {t["name"] for t in tests}
    by_spaces = {t["name"].replace("_", " "): t["name"] for t in tests}
    traces = {}
    for line in open(printout, encoding="utf-8", errors="replace"):
        if track == "rust":
            m = re.match(r"^\[\w+::(\w+)\] (\{.*\})$", line.rstrip("\n"))
            name = m and m.group(1)
        else:
            m = re.match(r"^.+? › (.+?): (\{.*\})$", line.rstrip("\n"))
            name = m and by_spaces.get(m.group(1))
        if not m or name not in names:
            continue
        traces.setdefault(name, []).append(json.loads(m.group(2)))
    for name, trace in traces.items():
        print(json.dumps({"source": source, "test": name, "trace": trace}, ensure_ascii=False, sort_keys=True))
PY

: >"$work/corpus.jsonl"

# TypeScript: each test file run by node itself (not node --test), so the printout reaches stderr as is.
ts=$work/ts
"$pi" practice 07 "$ts" --track typescript >/dev/null
(cd "$ts" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
run_ts() { # source, loop file
    cp "$2" "$ts/src/agent-loop.ts"
    (cd "$ts" && rm -rf dist && npx tsc -p . >/dev/null) || { echo "  !! $1 does not build"; return; }
    : >"$work/printout"
    for file in "$ts"/dist/test/07-*.test.js; do
        (cd "$ts" && PI_COURSE_TRACE=1 node "$file" >/dev/null 2>>"$work/printout") || true
    done
    python3 "$work/tool.py" collect typescript "$1" "$ts/test/07-expected.json" "$work/printout" >>"$work/corpus.jsonl"
    echo "  $1"
}
echo "TypeScript"
run_ts ts/reference "$chapter/typescript/solution/src/agent-loop.ts"
for alt in "$chapter"/typescript/alternatives/*.ts; do
    run_ts "ts/alternative/$(basename "$alt" .ts)" "$alt"
done
for name in $(python3 "$work/tool.py" pick "$chapter/typescript/mutants.toml" "$per_group"); do
    python3 "$work/tool.py" apply "$chapter/typescript/mutants.toml" "$name" \
        "$chapter/typescript/solution/src/agent-loop.ts" "$work/mutant.ts"
    run_ts "ts/mutant/$name" "$work/mutant.ts"
done

# Rust: cargo test --test ch07 with the printout on stderr.
rs=$work/rs
"$pi" practice 07 "$rs" >/dev/null
export CARGO_TARGET_DIR=$repo/target/content/judge-corpus
run_rs() { # source, loop file
    cp "$2" "$rs/src/agent_loop.rs"
    touch "$rs/src/agent_loop.rs"
    (cd "$rs" && cargo test -q --test ch07 --no-run >/dev/null 2>&1) || { echo "  !! $1 does not build"; return; }
    (cd "$rs" && PI_COURSE_TRACE=1 cargo test -q --test ch07 >/dev/null 2>"$work/printout") || true
    python3 "$work/tool.py" collect rust "$1" "$rs/tests/ch07/expected.json" "$work/printout" >>"$work/corpus.jsonl"
    echo "  $1"
}
echo "Rust"
run_rs rust/reference "$chapter/solution/src/agent_loop.rs"
for alt in "$chapter"/alternatives/*.rs; do
    run_rs "rust/alternative/$(basename "$alt" .rs)" "$alt"
done
for name in $(python3 "$work/tool.py" pick "$chapter/mutants.toml" "$per_group"); do
    python3 "$work/tool.py" apply "$chapter/mutants.toml" "$name" "$chapter/solution/src/agent_loop.rs" "$work/mutant.rs"
    run_rs "rust/mutant/$name" "$work/mutant.rs"
done

# Each (test, trace) once (the first source that recorded it names it), and bounded: every reference
# trace, at most two traces of each alternative and mutant (those that differ from every trace kept
# before), none longer than 24 KB (the scenarios of longer ones are among the drawn pairs already).
python3 - "$work/corpus.jsonl" "$out" <<'PY'
import collections, json, sys
seen, kept, per_source = set(), [], collections.Counter()
for line in open(sys.argv[1], encoding="utf-8"):
    entry = json.loads(line)
    key = (entry["test"], json.dumps(entry["trace"], sort_keys=True))
    source = entry["source"]
    if key in seen or len(line) > 24_000:
        continue
    if not source.endswith("/reference") and per_source[source] >= 2:
        continue
    seen.add(key)
    per_source[source] += 1
    kept.append(line)
open(sys.argv[2], "w", encoding="utf-8").writelines(kept)
print(f"{len(kept)} traces from {len(per_source)} sources written to {sys.argv[2]}")
PY
