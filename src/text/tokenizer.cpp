#include "text/tokenizer.h"

#include <algorithm>
#include <limits>

#include "talkbox/error.h"
#include "text/unicode.h"

namespace talkbox {

namespace {

// llama.cpp token types, as the converter writes them.
constexpr int32_t kTokenNormal = 1;
constexpr int32_t kTokenControl = 3;      // special added token
constexpr int32_t kTokenUserDefined = 4;  // non-special added token
constexpr int32_t kTokenUnused = 5;       // a gap in the id range ("[PAD<id>]")

// GPT-2 ByteLevel alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes are
// moved to U+0100.. in byte order, so every token of the vocabulary is printable text.
struct ByteAlphabet {
    std::array<uint32_t, 256> code_point{};
    static constexpr uint32_t kCodePoints = 256 + 68;
    std::array<int16_t, kCodePoints> byte{};  // inverse; -1 where no byte maps

    ByteAlphabet() {
        byte.fill(-1);
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            code_point[b] = printable ? b : next++;
            byte[code_point[b]] = static_cast<int16_t>(b);
        }
    }

    std::string text_of(uint8_t b) const {
        const uint32_t cp = code_point[b];
        if (cp < 0x80) return std::string(1, static_cast<char>(cp));
        return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }

    // Raw bytes of a vocabulary token written in the alphabet; false when it contains anything
    // else (the alphabet only has one- and two-byte UTF-8 characters).
    bool to_bytes(std::string_view text, std::string& out) const {
        out.clear();
        for (size_t i = 0; i < text.size(); ++i) {
            const auto b = static_cast<uint8_t>(text[i]);
            uint32_t cp = b;
            if (b >= 0x80) {
                if ((b & 0xE0) != 0xC0 || i + 1 >= text.size()) return false;
                const auto c = static_cast<uint8_t>(text[++i]);
                if ((c & 0xC0) != 0x80) return false;
                cp = ((b & 0x1Fu) << 6) | (c & 0x3Fu);
                if (cp < 0x80) return false;  // overlong
            }
            if (cp >= kCodePoints || byte[cp] < 0) return false;
            out.push_back(static_cast<char>(byte[cp]));
        }
        return !out.empty();
    }
};

const ByteAlphabet& byte_alphabet() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

}  // namespace

// Reused across the pieces of one encode call, so BPE does not allocate per word.
struct Tokenizer::Scratch {
    struct Symbol {
        int32_t id;    // -1 once merged into its left neighbour
        int32_t prev;  // index of the neighbours, -1 at the ends
        int32_t next;
    };
    struct Candidate {
        int32_t rank, left, right, left_id, right_id, merged_id;
        // Min-heap order: lowest rank first, then leftmost (as Hugging Face's BPE).
        bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    std::string normalized;
    std::vector<std::string_view> pieces;
    std::vector<Symbol> symbols;
    std::vector<Candidate> queue;
};

Tokenizer Tokenizer::from_gguf(const GgufMeta& meta) {
    const std::string& where = meta.label();
    const auto tokens = meta.get_string_array("tokenizer.ggml.tokens");
    const auto types = meta.get_i32_array("tokenizer.ggml.token_type");
    const auto merges = meta.get_string_array("tokenizer.ggml.merges");
    if (tokens.empty()) throw Error(ErrorKind::Format, where + ": tokenizer.ggml.tokens is empty");
    if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        throw Error(ErrorKind::Format, where + ": tokenizer.ggml.tokens has too many entries");
    }
    if (types.size() != tokens.size()) {
        throw Error(ErrorKind::Format, where + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                                           " entries, tokenizer.ggml.tokens " + std::to_string(tokens.size()));
    }

    const ByteAlphabet& alphabet = byte_alphabet();
    Tokenizer t;
    // tokenizer.ggml.pre: "qwen2" (NFC + the Qwen2 split; files without the key are Qwen3-TTS) or
    // "gpt2" (no normaliser, GPT-2's split: Chatterbox Turbo).
    const std::string pre = meta.has_key("tokenizer.ggml.pre") ? meta.get_string("tokenizer.ggml.pre") : "qwen2";
    if (pre == "gpt2") {
        t.pretokenizer_ = Pretokenizer(PretokenizerKind::Gpt2);
        t.nfc_ = false;
    } else if (pre != "qwen2") {
        throw Error(ErrorKind::Unsupported, where + ": tokenizer.ggml.pre '" + pre + "' is not supported (qwen2 or gpt2)");
    }
    t.token_bytes_.resize(tokens.size());
    t.ids_by_text_.reserve(tokens.size());
    std::vector<bool> normal(tokens.size(), false);
    for (size_t i = 0; i < tokens.size(); ++i) {
        const auto id = static_cast<int32_t>(i);
        const auto entry = [&] { return where + ": token " + std::to_string(id) + " '" + tokens[i] + "'"; };
        switch (types[i]) {
            case kTokenNormal:
                if (!alphabet.to_bytes(tokens[i], t.token_bytes_[i])) {
                    throw Error(ErrorKind::Format, entry() + " is not byte-level BPE text");
                }
                normal[i] = true;
                break;
            case kTokenControl:
            case kTokenUserDefined:
                if (tokens[i].empty()) throw Error(ErrorKind::Format, entry() + " is an empty added token");
                t.token_bytes_[i] = tokens[i];
                t.added_.push_back({tokens[i], id});
                t.starts_added_[static_cast<uint8_t>(tokens[i][0])] = true;
                break;
            case kTokenUnused: continue;
            default:
                throw Error(ErrorKind::Format, entry() + " has token type " + std::to_string(types[i]) +
                                                   " (expected 1 normal, 3 control, 4 user-defined or 5 unused)");
        }
        if (!t.ids_by_text_.emplace(tokens[i], id).second) {
            throw Error(ErrorKind::Format, entry() + " duplicates token " + std::to_string(t.ids_by_text_[tokens[i]]));
        }
    }
    // Longest first, so that an added token that is a prefix of another never hides it.
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.text.size() > b.text.size(); });

    const auto normal_id = [&](const std::string& text) {
        const auto it = t.ids_by_text_.find(text);
        return it != t.ids_by_text_.end() && normal[static_cast<size_t>(it->second)] ? it->second : -1;
    };
    for (int b = 0; b < 256; ++b) {
        t.byte_ids_[static_cast<size_t>(b)] = normal_id(alphabet.text_of(static_cast<uint8_t>(b)));
        if (t.byte_ids_[static_cast<size_t>(b)] < 0) {
            throw Error(ErrorKind::Format, where + ": no token for byte " + std::to_string(b) + " ('" +
                                               alphabet.text_of(static_cast<uint8_t>(b)) + "')");
        }
    }

    t.merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const auto entry = [&] { return where + ": tokenizer.ggml.merges[" + std::to_string(rank) + "] '" + m + "'"; };
        const size_t space = m.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == m.size() ||
            m.find(' ', space + 1) != std::string::npos) {
            throw Error(ErrorKind::Format, entry() + " is not two tokens separated by one space");
        }
        const std::string left = m.substr(0, space), right = m.substr(space + 1);
        const int32_t left_id = normal_id(left), right_id = normal_id(right), merged_id = normal_id(left + right);
        if (left_id < 0 || right_id < 0 || merged_id < 0) {
            const std::string& missing = left_id < 0 ? left : right_id < 0 ? right : left + right;
            throw Error(ErrorKind::Format, entry() + " refers to '" + missing + "', which is not a vocabulary token");
        }
        const Merge merge{static_cast<int32_t>(rank), merged_id};
        if (!t.merges_.emplace(pair_key(left_id, right_id), merge).second) {
            throw Error(ErrorKind::Format, entry() + " repeats an earlier merge");
        }
    }

    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id"}) {
        if (!meta.has_key(key)) continue;
        const uint32_t id = meta.get_u32(key);
        if (id >= tokens.size() || types[id] == kTokenUnused) {
            throw Error(ErrorKind::Format, where + ": " + key + " " + std::to_string(id) + " names no token");
        }
    }
    return t;
}

const Tokenizer::AddedToken* Tokenizer::added_token_at(std::string_view text, size_t pos) const {
    if (!starts_added_[static_cast<uint8_t>(text[pos])]) return nullptr;
    for (const AddedToken& a : added_) {
        if (text.compare(pos, a.text.size(), a.text) == 0) return &a;
    }
    return nullptr;
}

std::vector<int32_t> Tokenizer::encode(std::string_view utf8) const {
    // BPE indexes the bytes of a piece with int32.
    if (utf8.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        throw Error(ErrorKind::InvalidArgument,
                    "text of " + std::to_string(utf8.size()) + " bytes is too long to encode");
    }
    check_utf8(utf8);
    Scratch scratch;
    std::vector<int32_t> ids;
    size_t segment_start = 0;
    for (size_t pos = 0; pos < utf8.size();) {
        const AddedToken* added = added_token_at(utf8, pos);
        if (!added) {
            ++pos;
            continue;
        }
        encode_segment(utf8.substr(segment_start, pos - segment_start), scratch, ids);
        ids.push_back(added->id);
        pos += added->text.size();
        segment_start = pos;
    }
    encode_segment(utf8.substr(segment_start), scratch, ids);
    return ids;
}

void Tokenizer::encode_segment(std::string_view segment, Scratch& scratch, std::vector<int32_t>& ids) const {
    if (segment.empty()) return;
    // ASCII is already in NFC; most text skips the normaliser.
    std::string_view text = segment;
    if (nfc_ && !is_ascii(segment)) {
        scratch.normalized = nfc(segment);
        text = scratch.normalized;
    }
    scratch.pieces.clear();
    pretokenizer_.split(text, scratch.pieces);
    for (const std::string_view piece : scratch.pieces) encode_piece(piece, scratch, ids);
}

// BPE of one piece over token ids: repeatedly apply the lowest-ranked merge among adjacent symbols
// (leftmost on ties). A heap of candidate pairs keeps long pieces O(n log n); a candidate is stale
// once either side changed, which the recorded ids detect (a merged symbol only grows, so its id
// never comes back).
void Tokenizer::encode_piece(std::string_view piece, Scratch& scratch, std::vector<int32_t>& ids) const {
    using Symbol = Scratch::Symbol;
    using Candidate = Scratch::Candidate;
    auto& symbols = scratch.symbols;
    auto& queue = scratch.queue;
    const auto n = static_cast<int32_t>(piece.size());
    symbols.resize(piece.size());
    for (int32_t i = 0; i < n; ++i) {
        symbols[i] = Symbol{byte_ids_[static_cast<uint8_t>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
    }

    queue.clear();
    const auto push_candidate = [&](int32_t left) {
        if (left < 0) return;
        const int32_t right = symbols[left].next;
        if (right < 0) return;
        const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
        if (it == merges_.end()) return;
        queue.push_back({it->second.rank, left, right, symbols[left].id, symbols[right].id, it->second.id});
        std::push_heap(queue.begin(), queue.end());
    };
    for (int32_t i = 0; i + 1 < n; ++i) push_candidate(i);

    while (!queue.empty()) {
        std::pop_heap(queue.begin(), queue.end());
        const Candidate c = queue.back();
        queue.pop_back();
        Symbol& left = symbols[c.left];
        if (left.id != c.left_id || left.next != c.right || symbols[c.right].id != c.right_id) continue;
        left.id = c.merged_id;
        left.next = symbols[c.right].next;
        if (left.next >= 0) symbols[left.next].prev = c.left;
        symbols[c.right].id = -1;
        push_candidate(left.prev);
        push_candidate(c.left);
    }
    for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        const int32_t id = ids[i];
        if (id < 0 || static_cast<size_t>(id) >= token_bytes_.size() || token_bytes_[id].empty()) {
            throw Error(ErrorKind::InvalidArgument,
                        "cannot decode token id " + std::to_string(id) + " at position " + std::to_string(i) +
                            ": no such token (vocabulary size " + std::to_string(token_bytes_.size()) + ")");
        }
        out += token_bytes_[id];
    }
    return out;
}

int32_t Tokenizer::token_id(std::string_view token) const {
    const auto it = ids_by_text_.find(std::string(token));
    return it == ids_by_text_.end() ? -1 : it->second;
}

}  // namespace talkbox
