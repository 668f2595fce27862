#include "lm/kv_cache.h"

#include <cstring>
#include <sys/mman.h>

#include "ggml-cpu.h"
#include "talkbox/error.h"

namespace talkbox::lm {

const char* kv_type_name(KvType t) {
    switch (t) {
        case KvType::F32: return "f32";
        case KvType::F16: return "f16";
        case KvType::Q8_0: return "q8_0";
    }
    return "?";
}

KvType parse_kv_type(const std::string& name) {
    for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0}) {
        if (name == kv_type_name(t)) return t;
    }
    throw Error(ErrorKind::InvalidArgument, "unknown KV cache type '" + name + "' (choose one of f32, f16, q8_0)");
}

ggml_type kv_ggml_type(KvType t) {
    switch (t) {
        case KvType::F32: return GGML_TYPE_F32;
        case KvType::F16: return GGML_TYPE_F16;
        case KvType::Q8_0: return GGML_TYPE_Q8_0;
    }
    return GGML_TYPE_F32;
}

KvCache::KvCache(ggml_backend_t backend, uint32_t layers, uint32_t kv_heads, uint32_t head_dim, uint32_t capacity,
                 KvType type, uint32_t streams)
    : layers_(layers), capacity_(capacity), head_dim_(head_dim), kv_heads_(kv_heads), streams_(streams), type_(type) {
    if (streams == 0) throw Error(ErrorKind::InvalidArgument, "a KV cache needs at least one stream");
    const ggml_type gt = kv_ggml_type(type);
    if (head_dim % ggml_blck_size(gt) != 0) {
        throw Error(ErrorKind::Unsupported, std::string("KV cache type ") + kv_type_name(type) + " needs head_dim to be a multiple of " +
                                                std::to_string(ggml_blck_size(gt)) + ", this model has " +
                                                std::to_string(head_dim));
    }
    ctx_ = ggml_init({ggml_tensor_overhead() * 2 * layers, nullptr, /*no_alloc=*/true});
    if (!ctx_) throw Error(ErrorKind::Internal, "cannot create a ggml context for a KV cache");
    for (uint32_t l = 0; l < layers; ++l) {
        k_.push_back(ggml_new_tensor_4d(ctx_, gt, head_dim, capacity, kv_heads, streams));
        v_.push_back(ggml_new_tensor_4d(ctx_, gt, head_dim, capacity, kv_heads, streams));
    }
    // Rows past the current length are masked, but must not hold NaN patterns that a masked dot
    // product could turn into NaN scores: fresh anonymous pages read as zeros, other buffers are cleared.
    if (on_demand(backend)) {
        const auto padded = [](const ggml_tensor* t) { return (ggml_nbytes(t) + 63) / 64 * 64; };  // 64-byte aligned tensors
        size_t bytes = 0;
        for (uint32_t l = 0; l < layers; ++l) bytes += padded(k_[l]) + padded(v_[l]);
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            ggml_free(ctx_);
            throw Error(ErrorKind::Io, "cannot reserve a KV cache of " + std::to_string(capacity) + " positions");
        }
        // Each head's plane spans the whole capacity, so a few positions touch every plane: with
        // transparent huge pages each first touch would zero (and keep) 2 MB, the whole cache at
        // the first prefill. Small pages cost what the positions written so far take.
        madvise(p, bytes, MADV_NOHUGEPAGE);
        reserved_ = p;
        reserved_bytes_ = bytes;
        buffer_ = ggml_backend_cpu_buffer_from_ptr(p, bytes);
        size_t offset = 0;
        for (uint32_t l = 0; l < layers; ++l) {
            for (ggml_tensor* t : {k_[l], v_[l]}) {
                ggml_backend_tensor_alloc(buffer_, t, static_cast<char*>(p) + offset);
                offset += padded(t);
            }
        }
    } else {
        buffer_ = ggml_backend_alloc_ctx_tensors(ctx_, backend);
        if (!buffer_) {
            ggml_free(ctx_);
            throw Error(ErrorKind::Io, "cannot allocate a KV cache of " + std::to_string(capacity) + " positions");
        }
        ggml_backend_buffer_clear(buffer_, 0);
    }
}

KvCache::~KvCache() {
    if (buffer_) ggml_backend_buffer_free(buffer_);
    if (reserved_) munmap(reserved_, reserved_bytes_);
    if (ctx_) ggml_free(ctx_);
}

std::unique_ptr<KvCache> KvCache::grown(ggml_backend_t backend, uint32_t capacity, uint32_t length) const {
    auto bigger = std::make_unique<KvCache>(backend, layers_, kv_heads_, head_dim_, capacity, type_, streams_);
    bigger->copy_prefix_from(*this, length);
    return bigger;
}

bool KvCache::on_demand(ggml_backend_t backend) { return ggml_backend_is_cpu(backend); }

void KvCache::release() {
    if (reserved_) {
        madvise(reserved_, reserved_bytes_, MADV_DONTNEED);  // private anonymous: zero-filled on the next touch
    } else {
        ggml_backend_buffer_clear(buffer_, 0);
    }
}

size_t KvCache::bytes() const { return ggml_backend_buffer_get_size(buffer_); }

void KvCache::copy_prefix_from(const KvCache& other, uint32_t n) {
    // Host memory on both sides (the CPU's caches) is copied directly, elsewhere through the host.
    const bool host = ggml_backend_buffer_is_host(buffer_) && ggml_backend_buffer_is_host(other.buffer_);
    std::vector<uint8_t> tmp;
    for (size_t l = 0; l < k_.size(); ++l) {
        for (auto [dst, src] : {std::pair{k_[l], other.k_[l]}, std::pair{v_[l], other.v_[l]}}) {
            // One plane (a head of a stream) at a time: the planes of the two capacities differ in size.
            const size_t bytes = src->nb[1] * n;
            if (!host) tmp.resize(bytes);
            for (uint32_t s = 0; s < streams_; ++s) {
                for (uint32_t h = 0; h < kv_heads_; ++h) {
                    const size_t from = (other.streams_ == 1 ? 0 : s) * src->nb[3] + h * src->nb[2], to = s * dst->nb[3] + h * dst->nb[2];
                    if (host) {
                        std::memcpy(static_cast<char*>(dst->data) + to, static_cast<const char*>(src->data) + from, bytes);
                    } else {
                        ggml_backend_tensor_get(src, tmp.data(), from, bytes);
                        ggml_backend_tensor_set(dst, tmp.data(), to, bytes);
                    }
                }
            }
        }
    }
}

}  // namespace talkbox::lm
