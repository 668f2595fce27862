// Chatterbox Turbo's file layout (ResembleAI/chatterbox-turbo), shared by the full-size generator
// (make_random_checkpoint --family chatterbox --model turbo) and the tests' tiny Turbo folder
// (tests/support/tiny_turbo): the GPT-2 T3 keys of t3_turbo_v1.safetensors with their shapes, and
// a small synthetic GPT-2 byte-level BPE tokenizer (vocab.json, merges.txt, added_tokens.json).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace talkbox::bench {

struct TurboT3Sizes {
    int64_t width = 1024, layers = 24, positions = 8196, text_vocab = 50276, speech_vocab = 6563, speaker = 256;
    int64_t mlp() const { return 4 * width; }
};

// The released T3 sizes (GPT-2 medium, docs/chatterbox-spec.md §9).
inline TurboT3Sizes released_turbo_t3() { return {}; }
// Nano's (t3_nano_v1: GPT-2 small, llama_configs.GPT2_SMALL_CONFIG: 12 layers, 768 wide).
inline TurboT3Sizes released_nano_t3() {
    TurboT3Sizes s;
    s.width = 768;
    s.layers = 12;
    return s;
}

// Every key of t3_turbo_v1.safetensors with its torch shape (GPT-2 Conv1D weights are [in, out]),
// in a fixed order (the tiny folder's seeded values depend on it).
std::vector<std::pair<std::string, std::vector<int64_t>>> turbo_t3_tensors(const TurboT3Sizes& s);

// Writes vocab.json, merges.txt and added_tokens.json into `dir`: the 256 GPT-2 byte tokens, a few
// dozen English merges and the added tokens [laugh], [chuckle]. Returns the vocabulary size
// (bytes + merged tokens + added tokens). Throws Error when a file cannot be written.
int64_t write_gpt2_tokenizer(const std::string& dir);

}  // namespace talkbox::bench
