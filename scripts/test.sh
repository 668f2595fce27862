#!/usr/bin/env bash
# Runs the whole test suite (CTest over GoogleTest) against the tree built by scripts/setup.sh,
# including the fuzz runs and sanitized suites of build-sanitize/ (ctest -L fuzz / -L sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/talkbox ] || { echo "test: build/ is missing; run scripts/setup.sh first" >&2; exit 1; }
cmake --build build -j "$(nproc)" >/dev/null
sanitize=$(sed -n 's/^TALKBOX_SANITIZE_BUILD:PATH=//p' build/CMakeCache.txt)
[ -z "$sanitize" ] || cmake --build "$sanitize" -j "$(nproc)" --target sanitize_all >/dev/null
cd build && ctest --output-on-failure -j "$(nproc)" "$@"
