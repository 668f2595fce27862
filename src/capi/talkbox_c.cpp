// The C API (include/talkbox/talkbox.h) over talkbox::Model / Session: handles wrap the C++
// objects, every entry point catches every exception and turns it into a status code and the
// thread's last error message.
#include "talkbox/talkbox.h"

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/audio.h"
#include "talkbox/captions.h"
#include "audio/audio_spool.h"
#include "core/atomic_file.h"
#include "core/strings.h"
#include "talkbox/speech_settings.h"
#include "talkbox/error.h"
#include "talkbox/long_form.h"
#include "talkbox/model.h"
#include "talkbox/ssml.h"
#include "talkbox/voice_file.h"
#include "talkbox/watermark.h"

// The header's version macros and the project's version (CMake) must agree.
static_assert(TALKBOX_VERSION_MAJOR == TALKBOX_PROJECT_VERSION_MAJOR && TALKBOX_VERSION_MINOR == TALKBOX_PROJECT_VERSION_MINOR &&
                  TALKBOX_VERSION_PATCH == TALKBOX_PROJECT_VERSION_PATCH,
              "include/talkbox/talkbox.h: TALKBOX_VERSION_* differ from project(VERSION) in CMakeLists.txt");

using talkbox::Error;
using talkbox::ErrorKind;

struct talkbox_model {
    std::shared_ptr<const talkbox::Model> model;
    std::string description;
    std::vector<talkbox_field> fields;  // names point into the model's Capabilities
};

struct talkbox_session {
    std::shared_ptr<const talkbox::Model> model;  // keeps the weights alive after talkbox_model_free
    talkbox::Session session;
    std::atomic<bool> cancel{false};
    explicit talkbox_session(std::shared_ptr<const talkbox::Model> m) : model(std::move(m)), session(*model) {}
};

struct talkbox_voice {
    std::shared_ptr<const talkbox::Voice> voice;
    std::string description, mode, warnings;
};

struct talkbox_request {
    talkbox::SpeechRequest speech;
    talkbox::LongFormOptions long_form;
    talkbox::StreamOptions stream;
    bool ssml = false;  // the text is an SSML document
    std::optional<bool> watermark;  // unset: the model's default (Capabilities::watermarks_by_default)
};

namespace {

thread_local std::string last_error;

talkbox_status status_of(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidArgument: return TALKBOX_ERROR_INVALID_ARGUMENT;
        case ErrorKind::NotFound: return TALKBOX_ERROR_NOT_FOUND;
        case ErrorKind::Format: return TALKBOX_ERROR_FORMAT;
        case ErrorKind::Io: return TALKBOX_ERROR_IO;
        case ErrorKind::Unsupported: return TALKBOX_ERROR_UNSUPPORTED;
        case ErrorKind::Cancelled: return TALKBOX_CANCELLED;
        case ErrorKind::Exists: return TALKBOX_ERROR_EXISTS;
        case ErrorKind::Internal: return TALKBOX_ERROR_INTERNAL;
    }
    return TALKBOX_ERROR_INTERNAL;
}

talkbox_status fail(talkbox_status status, const char* message) noexcept {
    try {
        last_error = message;
    } catch (...) {
        last_error.clear();  // no memory for the message: the status still says what happened
    }
    return status;
}

// Runs `body` with every exception mapped to a status; the thread's last error is "" on success.
template <class F>
talkbox_status guarded(F&& body) noexcept {
    try {
        body();
        last_error.clear();
        return TALKBOX_OK;
    } catch (const Error& e) {
        return fail(status_of(e.kind()), e.what());
    } catch (const std::bad_alloc&) {
        return fail(TALKBOX_ERROR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return fail(TALKBOX_ERROR_INTERNAL, e.what());
    } catch (...) {
        return fail(TALKBOX_ERROR_INTERNAL, "an unknown C++ exception reached the C API");
    }
}

Error invalid(const std::string& message) { return Error(ErrorKind::InvalidArgument, message); }

template <class T>
void require(const T& p, const char* what, const char* function) {
    if (!p) throw invalid(std::string(function) + ": " + what + " is NULL");
}

// What Model::check misses and Session::speak would refuse later (or with CLI wording): a voice
// that does not fit, an unknown preset, a model that needs a voice the request does not name.
void check_request(const talkbox::Model& model, const talkbox::SpeechRequest& r) {
    if (auto refusal = model.check(r)) throw invalid(refusal->message);
    const talkbox::Capabilities& c = model.capabilities();
    if (r.voice) {
        const std::string mismatch = model.voice_mismatch(*r.voice);
        if (!mismatch.empty()) throw invalid(mismatch);
    }
    if (!r.speaker.empty()) {
        bool known = false;
        for (const auto& s : c.speakers) known = known || talkbox::ascii_lower(s) == talkbox::ascii_lower(r.speaker);
        if (!known) throw invalid("unknown speaker '" + r.speaker + "' (supported: " + talkbox::join_names(c.speakers) + ")");
    }
    const bool instructed = r.instruct.find_first_not_of(" \t\r\n") != std::string::npos;
    if (c.needs_voice && !r.voice && r.speaker.empty() && !(c.designs_voice && instructed)) {
        std::string ways;
        if (!c.speakers.empty()) ways += "a preset speaker (talkbox_request_set_speaker)";
        if (c.designs_voice) ways += std::string(ways.empty() ? "" : ", ") + "a voice description (talkbox_request_set_instructions)";
        if (c.clones) {
            ways += std::string(ways.empty() ? "" : " or ") +
                    "a cloned voice (talkbox_request_set_voice with a voice from talkbox_voice_create or talkbox_voice_load)";
        }
        throw invalid(c.description() + " needs a voice: give " + ways);
    }
}

talkbox::audio::SampleFormat file_format(const char* format) {
    return talkbox::audio::parse_sample_format(format && *format ? format : "wav16");
}

int stop_reason_of(talkbox::StopReason r) {
    switch (r) {
        case talkbox::StopReason::Eos: return TALKBOX_STOP_EOS;
        case talkbox::StopReason::MaxFrames: return TALKBOX_STOP_MAX_FRAMES;
        case talkbox::StopReason::Stalled: return TALKBOX_STOP_STALLED;
        case talkbox::StopReason::Cancelled: return TALKBOX_STOP_CANCELLED;
    }
    return TALKBOX_STOP_EOS;
}

// Copies the first struct_size bytes of `full` into `out` (a caller compiled against an older,
// shorter struct gets the fields it knows).
template <class T>
void copy_sized(T* out, const T& full) {
    if (!out || out->struct_size == 0) return;
    const size_t n = out->struct_size < sizeof(T) ? out->struct_size : sizeof(T);
    T copy = full;
    copy.struct_size = out->struct_size;
    std::memcpy(static_cast<void*>(out), &copy, n);
}

struct Delivery {
    size_t samples = 0;  // handed to the callback
    bool stopped = false;  // the callback asked to stop
};

// A segment that has ended, and where it lies in the audio.
using SegmentCallback = std::function<void(const talkbox::LongFormSegment&, const talkbox::SegmentDone&)>;

// One synthesis as `talkbox speak` runs it: long-form segments, one seed for all. `on_audio`
// returns false to stop. Fills `result`, then throws Error (Cancelled) when the synthesis was
// cancelled. The session's cancel flag is consumed by the call it stops.
void speak(talkbox_session& s, const talkbox_request& r, const std::function<bool(const float*, size_t)>& on_audio,
           const SegmentCallback& on_segment, talkbox_result* result) {
    struct ConsumeCancel {
        std::atomic<bool>& flag;
        ~ConsumeCancel() { flag.store(false); }
    } consume{s.cancel};
    talkbox::SpeechRequest request = r.speech;
    request.split_sentences = r.long_form.split;  // 0: one segment, for Chatterbox too (as speak --no-split)
    check_request(*s.model, request);
    const talkbox::Capabilities& caps = s.model->capabilities();
    const std::vector<talkbox::LongFormSegment> segments =
        r.ssml ? talkbox::ssml_segments(request.text, caps, request.language, r.long_form,
                                        [&](const std::string& name) {
                                            if (auto v = talkbox::model_voice(caps, name)) return *v;
                                            throw invalid(talkbox::unknown_voice_message(caps, name, ""));
                                        }).segments
               : talkbox::long_form_segments(request.text, r.long_form);
    if (!request.sampling.seed) request.sampling.seed = talkbox::random_seed();
    talkbox::LongFormOptions long_form = r.long_form;
    if (r.watermark.value_or(caps.watermarks_by_default)) long_form.watermark = talkbox::default_watermarker();
    Delivery d;
    size_t cut = 0;
    int last_stop = TALKBOX_STOP_EOS;
    const talkbox::LongFormResult lf = talkbox::speak_long_form(
        s.session, request, segments, long_form,
        [&](const float* pcm, size_t n) {
            // Queued frames are still decoded after a cancel; the callback sees none of them.
            if (d.stopped || s.cancel.load()) return;
            if (!on_audio(pcm, n)) {
                d.stopped = true;
                s.cancel.store(true);
            }
            d.samples += n;
        },
        [&](const talkbox::SegmentDone& done) {
            last_stop = stop_reason_of(done.result->stop_reason);
            if (last_stop == TALKBOX_STOP_MAX_FRAMES || last_stop == TALKBOX_STOP_STALLED) ++cut;
            if (on_segment) on_segment(segments[done.index], done);
        },
        r.stream, &s.cancel);
    talkbox_result full{};
    full.struct_size = sizeof full;
    full.samples = d.samples;
    full.frames = lf.frames.size();
    full.segments = lf.segments;
    full.segments_cut = cut;
    full.seed = lf.seed;
    full.stop_reason = lf.cancelled ? TALKBOX_STOP_CANCELLED : last_stop;
    full.first_audio_ms = lf.timings.first_audio_ms;
    full.total_ms = lf.timings.total_ms;
    copy_sized(result, full);
    if (lf.cancelled) {
        throw Error(ErrorKind::Cancelled, std::string(d.stopped ? "stopped by the audio callback" : "cancelled by talkbox_session_cancel") +
                                              " after " + std::to_string(d.samples) + " samples");
    }
}

// talkbox_session_speak(_segments): the audio to the caller's callback, and each segment's place in
// it to `on_segment` (when given) until the callback asks to stop or a cancel comes.
talkbox_status speak_streamed(const char* fn, talkbox_session* s, const talkbox_request* r, talkbox_audio_callback callback,
                              talkbox_segment_callback on_segment, void* user, talkbox_result* result) {
    return guarded([&] {
        require(s, "session", fn);
        require(r, "request", fn);
        require(callback, "callback", fn);
        SegmentCallback segment;
        if (on_segment) {
            segment = [&](const talkbox::LongFormSegment& seg, const talkbox::SegmentDone& d) {
                if (s->cancel.load()) return;  // set too when the audio callback asked to stop
                const talkbox::Caption c = talkbox::segment_caption(seg, d, r->speech.speaker);
                const talkbox_segment out{d.index, c.start, c.end, c.text.c_str(), c.voice.empty() ? nullptr : c.voice.c_str()};
                on_segment(&out, user);
            };
        }
        speak(*s, *r, [&](const float* pcm, size_t n) { return callback(pcm, n, user) == 0; }, segment, result);
    });
}

// A whole number >= 0 that fits `max`, for the integer settings.
uint64_t whole(const char* name, double v, double max) {
    if (!(v >= 0) || v != std::floor(v) || v > max) {
        throw invalid(std::string(name) + " must be a whole number in [0, " + talkbox::number_text(max) + "], got " + talkbox::number_text(v));
    }
    return static_cast<uint64_t>(v);
}

void set_number(talkbox_request& r, const std::string& name, double v) {
    const bool unset = std::isnan(v);
    constexpr double u32 = std::numeric_limits<uint32_t>::max();
    if (const auto setting = talkbox::find_speech_setting(name)) {
        if (unset) return talkbox::set_setting(r.speech, *setting, std::nullopt);
        const std::string problem = talkbox::setting_value_problem(*setting, v);
        if (!problem.empty()) throw invalid(name + " " + problem);
        return talkbox::set_setting(r.speech, *setting, v);
    }
    if (!unset && !std::isfinite(v)) throw invalid(name + " must be a finite number, got " + talkbox::number_text(v));
    if (name == "split") r.long_form.split = unset ? talkbox::LongFormOptions{}.split : whole("split", v, 1) == 1;
    else if (name == "segment_chars") {
        r.long_form.segment_chars = unset ? talkbox::LongFormOptions{}.segment_chars : static_cast<size_t>(whole("segment_chars", v, u32));
    } else if (name == "pause_ms") {
        r.long_form.pause_ms = unset ? talkbox::LongFormOptions{}.pause_ms : static_cast<int>(whole("pause_ms", v, 600000));
    } else if (name == "parallel") {
        r.long_form.parallel = unset ? talkbox::LongFormOptions{}.parallel : static_cast<uint32_t>(whole("parallel", v, 64));
    } else if (name == "watermark") {
        if (unset) r.watermark.reset();
        else r.watermark = whole("watermark", v, 1) == 1;
    } else if (name == "chunk") {
        if (!unset && v < 1) throw invalid("chunk must be a whole number in [1, 1000], got " + talkbox::number_text(v));
        r.stream.frames_per_chunk = unset ? talkbox::StreamOptions{}.frames_per_chunk : static_cast<size_t>(whole("chunk", v, 1000));
    } else if (name == "first_chunk") {
        r.stream.first_chunk_frames = unset ? talkbox::StreamOptions{}.first_chunk_frames : static_cast<size_t>(whole("first_chunk", v, 1000));
    } else {
        throw invalid("unknown request setting '" + name + "' (settings: " + talkbox::speech_setting_names() +
                      ", split, segment_chars, pause_ms, parallel, watermark, chunk, first_chunk)");
    }
}

// Defaults come from float settings: 0.9f reads 0.8999999761581421 as a double; report 0.9.
double shortest(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", v);
    return std::strtod(buf, nullptr);
}

const talkbox::Capabilities* caps(const talkbox_model* m) { return m ? &m->model->capabilities() : nullptr; }

const char* nth(const std::vector<std::string>* v, size_t i) { return v && i < v->size() ? (*v)[i].c_str() : nullptr; }

}  // namespace

extern "C" {

const char* talkbox_version(void) { return TALKBOX_VERSION_STRING; }
int talkbox_version_number(void) { return TALKBOX_VERSION; }

const char* talkbox_status_name(int status) {
    switch (status) {
        case TALKBOX_OK: return "ok";
        case TALKBOX_ERROR_INVALID_ARGUMENT: return "invalid_argument";
        case TALKBOX_ERROR_NOT_FOUND: return "not_found";
        case TALKBOX_ERROR_FORMAT: return "format";
        case TALKBOX_ERROR_IO: return "io";
        case TALKBOX_ERROR_UNSUPPORTED: return "unsupported";
        case TALKBOX_CANCELLED: return "cancelled";
        case TALKBOX_ERROR_EXISTS: return "exists";
        case TALKBOX_ERROR_INTERNAL: return "internal";
        case TALKBOX_ERROR_OUT_OF_MEMORY: return "out_of_memory";
    }
    return "unknown";
}

const char* talkbox_last_error(void) { return last_error.c_str(); }

// ---- Models

void talkbox_model_options_init(talkbox_model_options* o) {
    if (!o) return;
    *o = talkbox_model_options{};
    o->struct_size = sizeof *o;
}

talkbox_status talkbox_model_load(const char* path, const talkbox_model_options* options, talkbox_model** out) {
    if (out) *out = nullptr;
    return guarded([&] {
        require(out, "out", "talkbox_model_load");
        require(path, "path", "talkbox_model_load");
        talkbox::ModelOptions mo;
        if (options) {
            // Read only the fields the caller's struct has (struct_size), defaults for the rest.
            talkbox_model_options o;
            talkbox_model_options_init(&o);
            if (options->struct_size < offsetof(talkbox_model_options, threads) + sizeof(int)) {
                throw invalid("talkbox_model_load: options->struct_size is " + std::to_string(options->struct_size) +
                              " (call talkbox_model_options_init first)");
            }
            std::memcpy(&o, options, options->struct_size < sizeof o ? options->struct_size : sizeof o);
            for (const auto& [name, n] : {std::pair<const char*, int>{"threads", o.threads}, {"decoder_threads", o.decoder_threads}}) {
                if (n < 0 || n > 4096) throw invalid(std::string("talkbox_model_load: ") + name + " must be in [0, 4096], got " + std::to_string(n));
            }
            mo.threads = o.threads;
            mo.decoder_threads = o.decoder_threads;
            if (o.gpu && o.device) throw invalid("talkbox_model_load: set options->device or options->gpu, not both");
            if (o.gpu) mo.device = "cuda:0";  // what gpu meant before options->device
            if (o.device) mo.device = o.device;
            if (o.kv_cache) mo.kv_cache = o.kv_cache;
            if (o.decoder_precision) mo.decoder_precision = o.decoder_precision;
        }
        auto m = std::make_unique<talkbox_model>();
        m->model = std::make_shared<const talkbox::Model>(path, mo);
        const talkbox::Capabilities& c = m->model->capabilities();
        m->description = c.description();
        for (const auto& f : c.fields) {
            talkbox_field t{};
            t.struct_size = sizeof t;
            t.name = f.name.c_str();
            const auto shown = [&](double v) { return f.integer ? v : shortest(v); };
            t.min = shown(f.min);
            t.max = shown(f.max);
            t.min_exclusive = f.min_exclusive;
            t.integer = f.integer;
            t.has_default = f.default_value.has_value();
            t.default_value = shown(f.default_value.value_or(0.0));
            m->fields.push_back(t);
        }
        *out = m.release();
    });
}

void talkbox_model_free(talkbox_model* model) { delete model; }

int talkbox_model_sample_rate(const talkbox_model* m) { return m ? caps(m)->sample_rate : 0; }
double talkbox_model_frames_per_second(const talkbox_model* m) { return m ? caps(m)->frames_per_second : 0.0; }
const char* talkbox_model_description(const talkbox_model* m) { return m ? m->description.c_str() : ""; }
const char* talkbox_model_family(const talkbox_model* m) { return m ? caps(m)->family.c_str() : ""; }
const char* talkbox_model_architecture(const talkbox_model* m) { return m ? caps(m)->architecture.c_str() : ""; }
const char* talkbox_model_variant(const talkbox_model* m) { return m ? caps(m)->variant.c_str() : ""; }
const char* talkbox_model_size(const talkbox_model* m) { return m ? caps(m)->size.c_str() : ""; }
const char* talkbox_model_device(const talkbox_model* m) { return m ? m->model->device().c_str() : ""; }
size_t talkbox_model_speaker_count(const talkbox_model* m) { return m ? caps(m)->speakers.size() : 0; }
const char* talkbox_model_speaker(const talkbox_model* m, size_t i) { return nth(m ? &caps(m)->speakers : nullptr, i); }
size_t talkbox_model_language_count(const talkbox_model* m) { return m ? caps(m)->languages.size() : 0; }
const char* talkbox_model_language(const talkbox_model* m, size_t i) { return nth(m ? &caps(m)->languages : nullptr, i); }

unsigned talkbox_model_flags(const talkbox_model* m) {
    if (!m) return 0;
    const talkbox::Capabilities& c = *caps(m);
    return (c.designs_voice ? TALKBOX_MODEL_DESIGNS_VOICE : 0u) | (c.takes_instruct ? TALKBOX_MODEL_TAKES_INSTRUCT : 0u) |
           (c.clones ? TALKBOX_MODEL_CLONES : 0u) | (c.needs_voice ? TALKBOX_MODEL_NEEDS_VOICE : 0u) |
           (c.builtin_voice ? TALKBOX_MODEL_BUILTIN_VOICE : 0u) | (c.clone_transcript ? TALKBOX_MODEL_CLONE_TRANSCRIPT : 0u) |
           (c.text_modes ? TALKBOX_MODEL_TEXT_MODES : 0u) | (c.frame_streaming ? TALKBOX_MODEL_FRAME_STREAMING : 0u) |
           (c.converts_voices ? TALKBOX_MODEL_CONVERTS_VOICES : 0u);
}

size_t talkbox_model_field_count(const talkbox_model* m) { return m ? m->fields.size() : 0; }

talkbox_status talkbox_model_field(const talkbox_model* m, size_t index, talkbox_field* out) {
    return guarded([&] {
        require(m, "model", "talkbox_model_field");
        require(out, "out", "talkbox_model_field");
        if (index >= m->fields.size()) {
            throw invalid("talkbox_model_field: index " + std::to_string(index) + " is out of range (" + m->description + " has " +
                          std::to_string(m->fields.size()) + " fields)");
        }
        if (out->struct_size == 0) throw invalid("talkbox_model_field: out->struct_size is 0 (set it to sizeof(talkbox_field))");
        copy_sized(out, m->fields[index]);
    });
}

talkbox_status talkbox_model_check(const talkbox_model* m, const talkbox_request* r) {
    return guarded([&] {
        require(m, "model", "talkbox_model_check");
        require(r, "request", "talkbox_model_check");
        check_request(*m->model, r->speech);
    });
}

// ---- Voices

static talkbox_voice* new_voice(talkbox::Voice v, const std::vector<std::string>& warnings) {
    auto h = std::make_unique<talkbox_voice>();
    h->description = talkbox::voice_summary(v);
    h->mode = talkbox::voice_mode(v);
    for (const auto& w : warnings) h->warnings += (h->warnings.empty() ? "" : "\n") + w;
    h->voice = std::make_shared<const talkbox::Voice>(std::move(v));
    return h.release();
}

talkbox_status talkbox_voice_convert(const talkbox_model* m, const float* samples, size_t count, int sample_rate,
                                     const talkbox_voice* voice, uint64_t seed, int watermark, float** out, size_t* out_count) {
    if (out) *out = nullptr;
    if (out_count) *out_count = 0;
    return guarded([&] {
        require(out, "out", "talkbox_voice_convert");
        require(out_count, "out_count", "talkbox_voice_convert");
        require(m, "model", "talkbox_voice_convert");
        if (count > 0) require(samples, "samples", "talkbox_voice_convert");
        if (watermark != 0 && watermark != 1) {
            throw talkbox::Error(talkbox::ErrorKind::InvalidArgument,
                                 "talkbox_voice_convert: watermark must be 1 (marked) or 0 (unmarked), got " + std::to_string(watermark));
        }
        const std::vector<float> recording(samples, samples + count);
        const talkbox::ConvertedVoice c = m->model->convert_voice(recording, sample_rate, voice ? voice->voice.get() : nullptr,
                                                                   talkbox::conversion_settings(*m->model, seed, watermark == 1));
        auto* pcm = static_cast<float*>(std::malloc(std::max<size_t>(1, c.pcm.size()) * sizeof(float)));
        if (!pcm) throw talkbox::Error(talkbox::ErrorKind::Io, "talkbox_voice_convert: out of memory for the converted audio");
        std::copy(c.pcm.begin(), c.pcm.end(), pcm);
        *out = pcm;
        *out_count = c.pcm.size();
    });
}

void talkbox_samples_free(float* samples) { std::free(samples); }

namespace {

// The checkpoint a watermark call names, or the pulled one; NOT_FOUND with the pull to run.
talkbox::Watermarker load_watermarker(const char* checkpoint) {
    const std::string path = checkpoint ? checkpoint : talkbox::Watermarker::default_path();
    if (!std::ifstream(path)) {
        throw talkbox::Error(talkbox::ErrorKind::NotFound,
                             "no watermark checkpoint at " + path + (checkpoint ? "" : ": fetch it first: `talkbox pull resemble-ai/Perth` (or `talkbox watermark convert perth_net_250000.pth.tar` on a copy; docs/watermark.md)"));
    }
    return talkbox::Watermarker(path);
}

}  // namespace

talkbox_status talkbox_watermark_detect(const char* checkpoint, const float* samples, size_t count, int sample_rate,
                                        talkbox_watermark_result* out) {
    if (out) *out = talkbox_watermark_result{};
    return guarded([&] {
        require(out, "out", "talkbox_watermark_detect");
        if (count > 0) require(samples, "samples", "talkbox_watermark_detect");
        talkbox::audio::check_samples(samples, count, "talkbox_watermark_detect samples");
        const talkbox::Watermarker w = load_watermarker(checkpoint);
        const talkbox::WatermarkDetection d = w.detect(std::vector<float>(samples, samples + count), sample_rate);
        out->readable = d.readable ? 1 : 0;
        out->detected = d.detected ? 1 : 0;
        out->confidence = d.readable ? d.confidence : 0.0;
        out->raw = d.readable ? d.raw : 0.0;
    });
}

talkbox_status talkbox_watermark_embed(const char* checkpoint, const float* samples, size_t count, int sample_rate, float** out,
                                       size_t* out_count) {
    if (out) *out = nullptr;
    if (out_count) *out_count = 0;
    return guarded([&] {
        require(out, "out", "talkbox_watermark_embed");
        require(out_count, "out_count", "talkbox_watermark_embed");
        if (count > 0) require(samples, "samples", "talkbox_watermark_embed");
        talkbox::audio::check_samples(samples, count, "talkbox_watermark_embed samples");
        const talkbox::Watermarker w = load_watermarker(checkpoint);
        const std::vector<float> marked = w.embed(std::vector<float>(samples, samples + count), sample_rate);
        auto* pcm = static_cast<float*>(std::malloc(std::max<size_t>(1, marked.size()) * sizeof(float)));
        if (!pcm) throw talkbox::Error(talkbox::ErrorKind::Io, "talkbox_watermark_embed: out of memory for the marked audio");
        std::copy(marked.begin(), marked.end(), pcm);
        *out = pcm;
        *out_count = marked.size();
    });
}

talkbox_status talkbox_voice_create(const talkbox_model* m, const char* ref_audio_path, const char* ref_text, talkbox_voice** out) {
    if (out) *out = nullptr;
    return guarded([&] {
        require(out, "out", "talkbox_voice_create");
        require(m, "model", "talkbox_voice_create");
        require(ref_audio_path, "ref_audio_path", "talkbox_voice_create");
        std::vector<std::string> warnings;
        std::optional<std::string> text;
        if (ref_text) text = ref_text;
        talkbox::Voice v = m->model->create_voice(ref_audio_path, text, &warnings);
        *out = new_voice(std::move(v), warnings);
    });
}

talkbox_status talkbox_voice_load(const char* path, talkbox_voice** out) {
    if (out) *out = nullptr;
    return guarded([&] {
        require(out, "out", "talkbox_voice_load");
        require(path, "path", "talkbox_voice_load");
        *out = new_voice(talkbox::load_voice(path), {});
    });
}

talkbox_status talkbox_voice_save(const talkbox_voice* voice, const char* path) {
    return guarded([&] {
        require(voice, "voice", "talkbox_voice_save");
        require(path, "path", "talkbox_voice_save");
        talkbox::save_voice(*voice->voice, path, true);
    });
}

void talkbox_voice_free(talkbox_voice* voice) { delete voice; }
const char* talkbox_voice_description(const talkbox_voice* v) { return v ? v->description.c_str() : ""; }
const char* talkbox_voice_mode(const talkbox_voice* v) { return v ? v->mode.c_str() : ""; }
const char* talkbox_voice_warnings(const talkbox_voice* v) { return v ? v->warnings.c_str() : ""; }

// ---- Requests

talkbox_status talkbox_request_new(talkbox_request** out) {
    if (out) *out = nullptr;
    return guarded([&] {
        require(out, "out", "talkbox_request_new");
        *out = new talkbox_request();
    });
}

void talkbox_request_free(talkbox_request* r) { delete r; }

talkbox_status talkbox_request_set_text(talkbox_request* r, const char* text) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_text");
        require(text, "text", "talkbox_request_set_text");
        r->speech.text = text;
    });
}

talkbox_status talkbox_request_set_input_format(talkbox_request* r, const char* format) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_input_format");
        const std::string f = format ? format : "";
        if (f != "" && f != "text" && f != "ssml") throw invalid("talkbox_request_set_input_format: format must be \"text\" or \"ssml\", got \"" + f + "\"");
        r->ssml = f == "ssml";
    });
}

talkbox_status talkbox_request_set_language(talkbox_request* r, const char* language) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_language");
        r->speech.language = language && *language ? language : "auto";
    });
}

talkbox_status talkbox_request_set_speaker(talkbox_request* r, const char* speaker) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_speaker");
        r->speech.speaker = speaker ? speaker : "";
    });
}

talkbox_status talkbox_request_set_instructions(talkbox_request* r, const char* instructions) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_instructions");
        r->speech.instruct = instructions ? instructions : "";
    });
}

talkbox_status talkbox_request_set_voice(talkbox_request* r, const talkbox_voice* voice) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_voice");
        r->speech.voice = voice ? voice->voice : nullptr;
    });
}

talkbox_status talkbox_request_set_text_mode(talkbox_request* r, int mode) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_text_mode");
        switch (mode) {
            case TALKBOX_TEXT_MODE_DEFAULT: r->speech.text_mode = talkbox::TextMode::Default; break;
            case TALKBOX_TEXT_MODE_STREAMING: r->speech.text_mode = talkbox::TextMode::Streaming; break;
            case TALKBOX_TEXT_MODE_NON_STREAMING: r->speech.text_mode = talkbox::TextMode::NonStreaming; break;
            default:
                throw invalid("talkbox_request_set_text_mode: unknown text mode " + std::to_string(mode) +
                              " (TALKBOX_TEXT_MODE_DEFAULT 0, _STREAMING 1, _NON_STREAMING 2)");
        }
    });
}

talkbox_status talkbox_request_set_seed(talkbox_request* r, uint64_t seed) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_seed");
        r->speech.sampling.seed = seed;
    });
}

talkbox_status talkbox_request_clear_seed(talkbox_request* r) {
    return guarded([&] {
        require(r, "request", "talkbox_request_clear_seed");
        r->speech.sampling.seed.reset();
    });
}

talkbox_status talkbox_request_set_greedy(talkbox_request* r, int greedy) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_greedy");
        r->speech.sampling.greedy = greedy != 0;
    });
}

talkbox_status talkbox_request_set_number(talkbox_request* r, const char* name, double value) {
    return guarded([&] {
        require(r, "request", "talkbox_request_set_number");
        require(name, "name", "talkbox_request_set_number");
        set_number(*r, name, value);
    });
}

// ---- Sessions

void talkbox_result_init(talkbox_result* result) {
    if (!result) return;
    *result = talkbox_result{};
    result->struct_size = sizeof *result;
}

talkbox_status talkbox_session_new(talkbox_model* m, talkbox_session** out) {
    if (out) *out = nullptr;
    return guarded([&] {
        require(out, "out", "talkbox_session_new");
        require(m, "model", "talkbox_session_new");
        *out = new talkbox_session(m->model);
    });
}

void talkbox_session_free(talkbox_session* s) { delete s; }

void talkbox_session_cancel(talkbox_session* s) {
    if (s) s->cancel.store(true);
}

talkbox_status talkbox_session_speak(talkbox_session* s, const talkbox_request* r, talkbox_audio_callback callback, void* user,
                                     talkbox_result* result) {
    return speak_streamed("talkbox_session_speak", s, r, callback, nullptr, user, result);
}

talkbox_status talkbox_session_speak_segments(talkbox_session* s, const talkbox_request* r, talkbox_audio_callback callback,
                                              talkbox_segment_callback on_segment, void* user, talkbox_result* result) {
    return speak_streamed("talkbox_session_speak_segments", s, r, callback, on_segment, user, result);
}

talkbox_status talkbox_session_speak_to_file(talkbox_session* s, const talkbox_request* r, const char* path, const char* format,
                                             talkbox_result* result) {
    return guarded([&] {
        require(s, "session", "talkbox_session_speak_to_file");
        require(r, "request", "talkbox_session_speak_to_file");
        require(path, "path", "talkbox_session_speak_to_file");
        const auto f = file_format(format);  // a bad format or destination fails before synthesis
        talkbox::check_output_path(path, "talkbox_session_speak_to_file: path");
        talkbox::audio::AudioSpool audio;  // on disk: a long text's memory stays flat
        size_t inserted = 0;
        speak(*s, *r, [&](const float* pcm, size_t n) { return audio.append(pcm, n), true; },
              [&](const talkbox::LongFormSegment&, const talkbox::SegmentDone& d) {
                  // Files reproduce the official in-context cut exactly, as `talkbox speak -o` does.
                  if (d.result->official_leading_sample && d.first_sample + inserted <= audio.size()) {
                      audio.insert(d.first_sample + inserted++, *d.result->official_leading_sample);
                  }
                  audio.end_segment();
              },
              result);
        audio.write_file(path, s->model->capabilities().sample_rate, f);
        if (result && result->struct_size >= offsetof(talkbox_result, samples) + sizeof(size_t)) result->samples = audio.size();
    });
}

talkbox_status talkbox_write_audio(const char* path, const float* samples, size_t count, int sample_rate, const char* format) {
    return guarded([&] {
        require(path, "path", "talkbox_write_audio");
        if (count > 0) require(samples, "samples", "talkbox_write_audio");
        talkbox::audio::check_sample_rate(sample_rate, "talkbox_write_audio: sample_rate");
        const auto f = file_format(format);
        talkbox::audio::check_samples(samples, count, "talkbox_write_audio: samples");
        talkbox::check_output_path(path, "talkbox_write_audio: path");
        talkbox::audio::write_audio(path, std::vector<float>(samples, samples + count), sample_rate, f);
    });
}

}  // extern "C"
