#include "qwen3tts/tensor_layout.h"

namespace talkbox::qwen3tts {

const char* component_name(Component c) {
    switch (c) {
        case Component::Talker: return "talker";
        case Component::CodePredictor: return "code predictor";
        case Component::SpeakerEncoder: return "speaker encoder";
        case Component::CodecDecoder: return "codec decoder";
        case Component::CodecEncoder: return "codec encoder";
    }
    return "?";
}

namespace {

using Shape = std::vector<int64_t>;

struct Builder {
    std::vector<TensorSpec> out;
    Component component = Component::Talker;
    void add(const std::string& name, Shape shape) { out.push_back({name, std::move(shape), component}); }
    // Linear [out, in] in PyTorch = ggml [in, out]; bias [out].
    void linear(const std::string& p, int64_t in, int64_t outd, bool bias) {
        add(p + ".weight", {in, outd});
        if (bias) add(p + ".bias", {outd});
    }
    // Conv1d [out, in/groups, k] = ggml [k, in/groups, out], bias [out].
    void conv(const std::string& p, int64_t in, int64_t outd, int64_t k, bool bias = true) {
        add(p + ".weight", {k, in, outd});
        if (bias) add(p + ".bias", {outd});
    }
};

// A Qwen3-style decoder layer (talker, code predictor, codec decoder transformer).
void qwen3_layer(Builder& b, const std::string& p, int64_t hidden, int64_t inter, int64_t heads, int64_t kv,
                 int64_t head_dim, bool qk_norm, bool layer_scale) {
    b.add(p + "attn_norm.weight", {hidden});
    b.add(p + "attn_q.weight", {hidden, heads * head_dim});
    b.add(p + "attn_k.weight", {hidden, kv * head_dim});
    b.add(p + "attn_v.weight", {hidden, kv * head_dim});
    b.add(p + "attn_output.weight", {heads * head_dim, hidden});
    if (qk_norm) {
        b.add(p + "attn_q_norm.weight", {head_dim});
        b.add(p + "attn_k_norm.weight", {head_dim});
    }
    b.add(p + "ffn_norm.weight", {hidden});
    b.add(p + "ffn_gate.weight", {hidden, inter});
    b.add(p + "ffn_up.weight", {hidden, inter});
    b.add(p + "ffn_down.weight", {inter, hidden});
    if (layer_scale) {
        b.add(p + "attn_scale", {hidden});
        b.add(p + "ffn_scale", {hidden});
    }
}

void talker(Builder& b, const Hparams& h) {
    b.component = Component::Talker;
    const auto& t = h.talker;
    b.add("talker.codec_embd.weight", {t.hidden, t.vocab});
    b.add("talker.text_embd.weight", {h.text_hidden, h.text_vocab});
    b.linear("talker.text_proj.fc1", h.text_hidden, h.text_hidden, true);
    b.linear("talker.text_proj.fc2", h.text_hidden, t.hidden, true);
    b.add("talker.output_norm.weight", {t.hidden});
    b.add("talker.codec_head.weight", {t.hidden, t.vocab});
    for (uint32_t l = 0; l < t.layers; ++l) {
        qwen3_layer(b, "talker.blk." + std::to_string(l) + ".", t.hidden, t.intermediate, t.heads, t.kv_heads,
                    t.head_dim, true, false);
    }
}

void code_predictor(Builder& b, const Hparams& h) {
    b.component = Component::CodePredictor;
    const auto& c = h.code_predictor;
    for (uint32_t l = 0; l < c.layers; ++l) {
        qwen3_layer(b, "code_pred.blk." + std::to_string(l) + ".", c.hidden, c.intermediate, c.heads, c.kv_heads,
                    c.head_dim, true, false);
    }
    b.add("code_pred.output_norm.weight", {c.hidden});
    for (uint32_t g = 0; g + 1 < c.code_groups; ++g) {
        b.add("code_pred.codec_embd." + std::to_string(g) + ".weight", {h.talker.hidden, c.vocab});
        b.add("code_pred.lm_head." + std::to_string(g) + ".weight", {c.hidden, c.vocab});
    }
    if (h.talker.hidden != c.hidden) b.linear("code_pred.in_proj", h.talker.hidden, c.hidden, true);
}

void speaker_encoder(Builder& b, const Hparams& h) {
    b.component = Component::SpeakerEncoder;
    const auto& s = h.speaker_encoder;
    const size_t n = s.channels.size();
    b.conv("spk_enc.blk.0.conv", s.mel_dim, s.channels[0], s.kernel_sizes[0]);
    int64_t mfa_in = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
        const std::string p = "spk_enc.blk." + std::to_string(i) + ".";
        const int64_t c = s.channels[i], w = c / s.res2net_scale;
        b.conv(p + "tdnn1", s.channels[i - 1], c, 1);
        for (uint32_t j = 0; j + 1 < s.res2net_scale; ++j) b.conv(p + "res2net." + std::to_string(j), w, w, s.kernel_sizes[i]);
        b.conv(p + "tdnn2", c, c, 1);
        b.conv(p + "se1", c, s.se_channels, 1);
        b.conv(p + "se2", s.se_channels, c, 1);
        mfa_in += c;
    }
    const int64_t c_last = s.channels[n - 1];
    b.conv("spk_enc.mfa", mfa_in, c_last, s.kernel_sizes[n - 1]);
    b.conv("spk_enc.asp.tdnn", 3 * c_last, s.attention_channels, 1);
    b.conv("spk_enc.asp.conv", s.attention_channels, c_last, 1);
    b.conv("spk_enc.fc", 2 * c_last, s.enc_dim, 1);
}

void codec_decoder(Builder& b, const Hparams& h) {
    b.component = Component::CodecDecoder;
    const auto& d = h.codec_decoder;
    const int64_t cb = d.codebook_dim / 2;
    for (const std::string q : {"rvq_first", "rvq_rest"}) {
        const std::string p = "codec.dec." + q + ".";
        b.conv(p + "input_proj", d.codebook_dim, cb, 1, false);
        b.conv(p + "output_proj", cb, d.codebook_dim, 1, false);
        const uint32_t books = q == "rvq_first" ? 1 : d.num_quantizers - 1;
        for (uint32_t k = 0; k < books; ++k) {
            b.add(p + "cb." + std::to_string(k) + ".embed_sum", {cb, d.codebook_size});
            b.add(p + "cb." + std::to_string(k) + ".usage", {d.codebook_size});
        }
    }
    b.conv("codec.dec.pre_conv", d.codebook_dim, d.latent_dim, 3);
    b.linear("codec.dec.xfmr.input_proj", d.latent_dim, d.hidden, true);
    b.linear("codec.dec.xfmr.output_proj", d.hidden, d.latent_dim, true);
    b.add("codec.dec.xfmr.output_norm.weight", {d.hidden});
    for (uint32_t l = 0; l < d.layers; ++l) {
        qwen3_layer(b, "codec.dec.xfmr.blk." + std::to_string(l) + ".", d.hidden, d.intermediate, d.heads, d.kv_heads,
                    d.head_dim, false, true);
    }
    for (size_t s = 0; s < d.upsampling_ratios.size(); ++s) {
        const std::string p = "codec.dec.up." + std::to_string(s) + ".";
        const int64_t c = d.latent_dim;
        // ConvTranspose1d weight is [in, out, k] in PyTorch = ggml [k, out, in].
        b.add(p + "conv.weight", {d.upsampling_ratios[s], c, c});
        b.add(p + "conv.bias", {c});
        b.conv(p + "dwconv", 1, c, 7);
        b.add(p + "norm.weight", {c});
        b.add(p + "norm.bias", {c});
        b.linear(p + "pwconv1", c, 4 * c, true);
        b.linear(p + "pwconv2", 4 * c, c, true);
        b.add(p + "gamma", {c});
    }
    b.conv("codec.dec.wav.0.conv", d.latent_dim, d.decoder_dim, 7);
    int64_t c_in = d.decoder_dim;
    const size_t blocks = d.upsample_rates.size();
    for (size_t i = 0; i < blocks; ++i) {
        const std::string p = "codec.dec.wav." + std::to_string(i + 1) + ".";
        const int64_t c_out = c_in / 2, r = d.upsample_rates[i];
        b.add(p + "0.alpha", {c_in});
        b.add(p + "0.beta", {c_in});
        b.add(p + "1.conv.weight", {2 * r, c_out, c_in});
        b.add(p + "1.conv.bias", {c_out});
        for (int unit = 2; unit <= 4; ++unit) {
            const std::string u = p + std::to_string(unit) + ".";
            for (const char* act : {"act1", "act2"}) {
                b.add(u + act + ".alpha", {c_out});
                b.add(u + act + ".beta", {c_out});
            }
            b.conv(u + "conv1", c_out, c_out, 7);
            b.conv(u + "conv2", c_out, c_out, 1);
        }
        c_in = c_out;
    }
    b.add("codec.dec.wav." + std::to_string(blocks + 1) + ".alpha", {c_in});
    b.add("codec.dec.wav." + std::to_string(blocks + 1) + ".beta", {c_in});
    b.conv("codec.dec.wav." + std::to_string(blocks + 2) + ".conv", c_in, 1, 7);
}

void codec_encoder(Builder& b, const Hparams& h) {
    b.component = Component::CodecEncoder;
    const auto& e = h.codec_encoder;
    int64_t dim = e.num_filters;
    b.conv("codec.enc.conv.0", 1, dim, e.kernel_size);
    // SEANet layers: per stage a residual block (index 1+3s), an ELU, a strided conv (3+3s).
    const size_t stages = e.upsampling_ratios.size();
    for (size_t s = 0; s < stages; ++s) {
        const int64_t stride = e.upsampling_ratios[stages - 1 - s];
        const std::string res = "codec.enc.conv." + std::to_string(1 + 3 * s) + ".blk.";
        b.conv(res + "1", dim, dim / e.compress, e.residual_kernel_size);
        b.conv(res + "3", dim / e.compress, dim, 1);
        b.conv("codec.enc.conv." + std::to_string(3 + 3 * s), dim, 2 * dim, 2 * stride);
        dim *= 2;
    }
    b.conv("codec.enc.conv." + std::to_string(3 * stages + 2), dim, e.hidden, e.last_kernel_size);
    for (uint32_t l = 0; l < e.layers; ++l) {
        const std::string p = "codec.enc.xfmr.blk." + std::to_string(l) + ".";
        b.add(p + "attn_norm.weight", {e.hidden});
        b.add(p + "attn_norm.bias", {e.hidden});
        b.add(p + "attn_q.weight", {e.hidden, e.heads * e.head_dim});
        b.add(p + "attn_k.weight", {e.hidden, e.kv_heads * e.head_dim});
        b.add(p + "attn_v.weight", {e.hidden, e.kv_heads * e.head_dim});
        b.add(p + "attn_output.weight", {e.heads * e.head_dim, e.hidden});
        b.add(p + "attn_scale", {e.hidden});
        b.add(p + "ffn_norm.weight", {e.hidden});
        b.add(p + "ffn_norm.bias", {e.hidden});
        b.add(p + "ffn_up.weight", {e.hidden, e.intermediate});
        b.add(p + "ffn_down.weight", {e.intermediate, e.hidden});
        b.add(p + "ffn_scale", {e.hidden});
    }
    b.conv("codec.enc.downsample", e.hidden, e.hidden, e.downsample_kernel(), false);
    for (const std::string q : {"semantic", "acoustic"}) {
        const std::string p = "codec.enc.rvq_" + q + ".";
        b.conv(p + "input_proj", e.hidden, e.vq_hidden_dim, 1, false);
        b.conv(p + "output_proj", e.vq_hidden_dim, e.hidden, 1, false);
        const uint32_t books = q == "semantic" ? e.num_semantic_quantizers : e.num_quantizers - e.num_semantic_quantizers;
        for (uint32_t k = 0; k < books; ++k) {
            const std::string c = p + "cb." + std::to_string(k) + ".";
            b.add(c + "embed_sum", {e.codebook_dim, e.codebook_size});
            b.add(c + "usage", {e.codebook_size});
            b.add(c + "initialized", {1});
        }
    }
}

}  // namespace

std::vector<TensorSpec> expected_tensors(const Hparams& h) {
    Builder b;
    talker(b, h);
    code_predictor(b, h);
    if (h.has_speaker_encoder) speaker_encoder(b, h);
    codec_decoder(b, h);
    codec_encoder(b, h);
    return std::move(b.out);
}

}  // namespace talkbox::qwen3tts
