// The byte-level BPE text tokenizer: Qwen2TokenizerFast (Qwen3-TTS) or GPT2TokenizerFast (Chatterbox
// Turbo, tokenizer.ggml.pre = "gpt2"), built from the tokenizer a talkbox GGUF stores under tokenizer.ggml.*.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/gguf_file.h"
#include "text/pretokenizer.h"

namespace talkbox {

class Tokenizer {
public:
    // Reads tokenizer.ggml.tokens / token_type / merges (and eos / padding ids when present) and
    // validates them: every merge joins two known tokens into a known token, every byte has its
    // token, special ids are in range. Throws Error (NotFound / Format) naming the key and entry.
    static Tokenizer from_gguf(const GgufMeta& meta);

    // Same ids as the Hugging Face tokenizer: added tokens (<|im_start|>, <tts_pad>, ...) are matched
    // verbatim first; the text between them is NFC-normalised (Qwen2 only), split by the pre-tokenizer,
    // mapped to bytes and merged by BPE rank. No BOS/EOS is added. Throws Error (InvalidArgument)
    // naming the byte offset when `utf8` is not well-formed UTF-8. Thread-safe.
    std::vector<int32_t> encode(std::string_view utf8) const;

    // The tokens' bytes concatenated (added tokens as their text); the inverse of encode up to NFC.
    // Throws Error (InvalidArgument) on an id that is out of range or names no token.
    std::string decode(const std::vector<int32_t>& ids) const;

    int32_t token_id(std::string_view token) const;  // exact lookup, added tokens included; -1 if absent
    size_t vocab_size() const { return token_bytes_.size(); }

private:
    struct AddedToken {
        std::string text;
        int32_t id;
    };
    struct Merge {
        int32_t rank;
        int32_t id;  // the merged token
    };
    struct Scratch;  // per-call buffers of encode

    Tokenizer() = default;
    const AddedToken* added_token_at(std::string_view text, size_t pos) const;
    void encode_segment(std::string_view segment, Scratch& scratch, std::vector<int32_t>& ids) const;
    void encode_piece(std::string_view piece, Scratch& scratch, std::vector<int32_t>& ids) const;

    std::vector<std::string> token_bytes_;  // per id: raw bytes, or "" for an unused id
    std::unordered_map<std::string, int32_t> ids_by_text_;
    std::array<int32_t, 256> byte_ids_{};      // byte → its single-byte token
    std::unordered_map<uint64_t, Merge> merges_;  // key: (left id << 32) | right id
    std::vector<AddedToken> added_;             // longest first
    std::array<bool, 256> starts_added_{};      // first bytes of added tokens: skips most positions
    Pretokenizer pretokenizer_;
    bool nfc_ = true;  // Qwen2 normalises to NFC; GPT-2 has no normaliser
};

}  // namespace talkbox
