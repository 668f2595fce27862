#include "lm/sequence.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "lm/decoder.h"
#include "talkbox/error.h"

namespace talkbox::lm {

namespace {

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

uint64_t next_cache_id() {
    static std::atomic<uint64_t> next{1};
    return next++;
}

}  // namespace

Sequence::Sequence(ggml_backend_t backend, const SequenceShape& shape, KvType type)
    : backend_(backend), shape_(shape), cache_id_(next_cache_id()) {
    const uint32_t capacity = KvCache::on_demand(backend) ? round_up(shape.max_positions, shape.window) : shape.window;
    cache_ = std::make_unique<KvCache>(backend, shape.layers, shape.kv_heads, shape.head_dim, capacity, type, shape.streams);
}

void Sequence::clear() {
    if (length_ > 0) cache_->release();
    length_ = 0;
}

void Sequence::reserve(size_t positions, const char* what) {
    if (positions > shape_.max_positions) {
        throw Error(ErrorKind::InvalidArgument, std::string("the ") + what + " sequence would reach " +
                                                    std::to_string(positions) + " positions; the model supports at most " +
                                                    std::to_string(shape_.max_positions));
    }
    if (positions <= cache_->capacity()) return;
    const size_t capacity = round_up(std::max(positions, size_t(cache_->capacity()) * 2), shape_.window);
    cache_ = cache_->grown(backend_, static_cast<uint32_t>(capacity), static_cast<uint32_t>(length_));
    cache_id_ = next_cache_id();
}

void Sequence::copy_from(const Sequence& other, const char* what) {
    clear();
    reserve(other.length_, what);
    cache_->copy_prefix_from(*other.cache_, static_cast<uint32_t>(other.length_));
    length_ = other.length_;
}

int64_t Sequence::n_kv(size_t positions) const {
    return static_cast<int64_t>(std::min(round_up(positions, shape_.window), size_t(cache_->capacity())));
}

void Sequence::mask(std::vector<ggml_fp16_t>& out, int64_t n_tokens) const {
    causal_mask(out, n_kv(length_ + static_cast<size_t>(n_tokens)), static_cast<int64_t>(length_), n_tokens);
}

}  // namespace talkbox::lm
