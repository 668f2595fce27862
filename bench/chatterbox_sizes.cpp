#include "chatterbox_sizes.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "convert/safetensors.h"
#include "talkbox/error.h"

namespace talkbox::bench {

namespace {

bool starts(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

constexpr int64_t kT3Width = 1024, kT3Ffn = 4096, kT3Layers = 30;

// S3Gen: tiny width → real width, per component; kernel sizes (the last dim of a 3-D conv) never scale.
int64_t s3gen_dim(const std::string& key, int64_t d) {
    static const std::map<int64_t, int64_t> encoder{{32, 512}, {64, 2048}, {2, 8}, {16, 64}};
    static const std::map<int64_t, int64_t> estimator{{32, 256}, {64, 512}, {128, 1024}, {256, 2048}};
    static const std::map<int64_t, int64_t> hift{{32, 512}, {16, 256}, {8, 128}, {4, 64}};
    const std::map<int64_t, int64_t>* m = nullptr;
    if (starts(key, "flow.decoder.")) m = &estimator;
    else if (starts(key, "mel2wav.")) m = &hift;
    else if (starts(key, "flow.encoder") || starts(key, "flow.input_embedding")) m = &encoder;
    if (key == "flow.encoder_proj.weight") return d == 32 ? 512 : d;
    if (!m) return d;
    const auto it = m->find(d);
    return it == m->end() ? d : it->second;
}

}  // namespace

Shapes safetensors_shapes(const std::string& path, const std::vector<std::string>& prefixes) {
    const SafetensorsFile f(path);
    Shapes out;
    for (const auto& t : f.tensors()) {
        bool keep = prefixes.empty();
        for (const auto& p : prefixes) keep = keep || starts(t.name, p);
        if (keep) out[t.name] = t.shape;
    }
    return out;
}

Shapes t3_released_shapes(const Shapes& tiny) {
    const auto norm = tiny.find("tfmr.norm.weight");
    if (norm == tiny.end() || norm->second.size() != 1) throw Error(ErrorKind::Format, "T3 layout without tfmr.norm.weight");
    const int64_t d = norm->second[0];
    const std::regex layer(R"(^tfmr\.layers\.(\d+)\.(.*)$)");
    Shapes out;
    for (const auto& [key, s] : tiny) {
        std::vector<int64_t> r = s;
        for (size_t i = 0; i < r.size(); ++i) {
            if (key == "cond_enc.spkr_enc.weight" && i == 1) continue;                       // speaker embedding size
            if (key.find("pre_attention_query") != std::string::npos && i + 1 < r.size()) continue;  // [1, queries, D]
            if (r[i] == d) r[i] = kT3Width;
            else if (r[i] == 4 * d) r[i] = kT3Ffn;
        }
        std::smatch m;
        if (std::regex_match(key, m, layer)) {
            if (m[1].str() != "0") continue;
            for (int64_t l = 0; l < kT3Layers; ++l) out["tfmr.layers." + std::to_string(l) + "." + m[2].str()] = r;
        } else {
            out[key] = r;
        }
    }
    return out;
}

Shapes s3gen_released_shapes(const Shapes& tiny, bool meanflow) {
    Shapes out;
    auto add = [&](const std::string& key, const std::vector<int64_t>& s) {
        std::vector<int64_t> r = s;
        const size_t scaled = s.size() == 3 ? 2 : s.size();
        for (size_t i = 0; i < scaled; ++i) r[i] = s3gen_dim(key, s[i]);
        out[key] = r;
    };
    const std::regex enc(R"(^flow\.encoder\.encoders\.1\.(.*)$)"), mid(R"(^flow\.decoder\.estimator\.mid_blocks\.1\.(.*)$)"),
        tf(R"(^(flow\.decoder\.estimator\.(?:down_blocks\.0|up_blocks\.0|mid_blocks\.\d+)\.1)\.0\.(.*)$)");
    Shapes expanded;
    for (const auto& [k, s] : tiny) {
        if (!starts(k, "flow.") && !starts(k, "mel2wav.")) continue;
        std::smatch m;
        expanded[k] = s;
        if (std::regex_match(k, m, enc))
            for (int i = 2; i < 6; ++i) expanded["flow.encoder.encoders." + std::to_string(i) + "." + m[1].str()] = s;
        if (std::regex_match(k, m, mid))
            for (int i = 2; i < 12; ++i) expanded["flow.decoder.estimator.mid_blocks." + std::to_string(i) + "." + m[1].str()] = s;
    }
    for (const auto& [k, s] : expanded) {
        std::smatch m;
        add(k, s);
        if (std::regex_match(k, m, tf))
            for (int i = 1; i < 4; ++i) add(m[1].str() + "." + std::to_string(i) + "." + m[2].str(), s);
    }
    if (meanflow) out["flow.decoder.estimator.time_embed_mixer.weight"] = {1024, 2048};
    return out;
}

Shapes ve_released_shapes(const Shapes& tiny) {
    const auto hh = tiny.find("lstm.weight_hh_l0");
    if (hh == tiny.end() || hh->second.size() != 2) throw Error(ErrorKind::Format, "voice encoder layout without lstm.weight_hh_l0");
    const int64_t h = hh->second[1];
    Shapes out;
    for (const auto& [key, s] : tiny) {
        std::vector<int64_t> r = s;
        for (auto& d : r) {
            if (d == h) d = 256;
            else if (d == 4 * h) d = 1024;
        }
        out[key] = r;
    }
    return out;
}

void fill_chatterbox_weights(const std::string& key, const std::vector<int64_t>& shape, std::vector<float>& values, Rng& rng) {
    const bool vec = shape.size() <= 1;
    const auto has = [&](const char* s) { return key.find(s) != std::string::npos; };
    if (has("original0") || has("num_batches_tracked")) {
        std::fill(values.begin(), values.end(), has("original0") ? 1.0f : 0.0f);
        return;
    }
    const double fan = vec ? 1.0 : static_cast<double>(values.size()) / static_cast<double>(shape[0]);
    const float sd = static_cast<float>(vec ? 0.05 : 1.0 / std::sqrt(fan));
    for (float& v : values) v = sd * rng.normal();
    if (has("running_var")) {
        for (float& v : values) v = 1.0f + std::fabs(v);
    } else if (has(".alpha") || (vec && has("weight"))) {
        for (float& v : values) v += 1.0f;
    }
}

}  // namespace talkbox::bench
