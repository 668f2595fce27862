#!/usr/bin/env bash
# Runs one CI step of a TALKBOX_FUZZ (ASan + UBSan) build folder; the main build's ctest calls it
# once per fuzz target and sanitized suite (fuzz/ctest.cmake), scripts/setup.sh builds the folder.
#   fuzz_sanitize.sh fuzz DIR NAME           replay fuzz/regressions/NAME/*, then fuzz NAME for
#                                            $TALKBOX_FUZZ_SECONDS (20) from a copy of its seeds
#   fuzz_sanitize.sh gtest DIR BINARY FILTER run DIR/bin/BINARY --gtest_filter=FILTER
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { echo "usage: $0 fuzz DIR NAME | gtest DIR BINARY FILTER" >&2; exit 2; }
step=$1 dir=$2

# Any report fails the step (UBSan aborts: -fno-sanitize-recover, cmake/sanitize.cmake), leaks too
# except the third-party ones in fuzz/lsan.supp.
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1
export LSAN_OPTIONS=suppressions=$root/fuzz/lsan.supp
export TALKBOX_FUZZ_MODEL=${TALKBOX_FUZZ_MODEL:-${TALKBOX_FIXTURES:-$root/../shared/fixtures}/qwen3tts/tiny-0.6B-Base}

case $step in
fuzz)
  name=$3 bin=$dir/bin/$3_fuzz
  shopt -s nullglob
  replays=("$root/fuzz/regressions/$name"/*)
  if [ ${#replays[@]} -gt 0 ]; then
    echo "fuzz: replaying ${#replays[@]} regression input(s) of $name"
    "$bin" "${replays[@]}"
  fi
  # The seeds stay untouched: libFuzzer adds what it finds to the first corpus folder.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -r "$root/fuzz/corpus/$name" "$work/corpus"
  artifacts=$dir/fuzz-artifacts/$name
  mkdir -p "$artifacts"
  "$bin" "$work/corpus" -max_total_time="${TALKBOX_FUZZ_SECONDS:-20}" -max_len=1048576 -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" ;;
gtest)
  exec "$dir/bin/$3" --gtest_filter="$4" ;;
*)
  echo "$0: unknown step '$step'" >&2; exit 2 ;;
esac
