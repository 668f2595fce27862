#include "core/capture.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "ggml-backend.h"
#include "talkbox/error.h"

namespace talkbox {

void Capture::put(std::string name, std::vector<int64_t> shape, std::vector<float> data) {
    if (find(name)) throw Error(ErrorKind::InvalidArgument, "captured tensor " + name + " is already there");
    const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
    if (n != static_cast<int64_t>(data.size())) {
        throw Error(ErrorKind::InvalidArgument, "captured tensor " + name + ": its shape holds " + std::to_string(n) +
                                                    " values, not " + std::to_string(data.size()));
    }
    tensors_.push_back({std::move(name), std::move(shape), std::move(data)});
}

void Capture::append_row(const std::string& name, const std::vector<float>& row) {
    const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const CapturedTensor& t) { return t.name == name; });
    if (it == tensors_.end()) {
        put(name, {1, static_cast<int64_t>(row.size())}, row);
        return;
    }
    if (it->shape.size() != 2 || it->shape[1] != static_cast<int64_t>(row.size())) {
        throw Error(ErrorKind::InvalidArgument, "captured tensor " + name + ": a row of " + std::to_string(row.size()) +
                                                    " values does not fit its earlier rows");
    }
    it->data.insert(it->data.end(), row.begin(), row.end());
    ++it->shape[0];
}

const CapturedTensor* Capture::find(const std::string& name) const {
    for (const CapturedTensor& t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

const CapturedTensor& Capture::at(const std::string& name) const {
    if (const CapturedTensor* t = find(name)) return *t;
    throw Error(ErrorKind::NotFound, "no captured tensor " + name);
}

void GraphCapture::mark(ggml_context* ctx, ggml_cgraph* gf, const std::string& name, ggml_tensor* x, Layout layout) {
    if (!enabled_) return;
    if (x->type != GGML_TYPE_F32) throw Error(ErrorKind::Internal, "captured tensor " + name + " is not F32");
    const bool transposed = layout == Layout::Transposed;
    ggml_tensor* t = ggml_cont(ctx, transposed ? ggml_transpose(ctx, x) : x);
    ggml_set_output(t);
    ggml_build_forward_expand(gf, t);
    // A transposed [C, 1] is still [C, 1], not [C]: keep both dims.
    marked_.push_back({name, t, std::max(ggml_n_dims(x), transposed ? 2 : 1)});
}

void GraphCapture::read(Capture& out) const {
    for (const auto& [name, t, rank] : marked_) {
        std::vector<int64_t> shape;
        for (int d = rank - 1; d >= 0; --d) shape.push_back(t->ne[d]);
        std::vector<float> data(static_cast<size_t>(ggml_nelements(t)));
        ggml_backend_tensor_get(t, data.data(), 0, data.size() * sizeof(float));
        out.put(name, std::move(shape), std::move(data));
    }
}

}  // namespace talkbox
