#!/usr/bin/env bash
# The project's tests, from a fresh clone: installs what they need that is missing, then runs
# the tests with its arguments passed on (so `scripts/test.sh --test cli attacks::` runs one concern).
#
# - Debian's chromium: the class page is tested in a real browser (tests/cli/class/report.rs). Installed with
#   apt-get, as root directly, else with sudo.
# - rust-analyzer: jump-to-definition is tested in a practice directory (tests/cli/course/content.rs). Installed as
#   the toolchain's rustup component.
# - Node.js 20 or newer, and npm: the TypeScript track's tests grade with them. Checked only: this script
#   says how to get them.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "== $*"; }
stop() {
  echo "scripts/test.sh: $*" >&2
  exit 1
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    stop "installing chromium needs root: run \`$*\` as root, then this script again"
  fi
}

chromium=/usr/bin/chromium
if [ ! -x "$chromium" ]; then
  command -v apt-get >/dev/null ||
    stop "$chromium is missing and there is no apt-get: install Chromium so that $chromium runs it"
  say "installing chromium (the class page's browser test)"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi
say "chromium: $("$chromium" --version 2>/dev/null || echo "$chromium")"

if ! rust-analyzer --version >/dev/null 2>&1; then
  command -v rustup >/dev/null ||
    stop "rust-analyzer is missing and there is no rustup: install rust-analyzer for this toolchain"
  say "rustup component add rust-analyzer (jump-to-definition's test)"
  rustup component add rust-analyzer
fi
say "rust-analyzer: $(rust-analyzer --version)"

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ] || ! command -v npm >/dev/null; then
  stop "the TypeScript track's tests need Node.js 20 or newer and npm on PATH (found: $(node --version 2>/dev/null || echo 'no node'), $(command -v npm || echo 'no npm')).
Install them from your system's packages where they are new enough (Debian 13: apt-get install nodejs npm),
or with Node.js's own installers or a version manager such as nvm, then run scripts/test.sh again."
fi
say "node $(node --version), npm $(npm --version)"

# cargo-nextest, where it is installed, runs each test in a process of its own, so a slow test holds no
# thread of a quick one and a crash takes down one test; without it (or with PI_COURSE_RUNNER=cargo),
# cargo test runs the very same tests.
if [ "${PI_COURSE_RUNNER:-}" != cargo ] && cargo nextest --version >/dev/null 2>&1; then
  say "cargo nextest run --workspace --no-fail-fast $*"
  exec cargo nextest run --workspace --no-fail-fast "$@"
fi
say "cargo test $*"
exec cargo test "$@"
