#include "qwen3tts/speaker_encoder.h"

#include <algorithm>
#include <cfloat>
#include <string>

#include "qwen3tts/tensor_layout.h"
#include "talkbox/error.h"

namespace talkbox::voice {

namespace {

constexpr float kStdFloor = 1e-12f;  // AttentiveStatisticsPooling.eps: a clamp, not an addend

ggml_tensor* matrix(ggml_context* ctx, ggml_tensor* conv_weight) {  // [1, in, out] -> [in, out]
    return ggml_reshape_2d(ctx, conv_weight, conv_weight->ne[0] * conv_weight->ne[1], conv_weight->ne[2]);
}

// A k = 1 convolution of a single vector v [in, 1] -> [out, 1].
ggml_tensor* linear(ggml_context* ctx, ggml_tensor* v, ggml_tensor* w, ggml_tensor* b) {
    return ggml_add(ctx, ggml_mul_mat(ctx, matrix(ctx, w), v), b);
}

// Standard deviation per channel from squared deviations summed with weights: sqrt(max(s, eps)).
ggml_tensor* clamped_sqrt(ggml_context* ctx, ggml_tensor* s) {
    return ggml_sqrt(ctx, ggml_clamp(ctx, s, kStdFloor, FLT_MAX));
}

// out [T, C] (channels first) = (w · x)^T for w [in, C] and x [in, T]. The weights go first: the
// CPU's fast matrix product needs the first operand's row count (C) to be a multiple of 4, which
// the frame count T generally is not.
ggml_tensor* product_to_channels_first(ggml_context* ctx, ggml_tensor* w, ggml_tensor* x) {
    return ggml_cont(ctx, ggml_transpose(ctx, ggml_mul_mat(ctx, w, x)));
}

}  // namespace

SpeakerEncoder::SpeakerEncoder(const GgufFile& file, const qwen3tts::Hparams& hparams, const Backend& backend)
    : hp_(hparams.speaker_encoder), backend_(backend) {
    if (!hparams.has_speaker_encoder) {
        throw Error(ErrorKind::Unsupported, "'" + file.path() + "' has no speaker encoder (only " +
                                                "Base models can clone a voice; this one is " +
                                                qwen3tts::variant_display_name(hparams.variant) + ")");
    }
    const audio::MelConfig mel;
    if (hp_.mel_dim != static_cast<uint32_t>(mel.n_mels) || hp_.sample_rate != static_cast<uint32_t>(mel.sample_rate)) {
        throw Error(ErrorKind::Unsupported, "'" + file.path() + "': the speaker encoder expects " +
                                                std::to_string(hp_.mel_dim) + " mel bins at " +
                                                std::to_string(hp_.sample_rate) + " Hz; the mel front end makes 128 bins at 24000 Hz");
    }
    const size_t n = hp_.channels.size();
    for (size_t i = 1; i + 1 < n; ++i) {  // each SE-Res2Net block adds its input back
        if (hp_.channels[i] != hp_.channels[i - 1]) {
            throw Error(ErrorKind::Format, "'" + file.path() + "': speaker encoder block " + std::to_string(i) +
                                               " changes the width from " + std::to_string(hp_.channels[i - 1]) +
                                               " to " + std::to_string(hp_.channels[i]) +
                                               "; its residual connection needs equal widths");
        }
    }
    for (const auto& spec : qwen3tts::expected_tensors(hparams)) {
        if (spec.component != qwen3tts::Component::SpeakerEncoder) continue;
        const GgufTensorInfo& info = file.tensor(spec.name, spec.shape);
        if (info.type != GGML_TYPE_F32) {
            throw Error(ErrorKind::Format, "'" + file.path() + "': tensor '" + spec.name + "' is " +
                                               ggml_type_name(info.type) + "; the speaker encoder needs f32");
        }
    }
    weights_ = std::make_unique<WeightStore>(file, backend.get(), std::vector<std::string>{"spk_enc."});

    block0_ = conv("spk_enc.blk.0.conv", hp_.kernel_sizes[0], hp_.dilations[0]);
    for (size_t i = 1; i + 1 < n; ++i) {
        const std::string p = "spk_enc.blk." + std::to_string(i) + ".";
        Block b;
        b.tdnn1 = conv(p + "tdnn1", 1, 1);
        for (uint32_t j = 0; j + 1 < hp_.res2net_scale; ++j) {
            b.res2net.push_back(conv(p + "res2net." + std::to_string(j), hp_.kernel_sizes[i], hp_.dilations[i]));
        }
        b.tdnn2 = conv(p + "tdnn2", 1, 1);
        b.se1 = conv(p + "se1", 1, 1);
        b.se2 = conv(p + "se2", 1, 1);
        blocks_.push_back(std::move(b));
    }
    mfa_ = conv("spk_enc.mfa", hp_.kernel_sizes[n - 1], hp_.dilations[n - 1]);
    asp_tdnn_ = conv("spk_enc.asp.tdnn", 1, 1);
    asp_conv_ = conv("spk_enc.asp.conv", 1, 1);
    fc_ = conv("spk_enc.fc", 1, 1);

    alloc_ = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get()));
    if (!alloc_) throw Error(ErrorKind::Internal, "cannot create a graph allocator for the speaker encoder");
}

SpeakerEncoder::~SpeakerEncoder() {
    if (alloc_) ggml_gallocr_free(alloc_);
}

SpeakerEncoder::Conv SpeakerEncoder::conv(const std::string& name, int kernel, int dilation) {
    Conv c{weights_->get(name + ".weight"), weights_->get(name + ".bias"), kernel, dilation};
    const int total = dilation * (kernel - 1);
    min_frames_ = std::max<int64_t>(min_frames_, total - total / 2 + 1);
    return c;
}

// TDNN: Conv1d(padding="same", padding_mode="reflect") [+ ReLU] on x [T, in] (channels first).
ggml_tensor* SpeakerEncoder::tdnn(ggml_context* ctx, ggml_tensor* x, const Conv& c, bool relu) const {
    ggml_tensor* cols;
    if (c.kernel == 1) {
        cols = ggml_cont(ctx, ggml_transpose(ctx, x));  // [in, T]
    } else {
        const int total = c.dilation * (c.kernel - 1);
        ggml_tensor* padded = ggml_pad_reflect_1d(ctx, x, total / 2, total - total / 2);
        // F32 columns: ggml_conv_1d would round the activations to F16.
        cols = ggml_im2col(ctx, c.w, padded, 1, 0, 0, 0, c.dilation, 0, false, GGML_TYPE_F32);
        cols = ggml_reshape_2d(ctx, cols, cols->ne[0], cols->ne[1]);  // [in * k, T]
    }
    ggml_tensor* y = product_to_channels_first(ctx, matrix(ctx, c.w), cols);
    y = ggml_add(ctx, y, ggml_reshape_2d(ctx, c.b, 1, c.b->ne[0]));
    return relu ? ggml_relu(ctx, y) : y;
}

std::vector<float> SpeakerEncoder::embed(const audio::MelSpectrogram& mel, Capture* capture, StageTimes* times) {
    const int64_t frames = mel.frames;
    if (mel.n_mels != hp_.mel_dim || mel.data.size() != static_cast<size_t>(mel.n_mels * frames)) {
        throw Error(ErrorKind::InvalidArgument, "the speaker encoder needs " + std::to_string(hp_.mel_dim) +
                                                    " mel bins; got " + std::to_string(mel.n_mels));
    }
    if (frames < min_frames_) {
        throw Error(ErrorKind::InvalidArgument, "audio too short for the speaker encoder: " + std::to_string(frames) +
                                                    " mel frames (at least " + std::to_string(min_frames_) + ")");
    }

    // Generous node budget: about 12 nodes per Res2Net conv, 40 per block, 60 for the rest.
    const size_t nodes = 256 + blocks_.size() * (16 * hp_.res2net_scale + 64);
    const size_t meta = ggml_tensor_overhead() * nodes + ggml_graph_overhead_custom(nodes, false);
    ggml_context* ctx = ggml_init({meta, nullptr, /*no_alloc=*/true});
    if (!ctx) throw Error(ErrorKind::Internal, "cannot create a ggml context for the speaker encoder");
    std::unique_ptr<ggml_context, decltype(&ggml_free)> guard(ctx, ggml_free);
    ggml_cgraph* graph = ggml_new_graph_custom(ctx, nodes, false);
    // Activations are [T, C] (time contiguous), already PyTorch's [C, T].
    GraphCapture captured(capture != nullptr);
    auto keep = [&](ggml_tensor* t, const std::string& name) {
        captured.mark(ctx, graph, name, t, GraphCapture::Layout::AsIs);
        return t;
    };

    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, frames, hp_.mel_dim);
    ggml_set_input(x);

    GraphStages stages("speaker pooling");
    const auto mark = [&](ggml_tensor* t, const std::string& stage) {
        ggml_build_forward_expand(graph, t);
        stages.mark(graph, stage);
    };
    ggml_tensor* h = keep(tdnn(ctx, x, block0_), "blocks.0");
    mark(h, "speaker block 0");
    ggml_tensor* mfa_in = nullptr;
    for (const Block& b : blocks_) {
        ggml_tensor* t = tdnn(ctx, h, b.tdnn1);
        // Res2Net: chunk j goes through conv j-1 after adding the previous chunk's output.
        const int64_t width = t->ne[1] / hp_.res2net_scale;
        auto chunk = [&](int64_t j) { return ggml_view_2d(ctx, t, frames, width, t->nb[1], j * width * t->nb[1]); };
        ggml_tensor* y = chunk(0);
        ggml_tensor* cat = y;
        for (size_t j = 1; j <= b.res2net.size(); ++j) {
            ggml_tensor* in = j == 1 ? chunk(1) : ggml_add(ctx, chunk(static_cast<int64_t>(j)), y);
            y = tdnn(ctx, in, b.res2net[j - 1]);
            cat = ggml_concat(ctx, cat, y, 1);
        }
        t = tdnn(ctx, cat, b.tdnn2);
        // Squeeze-excitation: per-channel gates from the mean over time.
        ggml_tensor* z = ggml_reshape_2d(ctx, ggml_mean(ctx, t), t->ne[1], 1);
        z = ggml_relu(ctx, linear(ctx, z, b.se1.w, b.se1.b));
        z = ggml_sigmoid(ctx, linear(ctx, z, b.se2.w, b.se2.b));
        const std::string number = std::to_string(&b - blocks_.data() + 1);
        h = keep(ggml_add(ctx, ggml_mul(ctx, t, ggml_reshape_2d(ctx, z, 1, t->ne[1])), h), "blocks." + number);
        mark(h, "speaker block " + number);
        mfa_in = mfa_in ? ggml_concat(ctx, mfa_in, h, 1) : h;
    }
    ggml_tensor* H = keep(tdnn(ctx, mfa_in, mfa_), "mfa");
    mark(H, "speaker mfa");
    const int64_t channels = H->ne[1];

    // Attentive statistics pooling. Global context: uniform mean and std over time.
    ggml_tensor* mu = ggml_reshape_2d(ctx, ggml_mean(ctx, H), channels, 1);
    ggml_tensor* var = ggml_mean(ctx, ggml_sqr(ctx, ggml_sub(ctx, H, ggml_reshape_2d(ctx, mu, 1, channels))));
    ggml_tensor* sd = ggml_reshape_2d(ctx, clamped_sqrt(ctx, var), channels, 1);
    // asp.tdnn on [H; mu; sd] split by input columns: W_H·H + (W_mu·mu + W_sd·sd + b), the last
    // term constant over time, so the [3C, T] concatenation is never built.
    ggml_tensor* w = matrix(ctx, asp_tdnn_.w);
    const int64_t att = w->ne[1];
    auto part = [&](int64_t i) { return ggml_view_2d(ctx, w, channels, att, w->nb[1], i * channels * w->nb[0]); };
    ggml_tensor* global = ggml_add(ctx, ggml_add(ctx, ggml_mul_mat(ctx, part(1), mu), ggml_mul_mat(ctx, part(2), sd)),
                                   asp_tdnn_.b);
    ggml_tensor* Ht = ggml_cont(ctx, ggml_transpose(ctx, H));  // [C, T]
    ggml_tensor* a = ggml_add(ctx, ggml_mul_mat(ctx, part(0), Ht), global);  // [att, T]
    a = ggml_tanh(ctx, ggml_relu(ctx, a));
    a = ggml_add(ctx, product_to_channels_first(ctx, matrix(ctx, asp_conv_.w), a), ggml_reshape_2d(ctx, asp_conv_.b, 1, channels));
    ggml_tensor* alpha = keep(ggml_soft_max(ctx, a), "asp_attention");  // over time, per channel
    ggml_tensor* mean = ggml_sum_rows(ctx, ggml_mul(ctx, alpha, H));
    ggml_tensor* dev = ggml_sqr(ctx, ggml_sub(ctx, H, mean));
    ggml_tensor* sdev = clamped_sqrt(ctx, ggml_sum_rows(ctx, ggml_mul(ctx, alpha, dev)));
    ggml_tensor* pooled = keep(ggml_concat(ctx, mean, sdev, 1), "pooled");  // [1, 2C]
    ggml_tensor* e = linear(ctx, ggml_reshape_2d(ctx, pooled, 2 * channels, 1), fc_.w, fc_.b);
    ggml_set_output(e);
    ggml_build_forward_expand(graph, e);

    backend_.check_supported(graph);
    if (!ggml_gallocr_alloc_graph(alloc_, graph)) {
        throw Error(ErrorKind::Io, "cannot allocate the speaker encoder's compute buffer on " + backend_.description());
    }
    ggml_backend_tensor_set(x, mel.data.data(), 0, ggml_nbytes(x));
    backend_.compute(graph, stages, times);

    if (capture) captured.read(*capture);
    return tensor_to_floats(e);
}

}  // namespace talkbox::voice
