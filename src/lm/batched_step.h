// One decoder step of several sequences through one graph: every weight matrix multiplies one
// column per stream of every member, so B sequences read the weights once per step, and attention
// runs per member over its own cache, position and window. Each member gets what a step alone
// gives it (up to the products' accumulation order: ggml's change with the column count, the int8
// panel kernels do not). The family builds what surrounds the stack (its input embeddings, its
// head), sets its own inputs, computes and reads its outputs; the positions, cache rows, masks and
// the graph cache (kept until the members' caches or windows change) are here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "lm/decoder.h"
#include "lm/sequence.h"

namespace talkbox::lm {

class BatchedStep {
public:
    // The stack every step runs (the layers and norms must outlive the BatchedStep).
    struct Stack {
        StackShape shape;
        const std::vector<LayerWeights>* layers = nullptr;
        ggml_tensor* output_norm = nullptr;
        ggml_tensor* output_norm_b = nullptr;  // GPT-2's final LayerNorm bias
    };
    // A new graph's family parts. input: creates the family's inputs in `graph` and returns the
    // stack's input [hidden, columns()], the members' columns one after the other (a member of s
    // streams owns s columns from first_column()). head: adds the family's outputs on the stack's
    // final-norm output [hidden, columns()] and marks them with graph.output().
    struct Parts {
        std::function<ggml_tensor*(Graph& graph)> input;
        std::function<void(Graph& graph, ggml_tensor* out)> head;
    };

    BatchedStep(const Backend& backend, Stack stack);
    ~BatchedStep();

    // Makes room for one more position in every member (throws Error past the model's limit, naming
    // `what`), builds a new graph through `parts` when the members, a cache or a window changed
    // since the last step, and sets every member's position, cache row and mask. Returns the graph
    // to set the family's inputs in and compute; its tensors stay valid until the next prepare().
    Graph& prepare(const std::vector<Sequence*>& members, const Parts& parts, const char* what);
    // The first column of member `m` in the graph that prepare() returned.
    int64_t first_column(size_t m) const { return first_columns_[m]; }
    // After the step was computed and read: every member holds one more position.
    void advance();

private:
    struct StepGraph;
    const Backend& backend_;
    Stack stack_;
    std::unique_ptr<StepGraph> graph_;
    std::vector<Sequence*> members_;
    std::vector<int64_t> first_columns_;
    std::vector<ggml_fp16_t> mask_;
};

}  // namespace talkbox::lm
