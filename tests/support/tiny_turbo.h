// A tiny random Chatterbox Turbo folder in the released layout (ResembleAI/chatterbox-turbo:
// t3_turbo_v1.safetensors, s3gen_meanflow.safetensors, ve.safetensors, conds.pt, vocab.json,
// merges.txt, added_tokens.json), made from a seeded generator: no Turbo fixture exists, and the
// goldens in tests/data/chatterbox_turbo/ were computed once from these very files by
// make_golden.py (the reference port's T3Turbo and a GPT-2 BPE written after OpenAI's encoder.py).
//   T3: GPT-2, 2 blocks, width 64, 4 heads of 16, MLP 256, 512 positions, text vocabulary = the
//       tokenizer (256 bytes + kTinyTurboMerges merges + 2 added tokens), speech vocabulary 6563.
//   S3Gen: the tiny meanflow weights of tiny_s3gen_weights (kS3GenSeedMeanflow) with the S3
//       tokenizer and CAMPPlus of the tiny-multilingual fixture; ve.safetensors and conds.pt are
//       the fixture's; tiny_hparams.json is the fixture's plus the T3 head count.
#pragma once

#include <string>

namespace talkbox::testing {

constexpr unsigned kTinyTurboSeed = 20261201;

// Creates `dir` and writes the folder into it.
void write_tiny_turbo_folder(const std::string& dir);

// The folder written once per test process (a process-wide temporary folder).
std::string tiny_turbo_folder();

// tiny_turbo_folder() converted once per test process; `type` as for converted_fixture.
std::string converted_turbo(const std::string& type = "f32");

}  // namespace talkbox::testing
