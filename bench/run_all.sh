#!/usr/bin/env bash
# Every `talkbox bench` figure of bench/README.md in one table: writes full-size random-weight
# checkpoints, converts each to F16, Q8_0 and Q4_K, runs `talkbox bench` on each with the same
# settings and prints one row per model: median (min) over the repeats.
#
#   bench/run_all.sh [threads] [frames] [repeat] [work-dir]     (defaults: 2 100 3 /tmp/talkbox-bench-all)
#
# FAMILY=qwen3tts (default): CustomVoice snapshots 0.6B and 1.7B; frames are 12.5 Hz codec frames.
# FAMILY=chatterbox: the multilingual Chatterbox folder (SIZES="multilingual english turbo" adds the
# English and Turbo ones); frames are speech tokens per sentence (25 per second of audio), default work dir
# /tmp/talkbox-bench-chatterbox.
# SIZES="0.6b" / TYPES="q8_0 q4_k" pick a subset; existing snapshots and GGUF files in the work
# dir are reused (delete it to start over; it holds ~14 GB with both Qwen sizes, ~5 GB for one
# Chatterbox model). BENCH_ARGS passes extra options to every `talkbox bench` (e.g.
# BENCH_ARGS="--kv-cache f16").
set -euo pipefail
cd "$(dirname "$0")/.."
family=${FAMILY:-qwen3tts}
threads=${1:-2}
frames=${2:-100}
repeat=${3:-3}
types=${TYPES:-f16 q8_0 q4_k}
fixtures=${TALKBOX_FIXTURES:-$PWD/../shared/fixtures}
case "$family" in
  qwen3tts)
    work=${4:-/tmp/talkbox-bench-all}
    sizes=${SIZES:-0.6b 1.7b}
    snapshot_file=model.safetensors
    figures="prefill_ms talker_ms_per_frame code_predictor_ms_per_frame decoder_ms_per_frame total_ms_per_frame rtf first_audio_ms peak_rss_mb cpu_ms_per_frame"
    header="| model | weights | prefill ms | talker ms/frame | code predictor ms/frame | decoder ms/frame | total ms/frame | RTF | first audio ms | peak RSS MiB | CPU ms/frame |"
    unit="frames"
    ;;
  chatterbox)
    work=${4:-/tmp/talkbox-bench-chatterbox}
    sizes=${SIZES:-multilingual}
    snapshot_file=conds.safetensors  # written last
    figures="t3_prefill_ms t3_ms_per_token t3_ms_per_audio_second flow_ms_per_audio_second hift_ms_per_audio_second total_ms_per_audio_second rtf first_audio_ms peak_rss_mb cpu_ms_per_audio_second"
    header="| model | weights | T3 cond + prefill ms | T3 ms/token | T3 ms/s | flow ms/s | HiFT ms/s | total ms/s | RTF | first audio ms | peak RSS MiB | CPU ms/s |"
    unit="speech tokens per sentence"
    ;;
  *) echo "FAMILY must be qwen3tts or chatterbox, not '$family'" >&2; exit 2 ;;
esac
cmake --build build -j 2 --target make_random_checkpoint talkbox >/dev/null

for size in $sizes; do
  mkdir -p "$work/$size"
  missing=0
  for type in $types; do [ -f "$work/$size/$type.gguf" ] || missing=1; done
  if [ "$missing" = 1 ] && [ ! -f "$work/$size/snapshot/$snapshot_file" ]; then
    echo "writing the full-size $size checkpoint to $work/$size/snapshot" >&2
    if [ "$family" = chatterbox ]; then
      build/bin/make_random_checkpoint --family chatterbox --model "$size" --fixtures "$fixtures/chatterbox" \
        -o "$work/$size/snapshot" >&2
    else
      build/bin/make_random_checkpoint --size "$size" --variant custom_voice --fixtures "$fixtures/qwen3tts" \
        -o "$work/$size/snapshot" >&2
    fi
  fi
  for type in $types; do
    if [ ! -f "$work/$size/$type.gguf" ]; then
      echo "converting $size to $type" >&2
      build/bin/talkbox convert "$work/$size/snapshot" -o "$work/$size/$type.gguf" --type "$type" -q
    fi
  done
done

# "key": value of the top level (medians; 2-space indent) or of "min" (4-space indent).
field() { sed -n "s/^$2\"$3\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n 1; }

echo "talkbox bench ($family): $frames $unit, $repeat repeats after 1 warm-up, $threads threads; median (min)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC'); $(git rev-parse --short HEAD)"
echo
echo "$header"
sep="|---|---|"
for key in $figures; do sep+="---:|"; done
echo "$sep"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for size in $sizes; do
  for type in $types; do
    # shellcheck disable=SC2086
    build/bin/talkbox bench -m "$work/$size/$type.gguf" -t "$threads" --frames "$frames" --repeat "$repeat" --json \
      ${BENCH_ARGS:-} >"$out"
    if [ "$family" = chatterbox ]; then row="| chatterbox $size |"; else row="| $size $(field "$out" '  ' variant) |"; fi
    row+=" $type |"
    for key in $figures; do
      fmt='%.1f'
      [ "$key" = rtf ] && fmt='%.2f'
      row+=$(printf " $fmt ($fmt) |" "$(field "$out" '  ' "$key")" "$(field "$out" '    ' "$key")")
    done
    echo "$row"
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
