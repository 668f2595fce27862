#!/usr/bin/env bash
# The one prepared GPU check (docs/gpu.md): on a machine with an NVIDIA GPU, builds talkbox with
# CUDA (for this card's architecture only) and Vulkan, runs the parity suites on cuda:0 and
# vulkan:0, then single-stream and batched benchmarks of full-size random-weight models on both,
# and prints one markdown table. Aims at 8 minutes on 16 cores.
#   bench/gpu_check.sh [GGML_SOURCE] [FIXTURES]
# The build needs setup.sh's Debian -dev packages, a CUDA toolkit (nvcc) and the Vulkan loader,
# headers and glslc; the full-size models come from make_random_checkpoint + talkbox convert.
set -uo pipefail
cd "$(dirname "$0")/.."
ggml=${1:-.deps/llama.cpp-node-llama-cpp-3.21.1/ggml}
fixtures=${2:-../shared/fixtures}
jobs=$(nproc)
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
[ -n "$arch" ] || { echo "gpu_check: nvidia-smi finds no GPU" >&2; exit 1; }
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
for p in cmake/patches/*.patch; do git -C "$ggml/.." apply --reverse --check "$PWD/$p" 2>/dev/null || git -C "$ggml/.." apply "$PWD/$p"; done

suites=(voice_test chatterbox_refaudio_test codec_test codec_encoder_test qwen3tts_test pipeline_test
        chatterbox_t3_test chatterbox_turbo_test chatterbox_s3gen_test chatterbox_engine_test)
start=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTALKBOX_GGML_SOURCE="$ggml" -DTALKBOX_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DTALKBOX_VULKAN=ON -DTALKBOX_SANITIZE_BUILD= >/dev/null || exit 1
cmake --build build-gpu -j"$jobs" --target talkbox make_random_checkpoint "${suites[@]}" >build-gpu/build.log 2>&1 ||
  { tail -30 build-gpu/build.log; exit 1; }
echo "built in $(( $(date +%s) - start )) s"

rows=()
row() { rows+=("| $1 | $2 | $3 |"); }
for device in cuda:0 vulkan:0; do
  for s in "${suites[@]}"; do
    log=build-gpu/$s.$device.log
    TALKBOX_FIXTURES="$fixtures" TALKBOX_TEST_DEVICE=$device timeout 120 "build-gpu/bin/$s" >"$log" 2>&1
    rc=$?
    row "$device" "parity $s" "rc $rc, $(grep -c '^\[       OK' "$log") ok, $(grep -c '^\[  FAILED  \].*ms)' "$log") failed"
  done
done

# Full-size random models (bench/README.md): 0.6B CustomVoice, 1.7B Base, Chatterbox Turbo, Q8_0.
models=build-gpu/models
mkdir -p "$models"
make_model() {  # name, then make_random_checkpoint's options
  local name=$1; shift
  [ -f "$models/$name.gguf" ] && return
  build-gpu/bin/make_random_checkpoint "$@" --fixtures "$fixtures/${1#--family=}" -o "$models/$name" >/dev/null &&
    build-gpu/bin/talkbox convert "$models/$name" -o "$models/$name.gguf" --type q8_0 >/dev/null
}
make_model qwen3tts-0.6b-customvoice --family=qwen3tts --size 0.6b --variant custom_voice
make_model qwen3tts-1.7b-base --family=qwen3tts --size 1.7b --variant base
make_model chatterbox-turbo --family=chatterbox --model turbo
bench() {  # device model args...
  local device=$1 model=$2; shift 2
  build-gpu/bin/talkbox bench -m "$models/$model.gguf" --device "$device" --json "$@" 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print("RTF %s, first audio %s ms (medians)" % (j.get("rtf"), j.get("first_audio_ms")))' 2>/dev/null || echo "failed"
}
for device in cuda:0 vulkan:0; do
  row "$device" "0.6B CustomVoice Q8_0, 1 stream" "$(bench "$device" qwen3tts-0.6b-customvoice --frames 48 --repeat 3)"
  row "$device" "0.6B CustomVoice Q8_0, 64 streams" "$(bench "$device" qwen3tts-0.6b-customvoice --frames 48 --repeat 1 --streams 64)"
  row "$device" "1.7B Base Q8_0, 1 stream" "$(bench "$device" qwen3tts-1.7b-base --frames 48 --repeat 3)"
  row "$device" "Chatterbox Turbo Q8_0, 1 stream" "$(bench "$device" chatterbox-turbo --repeat 3)"
done

echo
echo "GPU: $gpu (sm_$arch), $(date -u +%F), $(( $(date +%s) - start )) s in all"
echo
echo "| device | check | result |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
