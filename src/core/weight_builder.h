// Weights a component builds tensor by tensor and uploads once into one backend buffer: tensors
// as a file stores them (any type), F32 values given now, or F32 values the host computes at
// upload time (re-laid, folded, derived; computed one at a time, so a re-laid copy is resident
// only while it uploads). The codec decoder and S3Gen build theirs with it; WeightStore
// (core/weights.h) holds a file's tensors as stored, by name prefix. Both place the weights on
// whatever backend they are given, the CPU or a device.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"

namespace talkbox {

class WeightBuilder {
public:
    // `max_tensors`: how many tensors may be added (the metadata context is sized for them).
    explicit WeightBuilder(size_t max_tensors);
    ~WeightBuilder();
    WeightBuilder(const WeightBuilder&) = delete;
    WeightBuilder& operator=(const WeightBuilder&) = delete;

    // `nbytes` at `data` (which must stay valid until upload) copied as they are; `after_upload`,
    // when given, runs once they are on the backend (e.g. to let mapped file pages go).
    ggml_tensor* add_stored(const std::string& name, ggml_type type, const std::vector<int64_t>& ne, const void* data,
                            size_t nbytes, std::function<void()> after_upload = {});
    ggml_tensor* add(const std::string& name, const std::vector<int64_t>& ne, std::vector<float> values);
    ggml_tensor* add_derived(const std::string& name, const std::vector<int64_t>& ne,
                             std::function<std::vector<float>()> make);
    // Bytes of `type` the host computes at upload time (e.g. int8 panels: GGML_TYPE_I8).
    ggml_tensor* add_derived_bytes(const std::string& name, ggml_type type, const std::vector<int64_t>& ne,
                                   std::function<std::vector<uint8_t>()> make);

    // Allocates the buffer on `backend` and writes every tensor, in the order added. `what` names
    // the component in errors ("the codec decoder of 'x.gguf'"). Throws Error (Io) when the
    // backend has no room, (Internal) when a derived tensor's size does not match its shape.
    void upload(ggml_backend_t backend, const std::string& what);
    // The same into a buffer of `type` (e.g. ggml's CPU_REPACK); `huge_pages`: advise_huge_pages.
    void upload(ggml_backend_buffer_type_t type, const std::string& what, bool huge_pages);
    size_t bytes() const;

private:
    ggml_tensor* new_tensor(const std::string& name, ggml_type type, const std::vector<int64_t>& ne);

    size_t max_tensors_;
    size_t count_ = 0;
    ggml_context* ctx_ = nullptr;
    ggml_backend_buffer_t buffer_ = nullptr;
    std::vector<std::pair<ggml_tensor*, std::function<void(ggml_tensor*)>>> uploads_;
};

// Asks the kernel to back a host buffer with transparent huge pages (Linux; a no-op elsewhere, for
// device buffers, or where the kernel declines). Call before writing the buffer: weights are read
// in full for every token, and 2 MiB pages cut the TLB misses of that stream.
void advise_huge_pages(ggml_backend_buffer_t buffer);

}  // namespace talkbox
