// A tiny random Chatterbox Turbo or Nano folder in the released layout (ResembleAI/chatterbox-turbo:
// t3_turbo_v1.safetensors, ResembleAI/chatterbox-nano: t3_nano_v1.safetensors; both with
// s3gen_meanflow.safetensors, ve.safetensors, conds.pt, vocab.json, merges.txt, added_tokens.json),
// made from a seeded generator: no Turbo or Nano fixture exists, and the goldens in
// tests/data/chatterbox_turbo/ and tests/data/chatterbox_nano/ were computed once from these very
// files by their make_golden.py (the reference port's T3Turbo and a GPT-2 BPE written after
// OpenAI's encoder.py; Nano's also checked against the official T3).
//   T3: GPT-2 (TinyGpt2T3: Turbo 2 blocks, width 64, 4 heads of 16; Nano 3 blocks, width 48,
//       3 heads of 16, so that a head-count or layer bug shows), MLP 4 × width, 512 positions, text
//       vocabulary = the tokenizer (256 bytes + merges + 2 added tokens), speech vocabulary 6563.
//   S3Gen: the tiny meanflow weights of tiny_s3gen_weights (kS3GenSeedMeanflow) with the S3
//       tokenizer and CAMPPlus of the tiny-multilingual fixture; ve.safetensors and conds.pt are
//       the fixture's; tiny_hparams.json is the fixture's plus the T3 head count.
#pragma once

#include <cstdint>
#include <string>

namespace talkbox::testing {

constexpr unsigned kTinyTurboSeed = 20261201;

// The T3 of the folder: its official file stem (tts_turbo.py's t3_ckpt) and tiny GPT-2 sizes.
struct TinyGpt2T3 {
    const char* stem;
    int64_t width, layers, heads;
};
constexpr TinyGpt2T3 kTinyTurboT3{"t3_turbo_v1", 64, 2, 4};
constexpr TinyGpt2T3 kTinyNanoT3{"t3_nano_v1", 48, 3, 3};

// Creates `dir` and writes the folder into it.
void write_tiny_turbo_folder(const std::string& dir, const TinyGpt2T3& t3 = kTinyTurboT3);

// The folders written once per test process (process-wide temporary folders).
std::string tiny_turbo_folder();
std::string tiny_nano_folder();

// Those folders converted once per test process; `type` as for converted_fixture.
std::string converted_turbo(const std::string& type = "f32");
std::string converted_nano(const std::string& type = "f32");

}  // namespace talkbox::testing
