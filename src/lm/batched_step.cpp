#include "lm/batched_step.h"

#include "talkbox/error.h"

namespace talkbox::lm {

// A member's RoPE position, cache row and mask are inputs of their own, not views of one [B]
// input: ggml's Vulkan RoPE reads its positions from a view's offset rounded down to the device's
// storage-buffer alignment (16 bytes on lavapipe), so members 1 to 3 took member 0's position.
struct BatchedStep::StepGraph {
    // Nodes: per layer ~30 shared and up to ~24 per member (its attention), plus the family's parts.
    StepGraph(uint32_t layers, size_t members) : graph(1024 + layers * (32 + 24 * members)) {}
    Graph graph;
    std::vector<std::pair<uint64_t, int64_t>> key;  // (cache_id, n_kv) of every member, in order
    struct Slice {
        ggml_tensor *pos, *row, *mask;
    };
    std::vector<Slice> slices;
};

BatchedStep::BatchedStep(const Backend& backend, Stack stack) : backend_(backend), stack_(std::move(stack)) {}

BatchedStep::~BatchedStep() = default;

Graph& BatchedStep::prepare(const std::vector<Sequence*>& members, const Parts& parts, const char* what) {
    if (members.empty()) throw Error(ErrorKind::Internal, std::string(what) + ": a batched step without members");
    std::vector<std::pair<uint64_t, int64_t>> key;
    for (Sequence* s : members) {
        if (s->length() == 0) throw Error(ErrorKind::InvalidArgument, std::string(what) + " step before prefill");
        s->reserve(s->length() + 1, what);
        key.emplace_back(s->cache_id(), s->n_kv(s->length() + 1));
    }
    members_ = members;
    if (!graph_ || graph_->key != key) {
        graph_.reset();
        auto g = std::make_unique<StepGraph>(static_cast<uint32_t>(stack_.layers->size()), members.size());
        g->key = key;
        std::vector<SequenceSlice> slices;
        first_columns_.clear();
        int64_t columns = 0;
        for (size_t m = 0; m < members.size(); ++m) {
            const int64_t n_kv = key[m].second;
            const StepGraph::Slice in{g->graph.input(GGML_TYPE_I32, {1}, "position"), g->graph.input(GGML_TYPE_I64, {1}, "row"),
                                      g->graph.input(GGML_TYPE_F16, {n_kv, 1}, "mask")};
            g->slices.push_back(in);
            slices.push_back({&members[m]->cache(), {in.pos, in.row, in.mask, n_kv}});
            first_columns_.push_back(columns);
            columns += members[m]->cache().streams();
        }
        ggml_tensor* x = parts.input(g->graph);
        if (x->ne[1] != columns) {
            throw Error(ErrorKind::Internal, std::string(what) + ": the step input has " + std::to_string(x->ne[1]) +
                                                 " columns for members with " + std::to_string(columns) + " streams");
        }
        ggml_tensor* out = build_decoder(g->graph.ctx(), stack_.shape, *stack_.layers, stack_.output_norm, x, slices,
                                         stack_.output_norm_b);
        parts.head(g->graph, out);
        g->graph.allocate(backend_);
        graph_ = std::move(g);
    }
    for (size_t m = 0; m < members.size(); ++m) {
        const Sequence& s = *members[m];
        const StepGraph::Slice& in = graph_->slices[m];
        const int32_t pos = static_cast<int32_t>(s.length());
        const int64_t row = pos;
        s.mask(mask_, 1);
        // An input no node reads has no memory: GPT-2's stack reads no RoPE positions.
        if (in.pos->buffer) ggml_backend_tensor_set(in.pos, &pos, 0, sizeof(pos));
        ggml_backend_tensor_set(in.row, &row, 0, sizeof(row));
        ggml_backend_tensor_set(in.mask, mask_.data(), 0, ggml_nbytes(in.mask));
    }
    return graph_->graph;
}

void BatchedStep::advance() {
    for (Sequence* s : members_) s->advance(1);
    members_.clear();
}

}  // namespace talkbox::lm
