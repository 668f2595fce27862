# talkbox serve in a container (docs/deploy.md): a Debian 12 build stage, then a runtime stage with
# only the binary and the shared libraries it loads, run as a non-root user.
#   docker build -t talkbox .
#   docker run -p 8080:8080 -v $PWD/models:/models:ro -v talkbox-voices:/voices talkbox \
#       serve -m /models/model.gguf --host 0.0.0.0 --voices-dir /voices

FROM debian:12 AS build
# scripts/setup.sh's build packages, without the test-only ones (browser, sanitizers, gtest).
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake git pkg-config ca-certificates npm \
      nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev \
      libsndfile1-dev libsoxr-dev libsleef-dev libcurl4-openssl-dev libssl-dev libcpp-httplib-dev \
      libsoundtouch-dev libexpat1-dev libavcodec-dev libavahi-client-dev libvulkan-dev glslc spirv-headers libmecab-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# ggml: the llama.cpp git bundle inside node-llama-cpp, pinned as in scripts/setup.sh.
ARG NODE_LLAMA_CPP_VERSION=3.21.1
RUN mkdir -p /deps && cd /deps && npm pack --silent "node-llama-cpp@${NODE_LLAMA_CPP_VERSION}" >/dev/null \
    && tar -xzf node-llama-cpp-*.tgz package/llama/gitRelease.bundle \
    && git clone -q package/llama/gitRelease.bundle llama.cpp && rm -rf package node-llama-cpp-*.tgz
COPY . .
# The build fixes scripts/setup.sh applies to the fetched tree (cmake/patches).
RUN for p in cmake/patches/*.patch; do git -C /deps/llama.cpp apply "/src/$p"; done
# Portable: no -march=native, so the image runs on any x86-64 (or arm64) host it is pulled to.
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTALKBOX_NATIVE=OFF -DTALKBOX_TESTS=OFF \
      -DTALKBOX_SANITIZE_BUILD= -DTALKBOX_GGML_SOURCE=/deps/llama.cpp/ggml \
    && cmake --build build -j"$(nproc)" --target talkbox \
    && install -D build/bin/talkbox /out/talkbox

FROM debian:12-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libgomp1 libpcre2-8-0 libutf8proc2 libsndfile1 libsoxr0 libsleef3 libcurl4 libssl3 ca-certificates \
      libsoundtouch1 libexpat1 libavcodec59 libavahi-client3 libvulkan1 libmecab2 mecab-ipadic-utf8 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd -g 10001 talkbox && useradd -u 10001 -g talkbox -d /home/talkbox -m talkbox \
    && mkdir -p /voices /models && chown talkbox:talkbox /voices
COPY --from=build /out/talkbox /usr/local/bin/talkbox
# talkbox's licence and the notice of what the image carries besides (GPL parts: see the notice).
COPY --from=build /src/LICENSE /src/THIRD_PARTY_NOTICES.md /usr/share/doc/talkbox/
USER talkbox
ENV TALKBOX_HOME=/home/talkbox/.talkbox
EXPOSE 8080
ENTRYPOINT ["talkbox"]
CMD ["serve", "-m", "/models/model.gguf", "--host", "0.0.0.0", "--port", "8080", "--voices-dir", "/voices"]
