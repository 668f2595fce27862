#!/usr/bin/env bash
# Full-size frame benchmark: writes a random-weight Qwen3-TTS CustomVoice snapshot (real 0.6B or
# 1.7B sizes) from a tiny fixture, converts it to each weight type and times a frame with
# build/bin/frame_bench. Usage: bench/frame_bench.sh [0.6b|1.7b] [threads] [work-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-0.6b}
threads=${2:-2}
work=${3:-/tmp/talkbox-bench-$size}
fixtures=${TALKBOX_FIXTURES:-$PWD/../shared/fixtures}
cmake --build build -j 2 --target frame_bench make_random_checkpoint talkbox >/dev/null
mkdir -p "$work"
[ -f "$work/snapshot/model.safetensors" ] || build/bin/make_random_checkpoint --size "$size" --fixtures "$fixtures/qwen3tts" -o "$work/snapshot"
for type in q8_0 f16 q4_k; do
  [ -f "$work/$type.gguf" ] || build/bin/talkbox convert "$work/snapshot" -o "$work/$type.gguf" --type "$type" -q
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for type in q8_0 f16 q4_k; do
  build/bin/frame_bench "$work/$type.gguf" -t "$threads" -n 32
done
