#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine needs, fetches the pinned ggml source and builds
# talkbox into build/ (Release) and the ASan + UBSan fuzz build into build-sanitize/ (clang), whose
# fuzz runs and sanitized tests build/'s ctest runs (fuzz/ctest.cmake); TALKBOX_SANITIZE_BUILD=
# (empty) skips the latter. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_LLAMA_CPP_VERSION=3.21.1   # ggml comes from this npm package's llama.cpp release bundle
DEBIAN_PACKAGES=(
  build-essential cmake ccache git pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev
  libsndfile1-dev libsoxr-dev libsleef-dev libcurl4-openssl-dev libssl-dev libcpp-httplib-dev
  libexpat1-dev   # SSML input: the XML parser (src/text/ssml.cpp)
  libmecab-dev mecab-ipadic-utf8   # Chatterbox ja: kanji readings (src/text/japanese_reader.cpp; the dictionary is read at run time)
  libsoundtouch-dev   # `speed`: tempo change with the pitch kept (src/audio/time_stretch.cpp)
  libavcodec-dev   # response_format aac: libavcodec's native AAC encoder (src/audio/aac_encoder.cpp), decoded in its test
  librubberband-dev   # only bench/time_stretch.sh, which measured it against SoundTouch (docs/server.md)
  chromium curl   # the server's tests: headless browser (driven by playwright-core), README curl lines
  python3 python3-numpy   # the Python bindings' test (bindings/python, run with Debian's /usr/bin/python3)
  python3-deprecated   # only tools/japanese_reading_agreement.py (pykakasi, run to measure the kanji readings)
  nginx python3-yaml   # the scale-out test: replicas behind nginx, deploy/ files checked (tests/deploy)
  libavahi-client-dev   # `serve --zeroconf`: the Wyoming port announced through the Avahi daemon (src/server/zeroconf.cpp)
  dbus avahi-daemon avahi-utils iproute2   # its test: a private system bus, an avahi-daemon in its own namespaces, avahi-browse
  clang libclang-rt-dev llvm   # build-sanitize/: libFuzzer + sanitizer runtimes, llvm-symbolizer for reports
  libvulkan-dev glslc spirv-headers   # ggml's Vulkan backend (TALKBOX_VULKAN): the loader, headers, the shader compiler, SPIR-V headers (its CMake find_package)
  mesa-vulkan-drivers vulkan-tools   # lavapipe, the software Vulkan device the `vulkan` test label runs on
)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ggml: the llama.cpp git bundle shipped inside node-llama-cpp (never committed; see design.md).
deps=.deps
src="$deps/llama.cpp-node-llama-cpp-$NODE_LLAMA_CPP_VERSION"
if [ ! -f "$src/ggml/CMakeLists.txt" ]; then
  command -v npm >/dev/null || { echo "setup: npm is required to fetch ggml" >&2; exit 1; }
  mkdir -p "$deps"
  tmp=$(mktemp -d "$deps/fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "setup: fetching node-llama-cpp@$NODE_LLAMA_CPP_VERSION (ggml source)"
  (cd "$tmp" && npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null)
  tar -xzf "$tmp"/node-llama-cpp-*.tgz -C "$tmp" package/llama/gitRelease.bundle
  git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/llama.cpp" 2>/dev/null
  rm -rf "$src" && mv "$tmp/llama.cpp" "$src"
  rm -rf "$tmp"; trap - EXIT
fi

# Small build fixes to the fetched tree (cmake/patches/*.patch, each says why in its header),
# applied once: a patch that already reverses cleanly is in place.
for patch in cmake/patches/*.patch; do
  git -C "$src" apply --reverse --check "$PWD/$patch" 2>/dev/null && continue
  git -C "$src" apply "$PWD/$patch" || { echo "setup: $patch does not apply to $src" >&2; exit 1; }
done

# Node clients for the server tests (the official openai package, playwright-core), pinned by
# tests/node/package-lock.json; installed into .deps/node (or $TALKBOX_NODE_DIR), never at test time.
node_dir="${TALKBOX_NODE_DIR:-$PWD/$deps/node}"
if ! cmp -s tests/node/package-lock.json "$node_dir/package-lock.json" || [ ! -d "$node_dir/node_modules/openai" ] ||
   [ ! -d "$node_dir/node_modules/playwright-core" ]; then
  command -v npm >/dev/null || { echo "setup: npm is required for the server's client tests" >&2; exit 1; }
  echo "setup: installing the node test clients into $node_dir"
  mkdir -p "$node_dir"
  cp tests/node/package.json tests/node/package-lock.json "$node_dir/"
  (cd "$node_dir" && npm ci --no-audit --no-fund --silent)
fi

jobs=$(nproc)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
common=(-DTALKBOX_GGML_SOURCE="$PWD/$src/ggml" -DTALKBOX_NODE_DIR="$node_dir" "${launcher[@]}")
sanitize=${TALKBOX_SANITIZE_BUILD-$PWD/build-sanitize}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTALKBOX_SANITIZE_BUILD="$sanitize" "${common[@]}" \
  ${TALKBOX_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$jobs"
echo "setup: built build/bin/talkbox"
if [ -n "$sanitize" ]; then
  # Portable (x86-64-v3) rather than -march=native: on an AVX-512 machine its suites exercise the
  # AVX2 code paths that build/ compiles out.
  # CPU only: its suites check talkbox's own code, and the Vulkan shaders would double its build time.
  CC=clang CXX=clang++ cmake -S . -B "$sanitize" -DCMAKE_BUILD_TYPE=Release -DTALKBOX_FUZZ=ON -DTALKBOX_NATIVE=OFF -DTALKBOX_VULKAN=OFF \
    "${common[@]}" >/dev/null
  cmake --build "$sanitize" -j "$jobs" --target sanitize_all
  echo "setup: built the fuzz targets and sanitized tests in $sanitize"
fi
