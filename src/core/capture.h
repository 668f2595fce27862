// One way to capture a model's intermediates for parity tests and debugging: a Capture is a named
// set of tensors in PyTorch order (the goldens' layout), filled from graph tensors marked with a
// GraphCapture or from host vectors with put(). Components take a Capture* and do nothing extra
// when it is null: no tensor is marked, nothing is copied. They add to the Capture they are given,
// so one Capture can gather a whole pipeline; pass a fresh (or cleared) one for each run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ggml.h"

namespace talkbox {

// One intermediate: its PyTorch-order shape and its values, row-major (last dimension contiguous).
struct CapturedTensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
};

class Capture {
public:
    // Adds a tensor; throws Error (InvalidArgument) when the name is taken or the shape does not
    // hold data.size() values.
    void put(std::string name, std::vector<int64_t> shape, std::vector<float> data);
    // Adds `row` as the next row of `name` ([rows, row.size()], created by the first row): values
    // that arrive step by step, e.g. each decoding step's logits. Throws Error (InvalidArgument)
    // when the row length differs from the earlier rows'.
    void append_row(const std::string& name, const std::vector<float>& row);
    // The tensor called `name`, or null.
    const CapturedTensor* find(const std::string& name) const;
    // The tensor called `name`; throws Error (NotFound) naming it when absent.
    const CapturedTensor& at(const std::string& name) const;
    // Every tensor, in the order captured.
    const std::vector<CapturedTensor>& tensors() const { return tensors_; }
    size_t size() const { return tensors_.size(); }
    void clear() { tensors_.clear(); }

private:
    std::vector<CapturedTensor> tensors_;
};

// Graph tensors marked for read-back after compute. A cached graph keeps its GraphCapture (built
// enabled or not with it) and reads it after each run.
class GraphCapture {
public:
    explicit GraphCapture(bool enabled) : enabled_(enabled) {}
    bool enabled() const { return enabled_; }

    // How a marked tensor maps to PyTorch order (ggml's ne is the PyTorch shape reversed).
    enum class Layout {
        Transposed,  // swap the first two dims: [channels, time] channels contiguous → PyTorch [C, T]
        AsIs,        // already in PyTorch order, e.g. [hidden, time] for a PyTorch [T, hidden]
    };
    // Adds a contiguous copy of `x` (F32) to `gf` as an output when enabled; otherwise nothing.
    void mark(ggml_context* ctx, ggml_cgraph* gf, const std::string& name, ggml_tensor* x,
              Layout layout = Layout::Transposed);
    // Copies every marked tensor into `out` (after the graph has run), in marking order; its
    // shape is the ggml shape reversed, less the trailing 1s ggml pads with (a transposed tensor
    // keeps two dims).
    void read(Capture& out) const;

private:
    bool enabled_;
    struct Marked {
        std::string name;
        ggml_tensor* copy;
        int rank;  // dims of the PyTorch shape
    };
    std::vector<Marked> marked_;
};

}  // namespace talkbox
