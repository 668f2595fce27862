#!/usr/bin/env bash
# Perth watermark detection rates with the released checkpoint (docs/watermark.md): 100 clips
# spoken without the watermark and the same 100 marked (`talkbox watermark embed`, the official
# apply_watermark), each read back by `talkbox watermark detect` as they are and after MP3, Opus,
# resampling to 16 kHz and back, and tempo ±20 % (bench/watermark_attack.cpp). Prints, per
# condition, the share of marked clips detected, the share of clean clips flagged (false
# positives) and the mean confidences.
#
#   bench/watermark_check.sh MODEL [CLIPS]      (MODEL: a Chatterbox or Qwen3-TTS GGUF or pulled name;
#                                                CLIPS: how many, default 100)
#
# Needs the released checkpoint: `talkbox pull resemble-ai/Perth` (or $TALKBOX_WATERMARK). It
# refuses to run without it: random weights say nothing about detection rates.
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:?usage: bench/watermark_check.sh MODEL [CLIPS]}"
clips="${2:-100}"
talkbox=build/bin/talkbox
attack=build/bin/watermark_attack
[ -x "$talkbox" ] && [ -x "$attack" ] || { echo "build talkbox and watermark_attack first: cmake --build build --target talkbox watermark_attack" >&2; exit 1; }
# The checkpoint talkbox would use; detect fails with the pull to run when it is absent.
if ! "$talkbox" watermark detect /dev/null >/dev/null 2>"${TMPDIR:-/tmp}/wm_check_err.$$"; then
  if grep -q "no watermark checkpoint" "${TMPDIR:-/tmp}/wm_check_err.$$"; then
    cat "${TMPDIR:-/tmp}/wm_check_err.$$" >&2
    echo "watermark_check: the released Perth checkpoint is needed (talkbox pull resemble-ai/Perth); nothing measured" >&2
    rm -f "${TMPDIR:-/tmp}/wm_check_err.$$"
    exit 1
  fi
fi
rm -f "${TMPDIR:-/tmp}/wm_check_err.$$"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

subjects=("The weather" "My neighbour" "This little shop" "The old train" "Our garden" "The river" "A quiet library" "The new bridge" "That red kite" "The morning news")
actions=("changed again before noon" "opens early on Sundays" "was built a hundred years ago" "is full of surprises in spring"
         "needs a little more care" "runs past the mill and into town" "keeps every letter it was ever sent" "looks best at sunset"
         "was the talk of the village" "starts with a cup of tea")
echo "speaking $clips clips (unmarked) and marking them ..." >&2
for ((i = 0; i < clips; ++i)); do
  text="${subjects[$((i % 10))]} ${actions[$(((i / 10) % 10))]}."
  "$talkbox" speak -m "$model" --no-watermark --seed "$i" -q -t "$text" --format wav32 -o "$out/clean_$i.wav"
  "$talkbox" watermark embed "$out/clean_$i.wav" -o "$out/marked_$i.wav" --format wav32 -q
done

# detect FILE → "detected confidence" (detected 1/0; an unreadable clip counts as not detected).
detect() {
  "$talkbox" watermark detect "$1" --json 2>/dev/null |
    sed -E 's/.*"confidence":([^,}]*).*"detected":(true|false).*/\2 \1/; s/^true/1/; s/^false/0/; s/ null$/ 0/' || true
}

printf '%-12s %16s %16s %18s %18s\n' condition "marked detected" "clean flagged" "mean conf. marked" "mean conf. clean"
for cond in none mp3 opus resample16k speed0.8 speed1.2; do
  for kind in marked clean; do
    hits=0 sum=0
    for ((i = 0; i < clips; ++i)); do
      file="$out/${kind}_$i.wav"
      case "$cond" in
        none) ;;
        mp3) "$attack" "$file" "$out/a.mp3" mp3 && file="$out/a.mp3" ;;
        opus) "$attack" "$file" "$out/a.opus" opus && file="$out/a.opus" ;;
        *) "$attack" "$file" "$out/a.wav" "$cond" && file="$out/a.wav" ;;
      esac
      read -r d c < <(detect "$file")
      hits=$((hits + ${d:-0}))
      sum=$(awk -v s="$sum" -v c="${c:-0}" 'BEGIN { print s + c }')
    done
    eval "${kind}_rate=\$(awk -v h=$hits -v n=$clips 'BEGIN { printf \"%.1f %%\", 100 * h / n }')"
    eval "${kind}_mean=\$(awk -v s=$sum -v n=$clips 'BEGIN { printf \"%.3f\", s / n }')"
  done
  printf '%-12s %16s %16s %18s %18s\n' "$cond" "$marked_rate" "$clean_rate" "$marked_mean" "$clean_mean"
done
