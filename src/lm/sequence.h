// One sequence decoded position by position through a decoder stack: its KV cache, how many
// positions it holds, the cache's growth and the attention window a step reads. Attention
// windows come in multiples of `window` positions, so a step graph built for one window serves
// every step until the sequence crosses the next boundary; graphs key on (cache_id, n_kv).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ggml-backend.h"
#include "lm/kv_cache.h"

namespace talkbox::lm {

struct SequenceShape {
    uint32_t layers = 0, kv_heads = 0, head_dim = 0;
    uint32_t max_positions = 0;  // the longest sequence the model supports
    uint32_t window = 64;        // attention windows and cache capacities are multiples of this
    uint32_t streams = 1;        // independent rows decoded together (classifier-free guidance)
};

class Sequence {
public:
    // On-demand cache memory (the CPU) is sized for max_positions at once; elsewhere the cache
    // starts at one window and doubles. Throws Error when `type` cannot hold head_dim values.
    Sequence(ggml_backend_t backend, const SequenceShape& shape, KvType type);

    const KvCache& cache() const { return *cache_; }
    size_t length() const { return length_; }
    // Changes whenever the cache is replaced (growth): graphs built over the old one are stale.
    uint64_t cache_id() const { return cache_id_; }

    // Forgets every position (their memory goes back to the system where it can).
    void clear();
    // Forgets every position but keeps the memory: for a sequence rewritten from position 0 at
    // once, over and over (the code predictor's per-frame positions).
    void rewind() { length_ = 0; }
    // Makes room for `positions` in all; throws Error (InvalidArgument, naming `what`) past the
    // model's limit.
    void reserve(size_t positions, const char* what);
    // The cache rows attention reads when the sequence holds `positions`: whole windows, within the cache.
    int64_t n_kv(size_t positions) const;
    // The F16 mask of `n_tokens` queries appended at the current end over n_kv(length + n_tokens) rows.
    void mask(std::vector<ggml_fp16_t>& out, int64_t n_tokens) const;
    // Records `n` positions written by the step just run.
    void advance(size_t n) { length_ += n; }
    // Starts over as a copy of `other`'s positions (a prompt prefilled once for several sequences);
    // the caches must have the same layers, heads and type, and the same streams or `other` one
    // (then copied into each stream).
    void copy_from(const Sequence& other, const char* what);

private:
    ggml_backend_t backend_;
    SequenceShape shape_;
    std::unique_ptr<KvCache> cache_;
    size_t length_ = 0;
    uint64_t cache_id_;
};

}  // namespace talkbox::lm
