#!/usr/bin/env bash
# Load test of `talkbox serve`: starts a server on a model, lets N clients send streaming requests
# for S seconds, prints throughput and first-audio latency, and fails if any response is incomplete
# or differs from the same request served alone; then the server's peak resident memory (VmHWM).
# Usage: bench/server_load.sh [model.gguf] [clients] [seconds] [max-concurrent] [threads] [max-frames per sentence]
#                             [joiner max-frames]
# With the last argument, one more client (the joiner) starts a quarter into the run and sends short
# requests of that many frames per sentence back to back while the others stream: its first audio
# is what a newcomer to a busy server waits (printed after the others' figures).
# Without a model it converts the tiny CustomVoice fixture (speed figures then mean little).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-}
clients=${2:-4}
seconds=${3:-60}
concurrent=${4:-2}
threads=${5:-0}
max_frames=${6:-0}
joiner_frames=${7:-}
cmake --build build -j 2 --target talkbox server_load >/dev/null
work=$(mktemp -d /tmp/talkbox-server-load.XXXXXX)
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -z "$model" ]; then
  model=$work/tiny-customvoice.gguf
  build/bin/talkbox convert "${TALKBOX_FIXTURES:-$PWD/../shared/fixtures}/qwen3tts/tiny-0.6B-CustomVoice" -o "$model" --type f32 -q
fi
build/bin/talkbox serve -m "$model" --port 0 --max-concurrent "$concurrent" --max-queue 64 -T "$threads" -q \
  --voices-dir "$work/voices" 2>"$work/log" &
server=$!
for _ in $(seq 600); do grep -q "http://" "$work/log" && break; sleep 0.1; done
port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/log")
[ -n "$port" ] || { cat "$work/log"; exit 1; }
echo "model $(basename "$model"), $clients clients, --max-concurrent $concurrent, -T $threads, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server RSS after loading: $(awk '/VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$server/status")"
if [ -n "$joiner_frames" ]; then
  (sleep "$(awk "BEGIN {print $seconds / 4}")"
   build/bin/server_load --port "$port" --clients 1 --seconds "$(awk "BEGIN {print $seconds / 2}")" \
     --max-frames "$joiner_frames" --seeds 1 --text "A short reply. Then another." >"$work/joiner" 2>&1) &
  joiner=$!
fi
build/bin/server_load --port "$port" --clients "$clients" --seconds "$seconds" --max-frames "$max_frames" --seeds "$clients"
if [ -n "$joiner_frames" ]; then
  wait "$joiner" || { cat "$work/joiner"; exit 1; }
  echo "joiner ($joiner_frames frames per sentence, joining the running streams):"
  cat "$work/joiner"
fi
echo "server peak RSS: $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$server/status")"
