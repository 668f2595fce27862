// Capture: host tensors by name, and graph tensors read back in PyTorch order (transposed or as
// laid out); a disabled GraphCapture adds nothing to the graph.
#include <gtest/gtest.h>

#include "core/backend.h"
#include "core/capture.h"
#include "core/graph.h"
#include "talkbox/error.h"

using namespace talkbox;

namespace {

TEST(CaptureTest, FindsHostTensorsByNameInCaptureOrder) {
    Capture c;
    c.put("b", {2}, {1, 2});
    c.put("a", {1, 3}, {3, 4, 5});
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c.tensors()[0].name, "b");
    EXPECT_EQ(c.at("a").shape, (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(c.at("a").data, (std::vector<float>{3, 4, 5}));
    EXPECT_EQ(c.find("missing"), nullptr);
    EXPECT_THROW(c.at("missing"), Error);
    c.clear();
    EXPECT_EQ(c.size(), 0u);
}

TEST(CaptureTest, RejectsATakenNameOrAShapeThatDoesNotFitTheData) {
    Capture c;
    c.put("x", {2}, {1, 2});
    EXPECT_THROW(c.put("x", {1}, {1}), Error);
    EXPECT_THROW(c.put("y", {2, 2}, {1, 2, 3}), Error);
    EXPECT_EQ(c.size(), 1u);
}

TEST(CaptureTest, AppendsRowsStepByStep) {
    Capture c;
    c.append_row("logits", {1, 2, 3});
    c.append_row("logits", {4, 5, 6});
    EXPECT_EQ(c.at("logits").shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(c.at("logits").data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_THROW(c.append_row("logits", {7}), Error);
}

// x = [channels 3, time 2] channels contiguous: ggml ne = {3, 2}, values x[t][c] = 10·t + c.
struct MarkedGraph {
    Graph graph;
    ggml_tensor* x;
    GraphCapture marks;
    explicit MarkedGraph(bool enabled) : marks(enabled) {
        x = graph.input(GGML_TYPE_F32, {3, 2}, "x");
        ggml_tensor* y = ggml_scale(graph.ctx(), x, 2.0f);
        graph.output(y);
        ggml_build_forward_expand(graph.cgraph(), y);
        marks.mark(graph.ctx(), graph.cgraph(), "y", y);
        marks.mark(graph.ctx(), graph.cgraph(), "y_as_is", y, GraphCapture::Layout::AsIs);
    }
    void run(const Backend& backend) {
        graph.allocate(backend);
        const std::vector<float> v = {0, 1, 2, 10, 11, 12};
        ggml_backend_tensor_set(x, v.data(), 0, v.size() * sizeof(float));
        graph.compute(backend);
    }
};

TEST(CaptureTest, ReadsMarkedGraphTensorsInPyTorchOrder) {
    Backend backend(1);
    MarkedGraph g(true);
    g.run(backend);
    Capture c;
    g.marks.read(c);
    ASSERT_EQ(c.size(), 2u);
    // Transposed: PyTorch [C, T], time contiguous.
    EXPECT_EQ(c.at("y").shape, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(c.at("y").data, (std::vector<float>{0, 20, 2, 22, 4, 24}));
    // As laid out: PyTorch [T, C].
    EXPECT_EQ(c.at("y_as_is").shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(c.at("y_as_is").data, (std::vector<float>{0, 2, 4, 20, 22, 24}));
}

// ggml drops trailing 1s from its shape; a transposed [1 channel, T] must still read as [1, T].
TEST(CaptureTest, ATransposedSingleChannelKeepsBothDims) {
    Backend backend(1);
    Graph graph;
    ggml_tensor* x = graph.input(GGML_TYPE_F32, {1, 3}, "x");
    GraphCapture marks(true);
    marks.mark(graph.ctx(), graph.cgraph(), "x", x);
    marks.mark(graph.ctx(), graph.cgraph(), "x_as_is", x, GraphCapture::Layout::AsIs);
    graph.allocate(backend);
    const std::vector<float> v = {1, 2, 3};
    ggml_backend_tensor_set(x, v.data(), 0, v.size() * sizeof(float));
    graph.compute(backend);
    Capture c;
    marks.read(c);
    EXPECT_EQ(c.at("x").shape, (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(c.at("x").data, v);
    EXPECT_EQ(c.at("x_as_is").shape, (std::vector<int64_t>{3, 1}));
}

TEST(CaptureTest, DisabledMarksAddNothingToTheGraph) {
    MarkedGraph on(true), off(false);
    EXPECT_EQ(ggml_graph_n_nodes(off.graph.cgraph()), 1);  // the scale alone
    EXPECT_GT(ggml_graph_n_nodes(on.graph.cgraph()), 1);
    Backend backend(1);
    off.run(backend);
    Capture c;
    off.marks.read(c);
    EXPECT_EQ(c.size(), 0u);
}

}  // namespace
