#!/usr/bin/env bash
# Measures how the linker and the learner crate's profile change the cost of one edit of the loop, for
# docs/ARCHITECTURE.md: for each setting, the median of N rebuilds (`cargo test --no-run --test ch07`) after
# a one-line edit of src/agent_loop.rs, and after touching only the test target (its link, nearly alone).
#
#   scripts/linkers-07.sh [N]        (default 7)
set -euo pipefail
runs=${1:-7}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$repo/scripts/assemble-07.sh" "$work/p" solution >/dev/null
cd "$work/p"
cp src/agent_loop.rs "$work/reference.rs"

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
edit() { # a statement added (even n) or taken out (odd n) above the loop, as a learner edits
    awk -v n="$1" '/^    let reason = loop \{$/ && n % 2 == 0 {print "    let _edit = " n ";"} {print}' \
        "$work/reference.rs" >src/agent_loop.rs
}

printf '%-44s %12s %12s\n' "setting" "edit (ms)" "relink (ms)"
while IFS='|' read -r name flags; do
    export CARGO_TARGET_DIR="$work/target-$(echo "$name" | tr ' ' '-')"
    export RUSTFLAGS="$flags"
    edit 1
    cargo test -q --offline --no-run --test ch07 2>/dev/null
    edits=$(for i in $(seq 2 $((runs + 1))); do
        edit "$i"; s=$(date +%s%N); cargo test -q --offline --no-run --test ch07 2>/dev/null; ms "$s"
    done | median)
    relinks=$(for _ in $(seq "$runs"); do
        touch tests/ch07.rs; s=$(date +%s%N); cargo test -q --offline --no-run --test ch07 2>/dev/null; ms "$s"
    done | median)
    printf '%-44s %12s %12s\n' "$name" "$edits" "$relinks"
done <<'SETTINGS'
rust-lld (the default linker)|
GNU ld (bfd)|-Clinker-features=-lld
gold|-Clinker-features=-lld -Clink-arg=-fuse-ld=gold
rust-lld, codegen-units=1|-Ccodegen-units=1
rust-lld, opt-level=1|-Copt-level=1
SETTINGS
