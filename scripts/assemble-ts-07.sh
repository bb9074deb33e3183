#!/usr/bin/env bash
# Lays out a chapter-07 TypeScript practice directory by hand, the way the practice command does: the
# chapter-06 snapshot, then the chapter's given files, then the chosen src/agent-loop.ts; links
# node_modules from a shared cache and builds with tsc. For checking course content; learners use the CLI.
#
#   scripts/assemble-ts-07.sh DIR [skeleton|skeleton.en|solution|LOOP_FILE]     (default: skeleton)
#
# LOOP_FILE is any agent-loop.ts, e.g. chapters/07-agent-loop/typescript/alternatives/all-settled.ts.
# Dependencies are installed once per lock file with `npm ci` into ${PI_COURSE_TS_DEPS:-/work/tmp/ts-deps}
# and shared through a node_modules symlink. Exits non-zero, printing tsc's output, if tsc reports an error.
set -euo pipefail

usage() { echo "usage: $0 DIR [skeleton|skeleton.en|solution|LOOP_FILE]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
dir=$1
variant=${2:-skeleton}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
track=$repo/chapters/07-agent-loop/typescript
case $variant in
    solution | skeleton | skeleton.en) loop_file=$track/$variant/src/agent-loop.ts ;;
    *) [[ -f $variant ]] || usage; loop_file=$variant ;;
esac

if [[ -e $dir && -n $(ls -A "$dir" 2>/dev/null) ]]; then
    echo "$dir exists and is not empty; choose a new directory" >&2
    exit 1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Never copy build output or installed packages that someone left in a content folder.
copy_tree() { (cd "$1" && tar --exclude=./node_modules --exclude=./dist -cf - .) | (cd "$dir" && tar -xf -); }
copy_tree "$repo/snapshots/06-typescript"
copy_tree "$track/files"
cp "$loop_file" "$dir/src/agent-loop.ts"

# One installed copy per lock: the cache key is the lock's hash, so a changed lock installs afresh.
deps_root=${PI_COURSE_TS_DEPS:-/work/tmp/ts-deps}
key=$(sha256sum "$track/files/package-lock.json" | cut -c1-16)
deps=$deps_root/$key
if [[ ! -d $deps/node_modules ]]; then
    mkdir -p "$deps_root"
    tmp=$(mktemp -d "$deps_root/.install.XXXXXX")
    cp "$track/files/package.json" "$track/files/package-lock.json" "$tmp/"
    (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund >npm.log 2>&1) || {
        cat "$tmp/npm.log" >&2
        rm -rf "$tmp"
        exit 1
    }
    # Another assembly may have installed the same lock meanwhile; either copy is good.
    mv -T "$tmp" "$deps" 2>/dev/null || rm -rf "$tmp"
fi
ln -s "$deps/node_modules" "$dir/node_modules"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if (cd "$dir" && ./node_modules/.bin/tsc -p .) >"$log" 2>&1; then
    echo "assembled $dir ($variant)"
else
    cat "$log" >&2
    echo "$dir: tsc failed" >&2
    exit 1
fi
