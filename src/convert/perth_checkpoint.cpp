#include "convert/perth_checkpoint.h"

#include <cstring>
#include <memory>
#include <vector>

#include "convert/gguf_writer.h"
#include "convert/torch_checkpoint.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

// The released hparams.yaml values the runtime implements (watermark/perth.h checks them).
constexpr uint32_t kSampleRate = 32000, kNfft = 2048, kHop = 320, kMaxWatermarkHz = 2000, kSubband = 128;

struct Stack {
    const char* prefix;
    int64_t out_channels;
};
constexpr Stack kStacks[] = {{"encoder.layers.", kSubband},
                             {"decoder.slow_layers.", 2},
                             {"decoder.normal_layers.", 2},
                             {"decoder.fast_layers.", 2}};

}  // namespace

PerthConversion convert_perth_checkpoint(const std::string& checkpoint, const std::string& gguf_path,
                                         const std::string& source) {
    const TorchCheckpoint ckpt(checkpoint);
    const auto tensor = [&](const std::string& name) -> const SafetensorsTensor& {
        const SafetensorsTensor* t = ckpt.find("model." + name);
        if (!t) throw Error(ErrorKind::Format, checkpoint + ": no tensor 'model." + name + "' (is it a Perth implicit checkpoint?)");
        if (t->dtype != SafetensorsDtype::F32) throw Error(ErrorKind::Format, checkpoint + ": tensor 'model." + name + "' is not float32");
        return *t;
    };
    PerthConversion result;
    const SafetensorsTensor& first = tensor("encoder.layers.0.conv.weight");
    if (first.shape.size() != 3 || first.shape[1] != kSubband || first.shape[2] != 1) {
        throw Error(ErrorKind::Format, checkpoint + ": 'model.encoder.layers.0.conv.weight' should be [hidden, 128, 1]");
    }
    result.hidden_size = static_cast<int>(first.shape[0]);
    const auto step = ckpt.values().find("step");
    if (step != ckpt.values().end()) result.step = std::stoll(step->second);

    std::unique_ptr<gguf_context, GgufContextDeleter> gguf(gguf_init_empty());
    gguf_context* g = gguf.get();
    gguf_set_val_str(g, "general.architecture", "perth");
    gguf_set_val_str(g, "general.name", "Perth implicit watermarker");
    if (!source.empty()) gguf_set_val_str(g, "general.source.url", source.c_str());
    gguf_set_val_u32(g, "perth.sample_rate", kSampleRate);
    gguf_set_val_u32(g, "perth.n_fft", kNfft);
    gguf_set_val_u32(g, "perth.hop_size", kHop);
    gguf_set_val_u32(g, "perth.max_wmark_freq", kMaxWatermarkHz);
    gguf_set_val_u32(g, "perth.hidden_size", static_cast<uint32_t>(result.hidden_size));
    gguf_set_val_u32(g, "perth.step", static_cast<uint32_t>(result.step));

    std::vector<PlannedTensor> planned;
    for (const Stack& s : kStacks) {
        for (int i = 0; i < 7; ++i) {
            const int64_t in = i == 0 ? kSubband : result.hidden_size;
            const int64_t out = i == 6 ? s.out_channels : result.hidden_size, k = (i == 0 || i == 6) ? 1 : 7;
            for (const bool bias : {false, true}) {
                const std::string name = std::string(s.prefix) + std::to_string(i) + ".conv." + (bias ? "bias" : "weight");
                const SafetensorsTensor& t = tensor(name);
                const std::vector<int64_t> want = bias ? std::vector<int64_t>{out} : std::vector<int64_t>{out, in, k};
                if (t.shape != want) {
                    throw Error(ErrorKind::Format, checkpoint + ": tensor 'model." + name + "' has the wrong shape for hidden size " +
                                                       std::to_string(result.hidden_size));
                }
                const SafetensorsTensor* src = &t;
                planned.push_back({name, GGML_TYPE_F32, std::vector<int64_t>(want.rbegin(), want.rend()),
                                   [src](std::vector<uint8_t>& bytes) {
                                       bytes.resize(src->nbytes);
                                       std::memcpy(bytes.data(), src->data, src->nbytes);
                                   }});
            }
        }
    }
    write_gguf_file(g, planned, gguf_path, {});
    return result;
}

}  // namespace talkbox
