# The fuzz targets and the sanitized test suites, read by fuzz/CMakeLists.txt (the TALKBOX_FUZZ
# build) and fuzz/ctest.cmake (the main build's ctest runs them).
# A fuzz target NAME is fuzz/NAME_fuzz.cpp with seeds in fuzz/corpus/NAME/ and crash replays in
# fuzz/regressions/NAME/; adding one is one line here.
set(TALKBOX_FUZZ_TARGETS
  safetensors        # convert/safetensors: header JSON, dtypes, offsets, float conversion
  torch_checkpoint   # convert/torch_checkpoint: ZIP, pickle subset, tensor rebuild
  gguf_model         # ggml's GGUF reader + model info / hyper-parameter validation
  config_json        # core/json_file + convert/hparams_meta: a snapshot's config JSON
  codes_json         # codec/codes_json: `talkbox decode` input
  voice_file         # voice/voice_file: load_voice
  audio              # audio/audio_reader: WAV, FLAC, Ogg, ... through libsndfile, from memory
  tokenizer          # text/tokenizer: encode / decode round trip
  http_request       # server/http_request + multipart: the request path of `talkbox serve`
  wyoming_event      # server/wyoming_protocol: the event framing of `talkbox serve --wyoming-port`
  ssml               # text/ssml + pipeline/ssml_segments: SSML input (speak, serve, the C API)
)

# Test binaries of the TALKBOX_FUZZ build run under the sanitizers, as BINARY=GTEST_FILTER: the
# parser, voice, audio, model-info and server suites (the server tests start that build's talkbox),
# and the hand-written kernels, which that portable build runs on their AVX2 paths.
set(TALKBOX_SANITIZED_TESTS
  "convert_test=*-*_bf16:*_f16:*_q4_k:*_q8_0"   # one weight type: the others share the parsing
  "chatterbox_convert_test=*"
  "codec_test=CodesJson*"
  "core_test=GgufFile*:Json*:PackedMatmul*:Attention*:SnakeBeta*:Elu*:Gelu*:Mish*:Conv*:AddBiasResidual*:OverlapAdd*"
  "model_info_test=*"
  "voice_file_test=*"
  "text_test=Ssml*:SayAs*"
  "voice_test=AudioReader*"
  "server_test=*"
  "http_request_test=*"
  "hostile_server_test=*"
  "wyoming_test=*"
  "zeroconf_test=*"
  "crafted_input_test=*"
)
