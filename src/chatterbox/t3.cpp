#include "chatterbox/t3.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "chatterbox/s3gen_nn.h"
#include "chatterbox/checkpoint_names.h"
#include "core/clock.h"
#include "core/graph.h"
#include "core/packed_matmul.h"
#include "lm/kv_cache.h"
#include "lm/sampler.h"
#include "lm/sequence.h"
#include "core/cancel.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {

namespace {

// Attention windows (the cache rows a graph reads) and cache capacities come in multiples of
// kWindow positions, so the per-step graph is rebuilt only when the sequence crosses such a
// boundary. A tight window matters on the CPU: from 512 rows on, flash attention splits the rows
// evenly between threads, and masked rows past the sequence leave a thread idle.
constexpr uint32_t kWindow = 64;

std::string gguf_name(const std::string& official_key) {
    std::string name = chatterbox_gguf_name(ChatterboxFile::T3, official_key);
    if (name.empty()) throw Error(ErrorKind::Internal, "no GGUF name for the T3 key '" + official_key + "'");
    return name;
}

ggml_tensor* linear(ggml_context* ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* b) {
    ggml_tensor* y = ggml_mul_mat(ctx, w, x);
    return b ? ggml_add(ctx, y, b) : y;
}

using TensorSpecs = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// Every tensor the graphs read, by official key, with its ggml shape. Vectors, position tables and
// the perceiver queries are added element-wise, so they must be F32; matrices and the token tables
// (read with get_rows) may be any type ggml converts.
void check_tensor_specs(const GgufFile& file, const TensorSpecs& specs) {
    for (const auto& [key, shape] : specs) {
        const auto& t = file.tensor(gguf_name(key), shape);
        const bool vector = shape.size() == 1 || key.find("pos_emb") != std::string::npos ||
                            key.find("pre_attention_query") != std::string::npos || key == "tfmr.wpe.weight";
        if (vector && t.type != GGML_TYPE_F32) {
            throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + t.name + "' is " + ggml_type_name(t.type) +
                                               ", expected f32");
        }
        if (!vector && t.type != GGML_TYPE_F32 && !ggml_get_type_traits(t.type)->to_float) {
            throw Error(ErrorKind::Unsupported, "'" + file.path() + "': tensor '" + t.name + "' has type " +
                                                    ggml_type_name(t.type) + ", which cannot be computed with");
        }
    }
}

// Turbo / Nano (chatterbox.t3.backbone = gpt2): GPT2Model hyper-parameters.
T3Hparams gpt2_hparams(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    const std::string p = "chatterbox.t3.";
    T3Hparams h;
    h.gpt2 = true;
    h.hidden = m.get_u32(p + "embedding_length");
    h.intermediate = m.get_u32(p + "feed_forward_length");
    h.layers = m.get_u32(p + "block_count");
    h.heads = m.get_u32(p + "head_count");
    h.kv_heads = h.heads;
    h.head_dim = m.get_u32(p + "head_dim");
    h.rms_eps = m.get_f32(p + "layer_norm_eps");
    h.start_speech = static_cast<int32_t>(m.get_u32(p + "start_speech_token"));
    h.stop_speech = static_cast<int32_t>(m.get_u32(p + "stop_speech_token"));
    h.start_text = h.stop_text = -1;  // none
    h.speaker_dim = m.get_u32(p + "speaker_embed_size");
    h.perceiver_queries = 0;
    const auto bad = [&](const std::string& what) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': inconsistent T3 hyper-parameters: " + what);
    };
    if (h.hidden == 0 || h.layers == 0 || h.heads == 0 || h.head_dim == 0 || h.intermediate == 0) {
        bad("zero width, depth or head count");
    }
    if (h.heads * h.head_dim != h.hidden) bad("heads × head_dim != hidden");
    if (!(h.rms_eps > 0)) bad("LayerNorm eps out of range");
    const auto rows = [&](const std::string& key) -> uint32_t {
        const auto& t = file.tensor(gguf_name(key));
        if (t.shape.size() != 2 || t.shape[0] != h.hidden) {
            bad("'" + t.name + "' has shape " + shape_to_string(t.shape) + ", expected [" + std::to_string(h.hidden) + ", n]");
        }
        return static_cast<uint32_t>(t.shape[1]);
    };
    h.text_vocab = rows("text_emb.weight");
    h.speech_vocab = rows("speech_emb.weight");
    h.speech_positions = rows("tfmr.wpe.weight");
    for (int32_t id : {h.start_speech, h.stop_speech, h.silence_token}) {
        if (id < 0 || static_cast<uint32_t>(id) >= h.speech_vocab) bad("speech start/stop/silence id outside the speech vocabulary");
    }
    if (h.speech_positions < 4) bad("fewer than 4 GPT-2 positions");
    return h;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Hyper-parameters

T3Hparams T3Hparams::from_gguf(const GgufFile& file) {
    const GgufMeta& m = file.meta();
    const std::string p = "chatterbox.t3.";
    if (m.has_key(p + "backbone")) {
        const std::string backbone = m.get_string(p + "backbone");
        if (backbone == "gpt2") return gpt2_hparams(file);
        if (backbone != "llama") {
            throw Error(ErrorKind::Unsupported, "'" + file.path() + "': T3 backbone '" + backbone + "' is not supported (llama or gpt2)");
        }
    }
    T3Hparams h;
    h.hidden = m.get_u32(p + "embedding_length");
    h.intermediate = m.get_u32(p + "feed_forward_length");
    h.layers = m.get_u32(p + "block_count");
    h.heads = m.get_u32(p + "head_count");
    h.kv_heads = m.get_u32(p + "head_count_kv");
    h.head_dim = m.get_u32(p + "head_dim");
    h.rms_eps = m.get_f32(p + "rms_norm_eps");
    h.rope_theta = m.get_f32(p + "rope.freq_base");
    if (m.get_string(p + "rope.scaling.type") != "llama3") {
        throw Error(ErrorKind::Unsupported, "'" + file.path() + "': T3 RoPE scaling '" + m.get_string(p + "rope.scaling.type") +
                                                "' is not supported (only llama3)");
    }
    h.rope_scaling.factor = m.get_f32(p + "rope.scaling.factor");
    h.rope_scaling.low_freq_factor = m.get_f32(p + "rope.scaling.low_freq_factor");
    h.rope_scaling.high_freq_factor = m.get_f32(p + "rope.scaling.high_freq_factor");
    h.rope_scaling.original_max_positions = static_cast<float>(m.get_u32(p + "rope.scaling.original_context_length"));
    h.start_text = static_cast<int32_t>(m.get_u32(p + "start_text_token"));
    h.stop_text = static_cast<int32_t>(m.get_u32(p + "stop_text_token"));
    h.start_speech = static_cast<int32_t>(m.get_u32(p + "start_speech_token"));
    h.stop_speech = static_cast<int32_t>(m.get_u32(p + "stop_speech_token"));
    if (!m.get_bool(p + "perceiver") || !m.get_bool(p + "emotion_adv")) {
        throw Error(ErrorKind::Unsupported, "'" + file.path() + "': this T3 has no perceiver or no emotion input "
                                            "(Turbo/Nano T3 is not supported)");
    }
    h.perceiver_queries = m.get_u32(p + "perceiver.query_count");
    h.perceiver_heads = m.get_u32(p + "perceiver.head_count");
    h.speaker_dim = m.get_u32(p + "speaker_embed_size");
    h.english = m.get_string("chatterbox.variant") == "english";

    const auto bad = [&](const std::string& what) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': inconsistent T3 hyper-parameters: " + what);
    };
    if (h.hidden == 0 || h.layers == 0 || h.heads == 0 || h.kv_heads == 0 || h.head_dim == 0 || h.intermediate == 0) {
        bad("zero width, depth or head count");
    }
    if (h.heads * h.head_dim != h.hidden) bad("heads × head_dim != hidden");
    if (h.heads % h.kv_heads != 0) bad("heads is not a multiple of kv heads");
    if (h.head_dim % 2 != 0) bad("odd head_dim");
    if (h.perceiver_heads == 0 || h.hidden % h.perceiver_heads != 0) bad("perceiver heads do not divide hidden");
    if (!(h.rms_eps > 0) || !(h.rope_theta > 0) || !(h.rope_scaling.factor > 0) ||
        !(h.rope_scaling.high_freq_factor > h.rope_scaling.low_freq_factor)) {
        bad("eps, RoPE theta or RoPE scaling out of range");
    }
    // Vocabulary and table sizes come from the tables themselves.
    const auto rows = [&](const std::string& key) -> uint32_t {
        const auto& t = file.tensor(gguf_name(key));
        if (t.shape.size() != 2 || t.shape[0] != h.hidden) {
            bad("'" + t.name + "' has shape " + shape_to_string(t.shape) + ", expected [" + std::to_string(h.hidden) + ", n]");
        }
        return static_cast<uint32_t>(t.shape[1]);
    };
    h.text_vocab = rows("text_emb.weight");
    h.speech_vocab = rows("speech_emb.weight");
    h.text_positions = rows("text_pos_emb.emb.weight");
    h.speech_positions = rows("speech_pos_emb.emb.weight");
    for (int32_t id : {h.start_text, h.stop_text}) {
        if (id < 0 || static_cast<uint32_t>(id) >= h.text_vocab) bad("text start/stop id outside the text vocabulary");
    }
    for (int32_t id : {h.start_speech, h.stop_speech}) {
        if (id < 0 || static_cast<uint32_t>(id) >= h.speech_vocab) bad("speech start/stop id outside the speech vocabulary");
    }
    if (h.speech_positions < 2) bad("fewer than 2 speech positions");
    return h;
}

// ---------------------------------------------------------------------------------------------
// Weights

struct T3::Weights {
    std::vector<lm::LayerWeights> layers;
    ggml_tensor *output_norm, *text_emb, *speech_emb, *text_pos = nullptr, *speech_pos = nullptr, *speech_head;
    ggml_tensor *wpe = nullptr, *output_norm_b = nullptr, *speech_head_b = nullptr;  // GPT-2 (Turbo)
    ggml_tensor *spkr_w, *spkr_b, *emotion_w = nullptr;
    ggml_tensor *perc_query = nullptr, *perc_norm_w = nullptr, *perc_norm_b = nullptr;
    ggml_tensor *perc_q_w = nullptr, *perc_q_b = nullptr, *perc_k_w = nullptr, *perc_k_b = nullptr, *perc_v_w = nullptr,
                *perc_v_b = nullptr, *perc_o_w = nullptr, *perc_o_b = nullptr;
    ggml_tensor* rope_factors = nullptr;  // lives in rope_ctx / rope_buf
    ggml_context* rope_ctx = nullptr;
    ggml_backend_buffer_t rope_buf = nullptr;
    // On the CPU: the speech head's whole 16-row panels (a view in head_ctx), packed for the panel
    // kernels; its last speech_vocab mod 16 rows (6563, 8194 rows) keep ggml's layout.
    ggml_tensor* head_panels = nullptr;
    ggml_context* head_ctx = nullptr;

    ~Weights() {
        if (rope_buf) ggml_backend_buffer_free(rope_buf);
        if (rope_ctx) ggml_free(rope_ctx);
        if (head_ctx) ggml_free(head_ctx);
    }

    void pack_head(bool cpu) {
        const int64_t rows = speech_head->ne[1] / packed::kPanelRows * packed::kPanelRows;
        if (!cpu || rows == 0 || !packed::packs(speech_head->type)) return;
        head_ctx = ggml_init({ggml_tensor_overhead(), nullptr, /*no_alloc=*/true});
        if (!head_ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the T3 speech head");
        ggml_tensor* v = ggml_view_2d(head_ctx, speech_head, speech_head->ne[0], rows, speech_head->nb[1], 0);
        if (!speech_head->buffer || ggml_backend_view_init(v) != GGML_STATUS_SUCCESS || !packed::can_pack(v)) return;
        packed::pack(v);
        head_panels = v;
    }
};

T3::T3(const GgufFile& file, const Backend& backend)
    : file_(file), backend_(backend), hp_(T3Hparams::from_gguf(file)), w_(std::make_unique<Weights>()) {
    if (hp_.gpt2) {
        load_gpt2();
        return;
    }
    const T3Hparams& h = hp_;
    const int64_t D = h.hidden, I = h.intermediate, Q = h.perceiver_queries;
    TensorSpecs specs = {
        {"tfmr.norm.weight", {D}},
        {"text_emb.weight", {D, h.text_vocab}},
        {"speech_emb.weight", {D, h.speech_vocab}},
        {"text_pos_emb.emb.weight", {D, h.text_positions}},
        {"speech_pos_emb.emb.weight", {D, h.speech_positions}},
        {"speech_head.weight", {D, h.speech_vocab}},
        {"cond_enc.spkr_enc.weight", {h.speaker_dim, D}},
        {"cond_enc.spkr_enc.bias", {D}},
        {"cond_enc.emotion_adv_fc.weight", {1, D}},
        {"cond_enc.perceiver.pre_attention_query", {D, Q, 1}},
        {"cond_enc.perceiver.attn.norm.weight", {D}},
        {"cond_enc.perceiver.attn.norm.bias", {D}},
    };
    for (const char* n : {"to_q", "to_k", "to_v", "proj_out"}) {
        specs.push_back({std::string("cond_enc.perceiver.attn.") + n + ".weight", {D, D}});
        specs.push_back({std::string("cond_enc.perceiver.attn.") + n + ".bias", {D}});
    }
    const int64_t qkv = int64_t(h.heads) * h.head_dim, kv = int64_t(h.kv_heads) * h.head_dim;
    for (uint32_t l = 0; l < h.layers; ++l) {
        const std::string p = "tfmr.layers." + std::to_string(l) + ".";
        specs.push_back({p + "input_layernorm.weight", {D}});
        specs.push_back({p + "post_attention_layernorm.weight", {D}});
        specs.push_back({p + "self_attn.q_proj.weight", {D, qkv}});
        specs.push_back({p + "self_attn.k_proj.weight", {D, kv}});
        specs.push_back({p + "self_attn.v_proj.weight", {D, kv}});
        specs.push_back({p + "self_attn.o_proj.weight", {qkv, D}});
        specs.push_back({p + "mlp.gate_proj.weight", {D, I}});
        specs.push_back({p + "mlp.up_proj.weight", {D, I}});
        specs.push_back({p + "mlp.down_proj.weight", {I, D}});
    }
    check_tensor_specs(file, specs);
    weights_ = std::make_unique<WeightStore>(
        file, backend.get(), std::vector<std::string>{"t3."},
        lm::is_whole_layer_matrix);
    const auto get = [&](const std::string& key) { return weights_->get(gguf_name(key)); };
    Weights& w = *w_;
    w.output_norm = get("tfmr.norm.weight");
    w.text_emb = get("text_emb.weight");
    w.speech_emb = get("speech_emb.weight");
    w.text_pos = get("text_pos_emb.emb.weight");
    w.speech_pos = get("speech_pos_emb.emb.weight");
    w.speech_head = get("speech_head.weight");
    w.spkr_w = get("cond_enc.spkr_enc.weight");
    w.spkr_b = get("cond_enc.spkr_enc.bias");
    w.emotion_w = get("cond_enc.emotion_adv_fc.weight");
    w.perc_query = get("cond_enc.perceiver.pre_attention_query");
    w.perc_norm_w = get("cond_enc.perceiver.attn.norm.weight");
    w.perc_norm_b = get("cond_enc.perceiver.attn.norm.bias");
    w.perc_q_w = get("cond_enc.perceiver.attn.to_q.weight");
    w.perc_q_b = get("cond_enc.perceiver.attn.to_q.bias");
    w.perc_k_w = get("cond_enc.perceiver.attn.to_k.weight");
    w.perc_k_b = get("cond_enc.perceiver.attn.to_k.bias");
    w.perc_v_w = get("cond_enc.perceiver.attn.to_v.weight");
    w.perc_v_b = get("cond_enc.perceiver.attn.to_v.bias");
    w.perc_o_w = get("cond_enc.perceiver.attn.proj_out.weight");
    w.perc_o_b = get("cond_enc.perceiver.attn.proj_out.bias");
    for (uint32_t l = 0; l < h.layers; ++l) {
        const std::string p = "tfmr.layers." + std::to_string(l) + ".";
        lm::LayerWeights lw;
        lw.attn_norm = get(p + "input_layernorm.weight");
        lw.q = get(p + "self_attn.q_proj.weight");
        lw.k = get(p + "self_attn.k_proj.weight");
        lw.v = get(p + "self_attn.v_proj.weight");
        lw.o = get(p + "self_attn.o_proj.weight");
        lw.ffn_norm = get(p + "post_attention_layernorm.weight");
        lw.gate = get(p + "mlp.gate_proj.weight");
        lw.up = get(p + "mlp.up_proj.weight");
        lw.down = get(p + "mlp.down_proj.weight");
        w.layers.push_back(lw);
    }
    lm::pack_for_cpu(w.layers, backend.is_cpu());
    w.pack_head(backend.is_cpu());

    // llama3 RoPE: per-frequency divisors, computed once and kept on the backend.
    const std::vector<float> factors = lm::llama3_rope_freq_factors(h.head_dim, h.rope_theta, h.rope_scaling);
    w.rope_ctx = ggml_init({ggml_tensor_overhead(), nullptr, /*no_alloc=*/true});
    if (!w.rope_ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the RoPE factors");
    w.rope_factors = ggml_new_tensor_1d(w.rope_ctx, GGML_TYPE_F32, static_cast<int64_t>(factors.size()));
    w.rope_buf = ggml_backend_alloc_ctx_tensors(w.rope_ctx, backend.get());
    if (!w.rope_buf) throw Error(ErrorKind::Io, "cannot allocate the RoPE factors");
    ggml_backend_tensor_set(w.rope_factors, factors.data(), 0, factors.size() * sizeof(float));
}

void T3::load_gpt2() {
    const T3Hparams& h = hp_;
    const int64_t D = h.hidden, I = h.intermediate;
    TensorSpecs specs = {
        {"tfmr.ln_f.weight", {D}},
        {"tfmr.ln_f.bias", {D}},
        {"tfmr.wpe.weight", {D, h.speech_positions}},
        {"text_emb.weight", {D, h.text_vocab}},
        {"speech_emb.weight", {D, h.speech_vocab}},
        {"speech_head.weight", {D, h.speech_vocab}},
        {"speech_head.bias", {h.speech_vocab}},
        {"cond_enc.spkr_enc.weight", {h.speaker_dim, D}},
        {"cond_enc.spkr_enc.bias", {D}},
    };
    // The Conv1D weights are stored transposed by the converter: ggml [in, out] like nn.Linear.
    for (uint32_t l = 0; l < h.layers; ++l) {
        const std::string p = "tfmr.h." + std::to_string(l) + ".";
        for (const char* n : {"ln_1", "ln_2"}) {
            specs.push_back({p + n + ".weight", {D}});
            specs.push_back({p + n + ".bias", {D}});
        }
        specs.push_back({p + "attn.c_attn.weight", {D, 3 * D}});
        specs.push_back({p + "attn.c_attn.bias", {3 * D}});
        specs.push_back({p + "attn.c_proj.weight", {D, D}});
        specs.push_back({p + "attn.c_proj.bias", {D}});
        specs.push_back({p + "mlp.c_fc.weight", {D, I}});
        specs.push_back({p + "mlp.c_fc.bias", {I}});
        specs.push_back({p + "mlp.c_proj.weight", {I, D}});
        specs.push_back({p + "mlp.c_proj.bias", {D}});
    }
    check_tensor_specs(file_, specs);
    weights_ = std::make_unique<WeightStore>(
        file_, backend_.get(), std::vector<std::string>{"t3."},
        lm::is_whole_layer_matrix);
    const auto get = [&](const std::string& key) { return weights_->get(gguf_name(key)); };
    Weights& w = *w_;
    w.output_norm = get("tfmr.ln_f.weight");
    w.output_norm_b = get("tfmr.ln_f.bias");
    w.wpe = get("tfmr.wpe.weight");
    w.text_emb = get("text_emb.weight");
    w.speech_emb = get("speech_emb.weight");
    w.speech_head = get("speech_head.weight");
    w.speech_head_b = get("speech_head.bias");
    w.spkr_w = get("cond_enc.spkr_enc.weight");
    w.spkr_b = get("cond_enc.spkr_enc.bias");
    for (uint32_t l = 0; l < h.layers; ++l) {
        const std::string p = "tfmr.h." + std::to_string(l) + ".";
        lm::LayerWeights lw;
        lw.attn_norm = get(p + "ln_1.weight");
        lw.attn_norm_b = get(p + "ln_1.bias");
        lw.qkv = get(p + "attn.c_attn.weight");
        lw.qkv_b = get(p + "attn.c_attn.bias");
        lw.o = get(p + "attn.c_proj.weight");
        lw.o_b = get(p + "attn.c_proj.bias");
        lw.ffn_norm = get(p + "ln_2.weight");
        lw.ffn_norm_b = get(p + "ln_2.bias");
        lw.up = get(p + "mlp.c_fc.weight");
        lw.up_b = get(p + "mlp.c_fc.bias");
        lw.down = get(p + "mlp.c_proj.weight");
        lw.down_b = get(p + "mlp.c_proj.bias");
        w.layers.push_back(lw);
    }
    lm::pack_for_cpu(w.layers, backend_.is_cpu());
    w.pack_head(backend_.is_cpu());
}

T3::~T3() = default;

T3Options T3::default_options() const {
    T3Options o;
    if (hp_.gpt2) {
        o.top_k = 1000;
        o.top_p = 0.95f;
    }
    return o;
}

// ---------------------------------------------------------------------------------------------
// Conditioning encoder

namespace {

// Perceiver AttentionBlock2: x1 + proj_out(MHA(LN(x1) → q, LN(x2) → k, v)), no mask.
struct PerceiverBlock {
    ggml_tensor *norm_w, *norm_b, *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b;
    int64_t heads;

    ggml_tensor* operator()(ggml_context* ctx, ggml_tensor* x1, ggml_tensor* x2) const {
        const auto norm = [&](ggml_tensor* x) { return ggml_add(ctx, ggml_mul(ctx, ggml_norm(ctx, x, 1e-5f), norm_w), norm_b); };
        const int64_t D = x1->ne[0], hd = D / heads;
        ggml_tensor* a = norm(x1);
        ggml_tensor* b = x1 == x2 ? a : norm(x2);
        const auto split = [&](ggml_tensor* t) {  // [D, n] → [hd, n, heads]
            return ggml_permute(ctx, ggml_reshape_3d(ctx, t, hd, heads, t->ne[1]), 0, 2, 1, 3);
        };
        ggml_tensor* q = split(linear(ctx, a, q_w, q_b));
        ggml_tensor* k = split(linear(ctx, b, k_w, k_b));
        ggml_tensor* v = split(linear(ctx, b, v_w, v_b));
        ggml_tensor* h = ggml_flash_attn_ext(ctx, q, k, v, nullptr, 1.0f / std::sqrt(static_cast<float>(hd)), 0.0f, 0.0f);
        ggml_flash_attn_ext_set_prec(h, GGML_PREC_F32);
        h = ggml_reshape_2d(ctx, h, D, x1->ne[1]);
        return ggml_add(ctx, x1, linear(ctx, h, o_w, o_b));
    }
};

// conditioning()'s checks of its input: throws Error (InvalidArgument).
void check_conditioning(const T3Hparams& h, const T3Conditioning& cond) {
    if (cond.speaker_emb.size() != h.speaker_dim) {
        throw Error(ErrorKind::InvalidArgument, "the T3 speaker embedding has " + std::to_string(cond.speaker_emb.size()) +
                                                    " values, expected " + std::to_string(h.speaker_dim));
    }
    const size_t P = cond.prompt_speech_tokens.size();
    if (P == 0 || P > h.speech_positions) {
        throw Error(ErrorKind::InvalidArgument, "the T3 prompt has " + std::to_string(P) +
                                                    " speech tokens, expected 1.." + std::to_string(h.speech_positions));
    }
    for (int32_t t : cond.prompt_speech_tokens) {
        if (t < 0 || static_cast<uint32_t>(t) >= h.speech_vocab) {
            throw Error(ErrorKind::InvalidArgument, "prompt speech token " + std::to_string(t) + " is outside 0.." +
                                                        std::to_string(h.speech_vocab - 1));
        }
    }
    if (!std::isfinite(cond.exaggeration)) throw Error(ErrorKind::InvalidArgument, "exaggeration must be finite");
    for (float v : cond.speaker_emb) {
        if (!std::isfinite(v)) throw Error(ErrorKind::InvalidArgument, "the T3 speaker embedding holds a non-finite value");
    }
}

}  // namespace

std::vector<float> T3::conditioning(const T3Conditioning& cond) const {
    const T3Hparams& h = hp_;
    check_conditioning(h, cond);
    const size_t P = cond.prompt_speech_tokens.size();

    const Weights& w = *w_;
    const int64_t D = h.hidden;
    Graph g;
    ggml_context* ctx = g.ctx();
    ggml_tensor* spk_in = g.input(GGML_TYPE_F32, {h.speaker_dim, 1}, "speaker_emb");
    ggml_tensor* toks = g.input(GGML_TYPE_I32, {static_cast<int64_t>(P)}, "prompt_tokens");

    ggml_tensor* spk = linear(ctx, spk_in, w.spkr_w, w.spkr_b);  // [D, 1]
    if (h.gpt2) {  // Turbo: the prompt tokens' speech embeddings, no position, no perceiver, no emotion
        ggml_tensor* out = ggml_concat(ctx, spk, ggml_get_rows(ctx, w.speech_emb, toks), 1);
        g.output(out);
        g.allocate(backend_);
        ggml_backend_tensor_set(spk_in, cond.speaker_emb.data(), 0, ggml_nbytes(spk_in));
        ggml_backend_tensor_set(toks, cond.prompt_speech_tokens.data(), 0, ggml_nbytes(toks));
        g.compute(backend_);
        std::vector<float> result(static_cast<size_t>(ggml_nelements(out)));
        ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
        return result;
    }
    ggml_tensor* emo_in = g.input(GGML_TYPE_F32, {1, 1}, "exaggeration");
    ggml_tensor* prompt = ggml_add(ctx, ggml_get_rows(ctx, w.speech_emb, toks),
                                   ggml_view_2d(ctx, w.speech_pos, D, static_cast<int64_t>(P), w.speech_pos->nb[1], 0));
    const PerceiverBlock blk{w.perc_norm_w, w.perc_norm_b, w.perc_q_w, w.perc_q_b, w.perc_k_w, w.perc_k_b,
                             w.perc_v_w,    w.perc_v_b,    w.perc_o_w, w.perc_o_b, h.perceiver_heads};
    ggml_tensor* query = ggml_reshape_2d(ctx, w.perc_query, D, h.perceiver_queries);
    ggml_tensor* pre = blk(ctx, query, prompt);
    ggml_tensor* perc = blk(ctx, pre, pre);
    ggml_tensor* emo = ggml_mul_mat(ctx, w.emotion_w, emo_in);  // [D, 1] = e · W[:, 0]
    ggml_tensor* out = ggml_concat(ctx, ggml_concat(ctx, spk, perc, 1), emo, 1);
    g.output(out);
    g.allocate(backend_);
    ggml_backend_tensor_set(spk_in, cond.speaker_emb.data(), 0, ggml_nbytes(spk_in));
    ggml_backend_tensor_set(toks, cond.prompt_speech_tokens.data(), 0, ggml_nbytes(toks));
    ggml_backend_tensor_set(emo_in, &cond.exaggeration, 0, sizeof(float));
    g.compute(backend_);
    std::vector<float> result(static_cast<size_t>(ggml_nelements(out)));
    ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
    return result;
}

// ---------------------------------------------------------------------------------------------
// Backbone: prefill + decode steps over a KV cache with one stream per CFG row

struct T3::Decoder {
    const T3& t3;
    int64_t streams;
    lm::StackShape shape;
    lm::Sequence sequence;
    std::vector<ggml_fp16_t> mask;
    std::vector<float> logits;  // [streams][speech_vocab]

    // `longest`: the most positions this generation can reach.
    Decoder(const T3& t, int64_t n_streams, int64_t longest, lm::KvType kv_type)
        : t3(t),
          streams(n_streams),
          shape{t.hp_.heads,     t.hp_.kv_heads,       t.hp_.head_dim,
                t.hp_.rms_eps,   t.hp_.rope_theta,     t.w_->rope_factors,
                t.hp_.gpt2 ? lm::StackFlavour::Gpt2 : lm::StackFlavour::Llama, t.backend_.is_cpu()},
          sequence(t.backend_.get(),
                   {t.hp_.layers, t.hp_.kv_heads, t.hp_.head_dim, static_cast<uint32_t>(longest), kWindow,
                    static_cast<uint32_t>(n_streams)},
                   kv_type),
          logits(static_cast<size_t>(n_streams) * t.hp_.speech_vocab) {}

    // Last position of every stream → speech_head → [speech_vocab, streams].
    ggml_tensor* head(ggml_context* ctx, ggml_tensor* out, int64_t n_tokens) const {
        const int64_t D = t3.hp_.hidden;
        return speech_head(t3, ctx, ggml_cont(ctx, ggml_view_2d(ctx, out, D, streams, out->nb[1] * n_tokens, out->nb[1] * (n_tokens - 1))));
    }

    // speech_head of every column of `last` [D, n] → [speech_vocab, n].
    static ggml_tensor* speech_head(const T3& t3, ggml_context* ctx, ggml_tensor* last) {
        const int64_t D = t3.hp_.hidden;
        const Weights& w = *t3.w_;
        if (!w.head_panels) return linear(ctx, last, w.speech_head, w.speech_head_b);
        ggml_tensor* y = packed::mul_mat(ctx, w.head_panels, last);
        const int64_t done = w.head_panels->ne[1], rest = w.speech_head->ne[1] - done;
        if (rest > 0) {
            ggml_tensor* tail = ggml_view_2d(ctx, w.speech_head, D, rest, w.speech_head->nb[1], done * w.speech_head->nb[1]);
            y = ggml_concat(ctx, y, ggml_mul_mat(ctx, tail, last), 0);
        }
        return w.speech_head_b ? ggml_add(ctx, y, w.speech_head_b) : y;
    }

    ggml_tensor* backbone(ggml_context* ctx, ggml_tensor* x, const lm::AttentionInputs& in) const {
        return lm::build_decoder(ctx, shape, t3.w_->layers, t3.w_->output_norm, x, in, sequence.cache(), t3.w_->output_norm_b);
    }

    // The inputs of a prefill graph over n positions: conditioning [D, C], text ids [T], the BOS id,
    // positions and cache rows 0..n-1, and the causal mask.
    struct PrefillInputs {
        ggml_tensor *cond, *ids, *bos, *pos, *rows, *mask;
        int64_t n, n_kv;
    };
    // Starts the sequence over: room for n positions.
    PrefillInputs prefill_inputs(Graph& g, int64_t D, int64_t C, int64_t T, int64_t n) {
        sequence.clear();
        sequence.reserve(static_cast<size_t>(n), "T3");
        const int64_t n_kv = sequence.n_kv(static_cast<size_t>(n));
        return {g.input(GGML_TYPE_F32, {D, C}, "cond_emb"), g.input(GGML_TYPE_I32, {T}, "text_tokens"),
                g.input(GGML_TYPE_I32, {1}, "bos"),         g.input(GGML_TYPE_I32, {n}, "positions"),
                g.input(GGML_TYPE_I64, {n}, "rows"),        g.input(GGML_TYPE_F16, {n_kv, n}, "mask"),
                n,                                          n_kv};
    }

    // Feeds a prefill graph's inputs, runs it, reads the logits (and the input embeddings when asked).
    void run_prefill(Graph& g, const PrefillInputs& in, const std::vector<float>& cond_emb, const std::vector<int32_t>& text,
                     ggml_tensor* embeds, ggml_tensor* lg, std::vector<float>* embeds_out) {
        ggml_backend_tensor_set(in.cond, cond_emb.data(), 0, ggml_nbytes(in.cond));
        ggml_backend_tensor_set(in.ids, text.data(), 0, ggml_nbytes(in.ids));
        ggml_backend_tensor_set(in.bos, &t3.hp_.start_speech, 0, sizeof(int32_t));
        set_positions(in, 0);
        compute_by_op(t3.backend_, g.cgraph(), t3.profile_, "prefill");
        if (embeds_out) {
            embeds_out->resize(static_cast<size_t>(ggml_nelements(embeds)));
            ggml_backend_tensor_get(embeds, embeds_out->data(), 0, ggml_nbytes(embeds));
        }
        read_logits(lg);
        sequence.advance(static_cast<size_t>(in.n));
    }

    // Turbo prefill, first part (one stream): cond_emb + wpe[0 .. C-1], the positions every
    // sentence spoken with this voice starts with (prefilled once, then copied: see prefill_turbo).
    void prefill_turbo_prompt(const std::vector<float>& cond_emb) {
        const T3Hparams& h = t3.hp_;
        const Weights& w = *t3.w_;
        const int64_t D = h.hidden, C = static_cast<int64_t>(cond_emb.size()) / D;
        Graph g;
        ggml_context* ctx = g.ctx();
        const PrefillInputs in = prefill_inputs(g, D, C, 0, C);
        ggml_tensor* x = ggml_add(ctx, in.cond, ggml_get_rows(ctx, w.wpe, in.pos));
        g.output(backbone(ctx, x, {in.pos, in.rows, in.mask, in.n_kv}));
        g.allocate(t3.backend_);
        ggml_backend_tensor_set(in.cond, cond_emb.data(), 0, ggml_nbytes(in.cond));
        set_positions(in, 0);
        compute_by_op(t3.backend_, g.cgraph(), t3.profile_, "prefill");
        sequence.advance(static_cast<size_t>(C));
    }

    // Turbo prefill, second part, after `prompt`'s positions are copied in: [text_emb(text) ;
    // speech_emb(BOS)] + wpe[C ..]. Together the two parts give every position what one graph over
    // [cond_emb ; text_emb(text) ; speech_emb(BOS)] + wpe[0 .. n-1] would (causal attention: the
    // prompt's keys and values do not depend on the text; each column is computed on its own).
    void prefill_turbo(const Decoder& prompt, const std::vector<float>& cond_emb, const std::vector<int32_t>& text,
                       std::vector<float>* embeds_out) {
        const T3Hparams& h = t3.hp_;
        const Weights& w = *t3.w_;
        const int64_t T = static_cast<int64_t>(text.size()), n = T + 1;
        sequence.copy_from(prompt.sequence, "T3");
        const int64_t past = static_cast<int64_t>(sequence.length());
        sequence.reserve(static_cast<size_t>(past + n), "T3");
        const int64_t n_kv = sequence.n_kv(static_cast<size_t>(past + n));
        Graph g;
        ggml_context* ctx = g.ctx();
        const PrefillInputs in{nullptr,
                               g.input(GGML_TYPE_I32, {T}, "text_tokens"),
                               g.input(GGML_TYPE_I32, {1}, "bos"),
                               g.input(GGML_TYPE_I32, {n}, "positions"),
                               g.input(GGML_TYPE_I64, {n}, "rows"),
                               g.input(GGML_TYPE_F16, {n_kv, n}, "mask"),
                               n,
                               n_kv};
        ggml_tensor* embeds = ggml_concat(ctx, ggml_get_rows(ctx, w.text_emb, in.ids), ggml_get_rows(ctx, w.speech_emb, in.bos), 1);
        if (embeds_out) g.output(embeds);
        ggml_tensor* x = ggml_add(ctx, embeds, ggml_get_rows(ctx, w.wpe, in.pos));
        ggml_tensor* lg = head(ctx, backbone(ctx, x, {in.pos, in.rows, in.mask, in.n_kv}), n);
        g.output(lg);
        g.allocate(t3.backend_);
        ggml_backend_tensor_set(in.ids, text.data(), 0, ggml_nbytes(in.ids));
        ggml_backend_tensor_set(in.bos, &h.start_speech, 0, sizeof(int32_t));
        set_positions(in, past);
        compute_by_op(t3.backend_, g.cgraph(), t3.profile_, "prefill");
        if (embeds_out) {  // [cond_emb ; text ; BOS], as one graph would hold them
            std::vector<float> rest(static_cast<size_t>(ggml_nelements(embeds)));
            ggml_backend_tensor_get(embeds, rest.data(), 0, ggml_nbytes(embeds));
            *embeds_out = cond_emb;
            embeds_out->insert(embeds_out->end(), rest.begin(), rest.end());
        }
        read_logits(lg);
        sequence.advance(static_cast<size_t>(n));
    }

    // Positions and cache rows past .. past + n - 1 and the causal mask of a prefill graph.
    void set_positions(const PrefillInputs& in, int64_t past) {
        std::vector<int32_t> p(static_cast<size_t>(in.n));
        std::iota(p.begin(), p.end(), static_cast<int32_t>(past));
        ggml_backend_tensor_set(in.pos, p.data(), 0, ggml_nbytes(in.pos));
        const std::vector<int64_t> r(p.begin(), p.end());
        ggml_backend_tensor_set(in.rows, r.data(), 0, ggml_nbytes(in.rows));
        sequence.mask(mask, in.n);
        ggml_backend_tensor_set(in.mask, mask.data(), 0, ggml_nbytes(in.mask));
    }

    void read_logits(ggml_tensor* t) { read_logits(t, 0); }

    // Prefill: [cond ; text (+pos) ; BOS ; BOS] per stream; stream 1 (uncond) drops the text
    // token embeddings but keeps their positions.
    void prefill(const std::vector<float>& cond_emb, const std::vector<int32_t>& text, std::vector<float>* embeds_out) {
        const T3Hparams& h = t3.hp_;
        const Weights& w = *t3.w_;
        const int64_t D = h.hidden, C = h.cond_len(), T = static_cast<int64_t>(text.size());
        const int64_t n = C + T + 2;
        Graph g;
        ggml_context* ctx = g.ctx();
        const PrefillInputs in = prefill_inputs(g, D, C, T, n);
        ggml_tensor *cond = in.cond, *ids = in.ids, *bos_id = in.bos, *pos = in.pos;

        ggml_tensor* text_pos = ggml_view_2d(ctx, w.text_pos, D, T, w.text_pos->nb[1], 0);
        ggml_tensor* bos = ggml_add(ctx, ggml_get_rows(ctx, w.speech_emb, bos_id),
                                    ggml_view_2d(ctx, w.speech_pos, D, 1, w.speech_pos->nb[1], 0));
        const auto row = [&](ggml_tensor* te) {
            return ggml_concat(ctx, ggml_concat(ctx, ggml_concat(ctx, cond, te, 1), bos, 1), bos, 1);
        };
        ggml_tensor* x = row(ggml_add(ctx, ggml_get_rows(ctx, w.text_emb, ids), text_pos));
        if (streams == 2) x = ggml_concat(ctx, x, row(ggml_cont(ctx, text_pos)), 1);  // [D, 2n], stream-major
        if (embeds_out) g.output(x);
        ggml_tensor* lg = head(ctx, backbone(ctx, x, {pos, in.rows, in.mask, in.n_kv}), n);
        g.output(lg);
        g.allocate(t3.backend_);

        run_prefill(g, in, cond_emb, text, x, lg, embeds_out);
    }

    // Reads this sequence's [speech_vocab, streams] logits from columns first .. of `t`.
    void read_logits(ggml_tensor* t, int64_t first) {
        ggml_backend_tensor_get(t, logits.data(), static_cast<size_t>(first) * t->nb[1], logits.size() * sizeof(float));
    }
};

// ---------------------------------------------------------------------------------------------
// The inference loop

void T3::check_inputs(const std::vector<int32_t>& text, const T3Conditioning&, const T3Options& o) const {
    const T3Hparams& h = hp_;
    if (text.size() < 2 || text.size() > h.text_positions) {
        throw Error(ErrorKind::InvalidArgument, "T3 text has " + std::to_string(text.size()) +
                                                    " tokens (with start/stop), expected 2.." + std::to_string(h.text_positions));
    }
    for (int32_t t : text) {
        if (t < 0 || static_cast<uint32_t>(t) >= h.text_vocab) {
            throw Error(ErrorKind::InvalidArgument, "text token " + std::to_string(t) + " is outside 0.." +
                                                        std::to_string(h.text_vocab - 1));
        }
    }
    if (!(o.cfg_weight >= 0.0f) || !std::isfinite(o.cfg_weight)) {
        throw Error(ErrorKind::InvalidArgument, "cfg_weight must be a finite value >= 0, got " + std::to_string(o.cfg_weight));
    }
    if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature)) {
        throw Error(ErrorKind::InvalidArgument, "temperature must be a finite value > 0, got " + std::to_string(o.temperature));
    }
    if (!(o.repetition_penalty > 0.0f) || !std::isfinite(o.repetition_penalty)) {
        throw Error(ErrorKind::InvalidArgument, "repetition_penalty must be a finite value > 0, got " +
                                                    std::to_string(o.repetition_penalty));
    }
    lm::SamplingParams{true, o.temperature, 0, o.top_p, o.min_p}.validate("T3");
    // Decode step i uses speech position i + 1.
    if (o.max_new_tokens == 0 || o.max_new_tokens > h.speech_positions) {
        throw Error(ErrorKind::InvalidArgument, "max_new_tokens must be in 1.." + std::to_string(h.speech_positions) +
                                                    ", got " + std::to_string(o.max_new_tokens));
    }
    if (o.min_new_tokens > o.max_new_tokens) {
        throw Error(ErrorKind::InvalidArgument, "min_new_tokens (" + std::to_string(o.min_new_tokens) +
                                                    ") exceeds max_new_tokens (" + std::to_string(o.max_new_tokens) + ")");
    }
}

namespace {

double cpu_ms_since(std::clock_t c) { return 1000.0 * static_cast<double>(std::clock() - c) / CLOCKS_PER_SEC; }

// Wall and CPU time since it was made.
struct Span {
    Clock::time_point wall = Clock::now();
    std::clock_t cpu = std::clock();
    double ms() const { return ms_since(wall); }
    double cpu_ms() const { return cpu_ms_since(cpu); }
};

// A job's T3Timings: conditioning + prefill (run alone), then its share of the token loop: its own
// sampling plus 1/B of each step it shared with B - 1 others, so that the jobs of a batch add up to
// the batch's time (one job alone: the loop's wall time).
class PhaseClock {
public:
    explicit PhaseClock(T3Timings* timings) : timings_(timings) {}
    void prefill_done() {
        if (timings_) {
            timings_->prefill_ms = start_.ms();
            timings_->prefill_cpu_ms = start_.cpu_ms();
        }
    }
    void add_decode(const Span& span, size_t share) {
        decode_ms_ += span.ms() / static_cast<double>(share);
        decode_cpu_ms_ += span.cpu_ms() / static_cast<double>(share);
    }
    void decode_done(size_t tokens) {
        if (!timings_) return;
        timings_->decode_ms = decode_ms_;
        timings_->decode_cpu_ms = decode_cpu_ms_;
        timings_->tokens = static_cast<uint32_t>(tokens);
    }

private:
    T3Timings* timings_;
    Span start_;
    double decode_ms_ = 0, decode_cpu_ms_ = 0;
};

}  // namespace

void T3::check_turbo_inputs(const std::vector<int32_t>& text, const T3Conditioning& cond, const T3Options& o) const {
    const T3Hparams& h = hp_;
    if (text.empty()) throw Error(ErrorKind::InvalidArgument, "T3 text has no tokens");
    for (int32_t t : text) {
        if (t < 0 || static_cast<uint32_t>(t) >= h.text_vocab) {
            throw Error(ErrorKind::InvalidArgument, "text token " + std::to_string(t) + " is outside 0.." +
                                                        std::to_string(h.text_vocab - 1));
        }
    }
    if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature)) {
        throw Error(ErrorKind::InvalidArgument, "temperature must be a finite value > 0, got " + std::to_string(o.temperature));
    }
    if (!(o.repetition_penalty > 0.0f) || !std::isfinite(o.repetition_penalty)) {
        throw Error(ErrorKind::InvalidArgument, "repetition_penalty must be a finite value > 0, got " +
                                                    std::to_string(o.repetition_penalty));
    }
    lm::SamplingParams{true, o.temperature, o.top_k, o.top_p, 0.0f}.validate("T3");
    // The whole stream (prefill, first token, max_new_tokens steps) takes wpe positions.
    const int64_t prefill_len = 1 + static_cast<int64_t>(cond.prompt_speech_tokens.size()) + static_cast<int64_t>(text.size()) + 1;
    if (o.max_new_tokens == 0 || prefill_len + o.max_new_tokens > h.speech_positions) {
        throw Error(ErrorKind::InvalidArgument, "max_new_tokens must be in 1.." +
                                                    std::to_string(std::max<int64_t>(0, h.speech_positions - prefill_len)) +
                                                    " (the GPT-2 positions left after a prefill of " +
                                                    std::to_string(prefill_len) + "), got " + std::to_string(o.max_new_tokens));
    }
    if (o.min_new_tokens > o.max_new_tokens + 1) {
        throw Error(ErrorKind::InvalidArgument, "min_new_tokens (" + std::to_string(o.min_new_tokens) +
                                                    ") exceeds the max_new_tokens + 1 (" + std::to_string(o.max_new_tokens + 1) +
                                                    ") tokens Turbo predicts");
    }
}

// One job of generate_batch: its conditioning, prefill and sequence, its sampler and the official
// token loop, one token per pick(); the decode steps between picks are the Stepper's.
struct T3::Generation {
    const T3& t3;
    const T3Job& job;
    const T3Options& o;
    size_t index;
    PhaseClock phases;
    std::unique_ptr<Decoder> dec;
    lm::Sampler sampler;
    lm::SamplerChain warp;
    std::vector<int32_t> history, predicted;
    std::vector<float> scores;
    uint32_t i = 0;            // the number of the token pick() chooses next
    int32_t speech_index = 0;  // the next step's speech position (Llama T3)

    // Turbo: the prefilled conditioning of each voice (and KV type) of a batch, shared by its jobs.
    using Prompts = std::map<std::pair<const T3Conditioning*, lm::KvType>, std::unique_ptr<Decoder>>;

    Generation(const T3& t, const T3Job& j, size_t n, Prompts& prompts)
        : t3(t), job(j), o(j.options), index(n), phases(j.timings), sampler(j.options.seed), scores(t.hp_.speech_vocab) {
        const T3Hparams& h = t3.hp_;
        const std::vector<float> cond_emb = t3.conditioning(*job.cond);
        const std::vector<int32_t>& text = *job.text;
        std::vector<float> prefill_embeds;
        std::vector<float>* embeds = job.capture ? &prefill_embeds : nullptr;
        if (job.capture) job.capture->put("cond_emb", {static_cast<int64_t>(cond_emb.size()) / h.hidden, h.hidden}, cond_emb);
        const int64_t T = static_cast<int64_t>(text.size());
        if (h.gpt2) {
            const int64_t prefill_len = 1 + static_cast<int64_t>(job.cond->prompt_speech_tokens.size()) + T + 1;
            std::unique_ptr<Decoder>& prompt = prompts[{job.cond, o.kv_cache}];
            if (!prompt) {
                prompt = std::make_unique<Decoder>(t3, 1, static_cast<int64_t>(cond_emb.size()) / h.hidden, o.kv_cache);
                prompt->prefill_turbo_prompt(cond_emb);
            }
            dec = std::make_unique<Decoder>(t3, 1, prefill_len + o.max_new_tokens + 2, o.kv_cache);
            dec->prefill_turbo(*prompt, cond_emb, text, embeds);
            // inference_turbo: temperature → top-k → top-p, then the repetition penalty.
            warp.temperature(o.temperature).top_k(o.top_k).top_p(o.top_p);
        } else {
            const int64_t streams = o.cfg_weight > 0.0f ? 2 : 1;
            dec = std::make_unique<Decoder>(t3, streams, h.cond_len() + T + 2 + o.max_new_tokens + 1, o.kv_cache);
            dec->prefill(cond_emb, text, embeds);
            // T3.inference: repetition penalty, then temperature → min-p → top-p.
            warp.temperature(o.temperature).min_p(o.min_p).top_p(o.top_p);
            history = {h.start_speech};
        }
        if (job.capture) {
            const int64_t rows = dec->streams, len = static_cast<int64_t>(prefill_embeds.size()) / (rows * h.hidden);
            job.capture->put("prefill_embeds", {rows, len, h.hidden}, std::move(prefill_embeds));
        }
        phases.prefill_done();
    }

    // Chooses the next token from the current logits; false when the sequence has ended (otherwise
    // a step for predicted.back() follows).
    bool pick() {
        const Span span;
        const bool more = t3.hp_.gpt2 ? pick_turbo() : pick_llama();
        phases.add_decode(span, 1);
        return more;
    }

    std::vector<int32_t> finish() {
        phases.decode_done(predicted.size());
        dec.reset();  // the KV cache's memory goes back now, not when the batch ends
        return std::move(predicted);
    }

private:
    bool pick_llama() {
        throw_if_cancelled(o.cancel);
        const T3Hparams& h = t3.hp_;
        const HostTimer timer(t3.profile_, "host: guidance + sampling");
        const size_t V = h.speech_vocab;
        const float* c = dec->logits.data();
        const float* u = dec->streams == 2 ? c + V : c;
        for (size_t j = 0; j < V; ++j) scores[j] = c[j] + o.cfg_weight * (c[j] - u[j]);
        if (i < o.min_new_tokens) std::fill(scores.begin() + h.start_speech, scores.end(), -INFINITY);
        lm::apply_repetition_penalty(scores, history, o.repetition_penalty);
        // The official loop always runs the warpers; greedy takes the argmax of that distribution
        // instead of a draw.
        warp.apply(scores);
        const int32_t next = o.greedy ? lm::argmax(scores) : sampler.draw(scores);
        if (job.capture && i < kCapturedSteps) {
            job.capture->append_row("logits_cond", std::vector<float>(c, c + V));
            job.capture->append_row("logits_uncond", std::vector<float>(u, u + V));
            job.capture->append_row("logits_processed", scores);
        }
        predicted.push_back(next);
        history.push_back(next);
        ++i;
        speech_index = static_cast<int32_t>(i);  // decode step i reads speech position i
        return next != h.stop_speech && i < o.max_new_tokens;
    }

    // inference_turbo: processors temperature → top-k → top-p → repetition penalty (history: [BOS]
    // for the first token, then the generated tokens only); the first token is sampled from the
    // prefill and never checked for the stop token; each of up to max_gen_len steps stops when every
    // processed score is -inf or after sampling the stop token.
    bool pick_turbo() {
        throw_if_cancelled(o.cancel);
        const T3Hparams& h = t3.hp_;
        const HostTimer timer(t3.profile_, "host: sampling");
        scores.assign(dec->logits.begin(), dec->logits.begin() + static_cast<std::ptrdiff_t>(h.speech_vocab));
        const bool captured = job.capture && i < kCapturedSteps;
        if (captured) job.capture->append_row("logits_cond", scores);
        // Fixed-length runs (T3Options::min_new_tokens): speech ids only until then.
        if (i < o.min_new_tokens) std::fill(scores.begin() + h.start_speech, scores.end(), -INFINITY);
        warp.apply(scores);
        lm::apply_repetition_penalty(scores, i == 0 ? std::vector<int32_t>{h.start_speech} : predicted, o.repetition_penalty);
        if (captured) job.capture->append_row("logits_processed", scores);
        if (i > 0 && std::all_of(scores.begin(), scores.end(), [](float v) { return v == -INFINITY; })) return false;
        const int32_t next = o.greedy ? lm::argmax(scores) : sampler.draw(scores);
        predicted.push_back(next);
        if (i > 0 && next == h.stop_speech) return false;
        ++i;
        return i <= o.max_new_tokens;
    }
};

// Steps generations together, one position each, through one graph: every job's token embedding
// (with its speech or GPT-2 position), repeated for each of its streams, then the decoder over one
// slice per job (its cache, position, window) and the speech head over all their columns. The
// graph is kept until the list of caches or a window changes.
struct T3::Stepper {
    struct Slice {
        ggml_tensor *row, *mask;
    };
    struct StepGraph {
        explicit StepGraph(size_t nodes) : graph(nodes) {}
        Graph graph;
        std::vector<std::pair<uint64_t, int64_t>> key;  // (cache_id, n_kv) of every job, in order
        // positions: each job's length (RoPE, GPT-2's wpe); speech_positions: the Llama T3's speech_pos_emb rows
        ggml_tensor *tokens = nullptr, *positions = nullptr, *speech_positions = nullptr, *logits = nullptr;
        std::vector<Slice> slices;
        std::vector<int64_t> first;  // each job's first column
    };

    explicit Stepper(const T3& t) : t3(t) {}

    const T3& t3;
    std::unique_ptr<StepGraph> graph;
    std::vector<int32_t> tokens, positions, speech_positions;

    void step(const std::vector<Generation*>& gens) {
        const T3Hparams& h = t3.hp_;
        const int64_t B = static_cast<int64_t>(gens.size());
        std::vector<std::pair<uint64_t, int64_t>> key;
        for (Generation* g : gens) {
            lm::Sequence& seq = g->dec->sequence;
            seq.reserve(seq.length() + 1, "T3");
            key.emplace_back(seq.cache_id(), seq.n_kv(seq.length() + 1));
        }
        if (!graph || graph->key != key) build(gens, key);
        StepGraph& s = *graph;
        tokens.clear();
        positions.clear();
        speech_positions.clear();
        for (Generation* g : gens) {
            tokens.push_back(g->predicted.back());
            positions.push_back(static_cast<int32_t>(g->dec->sequence.length()));
            speech_positions.push_back(g->speech_index);
        }
        ggml_backend_tensor_set(s.tokens, tokens.data(), 0, ggml_nbytes(s.tokens));
        ggml_backend_tensor_set(s.positions, positions.data(), 0, ggml_nbytes(s.positions));
        if (!h.gpt2) ggml_backend_tensor_set(s.speech_positions, speech_positions.data(), 0, ggml_nbytes(s.speech_positions));
        for (int64_t b = 0; b < B; ++b) {
            Decoder& d = *gens[static_cast<size_t>(b)]->dec;
            const Slice& in = s.slices[static_cast<size_t>(b)];
            const int64_t row = static_cast<int64_t>(d.sequence.length());
            d.sequence.mask(d.mask, 1);
            ggml_backend_tensor_set(in.row, &row, 0, sizeof(row));
            ggml_backend_tensor_set(in.mask, d.mask.data(), 0, ggml_nbytes(in.mask));
        }
        compute_by_op(t3.backend_, s.graph.cgraph(), t3.profile_, "step");
        const HostTimer timer(t3.profile_, "host: logits read-back");
        for (int64_t b = 0; b < B; ++b) {
            Decoder& d = *gens[static_cast<size_t>(b)]->dec;
            d.read_logits(s.logits, s.first[static_cast<size_t>(b)]);
            d.sequence.advance(1);
        }
    }

private:
    void build(const std::vector<Generation*>& gens, const std::vector<std::pair<uint64_t, int64_t>>& key) {
        const T3Hparams& h = t3.hp_;
        const Weights& w = *t3.w_;
        const int64_t B = static_cast<int64_t>(gens.size()), D = h.hidden;
        graph.reset();
        // Nodes: per layer ~30 shared and ~16 per job (its attention), plus the embeddings and head.
        auto s = std::make_unique<StepGraph>(1024 + h.layers * static_cast<size_t>(32 + 24 * B));
        ggml_context* ctx = s->graph.ctx();
        s->key = key;
        s->tokens = s->graph.input(GGML_TYPE_I32, {B}, "tokens");
        s->positions = s->graph.input(GGML_TYPE_I32, {B}, "positions");
        ggml_tensor* added = nullptr;
        if (h.gpt2) {
            added = ggml_get_rows(ctx, w.wpe, s->positions);
        } else {
            s->speech_positions = s->graph.input(GGML_TYPE_I32, {B}, "speech_positions");
            added = ggml_get_rows(ctx, w.speech_pos, s->speech_positions);
        }
        ggml_tensor* e = ggml_add(ctx, ggml_get_rows(ctx, w.speech_emb, s->tokens), added);
        ggml_tensor* x = nullptr;
        std::vector<lm::SequenceSlice> slices;
        int64_t columns = 0;
        for (int64_t b = 0; b < B; ++b) {
            const Decoder& d = *gens[static_cast<size_t>(b)]->dec;
            const int64_t n_kv = key[static_cast<size_t>(b)].second;
            const Slice in{s->graph.input(GGML_TYPE_I64, {1}, "row"), s->graph.input(GGML_TYPE_F16, {n_kv, 1}, "mask")};
            s->slices.push_back(in);
            ggml_tensor* pos = ggml_view_1d(ctx, s->positions, 1, static_cast<size_t>(b) * sizeof(int32_t));
            slices.push_back({&d.sequence.cache(), {pos, in.row, in.mask, n_kv}});
            // Both CFG rows take the same input; they differ in their caches.
            ggml_tensor* col = B == 1 ? e : ggml_view_2d(ctx, e, D, 1, e->nb[1], static_cast<size_t>(b) * e->nb[1]);
            for (int64_t r = 0; r < d.streams; ++r) x = x ? ggml_concat(ctx, x, col, 1) : col;
            s->first.push_back(columns);
            columns += d.streams;
        }
        const Decoder& d0 = *gens[0]->dec;
        ggml_tensor* out = lm::build_decoder(ctx, d0.shape, w.layers, w.output_norm, x, slices, w.output_norm_b);
        s->logits = Decoder::speech_head(t3, ctx, out);
        s->graph.output(s->logits);
        s->graph.allocate(t3.backend_);
        graph = std::move(s);
    }
};

void T3::generate_batch(const std::vector<T3Job>& jobs, size_t parallel, const T3JobDone& done) const {
    for (size_t j = 0; j < jobs.size(); ++j) {
        const T3Job& job = jobs[j];
        if (!job.text || !job.cond) throw Error(ErrorKind::Internal, "T3::generate_batch: a job without text or conditioning");
        try {
            if (hp_.gpt2) {
                check_turbo_inputs(*job.text, *job.cond, job.options);
            } else {
                check_inputs(*job.text, *job.cond, job.options);
            }
            check_conditioning(hp_, *job.cond);
        } catch (const Error& e) {
            if (jobs.size() == 1) throw;
            throw Error(e.kind(), "T3 job " + std::to_string(j + 1) + " of " + std::to_string(jobs.size()) + ": " + e.what());
        }
    }
    parallel = std::max<size_t>(1, parallel);
    Stepper stepper(*this);
    Generation::Prompts prompts;
    std::vector<std::unique_ptr<Generation>> active, running;
    std::vector<Generation*> batch;
    size_t next = 0;
    while (next < jobs.size() || !active.empty()) {
        // Free places go to the next jobs in order; a job that ends at its first token leaves at once.
        while (active.size() < parallel && next < jobs.size()) {
            auto g = std::make_unique<Generation>(*this, jobs[next], next, prompts);
            ++next;
            if (g->pick()) {
                active.push_back(std::move(g));
            } else {
                done(g->index, g->finish());
            }
        }
        if (active.empty()) continue;
        batch.clear();
        for (const auto& g : active) {
            throw_if_cancelled(g->o.cancel);
            batch.push_back(g.get());
        }
        const Span span;
        stepper.step(batch);
        for (Generation* g : batch) g->phases.add_decode(span, batch.size());
        running.clear();
        for (auto& g : active) {
            if (g->pick()) {
                running.push_back(std::move(g));
            } else {
                done(g->index, g->finish());
            }
        }
        std::swap(active, running);
    }
}

std::vector<int32_t> T3::generate(const std::vector<int32_t>& text, const T3Conditioning& cond, const T3Options& o,
                                  Capture* capture, T3Timings* timings) const {
    std::vector<int32_t> predicted;
    generate_batch({T3Job{&text, &cond, o, capture, timings}}, 1,
                   [&](size_t, std::vector<int32_t>&& p) { predicted = std::move(p); });
    return predicted;
}

const GgufTensorInfo& builtin_voice_tensor(const GgufFile& file, const std::string& key, ggml_type type) {
    const std::string name = chatterbox_gguf_name(ChatterboxFile::Conds, key);
    if (name.empty() || !file.has_tensor(name)) {
        throw Error(ErrorKind::NotFound, "'" + file.path() + "' has no built-in voice (tensor for conds.pt '" + key + "')");
    }
    const GgufTensorInfo& t = file.tensor(name);
    if (t.type != type) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + name + "' is " + ggml_type_name(t.type) +
                                           ", expected " + ggml_type_name(type));
    }
    return t;
}

T3Conditioning builtin_conditioning(const GgufFile& file) {
    const auto tensor = [&](const std::string& key, ggml_type type) -> const GgufTensorInfo& {
        return builtin_voice_tensor(file, key, type);
    };
    const auto& spk = tensor("t3.speaker_emb", GGML_TYPE_F32);
    const auto& toks = tensor("t3.cond_prompt_speech_tokens", GGML_TYPE_I32);
    const auto& emo = tensor("t3.emotion_adv", GGML_TYPE_F32);
    if (emo.nbytes != sizeof(float)) {
        throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + emo.name + "' has shape " + shape_to_string(emo.shape) +
                                           ", expected one value");
    }
    T3Conditioning c;
    const auto* f = reinterpret_cast<const float*>(spk.data);
    c.speaker_emb.assign(f, f + spk.nbytes / sizeof(float));
    const auto* t = reinterpret_cast<const int32_t*>(toks.data);
    c.prompt_speech_tokens.assign(t, t + toks.nbytes / sizeof(int32_t));
    c.exaggeration = *reinterpret_cast<const float*>(emo.data);
    return c;
}

std::vector<int32_t> drop_invalid_tokens(const std::vector<int32_t>& tokens, int32_t start, int32_t stop) {
    auto first = std::find(tokens.begin(), tokens.end(), start);
    auto begin = first == tokens.end() ? tokens.begin() : first + 1;
    auto end = std::find(tokens.begin(), tokens.end(), stop);
    if (end < begin) return {};
    return std::vector<int32_t>(begin, end);
}

std::vector<int32_t> T3::postprocess(const std::vector<int32_t>& predicted) const {
    if (hp_.gpt2) {
        // inference_turbo drops a trailing stop token; tts_turbo keeps ids < 6561 and appends 3 × S3GEN_SIL.
        std::vector<int32_t> out;
        for (int32_t t : predicted) {
            if (t >= 0 && t < hp_.start_speech) out.push_back(t);
        }
        out.insert(out.end(), 3, hp_.silence_token);
        return out;
    }
    std::vector<int32_t> out = drop_invalid_tokens(predicted, hp_.start_speech, hp_.stop_speech);
    if (hp_.english) out.erase(std::remove_if(out.begin(), out.end(), [&](int32_t t) { return t >= hp_.start_speech; }), out.end());
    return out;
}

}  // namespace talkbox::chatterbox
