#include "chatterbox/tiny_s3gen_weights.h"

#include <cmath>
#include <random>

#include "talkbox/error.h"

namespace talkbox::testing {

namespace {

using chatterbox::HostTensor;

// torch 1.13's CPUGeneratorImpl and the CPU kernels of randn / rand.
class TorchGenerator {
public:
    explicit TorchGenerator(uint64_t seed) : engine_(static_cast<uint32_t>(seed & 0xffffffffu)) {}

    std::vector<float> randn(int64_t n) {
        std::vector<float> out(static_cast<size_t>(n));
        if (n >= 16) {  // normal_fill: uniforms first, then Box-Muller over blocks of 16
            for (float& v : out) v = uniform_float();
            for (int64_t i = 0; i + 16 <= n; i += 16) fill16(out.data() + i);
            if (n % 16 != 0) {  // the last 16 values are drawn again
                float* tail = out.data() + n - 16;
                for (int i = 0; i < 16; ++i) tail[i] = uniform_float();
                fill16(tail);
            }
        } else {
            for (float& v : out) v = static_cast<float>(normal_double());
        }
        return out;
    }

    std::vector<float> rand(int64_t n) {
        std::vector<float> out(static_cast<size_t>(n));
        for (float& v : out) v = uniform_float();
        return out;
    }

private:
    float uniform_float() { return static_cast<float>(engine_() & ((1u << 24) - 1)) * (1.0f / static_cast<float>(1u << 24)); }
    double uniform_double() {
        const uint64_t hi = engine_(), lo = engine_();
        const uint64_t v = (hi << 32) | lo;
        return static_cast<double>(v & ((uint64_t{1} << 53) - 1)) * std::ldexp(1.0, -53);
    }
    double normal_double() {
        if (has_cached_) {
            has_cached_ = false;
            return cached_;
        }
        const double u1 = uniform_double(), u2 = uniform_double();
        const double r = std::sqrt(-2.0 * std::log1p(-u2)), theta = 2.0 * M_PI * u1;
        cached_ = r * std::sin(theta);
        has_cached_ = true;
        return r * std::cos(theta);
    }
    static void fill16(float* d) {
        for (int j = 0; j < 8; ++j) {
            const float u1 = 1.0f - d[j], u2 = d[j + 8];
            const float radius = std::sqrt(-2.0f * std::log(u1));
            const float theta = 2.0f * static_cast<float>(M_PI) * u2;
            d[j] = radius * std::cos(theta);
            d[j + 8] = radius * std::sin(theta);
        }
    }

    std::mt19937 engine_;
    bool has_cached_ = false;
    double cached_ = 0;
};

int64_t numel(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

std::map<std::string, HostTensor> tiny_s3gen_weights(const std::map<std::string, std::vector<int64_t>>& shapes, uint64_t seed) {
    TorchGenerator g(seed);
    std::map<std::string, HostTensor> out;
    // randn(shape) * std with the scalar rounded to float32, as torch multiplies.
    auto nrm = [&](int64_t n, double std) {
        std::vector<float> v = g.randn(n);
        for (float& x : v) x *= static_cast<float>(std);
        return v;
    };
    for (const auto& [k, shape] : shapes) {  // std::map: sorted keys, like sorted(state_dict)
        const int64_t n = numel(shape);
        HostTensor t{shape, {}};
        if (ends_with(k, "parametrizations.weight.original1")) {
            t.data = nrm(n, 1.0);
        } else if (ends_with(k, "parametrizations.weight.original0")) {
            const std::vector<int64_t>& v = shapes.at(k.substr(0, k.size() - 1) + "1");
            const int64_t per_row = numel(v) / v[0];
            double fan = static_cast<double>(per_row);
            if (contains(k, ".ups.")) {
                const int stage = k[k.find(".ups.") + 5] - '0';
                fan = static_cast<double>(v[0] * v[2]) / (stage == 0 ? 8 : stage == 1 ? 5 : 3);
            }
            double gain = 1.0;
            if (contains(k, "conv_post")) gain = 0.5;
            if (contains(k, "f0_predictor")) gain = 1.2;
            if (contains(k, "resblocks")) gain = 0.6;
            const float scale = static_cast<float>(std::sqrt(static_cast<double>(per_row)) * (gain / std::sqrt(fan)));
            t.data = g.randn(n);
            for (float& x : t.data) x = (x * 0.1f + 1.0f) * scale;
        } else if (ends_with(k, ".alpha")) {
            t.data = g.rand(n);
            for (float& x : t.data) x = x + 0.5f;
        } else if (ends_with(k, "pos_bias_u") || ends_with(k, "pos_bias_v")) {
            t.data = nrm(n, 0.1);
        } else if (k == "flow.input_embedding.weight") {
            t.data = nrm(n, 1.0);
        } else if ((contains(k, ".norm") || contains(k, "after_norm") || contains(k, ".out.1.") || contains(k, ".block.2.")) &&
                   shape.size() == 1) {
            t.data = nrm(n, 0.1);
            if (ends_with(k, "weight")) {
                for (float& x : t.data) x = x + 1.0f;
            }
        } else if (ends_with(k, "bias")) {
            t.data = nrm(n, 0.05);
            if (k == "flow.decoder.estimator.final_proj.bias" || k == "flow.encoder_proj.bias") {
                t.data = nrm(n, 1.0);
                for (float& x : t.data) x = x + -5.0f;
            } else if (k == "mel2wav.f0_predictor.classifier.bias") {
                t.data.assign(static_cast<size_t>(n), -140.0f);
            } else if (k == "mel2wav.conv_post.bias") {
                std::vector<float> a = nrm(9, 0.3);
                for (float& x : a) x = x + -1.5f;
                const std::vector<float> b = nrm(n - 9, 0.5);
                a.insert(a.end(), b.begin(), b.end());
                t.data = a;
            }
        } else {
            const double fan = shape.size() == 2 ? static_cast<double>(shape[1]) : static_cast<double>(shape[1] * shape[2]);
            double gain = 1.0;
            if (k == "mel2wav.f0_predictor.classifier.weight") gain = 40.0;
            if (ends_with(k, "time_embed_mixer.weight")) gain = 0.7;
            if (contains(k, "mel2wav.source_downs")) gain = 3.0;
            t.data = nrm(n, gain / std::sqrt(fan));
        }
        out.emplace(k, std::move(t));
    }
    return out;
}

}  // namespace talkbox::testing
