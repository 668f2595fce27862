#!/usr/bin/env bash
# Runs the whole test suite (CTest over GoogleTest) against the tree built by scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/talkbox ] || { echo "test: build/ is missing; run scripts/setup.sh first" >&2; exit 1; }
cmake --build build -j "$(nproc)" >/dev/null
cd build && ctest --output-on-failure -j "$(nproc)" "$@"
