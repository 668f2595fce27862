#!/usr/bin/env bash
# third_party_notice_test: the repository is licensed (LICENSE, MIT) and THIRD_PARTY_NOTICES.md names
# every shared library the built binaries load, so that linking a new dependency without its
# notice entry fails here.
# Usage: third_party_notice_test.sh SOURCE_DIR BINARY...
set -euo pipefail
src=${1:?usage: third_party_notice_test.sh SOURCE_DIR BINARY...}
shift
[ $# -gt 0 ] || { echo "usage: third_party_notice_test.sh SOURCE_DIR BINARY..." >&2; exit 2; }
fail() { echo "FAIL: $*" >&2; exit 1; }

license="$src/LICENSE"
[ -f "$license" ] || fail "no LICENSE at the repository root"
head -1 "$license" | grep -qx "MIT License" || fail "LICENSE is not the MIT licence: $(head -1 "$license")"
grep -qx "Copyright (c) 2026 the talkbox authors" "$license" || fail "LICENSE lacks the line 'Copyright (c) 2026 the talkbox authors'"
echo "ok: LICENSE is MIT, the talkbox authors"

notice="$src/THIRD_PARTY_NOTICES.md"
[ -f "$notice" ] || fail "no THIRD_PARTY_NOTICES.md at the repository root"
# The C and C++ runtimes of the toolchain, which every program loads (the notice mentions them
# together, by family): glibc's libraries and loader, libstdc++, libgcc_s, the kernel's vDSO.
runtime='^(linux-vdso\.so\.[0-9]+|linux-gate\.so\.[0-9]+|ld-linux[-a-z0-9_.]*\.so\.[0-9]+|lib(c|m|mvec|pthread|dl|rt|resolv|util)\.so\.[0-9]+|libstdc\+\+\.so\.[0-9]+|libgcc_s\.so\.[0-9]+)$'
missing=()
declare -A checked=()
for bin in "$@"; do
  [ -e "$bin" ] || fail "no binary at $bin"
  listing=$(ldd "$bin") || fail "ldd $bin failed"
  grep -q "not found" <<<"$listing" && fail "$bin has unresolved libraries:"$'\n'"$(grep "not found" <<<"$listing")"
  for lib in $(awk '{print $1}' <<<"$listing"); do
    name=${lib##*/}
    [[ $name =~ $runtime ]] && continue
    checked[$name]=1
    grep -qF "\`$name\`" "$notice" && continue
    path=$(awk -v l="$lib" '$1 == l && $2 == "=>" {print $3}' <<<"$listing")
    pkg=$(dpkg -S "$(readlink -f "${path:-$lib}")" 2>/dev/null | head -1 | cut -d: -f1) || true
    missing+=("$name (loaded by ${bin##*/}; Debian package ${pkg:-unknown}: see /usr/share/doc/${pkg:-PACKAGE}/copyright)")
  done
done
if [ ${#missing[@]} -gt 0 ]; then
  printf 'FAIL: THIRD_PARTY_NOTICES.md does not name these libraries (add each, as `soname`, with its licence):\n' >&2
  printf '  %s\n' "${missing[@]}" | sort -u >&2
  exit 1
fi
echo "ok: THIRD_PARTY_NOTICES.md names all ${#checked[@]} libraries loaded by $*"
echo "third_party_notice_test: all checks passed"
