// Per-layer key/value caches of a decoder stack in one backend buffer. Each layer's K and V is a
// 4-D tensor [head_dim, capacity, kv_heads, streams]: per head a plane of one row per position,
// and one block of planes per independent sequence (stream) decoded in the same batch (e.g. the
// two rows of classifier-free guidance), written with ggml_set_rows and read as [head_dim, n_kv,
// kv_heads, streams] views by flash attention. Head-major, so that attention reads each head's
// keys and values as one contiguous run (position-major rows put consecutive positions of a head
// a whole row apart, and a decode step waited on memory latency instead of streaming).
//
// On the CPU the buffer is reserved address space whose pages become resident when first written
// (and read as zeros before), so a cache sized for a model's longest sequence costs only the
// positions in use and never has to grow; release() hands the pages back between requests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"

namespace talkbox::lm {

enum class KvType { F32, F16, Q8_0 };
const char* kv_type_name(KvType t);                // "f32", "f16", "q8_0"
KvType parse_kv_type(const std::string& name);     // throws Error (InvalidArgument) listing the choices
ggml_type kv_ggml_type(KvType t);

class KvCache {
public:
    // Throws Error when the type cannot hold rows of head_dim values (Q8_0 needs a multiple of 32).
    KvCache(ggml_backend_t backend, uint32_t layers, uint32_t kv_heads, uint32_t head_dim, uint32_t capacity,
            KvType type, uint32_t streams = 1);
    ~KvCache();
    KvCache(const KvCache&) = delete;
    KvCache& operator=(const KvCache&) = delete;

    ggml_tensor* k(uint32_t layer) const { return k_[layer]; }
    ggml_tensor* v(uint32_t layer) const { return v_[layer]; }
    uint32_t capacity() const { return capacity_; }
    uint32_t head_dim() const { return head_dim_; }
    uint32_t kv_heads() const { return kv_heads_; }
    uint32_t streams() const { return streams_; }
    KvType type() const { return type_; }
    size_t bytes() const;

    // Copies positions [0, n) of every layer and stream from a cache of the same geometry (used to
    // grow), or from a one-stream cache into every stream (a prompt that all CFG rows share).
    void copy_prefix_from(const KvCache& other, uint32_t n);
    // A cache of the same geometry with room for `capacity` positions, holding this one's first
    // `length` (graphs that read this cache must be rebuilt for the new one).
    std::unique_ptr<KvCache> grown(ggml_backend_t backend, uint32_t capacity, uint32_t length) const;

    // Whether caches on `backend` take memory only as positions are written (see above): size them
    // for the longest sequence instead of growing them.
    static bool on_demand(ggml_backend_t backend);
    // Forgets every position and, for on-demand memory, returns its pages to the system (the
    // contents read as zeros afterwards); otherwise clears the buffer.
    void release();

private:
    ggml_context* ctx_ = nullptr;
    ggml_backend_buffer_t buffer_ = nullptr;
    void* reserved_ = nullptr;  // on-demand memory (mmap), or null when the backend allocated it
    size_t reserved_bytes_ = 0;
    std::vector<ggml_tensor*> k_, v_;
    uint32_t layers_, capacity_, head_dim_, kv_heads_, streams_;
    KvType type_;
};

}  // namespace talkbox::lm
