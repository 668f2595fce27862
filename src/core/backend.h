// The compute backend a model runs on: ggml's CPU backend with a thread count, or (when built
// with TALKBOX_CUDA and a device is present) CUDA. One Backend per loaded model.
#pragma once

#include <string>

#include "ggml-backend.h"

namespace talkbox {

enum class Device { Cpu, Gpu };

class Backend {
public:
    // threads <= 0 picks the number of physical cores. Device::Gpu throws Error (Unsupported)
    // when this build or machine has no GPU backend.
    explicit Backend(int threads = 0, Device device = Device::Cpu);
    ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    ggml_backend_t get() const { return backend_; }
    bool is_cpu() const { return is_cpu_; }
    int threads() const { return threads_; }
    std::string description() const;

    // Runs a graph to completion; throws Error (Internal) if the backend reports failure.
    void compute(ggml_cgraph* graph) const;

private:
    ggml_backend_t backend_ = nullptr;
    bool is_cpu_ = true;
    int threads_ = 1;
};

int default_thread_count();

}  // namespace talkbox
