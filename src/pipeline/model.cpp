// talkbox::Model / Session over the family registry, and the request checks every family shares.
#include "talkbox/model.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <random>

#include "core/clock.h"
#include "core/device.h"
#include "core/gguf_file.h"
#include "core/packed_kernels.h"
#include "core/packed_matmul.h"
#include "core/strings.h"
#include "pipeline/families.h"
#include "talkbox/audio.h"
#include "talkbox/error.h"
#include "talkbox/speech_settings.h"
#include "talkbox/watermark.h"
#include "voice/reference_audio.h"
#include "voice/voice_file.h"

namespace talkbox {

namespace {

std::string accepted(const Capabilities& c) {
    std::string out;
    const auto add = [&](const std::string& name) { out += (out.empty() ? "" : ", ") + name; };
    if (!c.speakers.empty()) add("speaker");
    if (c.takes_instruct) add("instructions");
    if (c.clones) add("voice");
    if (c.text_modes) add("text_mode");
    for (const auto& f : c.fields) add(f.name);
    return out;
}

}  // namespace

const char* stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::Eos: return "eos";
        case StopReason::MaxFrames: return "max_frames";
        case StopReason::Cancelled: return "cancelled";
        case StopReason::Stalled: return "stalled";
    }
    return "?";
}

uint64_t random_seed() { return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}(); }

const RequestField* Capabilities::field(const std::string& name) const {
    for (const auto& f : fields) {
        if (f.name == name) return &f;
    }
    return nullptr;
}

std::string ModelIdentity::description() const { return family + " " + (size.empty() ? "" : size + " ") + variant_name; }

namespace {

// Capability checks shared by every family: the first request field `c` does not take.
std::optional<Refusal> check_request(const Capabilities& c, const SpeechRequest& r) {
    const auto refuse = [&](const char* field, const std::string& what) {
        return Refusal{field, what + " is not a setting of " + c.description() + " (it takes " + accepted(c) + ")"};
    };
    if (!r.speaker.empty() && c.speakers.empty()) return refuse("speaker", "a preset speaker");
    if (r.instruct.find_first_not_of(" \t\r\n") != std::string::npos && !c.takes_instruct) return refuse("instructions", "an instruction");
    if (r.voice && !c.clones) return refuse("voice", "a cloned voice");
    if (r.text_mode != TextMode::Default && !c.text_modes) return refuse("text_mode", "the text mode");
    const std::vector<SpeechSetting> settings = speech_settings();
    for (const auto& entry : r.family_settings) {
        const std::string& name = entry.first;
        // A family's own setting set by name without the table (the C++ API): refused, never ignored.
        const bool declared = std::any_of(settings.begin(), settings.end(), [&](const SpeechSetting& s) { return s.name == name && !s.get; });
        if (!declared) return Refusal{name, "'" + name + "' is not a setting of any model family (settings: " + speech_setting_names(settings) + ")"};
    }
    for (const SpeechSetting& setting : settings) {
        const std::optional<double> value = setting_value(r, setting);
        if (!value) continue;
        const char* name = setting.name;
        const RequestField* f = c.field(name);
        if (!f) return refuse(name, name);
        const double v = *value;
        const bool low = f->min_exclusive ? !(v > f->min) : !(v >= f->min);
        if (low || !(v <= f->max) || (f->integer && v != std::floor(v))) {
            return Refusal{name, std::string(name) + " must be " + (f->integer ? "an integer " : "") + "in " +
                                     (f->min_exclusive ? "(" : "[") + number_text(f->min) + ", " + number_text(f->max) + "] for " +
                                     c.description() + ", got " + number_text(v)};
        }
    }
    return std::nullopt;
}

}  // namespace

std::string cpu_kernels() {
    const packed::kernels::KernelSet* set = packed::kernel_set();
    return set ? set->name : "ggml";
}

Model::Model(const std::string& path, const ModelOptions& options) : path_(path) {
    auto file = std::make_shared<const GgufFile>(path);
    const Family& family = family_of(*file);
    // auto becomes a device here, where the weights' size is known; the family gets a concrete one.
    size_t weight_bytes = 0;
    for (const auto& t : file->tensors()) weight_bytes += t.nbytes;
    ModelOptions placed = options;
    placed.device = choose_device(options.device, weight_bytes).id;
    device_ = placed.device;
    impl_ = family.load(std::move(file), placed);
    const auto& kv = impl_->capabilities().kv_cache_types;
    if (std::find(kv.begin(), kv.end(), options.kv_cache) == kv.end()) {
        std::string list;
        for (const auto& k : kv) list += (list.empty() ? "" : ", ") + k;
        throw Error(ErrorKind::InvalidArgument, "the KV cache type '" + options.kv_cache + "' is not offered by " +
                                                    impl_->capabilities().description() + " (it takes " + list + ")");
    }
#if defined(__GLIBC__)
    // Loading re-lays weights through large temporary vectors; glibc keeps the freed heap pages
    // resident (~100 MB on the 0.6B model) unless asked to hand them back.
    malloc_trim(0);
#endif
}

Model::~Model() = default;

const Capabilities& Model::capabilities() const { return impl_->capabilities(); }
int Model::threads() const { return impl_->threads(); }
int Model::decoder_threads() const { return impl_->decoder_threads(); }
std::optional<Refusal> Model::check(const SpeechRequest& request) const { return check_request(capabilities(), request); }
std::string Model::voice_mismatch(const Voice& voice) const { return impl_->voice_mismatch(voice); }
std::vector<float> Model::decode(const std::vector<Frame>& frames) const { return impl_->decode(frames); }
std::vector<float> Model::decode(const std::vector<Frame>& frames, const StreamOptions& stream) const {
    if (stream.frames_per_chunk == 0) throw Error(ErrorKind::InvalidArgument, "frames per chunk must be at least 1");
    return impl_->decode_streamed(frames, stream);
}

Voice Model::create_voice(const std::string& ref_audio_path, const std::optional<std::string>& ref_text,
                          std::vector<std::string>* warnings, const CloneStop& stop) const {
    const Capabilities& c = capabilities();
    if (!c.clones) {
        throw Error(ErrorKind::Unsupported, "'" + path_ + "' is " + c.description() +
                                                ", which does not clone voices (clone with a model that takes voice files)");
    }
    if (ref_text && !c.clone_transcript) {
        throw Error(ErrorKind::InvalidArgument, c.description() + " clones a voice from the audio alone: drop the reference transcript");
    }
    if (ref_text) voice::check_transcript(*ref_text);  // before any slow work
    stop.check("reading the reference audio");
    const voice::ReferenceAudio ref = voice::load_reference_audio(ref_audio_path);
    stop.check("the voice encoders");
    Voice v = impl_->clone_voice(ref, ref_text, ref_audio_path, stop);
    if (warnings) warnings->insert(warnings->end(), ref.warnings.begin(), ref.warnings.end());
    return v;
}

ConvertedVoice Model::convert_voice(const std::vector<float>& samples, int sample_rate, const Voice* target,
                                    const ConversionSettings& settings) const {
    const Capabilities& c = capabilities();
    if (!c.converts_voices) {
        throw Error(ErrorKind::Unsupported, "'" + path_ + "' is " + c.description() +
                                                ", which does not convert voices");
    }
    audio::check_audio_format(sample_rate, 1, voice::kReferenceLimits, "the recording");
    const double seconds = static_cast<double>(samples.size()) / sample_rate;
    if (seconds > voice::kMaxReferenceSeconds) {
        throw Error(ErrorKind::InvalidArgument, "the recording is " + std::to_string(seconds) + " s long; voice conversion takes at most " +
                                                    std::to_string(static_cast<int>(voice::kMaxReferenceSeconds)) + " s");
    }
    audio::check_samples(samples.data(), samples.size(), "the recording");
    if (target) {
        const std::string mismatch = impl_->voice_mismatch(*target);
        if (!mismatch.empty()) throw Error(ErrorKind::InvalidArgument, mismatch);
    }
    ConvertedVoice out = impl_->convert_voice(audio::MonoAudio{samples, sample_rate, 1}, target, settings.seed, settings.cancel);
    if (settings.watermark) {  // the last step of ChatterboxVC.generate, as of every official generate()
        const auto start = Clock::now();
        out.pcm = settings.watermark->embed(out.pcm, c.sample_rate);
        out.watermarked = true;
        out.seconds += ms_between(start, Clock::now()) / 1000.0;
    }
    return out;
}

Voice create_voice(const std::string& model_path, const std::string& ref_audio_path, const std::optional<std::string>& ref_text,
                   int threads, std::vector<std::string>* warnings, const CloneStop& stop) {
    stop.check("loading the model");
    ModelOptions options;
    options.threads = threads;
    return Model(model_path, options).create_voice(ref_audio_path, ref_text, warnings, stop);
}

Session::Session(const Model& model) : model_(model), impl_(model.impl_->new_session()) {}
Session::~Session() = default;

namespace {

void require_fit(const Model& model, const SpeechRequest& request) {
    if (auto refusal = model.check(request)) throw Error(ErrorKind::InvalidArgument, refusal->message);
}

}  // namespace

SpeechResult Session::generate(const SpeechRequest& request, const FrameCallback& on_frame, const std::atomic<bool>* cancel) {
    require_fit(model_, request);
    return impl_->generate(request, on_frame, cancel);
}

SpeechResult Session::speak(const SpeechRequest& request, const AudioCallback& on_audio, const StreamOptions& stream,
                            const std::atomic<bool>* cancel) {
    require_fit(model_, request);
    return impl_->speak(request, on_audio, stream, cancel);
}

void Session::speak_all(const std::vector<SpeechRequest>& requests, const IndexedAudioCallback& on_audio,
                        const ResultCallback& on_done, const StreamOptions& stream, const std::atomic<bool>* cancel) {
    for (const SpeechRequest& r : requests) require_fit(model_, r);
    impl_->speak_all(requests, on_audio, on_done, stream, cancel);
}

}  // namespace talkbox
