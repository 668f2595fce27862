#!/usr/bin/env bash
# Compares the two Debian time-stretch libraries considered for `speed` (docs/server.md, "Speed"):
# quality (duration scaled, sine pitch kept) and cost on one thread. Needs librubberband-dev and
# libsoundtouch-dev (scripts/setup.sh installs both; talkbox links only the one it uses).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g++ -O2 -std=c++17 bench/time_stretch_compare.cpp -o "$out/time_stretch_compare" \
    $(pkg-config --cflags --libs rubberband soundtouch sndfile)
"$out/time_stretch_compare" "${1:-../shared/fixtures/qwen3tts/audio/en_3p5s.wav}"
