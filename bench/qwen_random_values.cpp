#include "qwen_random_values.h"

#include <cmath>
#include <cstring>

namespace talkbox::bench {

float qwen_random_value(const std::string& name, const std::vector<int64_t>& torch_shape, Rng& rng, CodecInit codec_init) {
    const auto ends = [&](const char* s) { return name.size() >= strlen(s) && name.compare(name.size() - strlen(s), strlen(s), s) == 0; };
    if (ends("cluster_usage") || ends("initialized")) return 1.0f;
    const bool codebook = ends("embedding_sum") || ends("embed_sum");
    if (codec_init == CodecInit::Official && name.rfind("decoder.", 0) == 0 && !codebook) {
        if (ends("gamma")) return 1e-6f;
        if (ends("layer_scale.scale")) return 0.01f;
        if (ends(".alpha") || ends(".beta") || ends(".bias")) return 0.0f;
        if (torch_shape.size() == 1) return 1.0f;  // norm weights
        return 0.02f * rng.normal();
    }
    if (ends("layer_scale.scale") || ends("gamma")) return 0.01f;
    if (ends(".alpha") || ends(".beta")) return 0.0f;  // SnakeBeta parameters are log-scale
    if (ends(".bias")) return 0.0f;
    if (torch_shape.size() == 1) return 1.0f;  // norm weights
    if (ends("embedding_sum") || ends("embed_sum") || name.find("embedding") != std::string::npos) return rng.normal();
    int64_t fan_in = 1;
    for (size_t i = 1; i < torch_shape.size(); ++i) fan_in *= torch_shape[i];
    return rng.normal() / std::sqrt(static_cast<float>(fan_in));
}

}  // namespace talkbox::bench
