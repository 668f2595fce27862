#!/usr/bin/env bash
# The include graph of src/ keeps the seams of docs/architecture.md:
#  - no two folders include each other (a folder is src/<name>, subfolders included);
#  - the runtime (every file but the front ends', the tools' folders and the families' convert/
#    subfolders) never includes the tools (convert/, hub/, checkpoints/, a family's convert/,
#    talkbox/convert.h, talkbox/hub.h);
#  - family/ (the interface families implement) and nn/ (the graph building blocks families share)
#    include no family and not pipeline/, and no family includes another;
#  - libtalkbox.so, made of the runtime, needs neither curl nor OpenSSL.
# Usage: include_graph_test.sh SOURCE_DIR [LIBTALKBOX_SO]
set -euo pipefail
src="$1/src"
lib="${2:-}"
front_ends="cli server capi"
tools="convert hub checkpoints"
# The model families: the folders with a family.h of their own (family/ is the interface).
families=$(cd "$src" && find . -mindepth 2 -maxdepth 2 -name family.h -printf '%h\n' | sed 's#^\./##' | grep -vx family | sort)
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

folders=$(cd "$src" && find . -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
# "from to file" for every #include "to/..." in src/from/ that names another folder of src/.
edges=$(cd "$src" && grep -rHE '^\s*#\s*include\s+"[^"/]+/' --include='*.h' --include='*.cpp' . |
  sed -E 's#^\./([^/]+)/([^:]*):\s*\#\s*include\s+"([^"/]+)/.*#\1 \3 \1/\2#' |
  while read -r from to file; do
    if [ "$from" != "$to" ] && [ -d "$to" ]; then echo "$from $to $file"; fi
  done | sort -u)

pairs=$(echo "$edges" | awk 'NF { print $1, $2 }' | sort -u)
while read -r from to; do
  [ -n "$from" ] || continue
  if echo "$pairs" | grep -qx "$to $from"; then
    if [[ "$from" < "$to" ]]; then fail "$from/ and $to/ include each other: $(echo "$edges" | awk -v a="$from" -v b="$to" '($1==a&&$2==b)||($1==b&&$2==a) { printf "%s ", $3 }')"; fi
  fi
done <<< "$pairs"

# The runtime: every file outside the front ends, the tools' folders and the families' convert/ subfolders.
runtime_files=$(cd "$src" && find . -name '*.h' -o -name '*.cpp' | sed 's#^\./##' | sort |
  grep -vE "^($(echo $front_ends $tools | tr ' ' '|'))/|^[^/]+/convert/" || true)
for f in $runtime_files; do
  hits=$(grep -hoE '^\s*#\s*include\s+"(convert/|hub/|checkpoints/|[^"/]+/convert/|talkbox/convert\.h|talkbox/hub\.h)[^"]*"' "$src/$f" || true)
  [ -z "$hits" ] || fail "the runtime file src/$f includes the tools: $(echo $hits)"
done

for shared in family nn; do
  for to in $families pipeline; do
    hits=$(echo "$edges" | awk -v a="$shared" -v b="$to" '$1==a && $2==b { print $3 }')
    [ -z "$hits" ] || fail "$shared/ includes $to/: $hits"
  done
done

# A family builds on the shared folders, never on another family.
for a in $families; do
  for b in $families; do
    [ "$a" = "$b" ] && continue
    hits=$(echo "$edges" | awk -v x="$a" -v y="$b" '$1==x && $2==y { printf "src/%s ", $3 }')
    [ -z "$hits" ] || fail "the $a family includes the $b family: $hits"
  done
done

if [ -n "$lib" ]; then
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for unwanted in libcurl libssl libcrypto; do
    if echo "$needed" | grep -q "^$unwanted"; then fail "$(basename "$lib") needs $unwanted"; fi
  done
fi

[ "$failures" -eq 0 ] && echo "include graph: $(echo "$folders" | wc -w) folders, $(echo "$pairs" | grep -c .) folder dependencies, no cycle"
exit $((failures > 0))
