#include "family/sine/sine_family.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "core/gguf_file.h"
#include "talkbox/error.h"

namespace talkbox::sine {

namespace {

ModelIdentity identity() {
    ModelIdentity id;
    id.architecture = kArchitecture;
    id.family = "Sine";
    id.variant = "tone";
    id.variant_name = "Tone";
    id.author = "talkbox tests";
    return id;
}

int sample_rate_of(const GgufFile& file) {
    return file.meta().has_key("sine.sample_rate") ? static_cast<int>(file.meta().get_u32("sine.sample_rate")) : kSampleRate;
}

Capabilities capabilities_of(int sample_rate) {
    Capabilities c;
    static_cast<ModelIdentity&>(c) = identity();
    c.sample_rate = sample_rate;
    c.frames_per_second = 12.5;
    c.builtin_voice = true;
    c.frame_streaming = true;
    c.kv_cache_types = {"f32"};
    c.fields = {{"pitch", 20, 4000, false, false, kDefaultPitch}};
    return c;
}

float amplitude_of(const GgufFile& file) {
    const GgufTensorInfo& t = file.tensor("sine.amplitude", {1});
    if (t.type != GGML_TYPE_F32) throw Error(ErrorKind::Format, file.path() + ": sine.amplitude must be F32");
    float a = 0;
    std::memcpy(&a, t.data, sizeof a);
    return a;
}

class SineSession : public FamilySession {
public:
    SineSession(float amplitude, int sample_rate) : amplitude_(amplitude), sample_rate_(sample_rate) {}

    SpeechResult speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions&,
                       const std::atomic<bool>* cancel) override {
        const auto start = std::chrono::steady_clock::now();
        const auto pitch = request.family_settings.find("pitch");
        const double hz = pitch == request.family_settings.end() ? kDefaultPitch : pitch->second;
        SpeechResult result;
        result.seed = request.sampling.seed.value_or(0);
        std::vector<float> frame(static_cast<size_t>(kSamplesPerFrame) * sample_rate_ / kSampleRate);
        for (unsigned char byte : request.text) {
            if ((byte & 0xC0) == 0x80) continue;  // one frame per code point
            if (cancel && cancel->load()) {
                result.stop_reason = StopReason::Cancelled;
                break;
            }
            for (float& s : frame) {
                s = amplitude_ * static_cast<float>(std::sin(2 * M_PI * hz * static_cast<double>(result.samples++) / sample_rate_));
            }
            result.frames.push_back({static_cast<int32_t>(result.frames.size())});
            if (result.timings.first_audio_ms == 0) {
                result.timings.first_audio_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            }
            on_audio(frame.data(), frame.size());
        }
        result.timings.steps = static_cast<uint32_t>(result.frames.size());
        result.timings.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        return result;
    }

private:
    float amplitude_;
    int sample_rate_;
};

class SineModel : public FamilyModel {
public:
    explicit SineModel(const GgufFile& file) : capabilities_(capabilities_of(sample_rate_of(file))), amplitude_(amplitude_of(file)) {}
    const Capabilities& capabilities() const override { return capabilities_; }
    int threads() const override { return 1; }
    int decoder_threads() const override { return 1; }
    std::unique_ptr<FamilySession> new_session() const override { return std::make_unique<SineSession>(amplitude_, capabilities_.sample_rate); }

private:
    Capabilities capabilities_;
    float amplitude_;
};

std::unique_ptr<FamilyModel> load(std::shared_ptr<const GgufFile> file, const ModelOptions& options) {
    if (!options.device.empty() && options.device != "cpu") {
        throw Error(ErrorKind::Unsupported, "the sine family computes on the CPU only, not on " + options.device);
    }
    return std::make_unique<SineModel>(*file);
}

ModelInfo describe(const GgufFile& file) {
    ModelInfo info;
    static_cast<ModelIdentity&>(info) = identity();
    info.path = file.path();
    info.name = file.meta().get_string("general.name");
    info.weight_type = "f32";
    info.voice = "a built-in sine tone";
    info.hyperparameters["amplitude"] = std::to_string(amplitude_of(file));
    return info;
}

}  // namespace

Family family() {
    Family f{kArchitecture, load, describe, nullptr, nullptr, nullptr, nullptr, {}};
    f.settings = {{"pitch", false, "Sine: the tone's frequency in Hz (default 440)"}};
    return f;
}

}  // namespace talkbox::sine
