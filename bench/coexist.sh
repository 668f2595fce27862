#!/usr/bin/env bash
# Sharing the cores: single-stream throughput of `talkbox bench` alone, beside a busy
# single-thread process, and as two benches started together (each with -t THREADS), as
# fractions of the idle figure. Spinning thread teams collapse here; waits that yield do not.
# Usage: bench/coexist.sh MODEL.gguf [threads] [frames] [repeat]   (on an otherwise idle machine;
# TALKBOX_BIN picks the binary, default build/bin/talkbox)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/coexist.sh MODEL.gguf [threads] [frames]}
threads=${2:-2}
frames=${3:-40}
repeat=${4:-3}
bin=${TALKBOX_BIN:-build/bin/talkbox}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT

bench() { "$bin" bench -m "$model" -t "$threads" --frames "$frames" --repeat "$repeat" --json 2>/dev/null; }
ms() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["total_ms_per_frame"])' "$1"; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $bin, -t $threads, $frames frames, median of $repeat"
bench >"$out/idle.json"
idle=$(ms "$out/idle.json")

( while :; do :; done ) &
busy=$!
bench >"$out/busy.json"
kill $busy; wait $busy 2>/dev/null || true
beside=$(ms "$out/busy.json")

bench >"$out/a.json" & a=$!
bench >"$out/b.json" & b=$!
wait $a $b
pa=$(ms "$out/a.json"); pb=$(ms "$out/b.json")

python3 - "$idle" "$beside" "$pa" "$pb" <<'EOF'
import sys
idle, beside, a, b = map(float, sys.argv[1:])
print(f"alone:                  {idle:8.1f} ms/frame")
print(f"beside a busy loop:     {beside:8.1f} ms/frame  ({idle / beside:.2f} of idle; fair share 0.50)")
print(f"two benches together:   {a:8.1f} / {b:.1f} ms/frame  ({idle / a:.2f} / {idle / b:.2f} of idle each)")
EOF
