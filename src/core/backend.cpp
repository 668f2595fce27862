#include "core/backend.h"

#include <thread>

#include "core/ggml_log.h"
#include "ggml-cpu.h"
#include "talkbox/error.h"
#ifdef TALKBOX_HAVE_CUDA
#include "ggml-cuda.h"
#endif

namespace talkbox {

int default_thread_count() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

Backend::Backend(int threads, Device device) {
    route_ggml_log();
    threads_ = threads > 0 ? threads : default_thread_count();
    if (device == Device::Gpu) {
#ifdef TALKBOX_HAVE_CUDA
        if (ggml_backend_cuda_get_device_count() > 0) backend_ = ggml_backend_cuda_init(0);
#endif
        if (!backend_) throw Error(ErrorKind::Unsupported, "no GPU backend available (build with -DTALKBOX_CUDA=ON on a CUDA machine)");
        is_cpu_ = false;
        return;
    }
    backend_ = ggml_backend_cpu_init();
    if (!backend_) throw Error(ErrorKind::Internal, "cannot initialise the ggml CPU backend");
    ggml_backend_cpu_set_n_threads(backend_, threads_);
}

Backend::~Backend() {
    if (backend_) ggml_backend_free(backend_);
}

std::string Backend::description() const {
    std::string d = ggml_backend_name(backend_);
    if (is_cpu_) d += " (" + std::to_string(threads_) + " threads)";
    return d;
}

void Backend::compute(ggml_cgraph* graph) const {
    if (ggml_backend_graph_compute(backend_, graph) != GGML_STATUS_SUCCESS) {
        throw Error(ErrorKind::Internal, std::string("graph computation failed on ") + ggml_backend_name(backend_));
    }
}

}  // namespace talkbox
