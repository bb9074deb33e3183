#!/usr/bin/env bash
# Checks chapter 07's TypeScript track against its reference loop, skeleton, alternatives and mutants,
# running the tests by hand with node --test:
#   - the reference (typescript/solution/) passes every test, the optional group's too;
#   - the skeleton (and skeleton.en) builds with tsc and fails each group, naming that group's Lab;
#   - every alternative in typescript/alternatives/ passes every test;
#   - every mutant in typescript/mutants.toml builds and fails the group it names; a mutant caught only
#     by other groups, or by none, is a miss. Other groups that also catch it are listed.
# Prints a summary; exits non-zero on any miss.
#
#   scripts/check-ts-07.sh [MUTANT_NAME...]     (default: every mutant; names given skip the alternatives)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
track=$repo/chapters/07-agent-loop/typescript
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Failure messages in both languages, as a learner running the tests by hand sees them.
unset PI_COURSE_LANG

problems=0
problem() { echo "  !! $*"; problems=$((problems + 1)); }

# The mutant catalog (Python's TOML reader) and the verdicts of a TAP run.
cat >"$work/tool.py" <<'PY'
import re, sys, tomllib

GROUPS = {"纯文本 stop": "plain-stop", "单工具往返": "single-tool", "非执行终态": "non-executing",
          "并发工具": "concurrent-tools", "取消与上限": "cancel-and-limits", "重复 call id": "duplicate-call-ids"}

def mutants(path):
    with open(path, "rb") as f:
        return tomllib.load(f)["mutant"]

cmd = sys.argv[1]
if cmd == "list":
    for m in mutants(sys.argv[2]):
        print(f"{m['name']}\t{m['group']}")
elif cmd == "apply":
    path, name, source, target = sys.argv[2:6]
    (m,) = [m for m in mutants(path) if m["name"] == name]
    text = open(source, encoding="utf-8").read()
    for n, edit in enumerate(m["edit"], 1):
        count = text.count(edit["find"])
        if count != 1:
            sys.exit(f"edit {n}: `find` occurs {count} times in the reference (must be exactly once)")
        text = text.replace(edit["find"], edit["replace"])
    open(target, "w", encoding="utf-8").write(text)
elif cmd == "verdicts":
    # Prints: passed failed, then the failing groups (slugs), then anything that is not a test of a group
    # (a file that failed to load), as "other".
    passed, failed, groups = 0, 0, set()
    for line in open(sys.argv[2], encoding="utf-8"):
        m = re.match(r"^\s*(ok|not ok) \d+ - (.*?)(?: # (\w+).*)?$", line.rstrip("\n"))
        if not m or (m.group(3) or "").upper() in ("SKIP", "TODO"):
            continue  # left out by --test-name-pattern
        ok, name = m.group(1) == "ok", m.group(2)
        group = GROUPS.get(name.split(" › ")[0]) if " › " in name else None
        if group is None:
            if not ok:
                groups.add("other")
            continue
        if ok:
            passed += 1
        else:
            failed += 1
            groups.add(group)
    print(passed, failed, " ".join(sorted(groups)))
PY

p=$work/p
"$repo/scripts/assemble-ts-07.sh" "$p" solution >/dev/null

# build FILE: makes FILE the practice directory's loop and compiles; tsc's output in $work/build.out.
build() {
    cp "$1" "$p/src/agent-loop.ts"
    (cd "$p" && timeout 300 ./node_modules/.bin/tsc -p .) >"$work/build.out" 2>&1
}
# run_tests [PATTERN]: runs the chapter's tests (those matching PATTERN); TAP output in $work/out.
run_tests() {
    local pattern=()
    [[ $# -gt 0 ]] && pattern=(--test-name-pattern="$1")
    (cd "$p" && timeout 300 node --test --test-reporter=tap "${pattern[@]}" dist/test/07-*.test.js) \
        >"$work/out" 2>&1 || true
}
# verdicts: "PASSED FAILED GROUP..." for $work/out.
verdicts() { python3 "$work/tool.py" verdicts "$work/out"; }

declare -A group_name=(
    [plain-stop]="纯文本 stop" [single-tool]="单工具往返" [non-executing]="非执行终态"
    [concurrent-tools]="并发工具" [cancel-and-limits]="取消与上限" [duplicate-call-ids]="重复 call id"
)
declare -A group_lab=(
    [plain-stop]=7.1 [single-tool]=7.2 [non-executing]=7.3 [concurrent-tools]=7.4
    [cancel-and-limits]=7.5 [duplicate-call-ids]=7.6
)
groups=(plain-stop single-tool non-executing concurrent-tools cancel-and-limits duplicate-call-ids)

# all_pass LABEL FILE: FILE builds and passes every test.
all_pass() {
    if ! build "$2"; then
        problem "$1 does not build"
        head -20 "$work/build.out"
        return
    fi
    run_tests
    read -r passed failed failing <<<"$(verdicts)"
    if [[ $failed -eq 0 && -z $failing && $passed -gt 0 ]]; then
        echo "  pass  $1 ($passed tests)"
    else
        problem "$1: $passed passed, $failed failed (groups: ${failing:-none})"
        grep -m5 -A12 '^not ok\|^ *not ok' "$work/out" | head -60
    fi
}

echo "== reference: every test passes"
all_pass solution "$track/solution/src/agent-loop.ts"
if [[ $problems -ne 0 ]]; then
    echo "== the reference fails; nothing else is checked"
    exit 1
fi
for group in "${groups[@]}"; do
    run_tests "${group_name[$group]}"
    read -r passed failed _ <<<"$(verdicts)"
    printf '  %-20s %s tests\n' "$group" "$passed"
done

for skeleton in skeleton skeleton.en; do
    echo "== $skeleton: every group fails and names its Lab"
    if ! build "$track/$skeleton/src/agent-loop.ts"; then
        problem "$skeleton does not build"
        head -20 "$work/build.out"
        continue
    fi
    for group in "${groups[@]}"; do
        run_tests "${group_name[$group]}"
        read -r passed failed _ <<<"$(verdicts)"
        lab=${group_lab[$group]}
        if [[ $passed -ne 0 || $failed -eq 0 ]]; then
            problem "$skeleton: $group has $passed passing and $failed failing tests (every one must fail)"
        elif [[ $(grep -c "\[Lab $lab " "$work/out") -lt $failed ]]; then
            problem "$skeleton: $group has failures that do not name Lab $lab"
        else
            echo "  fail  $group ($failed tests, each names Lab $lab)"
        fi
    done
done

if [[ $# -eq 0 ]]; then
    echo "== alternatives: every test passes"
    shopt -s nullglob
    for alternative in "$track"/alternatives/*.ts; do
        all_pass "alternatives/$(basename "$alternative")" "$alternative"
    done
fi

echo "== mutants"
mapfile -t catalog < <(python3 "$work/tool.py" list "$track/mutants.toml")
caught=0
total=0
declare -a missed=()
for entry in "${catalog[@]}"; do
    name=${entry%%$'\t'*}
    group=${entry#*$'\t'}
    if [[ $# -gt 0 && " $* " != *" $name "* ]]; then
        continue
    fi
    total=$((total + 1))
    if ! python3 "$work/tool.py" apply "$track/mutants.toml" "$name" \
        "$track/solution/src/agent-loop.ts" "$work/mutant.ts" 2>"$work/apply.out"; then
        problem "$name: $(cat "$work/apply.out")"
        missed+=("$name")
        continue
    fi
    if ! build "$work/mutant.ts"; then
        problem "$name does not build: $(grep -m1 'error TS' "$work/build.out")"
        missed+=("$name")
        continue
    fi
    run_tests
    read -r _ failed failing <<<"$(verdicts)"
    if [[ " $failing " == *" $group "* ]]; then
        also=${failing//$group/}
        also=$(echo $also)
        printf '  caught      %-42s by %-19s also: %s\n' "$name" "$group" "${also:-none}"
        caught=$((caught + 1))
    elif [[ -n $failing ]]; then
        problem "$name (group $group) is caught only by: $failing"
        missed+=("$name")
    else
        problem "NOT caught  $name (group $group)"
        missed+=("$name")
    fi
done
echo "== $caught of $total mutants caught by their own group"
[[ ${#missed[@]} -eq 0 ]] || echo "== missed: ${missed[*]}"

if [[ $problems -ne 0 ]]; then
    echo "== $problems problem(s)"
    exit 1
fi
echo "== all good"
