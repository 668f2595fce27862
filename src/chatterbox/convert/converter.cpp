// `talkbox convert` for Chatterbox folders: read the files the official loader reads, map every
// key through the one name table (chatterbox_names), infer the hyper-parameters from the tensor
// shapes (tiny_hparams.json or the official constants only where shapes cannot tell), and write
// one GGUF with general.architecture = "chatterbox".
#include "chatterbox/convert/converter.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "audio/mel.h"
#include "chatterbox/model_info.h"
#include "chatterbox/languages.h"
#include "chatterbox/text.h"
#include "chatterbox/checkpoint_names.h"
#include "convert/gguf_writer.h"
#include "convert/safetensors.h"
#include "convert/tokenizer_meta.h"
#include "convert/torch_checkpoint.h"
#include "convert/weight_type.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;

namespace talkbox {

namespace {

struct Source {
    ChatterboxFile file;
    std::string path;
    const SafetensorsTensor* tensor;
};

// The opened checkpoint files and every tensor they hold, keyed by GGUF name.
class Sources {
public:
    void add(ChatterboxFile kind, const std::string& path) {
        const std::vector<SafetensorsTensor>* tensors;
        if (path.size() > 3 && path.compare(path.size() - 3, 3, ".pt") == 0) {
            pt_.push_back(std::make_unique<TorchCheckpoint>(path));
            tensors = &pt_.back()->tensors();
        } else {
            st_.push_back(std::make_unique<SafetensorsFile>(path));
            tensors = &st_.back()->tensors();
        }
        size_t count = 0;
        for (const auto& t : *tensors) {
            if (chatterbox_key_dropped(kind, t.name)) continue;
            const std::string name = chatterbox_gguf_name(kind, t.name);
            if (name.empty()) {
                throw Error(ErrorKind::Format, path + ": unexpected tensor '" + t.name + "' (not part of a Chatterbox " +
                                                   chatterbox_file_name(kind) + " checkpoint)");
            }
            if (!by_name_.emplace(name, order_.size()).second) {
                throw Error(ErrorKind::Format, path + ": tensor '" + t.name + "' maps to '" + name + "', which another key already took");
            }
            order_.push_back({kind, path, &t});
            ++count;
        }
        if (count == 0) throw Error(ErrorKind::Format, path + ": holds no tensors");
    }

    const std::vector<Source>& order() const { return order_; }
    const Source* find(const std::string& gguf_name) const {
        const auto it = by_name_.find(gguf_name);
        return it == by_name_.end() ? nullptr : &order_[it->second];
    }
    // Torch-order shape of a tensor that must exist (for hyper-parameter inference).
    const std::vector<int64_t>& shape(const std::string& gguf_name, const std::string& what) const {
        const Source* s = find(gguf_name);
        if (!s) throw Error(ErrorKind::Format, "the checkpoint has no tensor for " + what + " (GGUF '" + gguf_name + "')");
        return s->tensor->shape;
    }
    int64_t dim(const std::string& gguf_name, size_t axis, const std::string& what) const {
        const auto& sh = shape(gguf_name, what);
        if (axis >= sh.size()) {
            const Source* s = find(gguf_name);
            throw Error(ErrorKind::Format, s->path + ": tensor '" + s->tensor->name + "' has shape " + shape_to_string(sh) +
                                               ", expected at least " + std::to_string(axis + 1) + " dimensions");
        }
        return sh[axis];
    }
    // Counts i = 0, 1, ... while `pattern` with {i} replaced exists.
    uint32_t count(const std::string& pattern) const {
        uint32_t n = 0;
        for (;; ++n) {
            std::string name = pattern;
            name.replace(name.find("{i}"), 3, std::to_string(n));
            if (!find(name)) return n;
        }
    }

private:
    std::vector<std::unique_ptr<SafetensorsFile>> st_;
    std::vector<std::unique_ptr<TorchCheckpoint>> pt_;
    std::vector<Source> order_;
    std::map<std::string, size_t> by_name_;
};

std::string read_text_file(const std::string& path, const std::string& what) {
    if (!fs::exists(path)) throw Error(ErrorKind::NotFound, "Chatterbox folder is missing " + what + ": '" + path + "' does not exist");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::Io, "cannot read '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Values the official code hard-codes and shapes cannot tell (head counts). A folder may carry
// tiny_hparams.json (the test fixture does; the released folders do not); otherwise the official
// constants apply.
class HeadCounts {
public:
    HeadCounts(const std::string& dir, const std::string& t3_stem) {
        const std::string path = dir + "/tiny_hparams.json";
        if (!fs::exists(path)) return;
        path_ = path;
        json_ = read_json_file(path);
        t3_stem_ = t3_stem;
    }
    bool from_file() const { return !path_.empty(); }
    const std::string& path() const { return path_; }

    uint32_t get(const std::vector<std::string>& json_path, uint32_t official) const {
        if (path_.empty()) return official;
        const nlohmann::json* node = &json_;
        std::string where = path_;
        for (const auto& k : json_path) {
            const std::string key = k == "$t3" ? t3_stem_ : k;
            node = &json_member(*node, key, where);
            where += ": " + key;
        }
        if (!node->is_number_unsigned() || node->get<uint64_t>() == 0 || node->get<uint64_t>() > 1u << 20) {
            throw Error(ErrorKind::Format, where + " must be a positive integer");
        }
        return node->get<uint32_t>();
    }

private:
    std::string path_, t3_stem_;
    nlohmann::json json_;
};

void set_u32(gguf_context* g, const std::string& key, int64_t v) {
    if (v < 0 || v > 0xFFFFFFFFLL) throw Error(ErrorKind::Format, "hyper-parameter " + key + " = " + std::to_string(v) + " is out of range");
    gguf_set_val_u32(g, key.c_str(), static_cast<uint32_t>(v));
}
// Arrays are i32, like every array key of talkbox files (GgufMeta::get_i32_array).
void set_i32_array(gguf_context* g, const std::string& key, const std::vector<uint32_t>& v) {
    std::vector<int32_t> w;
    for (uint32_t x : v) {
        if (x > INT32_MAX) throw Error(ErrorKind::Format, "hyper-parameter " + key + " holds " + std::to_string(x) + ", out of range");
        w.push_back(static_cast<int32_t>(x));
    }
    gguf_set_arr_data(g, key.c_str(), GGUF_TYPE_INT32, w.data(), w.size());
}
void set_str_array(gguf_context* g, const std::string& key, const std::vector<std::string>& v) {
    std::vector<const char*> p;
    for (const auto& s : v) p.push_back(s.c_str());
    gguf_set_arr_str(g, key.c_str(), p.data(), p.size());
}

void require_dim(bool ok, const std::string& what) {
    if (!ok) throw Error(ErrorKind::Format, "inconsistent Chatterbox checkpoint: " + what);
}

// Turbo / Nano (tts_turbo.py): GPT-2 backbone, learned wpe positions, no perceiver or emotion.
// GPT2_medium / GPT2_small have heads of 64 (16 × 64, 12 × 64).
void write_t3_gpt2_hparams(gguf_context* g, const Sources& s, const HeadCounts& heads) {
    const std::string p = "chatterbox.t3.";
    const int64_t d = s.dim("t3.text_embd.weight", 1, "the T3 text embedding");
    const uint32_t layers = s.count("t3.blk.{i}.attn_qkv.weight");
    require_dim(layers > 0, "T3 has no GPT-2 blocks (tfmr.h.0.*)");
    require_dim(d % 64 == 0 || heads.from_file(), "T3 width " + std::to_string(d) + " is not a multiple of the head size 64");
    const uint32_t n_head = heads.get({"$t3", "gpt2", "n_head"}, static_cast<uint32_t>(std::max<int64_t>(1, d / 64)));
    require_dim(d % n_head == 0, "T3 width " + std::to_string(d) + " is not a multiple of " + std::to_string(n_head) + " heads");
    // Conv1D shapes are [in, out].
    require_dim(s.dim("t3.blk.0.attn_qkv.weight", 0, "the T3 attention") == d &&
                    s.dim("t3.blk.0.attn_qkv.weight", 1, "the T3 attention") == 3 * d,
                "tfmr.h.0.attn.c_attn.weight is not [hidden, 3·hidden]");
    require_dim(s.dim("t3.tfmr_pos_embd.weight", 1, "the GPT-2 positions") == d, "tfmr.wpe width differs from the T3 width");
    gguf_set_val_str(g, (p + "backbone").c_str(), "gpt2");
    set_u32(g, p + "embedding_length", d);
    set_u32(g, p + "block_count", layers);
    set_u32(g, p + "head_count", n_head);
    set_u32(g, p + "head_count_kv", n_head);
    set_u32(g, p + "head_dim", d / n_head);
    set_u32(g, p + "feed_forward_length", s.dim("t3.blk.0.ffn_up.weight", 1, "the T3 MLP"));
    gguf_set_val_f32(g, (p + "layer_norm_eps").c_str(), 1e-5f);
    set_u32(g, p + "context_length", s.dim("t3.tfmr_pos_embd.weight", 0, "the GPT-2 positions"));
    set_u32(g, p + "text_vocab_size", s.dim("t3.text_embd.weight", 0, "the T3 text embedding"));
    set_u32(g, p + "speech_vocab_size", s.dim("t3.speech_embd.weight", 0, "the T3 speech embedding"));
    set_u32(g, p + "start_speech_token", 6561);
    set_u32(g, p + "stop_speech_token", 6562);
    set_u32(g, p + "speech_cond_prompt_length", 375);
    set_u32(g, p + "speaker_embed_size", s.dim("t3.cond.spkr_enc.weight", 1, "the T3 speaker projection"));
    require_dim(s.find("t3.speech_head.bias") != nullptr, "the GPT-2 T3 has no speech_head.bias");
    gguf_set_val_bool(g, (p + "perceiver").c_str(), false);
    gguf_set_val_bool(g, (p + "emotion_adv").c_str(), false);
}

void write_t3_hparams(gguf_context* g, const Sources& s, const HeadCounts& heads) {
    const std::string p = "chatterbox.t3.";
    gguf_set_val_str(g, (p + "backbone").c_str(), "llama");
    const int64_t d = s.dim("t3.text_embd.weight", 1, "the T3 text embedding");
    const uint32_t layers = s.count("t3.blk.{i}.attn_q.weight");
    require_dim(layers > 0, "T3 has no transformer layers (tfmr.layers.0.*)");
    const uint32_t n_head = heads.get({"$t3", "llama", "num_attention_heads"}, 16);
    const uint32_t n_head_kv = heads.get({"$t3", "llama", "num_key_value_heads"}, 16);
    require_dim(d % n_head == 0, "T3 width " + std::to_string(d) + " is not a multiple of " + std::to_string(n_head) + " heads");
    const int64_t head_dim = d / n_head;
    require_dim(s.dim("t3.blk.0.attn_k.weight", 0, "T3 keys") == head_dim * n_head_kv,
                "T3 key projection rows differ from kv heads × head_dim");
    set_u32(g, p + "embedding_length", d);
    set_u32(g, p + "block_count", layers);
    set_u32(g, p + "head_count", n_head);
    set_u32(g, p + "head_count_kv", n_head_kv);
    set_u32(g, p + "head_dim", head_dim);
    set_u32(g, p + "feed_forward_length", s.dim("t3.blk.0.ffn_gate.weight", 0, "the T3 MLP"));
    gguf_set_val_f32(g, (p + "rms_norm_eps").c_str(), 1e-5f);
    gguf_set_val_f32(g, (p + "rope.freq_base").c_str(), 500000.0f);
    gguf_set_val_str(g, (p + "rope.scaling.type").c_str(), "llama3");
    gguf_set_val_f32(g, (p + "rope.scaling.factor").c_str(), 8.0f);
    gguf_set_val_f32(g, (p + "rope.scaling.low_freq_factor").c_str(), 1.0f);
    gguf_set_val_f32(g, (p + "rope.scaling.high_freq_factor").c_str(), 4.0f);
    set_u32(g, p + "rope.scaling.original_context_length", 8192);
    set_u32(g, p + "text_vocab_size", s.dim("t3.text_embd.weight", 0, "the T3 text embedding"));
    set_u32(g, p + "speech_vocab_size", s.dim("t3.speech_embd.weight", 0, "the T3 speech embedding"));
    set_u32(g, p + "start_text_token", 255);
    set_u32(g, p + "stop_text_token", 0);
    set_u32(g, p + "start_speech_token", 6561);
    set_u32(g, p + "stop_speech_token", 6562);
    // Learned position tables: text max_text_tokens + 2 rows, speech max_speech_tokens + 4 rows.
    const int64_t text_pos = s.dim("t3.text_pos_embd.weight", 0, "the T3 text positions");
    const int64_t speech_pos = s.dim("t3.speech_pos_embd.weight", 0, "the T3 speech positions");
    require_dim(text_pos > 2 && speech_pos > 4, "T3 position tables are too short");
    set_u32(g, p + "max_text_tokens", text_pos - 2);
    set_u32(g, p + "max_speech_tokens", speech_pos - 4);
    set_u32(g, p + "speech_cond_prompt_length", 150);
    set_u32(g, p + "speaker_embed_size", s.dim("t3.cond.spkr_enc.weight", 1, "the T3 speaker projection"));
    const bool perceiver = s.find("t3.cond.perc.query") != nullptr;
    gguf_set_val_bool(g, (p + "perceiver").c_str(), perceiver);
    if (perceiver) {
        set_u32(g, p + "perceiver.query_count", s.dim("t3.cond.perc.query", 1, "the perceiver queries"));
        set_u32(g, p + "perceiver.head_count", heads.get({"$t3", "perceiver", "heads"}, 4));
    }
    gguf_set_val_bool(g, (p + "emotion_adv").c_str(), s.find("t3.cond.emotion_fc.weight") != nullptr);
}

void write_s3gen_hparams(gguf_context* g, const Sources& s, const HeadCounts& heads) {
    std::string p = "chatterbox.s3gen.";
    set_u32(g, p + "vocab_size", s.dim("flow.input_embedding.weight", 0, "the S3Gen token embedding"));
    set_u32(g, p + "embedding_length", s.dim("flow.input_embedding.weight", 1, "the S3Gen token embedding"));
    set_u32(g, p + "mel_bins", s.dim("flow.encoder_proj.weight", 0, "the S3Gen encoder projection"));
    set_u32(g, p + "speaker_embed_size", s.dim("flow.spk_embed_affine_layer.weight", 1, "the S3Gen speaker projection"));
    set_u32(g, p + "token_mel_ratio", 2);
    set_u32(g, p + "pre_lookahead_length", s.dim("flow.enc.pre_lookahead_layer.conv1.weight", 2, "the pre-lookahead conv") - 1);
    set_u32(g, p + "sample_rate", 24000);

    p = "chatterbox.s3gen.encoder.";
    set_u32(g, p + "block_count", s.count("flow.enc.encoders.{i}.norm_mha.weight"));
    set_u32(g, p + "up_block_count", s.count("flow.enc.up_encoders.{i}.norm_mha.weight"));
    const int64_t enc_d = s.dim("flow.enc.encoders.0.self_attn.linear_q.weight", 0, "the S3Gen encoder");
    const uint32_t enc_heads = heads.get({"s3gen", "enc_attention_heads"}, 8);
    require_dim(enc_d % enc_heads == 0, "S3Gen encoder width is not a multiple of its head count");
    set_u32(g, p + "head_count", enc_heads);
    set_u32(g, p + "feed_forward_length", s.dim("flow.enc.encoders.0.feed_forward.w_1.weight", 0, "the S3Gen encoder FFN"));
    set_u32(g, p + "upsample_stride", 2);

    p = "chatterbox.s3gen.estimator.";
    std::vector<uint32_t> channels;
    for (uint32_t i = 0; i < s.count("flow.est.down_blocks.{i}.0.block1.block.0.weight"); ++i) {
        channels.push_back(static_cast<uint32_t>(
            s.dim("flow.est.down_blocks." + std::to_string(i) + ".0.block1.block.0.weight", 0, "the estimator down block")));
    }
    require_dim(!channels.empty(), "S3Gen estimator has no down blocks");
    set_i32_array(g, p + "channels", channels);
    set_u32(g, p + "in_channels", s.dim("flow.est.down_blocks.0.0.block1.block.0.weight", 1, "the estimator input"));
    set_u32(g, p + "block_count", s.count("flow.est.down_blocks.0.1.{i}.norm1.weight"));
    set_u32(g, p + "mid_block_count", s.count("flow.est.mid_blocks.{i}.0.block1.block.0.weight"));
    const uint32_t est_heads = heads.get({"s3gen", "est_num_heads"}, 8);
    const int64_t inner = s.dim("flow.est.down_blocks.0.1.0.attn1.to_q.weight", 0, "the estimator attention");
    require_dim(inner % est_heads == 0, "S3Gen estimator attention width is not a multiple of its head count");
    set_u32(g, p + "head_count", est_heads);
    set_u32(g, p + "head_dim", inner / est_heads);
    set_u32(g, p + "time_embed_dim", s.dim("flow.est.time_mlp.linear_1.weight", 0, "the estimator time MLP"));
    const bool meanflow = s.find("flow.est.time_embed_mixer.weight") != nullptr;
    gguf_set_val_bool(g, "chatterbox.s3gen.meanflow", meanflow);
    set_u32(g, "chatterbox.s3gen.cfm.steps", meanflow ? 2 : 10);
    gguf_set_val_f32(g, "chatterbox.s3gen.cfm.cfg_rate", meanflow ? 0.0f : 0.7f);
    gguf_set_val_str(g, "chatterbox.s3gen.cfm.schedule", meanflow ? "linear" : "cosine");

    p = "chatterbox.s3gen.hift.";
    set_u32(g, p + "base_channels", s.dim("hift.conv_pre.weight_v", 0, "the HiFT input conv"));
    set_u32(g, p + "in_channels", s.dim("hift.conv_pre.weight_v", 1, "the HiFT input conv"));
    set_u32(g, p + "harmonic_count", s.dim("hift.m_source.l_linear.weight", 1, "the HiFT source mixer") - 1);
    const uint32_t ups = s.count("hift.ups.{i}.weight_v");
    std::vector<uint32_t> up_kernels, rb_kernels, src_kernels;
    for (uint32_t i = 0; i < ups; ++i) up_kernels.push_back(s.dim("hift.ups." + std::to_string(i) + ".weight_v", 2, "a HiFT upsampler"));
    const uint32_t rbs = s.count("hift.resblocks.{i}.convs1.0.weight_v");
    require_dim(ups > 0 && rbs % ups == 0, "HiFT resblock count is not a multiple of the upsampler count");
    for (uint32_t i = 0; i < rbs / ups; ++i) rb_kernels.push_back(s.dim("hift.resblocks." + std::to_string(i) + ".convs1.0.weight_v", 2, "a HiFT resblock"));
    for (uint32_t i = 0; i < s.count("hift.source_resblocks.{i}.convs1.0.weight_v"); ++i) {
        src_kernels.push_back(s.dim("hift.source_resblocks." + std::to_string(i) + ".convs1.0.weight_v", 2, "a HiFT source resblock"));
    }
    const std::vector<uint32_t> official_rates = {8, 5, 3};
    require_dim(ups == official_rates.size(), "HiFT has " + std::to_string(ups) + " upsamplers, the official model 3");
    set_i32_array(g, p + "upsample_rates", official_rates);
    set_i32_array(g, p + "upsample_kernel_sizes", up_kernels);
    set_i32_array(g, p + "resblock_kernel_sizes", rb_kernels);
    set_i32_array(g, p + "resblock_dilations", {1, 3, 5});
    set_i32_array(g, p + "source_resblock_kernel_sizes", src_kernels);
    set_i32_array(g, p + "source_resblock_dilations", {1, 3, 5});
    const int64_t post = s.dim("hift.conv_post.weight_v", 0, "the HiFT output conv");
    require_dim(post > 2, "HiFT output conv is too narrow");
    set_u32(g, p + "istft_n_fft", post - 2);
    set_u32(g, p + "istft_hop_length", 4);
    set_u32(g, p + "f0_cond_channels", s.dim("hift.f0_predictor.condnet.0.weight_v", 0, "the F0 predictor"));
    gguf_set_val_f32(g, (p + "nsf_alpha").c_str(), 0.1f);
    gguf_set_val_f32(g, (p + "nsf_sigma").c_str(), 0.003f);
    gguf_set_val_f32(g, (p + "nsf_voiced_threshold").c_str(), 10.0f);
    gguf_set_val_f32(g, (p + "lrelu_slope").c_str(), 0.1f);
    gguf_set_val_f32(g, (p + "audio_limit").c_str(), 0.99f);

    p = "chatterbox.s3tok.";
    const int64_t state = s.dim("s3tok.enc.conv1.weight", 0, "the S3 tokenizer input conv");
    require_dim(state % 64 == 0, "S3 tokenizer width is not a multiple of its head size 64");
    set_u32(g, p + "mel_bins", s.dim("s3tok.enc.conv1.weight", 1, "the S3 tokenizer input conv"));
    set_u32(g, p + "embedding_length", state);
    set_u32(g, p + "block_count", s.count("s3tok.enc.blocks.{i}.attn_ln.weight"));
    set_u32(g, p + "head_count", state / 64);
    set_u32(g, p + "fsq_dim", s.dim("s3tok.fsq.project_down.weight", 0, "the S3 tokenizer quantizer"));
    set_u32(g, p + "codebook_size", 6561);
    set_u32(g, p + "sample_rate", 16000);

    p = "chatterbox.campplus.";
    set_u32(g, p + "embedding_length", s.dim("campp.xvec.dense.linear.weight", 0, "the CAMPPlus output"));
    set_u32(g, p + "feat_dim", 80);
}

void write_ve_hparams(gguf_context* g, const Sources& s) {
    const std::string p = "chatterbox.ve.";
    set_u32(g, p + "hidden_size", s.dim("ve.lstm.weight_hh_l0", 1, "the voice encoder LSTM"));
    set_u32(g, p + "layer_count", s.count("ve.lstm.weight_hh_l{i}"));
    set_u32(g, p + "mel_bins", s.dim("ve.lstm.weight_ih_l0", 1, "the voice encoder LSTM"));
    set_u32(g, p + "embedding_length", s.dim("ve.proj.weight", 0, "the voice encoder projection"));
    set_u32(g, p + "sample_rate", 16000);
}

// ggml tensor type and byte encoder for one source tensor.
PlannedTensor plan_tensor(const std::string& name, const Source& src, WeightType requested,
                          const std::shared_ptr<std::vector<float>>& scratch) {
    const SafetensorsTensor* t = src.tensor;
    std::vector<int64_t> shape(t->shape.rbegin(), t->shape.rend());
    if (shape.empty()) shape = {1};
    switch (t->dtype) {
        case SafetensorsDtype::I64:
        case SafetensorsDtype::I32: {
            // Integer tensors (voice tokens and lengths) become I32.
            return {name, GGML_TYPE_I32, shape, [t, src](std::vector<uint8_t>& out) {
                        const int64_t n = t->element_count();
                        out.resize(static_cast<size_t>(n) * 4);
                        for (int64_t i = 0; i < n; ++i) {
                            int64_t v;
                            if (t->dtype == SafetensorsDtype::I64) {
                                std::memcpy(&v, t->data + i * 8, 8);
                            } else {
                                int32_t v32;
                                std::memcpy(&v32, t->data + i * 4, 4);
                                v = v32;
                            }
                            if (v < INT32_MIN || v > INT32_MAX) {
                                throw Error(ErrorKind::Format, src.path + ": tensor '" + t->name + "' holds " + std::to_string(v) +
                                                                   ", outside the int32 range");
                            }
                            const int32_t w = static_cast<int32_t>(v);
                            std::memcpy(out.data() + i * 4, &w, 4);
                        }
                    }};
        }
        case SafetensorsDtype::F32:
        case SafetensorsDtype::F16:
        case SafetensorsDtype::BF16: {
            if (chatterbox_key_transposed(src.file, t->name)) {
                // GPT-2 Conv1D [in, out] → the [out, in] of a linear layer (ggml ne [in, out]).
                if (shape.size() != 2) {
                    throw Error(ErrorKind::Format, src.path + ": tensor '" + t->name + "' has shape " + shape_to_string(t->shape) +
                                                       ", expected a 2-D Conv1D weight");
                }
                std::swap(shape[0], shape[1]);
                const ggml_type type = storage_type(name, shape, requested);
                const int64_t in = shape[0], out_dim = shape[1];
                return {name, type, shape, [t, type, in, out_dim](std::vector<uint8_t>& out) {
                            std::vector<float> src_f(static_cast<size_t>(in * out_dim)), dst(src_f.size());
                            safetensors_to_f32(*t, src_f.data());
                            for (int64_t i = 0; i < in; ++i)
                                for (int64_t o = 0; o < out_dim; ++o) dst[size_t(o * in + i)] = src_f[size_t(i * out_dim + o)];
                            out.resize(ggml_row_size(type, in) * static_cast<size_t>(out_dim));
                            if (type == GGML_TYPE_F32) {
                                std::memcpy(out.data(), dst.data(), dst.size() * sizeof(float));
                            } else {
                                ggml_quantize_chunk(type, dst.data(), out.data(), 0, out_dim, in, nullptr);
                            }
                        }};
            }
            const ggml_type type = storage_type(name, shape, requested);
            const int64_t row = shape[0];
            return {name, type, shape,
                    [t, type, row, scratch](std::vector<uint8_t>& out) { encode_weights(*t, type, row, out, *scratch); }};
        }
        default:
            throw Error(ErrorKind::Unsupported, src.path + ": tensor '" + t->name + "' has dtype " +
                                                    safetensors_dtype_name(t->dtype) + " (expected F32/F16/BF16 or integers)");
    }
}

bool has_suffix(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "a, b, c", each name between `quote`s.
std::string name_list(const std::vector<std::string>& names, const std::string& quote = "") {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + quote + n + quote;
    return list;
}

// The S3 tokenizer's mel filterbank, a buffer s3tokenizer computes with librosa.filters.mel(sr=16000,
// n_fft=400, n_mels=128) and saves with S3Gen. The language packs' s3gen_v3.pt predates that buffer:
// without it, the same constant is computed here.
constexpr const char* kS3TokenizerMelFilters = "s3tok.mel_filters";

PlannedTensor s3_tokenizer_mel_filters() {
    constexpr int kSampleRate = 16000, kFft = 400, kMels = 128;
    return {kS3TokenizerMelFilters, GGML_TYPE_F32, {kFft / 2 + 1, kMels}, [](std::vector<uint8_t>& out) {
                const std::vector<float> bank = audio::slaney_mel_filterbank(kSampleRate, kFft, kMels, 0.0, kSampleRate / 2.0);
                out.resize(bank.size() * sizeof(float));
                std::memcpy(out.data(), bank.data(), out.size());
            }};
}

// The official repository has no config.json (a Qwen3-TTS snapshot's) and at least one of these.
bool is_chatterbox_folder(const FileSet& files) {
    if (files.has("config.json")) return false;
    for (const char* f : {"t3_mtl23ls_v2.safetensors", "t3_mtl23ls_v3.safetensors", "t3_cfg.safetensors", "t3_turbo_v1.safetensors",
                          "t3_nano_v1.safetensors", "s3gen.pt", "s3gen.safetensors", "s3gen_meanflow.safetensors", "s3gen_v3.pt"}) {
        if (files.has(f)) return true;
    }
    return false;
}

CheckpointFiles checkpoint_files(const FileSet& files, const std::string& variant, const std::string& checkpoint) {
    const ChatterboxFiles c = chatterbox_files(files, variant, checkpoint);
    CheckpointFiles out;
    out.files = c.all();
    out.variant = c.variant;
    out.default_variant = c.default_variant;
    // The T3 file the variant reads unless told otherwise: its official stem, or v3 where a folder
    // holds only that; any other choice names the model ("v3", or the file's stem).
    const std::string stem = c.t3.substr(0, c.t3.size() - std::string(".safetensors").size());
    const bool chosen = !checkpoint.empty() && c.t3 != c.t3_stem + ".safetensors" && files.has(c.t3_stem + ".safetensors");
    if (chosen) out.checkpoint_name = stem.rfind("t3_mtl23ls_", 0) == 0 ? stem.substr(std::string("t3_mtl23ls_").size()) : stem;
    if (!c.from_base.empty()) {
        out.companion_repo = kLanguagePackBase;
        out.companion_files = c.from_base;
    }
    return out;
}

// A language pack's T3: the one t3_*.safetensors of a folder with the multilingual tokenizer that is
// none of the official stems ("" when the folder is no pack). Throws when there are several.
std::string language_pack_t3(const FileSet& files) {
    if (!files.has("grapheme_mtl_merged_expanded_v1.json") || !files.names) return "";
    static const std::set<std::string> official = {"t3_mtl23ls_v2.safetensors", "t3_mtl23ls_v3.safetensors", "t3_cfg.safetensors",
                                                   "t3_turbo_v1.safetensors", "t3_nano_v1.safetensors", "t3_23lang.safetensors"};
    std::vector<std::string> found;
    for (const std::string& name : files.names()) {
        const bool t3 = name.rfind("t3_", 0) == 0 && name.size() > std::string("t3_.safetensors").size() && has_suffix(name, ".safetensors");
        if (t3 && !official.count(name)) found.push_back(name);
    }
    if (found.size() > 1) {
        throw Error(ErrorKind::InvalidArgument,
                    files.what + " holds several T3 checkpoints (" + name_list(found) + "): choose one with --t3-model");
    }
    return found.empty() ? "" : found[0];
}

}  // namespace

std::vector<std::string> ChatterboxFiles::all() const {
    std::vector<std::string> out{t3, s3gen, ve};
    if (!conds.empty()) out.push_back(conds);
    out.insert(out.end(), text.begin(), text.end());
    if (!hparams.empty()) out.push_back(hparams);
    const auto based = [this](const std::string& f) { return std::find(from_base.begin(), from_base.end(), f) != from_base.end(); };
    out.erase(std::remove_if(out.begin(), out.end(), based), out.end());
    return out;
}

ChatterboxFiles chatterbox_files(const FileSet& files, const std::string& requested_variant, const std::string& t3_model) {
    const auto missing = [&](const std::string& what, const std::string& name) {
        return Error(ErrorKind::NotFound, files.what + " is missing " + what + ": '" + files.path(name) + "' does not exist");
    };
    const auto require = [&](const std::string& name, const std::string& what) {
        if (!files.has(name)) throw missing(what, name);
        return name;
    };
    // The file the official loader reads (`stem` + `official`), else its other form: the repository
    // carries S3Gen and the voice encoder as both .pt and .safetensors (same tensors), and a folder
    // may hold the built-in voice as conds.safetensors (the conds.pt tensors, made contiguous).
    const auto either_form = [&](const std::string& stem, const std::string& official) -> std::string {
        const std::string other = official == ".pt" ? ".safetensors" : ".pt";
        for (const std::string& ext : {official, other}) {
            if (files.has(stem + ext)) return stem + ext;
        }
        return "";
    };
    const auto require_either = [&](const std::string& stem, const std::string& official, const std::string& what) {
        const std::string name = either_form(stem, official);
        if (name.empty()) {
            throw Error(ErrorKind::NotFound, files.what + " is missing " + what + ": neither '" + files.path(stem + official) +
                                                 "' nor its " + (official == ".pt" ? ".safetensors" : ".pt") + " form exists");
        }
        return name;
    };
    const bool has_mtl = files.has("t3_mtl23ls_v2.safetensors") || files.has("t3_mtl23ls_v3.safetensors");
    const std::string pack_t3 = has_mtl ? "" : language_pack_t3(files);
    const std::string folder_default = has_mtl || !pack_t3.empty() || !t3_model.empty() ? "multilingual"
                                       : files.has("t3_turbo_v1.safetensors") ? "turbo"
                                       : files.has("t3_nano_v1.safetensors")  ? "nano"
                                                                              : "english";
    ChatterboxFiles f;
    f.variant = requested_variant.empty() ? folder_default : requested_variant;
    f.default_variant = f.variant == folder_default;
    if (f.variant != "multilingual" && f.variant != "english" && f.variant != "turbo" && f.variant != "nano") {
        throw Error(ErrorKind::InvalidArgument,
                    "unknown Chatterbox variant '" + f.variant + "' (choose multilingual, english, turbo or nano)");
    }
    const bool mtl = f.variant == "multilingual";
    // tts_turbo.py loads Turbo and Nano alike (from_local(nano=...)): only the T3 file differs.
    f.gpt2 = f.variant == "turbo" || f.variant == "nano";
    if (!mtl && !t3_model.empty()) {
        throw Error(ErrorKind::InvalidArgument, "a T3 model choice ('" + t3_model + "') applies to the multilingual variant only, not " +
                                                    f.variant);
    }
    // The official stem of the variant (tiny_hparams.json's key); the file may be another checkpoint
    // of the same architecture (v3, a fine-tune): ChatterboxMultilingualTTS.from_local(t3_model=...).
    f.t3_stem = mtl ? "t3_mtl23ls_v2" : f.variant == "turbo" ? "t3_turbo_v1" : f.variant == "nano" ? "t3_nano_v1" : "t3_cfg";
    f.t3 = f.t3_stem + ".safetensors";
    if (mtl && t3_model.empty() && !files.has(f.t3) && files.has("t3_mtl23ls_v3.safetensors")) f.t3 = "t3_mtl23ls_v3.safetensors";
    if (mtl && t3_model.empty() && !pack_t3.empty()) f.t3 = pack_t3;
    if (mtl && (t3_model == "v3" || t3_model == "t3_mtl23ls_v3")) f.t3 = "t3_mtl23ls_v3.safetensors";
    if (mtl && !t3_model.empty() && t3_model != "v2" && t3_model != "t3_mtl23ls_v2" && t3_model != "v3" && t3_model != "t3_mtl23ls_v3") {
        if (t3_model.size() <= std::string(".safetensors").size() || !has_suffix(t3_model, ".safetensors")) {
            throw Error(ErrorKind::InvalidArgument, "unknown multilingual T3 model '" + t3_model +
                                                        "' (choose v2, v3, t3_mtl23ls_v2, t3_mtl23ls_v3 or a .safetensors file in the folder)");
        }
        f.t3 = t3_model;
    }
    require(f.t3, "the " + f.variant + " T3 weights");
    // The files each official loader reads (mtl_tts.py / tts.py / tts_turbo.py from_local), or
    // their other form where the repository ships both.
    const std::string weights_ext = mtl ? ".pt" : ".safetensors";
    // A language pack ships the v3 S3Gen under its own name and leaves the voice encoder, the
    // built-in voice and the Cangjie table to its base repository.
    const bool pack = mtl && f.t3 == pack_t3 && !pack_t3.empty();
    if (pack && either_form("s3gen", ".pt").empty()) {
        f.s3gen = require_either("s3gen_v3", ".pt", "the language pack's S3Gen weights");
    } else {
        f.s3gen = f.gpt2 ? require("s3gen_meanflow.safetensors", "the S3Gen weights") : require_either("s3gen", weights_ext, "the S3Gen weights");
    }
    const auto from_base = [&](const std::string& found, const std::string& base_name) {
        if (!found.empty() || !pack) return found;
        f.from_base.push_back(base_name);
        return base_name;
    };
    f.ve = pack ? from_base(either_form("ve", ".pt"), "ve.pt") : require_either("ve", weights_ext, "the voice encoder weights");
    f.conds = pack ? from_base(either_form("conds", ".pt"), "conds.pt") : either_form("conds", ".pt");
    if (mtl) {
        const std::string cangjie = pack ? from_base(files.has("Cangjie5_TC.json") ? "Cangjie5_TC.json" : "", "Cangjie5_TC.json")
                                         : require("Cangjie5_TC.json", "the Chinese Cangjie table");
        f.text = {require("grapheme_mtl_merged_expanded_v1.json", "the tokenizer"), cangjie};
    } else if (!f.gpt2) {
        f.text = {require("tokenizer.json", "the tokenizer")};
    } else {
        // write_tokenizer_metadata: tokenizer_config.json's added tokens, else added_tokens.json;
        // tokenizer.json, when there, is checked against them.
        f.text = {require("vocab.json", "the GPT-2 tokenizer"), require("merges.txt", "the GPT-2 tokenizer"),
                  files.has("tokenizer_config.json") ? std::string("tokenizer_config.json") : require("added_tokens.json", "the GPT-2 tokenizer")};
        if (files.has("tokenizer.json")) f.text.push_back("tokenizer.json");
    }
    if (files.has("tiny_hparams.json")) f.hparams = "tiny_hparams.json";
    return f;
}

ConvertSummary convert_chatterbox(const ConvertOptions& opt) {
    const std::string dir = opt.snapshot_dir;
    if (!fs::is_directory(dir)) throw Error(ErrorKind::NotFound, "Chatterbox folder '" + dir + "' does not exist");
    const ChatterboxFiles files = chatterbox_files(folder_files(dir, "Chatterbox folder"), opt.variant, opt.checkpoint);
    if (!files.from_base.empty()) {
        throw Error(ErrorKind::NotFound, "Chatterbox folder '" + dir + "' holds a language pack (" + files.t3 + ") without " +
                                             name_list(files.from_base, "'") +
                                             ": a pack takes them from " + kLanguagePackBase +
                                             " (`talkbox pull` fetches them; or copy them from that repository)");
    }
    const std::string& variant = files.variant;
    const bool mtl = variant == "multilingual", gpt2 = files.gpt2;
    const std::string& t3_stem = files.t3_stem;
    const std::string& t3_file = files.t3;
    const std::string s3gen_file = "/" + files.s3gen;
    Sources sources;
    sources.add(ChatterboxFile::T3, dir + "/" + t3_file);
    sources.add(ChatterboxFile::S3Gen, dir + s3gen_file);
    sources.add(ChatterboxFile::VoiceEncoder, dir + "/" + files.ve);
    const bool has_voice = !files.conds.empty();
    if (has_voice) sources.add(ChatterboxFile::Conds, dir + "/" + files.conds);
    const bool has_gpt2_blocks = sources.find("t3.blk.0.attn_qkv.weight") != nullptr;
    if (has_gpt2_blocks != gpt2) {
        throw Error(ErrorKind::Format, dir + "/" + t3_file + ": " +
                                           (gpt2 ? "the " + variant + " T3 has no GPT-2 blocks (tfmr.h.0.attn.c_attn.weight)"
                                                  : std::string("holds a GPT-2 (Turbo or Nano) T3; convert it as variant turbo or nano")));
    }
    if (gpt2 && sources.find("flow.est.time_embed_mixer.weight") == nullptr) {
        throw Error(ErrorKind::Format, dir + s3gen_file + ": not a meanflow S3Gen (no flow.decoder.estimator.time_embed_mixer.weight)");
    }

    std::string tokenizer_json, cangjie_json;
    if (!gpt2) {
        tokenizer_json = read_text_file(dir + "/" + files.text[0], "the tokenizer");
        if (mtl) cangjie_json = read_text_file(dir + "/" + files.text[1], "the Chinese Cangjie table");
        // Check the stored text data with the engine's own parser.
        (void)chatterbox::TextFrontEnd(mtl ? "multilingual" : "english", tokenizer_json, cangjie_json, dir);
    }

    std::unique_ptr<gguf_context, GgufContextDeleter> gguf(gguf_init_empty());
    gguf_context* g = gguf.get();
    gguf_set_val_str(g, "general.architecture", chatterbox::kArchitecture);
    const std::string name = opt.name.empty() ? fs::path(dir).lexically_normal().filename().string() : opt.name;
    gguf_set_val_str(g, "general.name", name.c_str());
    if (!opt.source_url.empty()) gguf_set_val_str(g, "general.source.url", opt.source_url.c_str());
    gguf_set_val_u32(g, "general.quantization_version", GGML_QNT_VERSION);
    gguf_set_val_str(g, "chatterbox.variant", variant.c_str());
    gguf_set_val_str(g, "chatterbox.t3.checkpoint", t3_file.c_str());
    gguf_set_val_str(g, "chatterbox.weight_type", weight_type_name(opt.type));
    const HeadCounts heads(dir, t3_stem);
    gguf_set_val_str(g, "chatterbox.head_counts_source", heads.from_file() ? "tiny_hparams.json" : "official");
    set_str_array(g, "chatterbox.languages", mtl ? chatterbox::supported_languages() : std::vector<std::string>{"en"});
    gguf_set_val_bool(g, "chatterbox.builtin_voice", has_voice);

    if (gpt2) write_t3_gpt2_hparams(g, sources, heads);
    else write_t3_hparams(g, sources, heads);
    write_s3gen_hparams(g, sources, heads);
    write_ve_hparams(g, sources);

    // Nano ships Turbo's GPT-2 tokenizer: one tokenizer kind for both.
    gguf_set_val_str(g, "chatterbox.tokenizer.kind", gpt2 ? "turbo" : variant.c_str());
    if (gpt2) {
        // GPT-2 byte-level BPE (AutoTokenizer of the folder) as tokenizer.ggml.*.
        write_tokenizer_metadata(g, dir, "gpt2");
    } else {
        gguf_set_val_str(g, "chatterbox.tokenizer.json", tokenizer_json.c_str());
    }
    if (mtl) gguf_set_val_str(g, "chatterbox.tokenizer.cangjie_json", cangjie_json.c_str());

    std::vector<PlannedTensor> plan;
    auto scratch = std::make_shared<std::vector<float>>();
    for (const auto& src : sources.order()) {
        plan.push_back(plan_tensor(chatterbox_gguf_name(src.file, src.tensor->name), src, opt.type, scratch));
    }
    if (sources.find(kS3TokenizerMelFilters) == nullptr) plan.push_back(s3_tokenizer_mel_filters());
    ConvertSummary summary;
    summary.file_bytes = write_gguf_file(g, plan, opt.output_path, opt.progress);
    summary.tensor_count = plan.size();
    summary.family = "Chatterbox";
    summary.variant = variant;
    summary.size = std::to_string(sources.dim("t3.text_embd.weight", 1, "the T3 text embedding")) + "-wide T3";
    return summary;
}

namespace chatterbox {

const FamilyConverter& converter() {
    static const FamilyConverter c{"Chatterbox", "a Chatterbox folder has T3 and S3Gen checkpoints (t3_*.safetensors, s3gen.*) and no config.json",
                                   is_chatterbox_folder, checkpoint_files, convert_chatterbox};
    return c;
}

}  // namespace chatterbox

}  // namespace talkbox
