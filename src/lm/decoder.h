// Graph builder for a pre-norm decoder-only transformer stack. Llama / Qwen3 flavour: RMSNorm,
// optional per-head q/k RMSNorm (Qwen3), NeoX-style RoPE with optional per-frequency factors
// (llama3 scaling), grouped-query flash attention over a KV cache, SwiGLU MLP, final RMSNorm.
// GPT-2 flavour: biased LayerNorm, one fused biased q|k|v projection (c_attn), no RoPE (the
// caller adds the learned positions to the input), biased output projection, gelu_new MLP
// (c_fc → c_proj, biased), final biased LayerNorm.
// Several independent sequences ("streams", e.g. the two rows of classifier-free guidance) run
// through one graph: their columns are concatenated, so each weight matrix is read once per step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ggml.h"
#include "lm/kv_cache.h"

namespace talkbox::lm {

struct LayerWeights {  // one decoder layer
    ggml_tensor *attn_norm = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
    ggml_tensor *q_norm = nullptr, *k_norm = nullptr;  // per-head RMSNorm; nullptr when the family has none
    ggml_tensor *ffn_norm = nullptr, *gate = nullptr, *up = nullptr, *down = nullptr;
    // GPT-2 flavour: qkv [hidden, 3·hidden] replaces q/k/v (rows q, then k, then v); biases of
    // every projection and norm; gate stays nullptr.
    ggml_tensor *qkv = nullptr, *qkv_b = nullptr, *o_b = nullptr, *attn_norm_b = nullptr, *ffn_norm_b = nullptr;
    ggml_tensor *up_b = nullptr, *down_b = nullptr;
    bool packed = false;  // the matrices are re-laid for core/packed_matmul (see pack_for_cpu)
};

// Re-lays every layer's Q8_0 / Q4_K matrices (q, k, v or qkv, o, gate, up, down) for the CPU panel
// kernels (core/packed_matmul) when the backend is the CPU, this build has the kernels and all of the
// layer's matrices can be packed. Call once, after loading; build_decoder then multiplies packed
// layers with the panel kernels.
void pack_for_cpu(std::vector<LayerWeights>& layers, bool cpu_backend);

// For WeightStore's MatmulOnly: the layer matrices a stack stored under llama.cpp names
// ("<prefix>.blk.<i>.attn_q.weight", ...) only ever multiplies whole, so ggml's CPU_REPACK buffer may
// re-lay them where the panel kernels are absent. GPT-2's fused attn_qkv is not one of them: it is
// multiplied in row blocks (views), which a re-laid tensor cannot serve.
bool is_whole_layer_matrix(const std::string& gguf_name);

enum class StackFlavour { Llama, Gpt2 };

struct StackShape {
    uint32_t heads = 0, kv_heads = 0, head_dim = 0;
    float rms_eps = 0, rope_theta = 0;  // rms_eps is the LayerNorm eps of the GPT-2 flavour
    ggml_tensor* rope_freq_factors = nullptr;  // F32 [head_dim/2]: frequency i is divided by factor i; nullptr: none
    StackFlavour flavour = StackFlavour::Llama;
    bool cpu_ops = false;  // the backend is the CPU: fused CPU-only ops (core/ops) may replace composed ones
};

struct AttentionInputs {
    ggml_tensor* positions;  // I32 [n_tokens]: RoPE positions (the same for every stream); unused by GPT-2
    ggml_tensor* rows;       // I64 [n_tokens]: cache rows the new keys/values go to (in every stream)
    ggml_tensor* mask;       // F16 [n_kv, n_tokens], 0 or -inf; nullptr when every row is visible
    int64_t n_kv;            // attention reads cache rows [0, n_kv)
};

// x: [hidden, n_tokens · streams] (stream-major: stream s holds columns s·n_tokens …), streams =
// cache.streams() → final-norm output of the same shape. output_norm_b: the GPT-2 final LayerNorm bias.
ggml_tensor* build_decoder(ggml_context* ctx, const StackShape& shape, const std::vector<LayerWeights>& layers,
                           ggml_tensor* output_norm, ggml_tensor* x, const AttentionInputs& in, const KvCache& cache,
                           ggml_tensor* output_norm_b = nullptr);

// One of several independent sequences stepped through one graph: its cache, and its positions,
// cache rows, mask and window (in.positions->ne[0] tokens per stream of the cache).
struct SequenceSlice {
    const KvCache* cache;
    AttentionInputs in;
};

// The same over sequences with caches (and positions, windows) of their own: x's columns are the
// slices' columns one after the other, and every weight matrix multiplies all of them at once.
// Attention runs per slice; each slice's output columns are what it gets alone up to the
// products' accumulation order (ggml's change with the column count; the int8 panel kernels do not).
ggml_tensor* build_decoder(ggml_context* ctx, const StackShape& shape, const std::vector<LayerWeights>& layers,
                           ggml_tensor* output_norm, ggml_tensor* x, const std::vector<SequenceSlice>& slices,
                           ggml_tensor* output_norm_b = nullptr);

// The additive causal mask for n_tokens queries at positions [n_past, n_past + n_tokens) over n_kv
// cache rows (rows past the last query are masked too), as F16 values for flash attention.
void causal_mask(std::vector<ggml_fp16_t>& mask, int64_t n_kv, int64_t n_past, int64_t n_tokens);

// Per-frequency divisors for ggml_rope_ext that turn the plain RoPE frequencies theta^(-2i/d) into
// Llama 3's scaled ones (rope_scaling rope_type "llama3"): [head_dim/2] values.
struct Llama3RopeScaling {
    float factor = 8.0f, low_freq_factor = 1.0f, high_freq_factor = 4.0f;
    float original_max_positions = 8192.0f;
};
std::vector<float> llama3_rope_freq_factors(uint32_t head_dim, float theta, const Llama3RopeScaling& scaling);

}  // namespace talkbox::lm
