// talkbox speak: text → speech (file, or raw/WAV PCM streamed to stdout while generating) and/or
// the codec frames as JSON. Long text is split into segments synthesised in order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

#include "cli/commands.h"
#include "audio/audio_spool.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/strings.h"
#include "talkbox/audio.h"
#include "talkbox/captions.h"
#include "talkbox/codes.h"
#include "talkbox/dialogue.h"
#include "talkbox/model.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"
#include "talkbox/long_form.h"
#include "talkbox/segmenter.h"
#include "talkbox/speech_settings.h"
#include "talkbox/ssml.h"
#include "talkbox/time_stretch.h"
#include "talkbox/voice_file.h"
#include "talkbox/watermark.h"

namespace talkbox::cli {

namespace {

struct SpeakArgs {
    std::string model, text, text_file, output, codes_out, captions, format;
    std::string input_format;  // "text", "ssml", "dialogue"; "": dialogue with --cast, else by -f's extension
    std::string cast;          // --cast alice=ryan,narrator=fox.voice
    std::string speaker, instruct, language = "auto";
    std::string voice, ref_audio, ref_text;
    bool x_vector_only = false;
    bool streaming_text = false, non_streaming_text = false, greedy = false, timings = false, quiet = false;
    bool no_split = false;
    bool watermark = false, no_watermark = false;  // unset: the model's default (Chatterbox: marked)
    std::optional<uint64_t> seed;
    std::map<std::string, double> settings;  // by SpeechSetting name (talkbox/speech_settings.h)
    int threads = 0, decoder_threads = 0;
    std::string device;
    std::string kv_cache = "f32", decoder_precision = "f32";
    size_t chunk = 4, first_chunk = 1;
    int pause_ms = 300;
    size_t segment_chars = 200;
    uint32_t parallel = 0;
    int chatterbox_chunk_tokens = 0;
    std::string normalize = "none";
    std::optional<double> normalize_db;
    std::optional<double> speed;
};

// The gain of --normalize, from the whole signal's peak and energy. Off by default: the model's
// own level is the reference. Peak: the loudest sample at normalize_db dBFS (default -1).
// Loudness: the RMS level at normalize_db dBFS (default -20), then limited so that no sample clips.
double normalize_gain(const audio::AudioSpool& audio, const std::string& mode, double db) {
    if (mode == "none" || audio.size() == 0 || audio.peak() <= 0) return 1.0;
    const double rms = std::sqrt(audio.energy() / static_cast<double>(audio.size()));
    const double target = std::pow(10.0, db / 20.0);
    const double gain = mode == "peak" ? target / audio.peak() : target / rms;
    return std::min(gain, 0.999 / audio.peak());
}

// The longest text speak takes, from -t, -f or stdin (about a day of speech): a file of more,
// or an endless source (/dev/zero, a pipe that never ends), is refused once that much is read.
constexpr size_t kMaxTextChars = 1000000;

std::string too_long(const std::string& what) {
    return what + " holds more than " + std::to_string(kMaxTextChars) + " characters, the most speak takes at once; split it";
}

// At most what kMaxTextChars characters can take (4 bytes each in UTF-8), and one byte more to tell.
std::string read_text(std::istream& in, const std::string& what) {
    std::string text;
    char buf[1 << 16];
    while (text.size() <= 4 * kMaxTextChars && (in.read(buf, sizeof buf) || in.gcount() > 0)) text.append(buf, static_cast<size_t>(in.gcount()));
    if (in.bad()) throw Error(ErrorKind::Io, "cannot read " + what);
    if (text.size() > 4 * kMaxTextChars || code_point_count(text) > kMaxTextChars) throw Error(ErrorKind::InvalidArgument, too_long(what));
    return text;
}

std::string input_text(const SpeakArgs& a) {
    if (!a.text.empty() && !a.text_file.empty()) throw Error(ErrorKind::InvalidArgument, "give the text with -t or -f, not both");
    if (!a.text.empty()) {
        if (code_point_count(a.text) > kMaxTextChars) throw Error(ErrorKind::InvalidArgument, too_long("-t"));
        return a.text;
    }
    if (a.text_file == "-" || (a.text_file.empty() && !isatty(fileno(stdin)))) return read_text(std::cin, "stdin");
    if (a.text_file.empty()) throw Error(ErrorKind::InvalidArgument, "no text: give -t TEXT, -f FILE, or pipe text to stdin");
    const std::string what = "text file '" + a.text_file + "' (-f)";
    if (std::filesystem::is_directory(a.text_file)) throw Error(ErrorKind::InvalidArgument, what + " is a folder, not a file");
    std::ifstream f(a.text_file, std::ios::binary);
    if (!f) throw Error(ErrorKind::NotFound, "cannot read " + what);
    return read_text(f, what);
}

// Where the audio goes: spooled for a file (to disk, so that a long text's memory stays flat;
// finish() writes the file), or streamed to stdout. At a speed other than 1 the audio goes through
// the stretcher as it comes.
class AudioSink {
public:
    AudioSink(const std::string& path, audio::SampleFormat format, int rate, double speed)
        : format_(format), rate_(rate), to_stdout_(path == "-"),
          speed_(rate, speed, [this](const float* pcm, size_t n) { put(pcm, n); }) {
        if (to_stdout_) emit(audio::stream_header(rate, format));
        else spool_.emplace();
    }
    void write(const float* pcm, size_t n) {
        speed_.write(pcm, n);
        written_ += n;
    }
    // Files reproduce the official in-context cut exactly (see SpeechResult); stretched audio has
    // no such cut to match (the sample positions are those before stretching). `at` lies in the
    // segment that just ended. True if inserted.
    bool insert_leading(size_t at, float sample) {
        if (to_stdout_ || speed_.stretching() || at > put_) return false;
        spool_->insert(at, sample);
        ++put_;
        return true;
    }
    void end_segment() {
        if (spool_) spool_->end_segment();
    }
    // After finish(): output samples per sample that write() took. Stretched audio scales by the
    // lengths, which keeps the end of the audio at its end.
    double stretch() const { return speed_.stretching() && written_ > 0 ? static_cast<double>(put_) / static_cast<double>(written_) : 1.0; }
    // Ends the audio: a file's bytes go to `file` (normalised by --normalize); stdout has had everything.
    void finish(AtomicFileWriter* file, const std::string& normalize, double db) {
        speed_.finish();
        if (to_stdout_) return;
        spool_->encode(rate_, format_, normalize_gain(*spool_, normalize, db),
                       [file](const uint8_t* bytes, size_t n) { file->write(bytes, n); });
    }

private:
    void put(const float* pcm, size_t n) {
        put_ += n;
        if (!to_stdout_) {
            spool_->append(pcm, n);
            return;
        }
        std::vector<uint8_t> bytes;
        audio::append_samples(bytes, pcm, n, format_);
        emit(bytes);
    }
    void emit(const std::vector<uint8_t>& bytes) {
        if (bytes.empty()) return;
        if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
            throw Error(ErrorKind::Io, "cannot write audio to stdout (closed pipe?)");
        }
    }
    audio::SampleFormat format_;
    int rate_;
    bool to_stdout_;
    audio::SpeedAdjuster speed_;              // write() → put(), stretched at speeds other than 1
    std::optional<audio::AudioSpool> spool_;  // a file's audio
    size_t written_ = 0, put_ = 0;            // samples in, samples out (inserted ones included)
};

void print_timings(const SpeechTimings& t, size_t frames, double audio_seconds, double wall_ms) {
    const double per = frames ? 1.0 / static_cast<double>(frames) : 0.0;
    std::fprintf(stderr,
                 "timings: prefill %.1f ms | talker %.1f ms/frame | code predictor %.1f ms/frame | decoder %.1f ms/frame\n"
                 "         first audio %.0f ms | %zu frames = %.2f s of audio in %.2f s (real-time factor %.2f)\n",
                 t.prefill_ms, t.talker_ms * per, t.code_predictor_ms * per, t.decoder_ms * per, t.first_audio_ms, frames,
                 audio_seconds, wall_ms / 1000.0, audio_seconds > 0 ? wall_ms / 1000.0 / audio_seconds : 0.0);
}

// "text", "ssml" or "dialogue": --input-format, else dialogue when a cast is given, else by -f's
// extension (.ssml). A cast speaks dialogue only.
std::string input_format(const SpeakArgs& a) {
    std::string format = a.input_format;
    if (format.empty()) {
        const std::string ext = ascii_lower(std::filesystem::path(a.text_file).extension().string());
        format = !a.cast.empty() ? "dialogue" : ext == ".ssml" ? "ssml" : "text";
    }
    if (format == "dialogue" && a.cast.empty()) {
        throw Error(ErrorKind::InvalidArgument, "--input-format dialogue needs --cast NAME=VOICE,... (docs/dialogue.md)");
    }
    if (format != "dialogue" && !a.cast.empty()) {
        throw Error(ErrorKind::InvalidArgument, "--cast is for dialogue scripts, but the input format is " + format +
                                                    (format == "ssml" ? " (SSML names its voices with <voice name>)" : ""));
    }
    return format;
}

// A voice named in the text (<voice name>, a --cast entry): the model's preset or built-in voice,
// else a voice file.
SegmentVoice named_voice(const Model& model, const std::string& name) {
    const Capabilities& caps = model.capabilities();
    if (auto v = model_voice(caps, name)) return *v;
    if (!caps.clones || !std::filesystem::is_regular_file(name)) {
        throw Error(ErrorKind::InvalidArgument, unknown_voice_message(caps, name, caps.clones ? "or a voice file made by talkbox voice create" : ""));
    }
    auto voice = std::make_shared<Voice>(load_voice(name));
    if (const std::string why = model.voice_mismatch(*voice); !why.empty()) throw Error(ErrorKind::InvalidArgument, "voice file '" + name + "': " + why);
    return {"", voice, name};
}

void run_speak(const SpeakArgs& a) {
    const double normalize_db = a.normalize_db.value_or(a.normalize == "peak" ? -1.0 : -20.0);
    if (a.output.empty() && a.codes_out.empty()) {
        throw Error(ErrorKind::InvalidArgument, "nothing to do: give -o FILE (or -o - for stdout) and/or --codes-out FILE");
    }
    if (a.speed) {
        audio::check_speed(*a.speed, "--speed");
        if (a.output.empty()) throw Error(ErrorKind::InvalidArgument, "--speed changes the audio: give -o FILE (or -o -)");
    }
    if (a.normalize != "none" && a.output == "-") {
        throw Error(ErrorKind::InvalidArgument, "--normalize needs the whole signal: write to a file, not to stdout");
    }
    // Every destination before any work: a run must not end in an error that loses its audio.
    check_distinct_outputs({{"-f", a.text_file}, {"--ref-audio", a.ref_audio}, {"--voice", a.voice}, {"-o", a.output},
                            {"--codes-out", a.codes_out}, {"--captions", a.captions}});
    if (!a.output.empty() && a.output != "-") check_output_path(a.output, "-o");
    if (!a.codes_out.empty()) check_output_path(a.codes_out, "--codes-out");
    if (!a.captions.empty()) {
        if (a.output.empty()) throw Error(ErrorKind::InvalidArgument, "--captions times the audio: give -o FILE (or -o -)");
        caption_format(a.captions, "--captions");
        check_output_path(a.captions, "--captions");
    }
    const std::string text = input_text(a);
    const std::string input = input_format(a);
    const bool ssml = input == "ssml", dialogue = input == "dialogue";
    if (input != "text" && !a.codes_out.empty()) {
        throw Error(ErrorKind::InvalidArgument, "--codes-out records one voice and one pause: " +
                                                    std::string(ssml ? "SSML's voices, rates and breaks" : "a dialogue's voices") +
                                                    " would not come back from talkbox decode; speak plain text to keep the codes");
    }
    std::vector<std::pair<std::string, std::string>> cast;
    try {
        if (dialogue) cast = parse_cast(a.cast);
    } catch (const Error& e) {
        throw Error(ErrorKind::InvalidArgument, std::string("--cast: ") + e.what());
    }
    const auto format = audio::parse_sample_format(
        !a.format.empty() ? a.format : (a.output == "-" ? std::string("raw16") : std::string("wav16")));

    SpeechRequest request;
    request.language = a.language;
    request.speaker = a.speaker;
    request.instruct = a.instruct;
    request.text_mode = a.streaming_text ? TextMode::Streaming : a.non_streaming_text ? TextMode::NonStreaming : TextMode::Default;
    request.sampling.greedy = a.greedy;
    request.sampling.seed = a.seed;
    for (const auto& [name, value] : a.settings) set_setting(request, *find_speech_setting(name), value);
    const uint32_t max_frames = request.max_frames;  // 0: the per-segment guard (default_max_frames)

    // One seed for every segment, so that a run is reproducible from the seed it reports.
    if (!request.sampling.seed) request.sampling.seed = random_seed();

    LongFormOptions long_form;
    long_form.split = !a.no_split;
    long_form.segment_chars = a.segment_chars;
    long_form.parallel = a.parallel;
    long_form.pause_ms = a.pause_ms;
    std::vector<LongFormSegment> segments;
    if (input == "text") segments = long_form_segments(text, long_form);

    ModelOptions mo;
    mo.threads = a.threads;
    mo.device = a.device;
    mo.decoder_threads = a.decoder_threads;
    mo.kv_cache = a.kv_cache;
    mo.decoder_precision = a.decoder_precision;
    mo.sentence_batch = static_cast<int>(a.parallel);  // Chatterbox: sentences through T3 at once
    mo.s3gen_chunk_tokens = a.chatterbox_chunk_tokens;
    const Model model(resolve_model_or_default(a.model), mo);
    Session session(model);
    const Capabilities& caps = model.capabilities();
    if (a.watermark || (caps.watermarks_by_default && !a.no_watermark)) long_form.watermark = default_watermarker();
    if (ssml) {
        SsmlSegments parsed = ssml_segments(text, caps, a.language, long_form, [&](const std::string& name) { return named_voice(model, name); });
        if (!a.quiet) for (const auto& w : parsed.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
        segments = std::move(parsed.segments);
    } else if (dialogue) {
        std::vector<CastMember> members;
        for (const auto& [name, voice] : cast) {
            try {
                members.push_back({name, named_voice(model, voice)});
            } catch (const Error& e) {
                throw Error(ErrorKind::InvalidArgument, "--cast " + name + "=" + voice + ": " + e.what());
            }
        }
        segments = dialogue_segments(text, members, long_form);
    }
    if (!caps.codec_frames && !a.codes_out.empty()) {
        throw Error(ErrorKind::InvalidArgument, "--codes-out writes codec frames; " + caps.description() + " makes none");
    }
    request.split_sentences = !a.no_split;
    if (!a.voice.empty()) {
        request.voice = std::make_shared<Voice>(load_voice(a.voice));
    } else if (!a.ref_audio.empty()) {
        const auto ref_text = clone_transcript(caps, a.ref_text, !a.ref_text.empty(), a.x_vector_only);
        std::vector<std::string> warnings;
        request.voice = std::make_shared<Voice>(model.create_voice(a.ref_audio, ref_text, &warnings));
        if (!a.quiet) for (const auto& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    }

    const Clock::time_point start = Clock::now();
    std::vector<Frame> all_frames;
    std::vector<std::vector<size_t>> segment_parts;
    SpeechTimings total;
    const bool progress = !a.quiet && stderr_is_tty() && segments.size() > 1;
    std::unique_ptr<AudioSink> sink;
    if (!a.output.empty()) sink = std::make_unique<AudioSink>(a.output, format, caps.sample_rate, a.speed.value_or(1.0));
    size_t audio_samples = 0, inserted = 0;
    std::vector<Caption> captions;  // positions in the audio before --speed
    const auto segment_done = [&](size_t i, const SpeechResult& r, uint32_t limit) {
        if (r.stop_reason == StopReason::Stalled && !a.quiet) {
            const RequestField* guard = caps.field("stall_frames");  // a model that stalls takes it
            const auto span = guard && guard->default_value ? static_cast<uint32_t>(*guard->default_value) : 0u;
            std::fprintf(stderr, "warning: segment %zu stopped: its tokens repeated a pattern for %u+ frames\n", i + 1,
                         request.stall_frames.value_or(span));
        }
        if (r.stop_reason == StopReason::MaxFrames && max_frames == 0 && !a.quiet) {
            if (caps.own_frame_limit()) {  // the family's limit per sentence (Chatterbox: by its length)
                std::fprintf(stderr, "warning: segment %zu: a sentence reached its token limit before the model ended it\n", i + 1);
            } else {
                std::fprintf(stderr, "warning: segment %zu reached its limit of %u frames before the model ended it\n", i + 1,
                             limit);
            }
        }
        if (progress) {
            const double secs = static_cast<double>(audio_samples) / caps.sample_rate;
            const double wall = seconds_since(start);
            std::fprintf(stderr, "\rsegment %zu/%zu | %.1f s of audio | real-time factor %.2f   ", i + 1, segments.size(),
                         secs, secs > 0 ? wall / secs : 0.0);
            if (i + 1 == segments.size()) std::fprintf(stderr, "\n");
        }
    };
    if (sink) {
        const LongFormResult r = speak_long_form(
            session, request, segments, long_form,
            [&](const float* pcm, size_t n) {
                sink->write(pcm, n);
                audio_samples += n;
            },
            [&](const SegmentDone& d) {
                // Files reproduce the official in-context cut exactly (see SpeechResult).
                Caption caption = segment_caption(segments[d.index], d, a.speaker);
                caption.start += inserted;
                if (d.result->official_leading_sample && segments[d.index].rate == 1.0 &&
                    sink->insert_leading(d.first_sample + inserted, *d.result->official_leading_sample)) {
                    ++inserted;
                }
                caption.end += inserted;
                captions.push_back(std::move(caption));
                sink->end_segment();
                segment_done(d.index, *d.result, d.max_frames);
            },
            {a.chunk, 64, a.first_chunk});
        all_frames = r.frames;
        segment_parts = r.segment_parts;
        total = r.timings;
    } else {
        for (size_t i = 0; i < segments.size(); ++i) {
            request.text = segments[i].text;
            request.max_frames = segment_frame_limit(caps, max_frames, segments[i].text);
            const SpeechResult r = session.generate(request);
            all_frames.insert(all_frames.end(), r.frames.begin(), r.frames.end());
            segment_parts.push_back(result_parts(r));
            total.segments += r.timings.segments;
            total.prefill_ms += r.timings.prefill_ms;
            total.talker_ms += r.timings.talker_ms;
            total.code_predictor_ms += r.timings.code_predictor_ms;
            segment_done(i, r, request.max_frames);
        }
    }
    std::vector<FileContents> files;
    std::optional<AtomicFileWriter> audio_file;  // committed with the other files
    if (sink && a.output != "-") audio_file.emplace(a.output);
    if (sink) sink->finish(audio_file ? &*audio_file : nullptr, a.normalize, normalize_db);
    std::string captions_file;
    if (!a.captions.empty()) {
        scale_captions(captions, sink->stretch());
        captions_file = captions_text(captions, caps.sample_rate, caption_format(a.captions, "--captions"));
        files.push_back({a.captions, captions_file.data(), captions_file.size()});
    }
    std::string codes_text;
    if (!a.codes_out.empty()) {
        // With the seed and the parts, `talkbox decode` gives this run's audio back.
        codec::CodesFile codes;
        codes.frames = all_frames;
        codes.seed = request.sampling.seed;
        codes.segments = segment_parts;
        codes.pause_ms = a.pause_ms;
        codes_text = codec::codes_file_text(codes);
        files.push_back({a.codes_out, codes_text.data(), codes_text.size()});
    }
    write_files_together(files, audio_file ? &*audio_file : nullptr);
    // What ran: the family's own sentences (Chatterbox, unless --no-split) or the long-form segments.
    const size_t ran = total.segments > 0 ? total.segments : segments.size();
    const double wall_ms = ms_since(start);
    const double seconds = static_cast<double>(all_frames.size()) / caps.frames_per_second;
    if (a.timings) {
        print_timings(total, all_frames.size(), seconds, wall_ms);
        std::fprintf(stderr, "         seed %llu\n", static_cast<unsigned long long>(*request.sampling.seed));
    }
    if (!a.quiet && a.output != "-") {
        std::fprintf(stderr, "%s%s%s: %zu frames (%.2f s) from %zu segment%s%s\n", a.output.c_str(),
                     !a.output.empty() && !a.codes_out.empty() ? ", " : "", a.codes_out.c_str(), all_frames.size(),
                     seconds, ran, ran == 1 ? "" : "s", a.no_split ? " (--no-split: the whole text as one sequence)" : "");
    }
}

}  // namespace

void register_speak(CLI::App& app) {
    auto a = std::make_shared<SpeakArgs>();
    auto* cmd = app.add_subcommand("speak", "Synthesise speech from text (to a file, to stdout while generating, or as codes)");
    cmd->add_option("-m,--model", a->model,
                    "Model GGUF file (Qwen3-TTS or Chatterbox) or a pulled model's name (ResembleAI/chatterbox); default: "
                    "$TALKBOX_MODEL, else `talkbox default`, else the only model in the cache");
    cmd->add_option("-t,--text", a->text, "Text to speak");
    cmd->add_option("-f,--file", a->text_file, "Read the text from a file ('-': stdin; stdin is also read when piped); at most 1000000 characters");
    cmd->add_option("--input-format", a->input_format, "text, ssml (docs/ssml.md) or dialogue (docs/dialogue.md); default: dialogue with --cast, "
                                                    "else ssml for a -f FILE.ssml, else text")
        ->check(CLI::IsMember({"text", "ssml", "dialogue"}));
    cmd->add_option("--cast", a->cast, "A dialogue's voices: NAME=VOICE,... (a preset speaker, a voice file or builtin; names in any case), "
                                       "e.g. alice=ryan,narrator=fox.voice; lines 'ALICE: ...' are spoken by ryan (docs/dialogue.md)");
    cmd->add_option("-o,--output", a->output, "Audio output file, or '-' to stream raw PCM to stdout");
    cmd->add_option("--format", a->format, "wav16 (default for files), wav32, flac, ogg, opus, mp3, aac; for stdout raw16/s16le (default), raw32/f32le, wav16");
    cmd->add_option("--codes-out", a->codes_out, "Also write the generated frames as JSON (Qwen3-TTS: codec frames; Chatterbox: "
                                                 "speech tokens), with the seed and segments that `talkbox decode` needs");
    cmd->add_option("--captions", a->captions, "Also write when each segment (sentence) is spoken: .srt, .vtt or .json (text, "
                                               "start, end, voice), by the extension; per segment, not per word");
    cmd->add_option("--speed", a->speed, "Tempo of the audio, 0.25 to 4 (1: the model's own pace), pitch kept (SoundTouch); streams too");
    cmd->add_option("--speaker", a->speaker, "CustomVoice: preset speaker (see talkbox info)");
    cmd->add_option("--instruct", a->instruct, "Style instruction (CustomVoice 1.7B) or voice description (VoiceDesign)");
    cmd->add_option("--language", a->language, "Language name or 'auto' (Chatterbox: a code such as en, fr, zh; 'auto': no language tag)")
        ->capture_default_str();
    auto* voice = cmd->add_option("--voice", a->voice, "Base / Chatterbox: a voice file made by 'talkbox voice create'");
    auto* ref = cmd->add_option("--ref-audio", a->ref_audio, "Base / Chatterbox: clone the voice of this clip (as voice create)")
                    ->excludes(voice);
    auto* ref_text = cmd->add_option("--ref-text", a->ref_text, "Qwen3-TTS Base: transcript of --ref-audio (in-context cloning)")->needs(ref);
    cmd->add_flag("--x-vector-only", a->x_vector_only, "Clone from the speaker embedding only (no transcript)")
        ->needs(ref)
        ->excludes(ref_text);
    auto* st = cmd->add_flag("--streaming-text", a->streaming_text, "Feed the text alongside the generated frames");
    cmd->add_flag("--non-streaming-text", a->non_streaming_text, "Put the whole text in the prompt")->excludes(st);
    cmd->add_flag("--greedy", a->greedy, "Greedy decoding for both codebook 0 and the sub-talker (repetition penalty kept)");
    cmd->add_option("--seed", a->seed, "Random seed (reproducible output)")->check(in_range<uint64_t>(0, UINT64_MAX));
    // The request's numeric settings, one flag each; the model checks their ranges (and refuses
    // those it does not take) before any work.
    for (const SpeechSetting& setting : speech_settings()) {
        std::string flag = std::string("--") + setting.name;
        std::replace(flag.begin(), flag.end(), '_', '-');
        auto* option = cmd->add_option_function<double>(
            flag, [a, name = std::string(setting.name)](double v) { a->settings[name] = v; }, setting.help);
        if (setting.integer) option->type_name("UINT")->check(in_range<uint32_t>(0, UINT32_MAX));
    }
    cmd->add_option("--chunk", a->chunk, "Frames per decoder step when streaming audio")->check(in_range(1, 1000))->capture_default_str();
    cmd->add_option("--first-chunk", a->first_chunk, "Frames decoded before the first audio leaves (0: a whole --chunk)")
        ->check(in_range(0, 1000))
        ->capture_default_str();
    cmd->add_option("--pause-ms", a->pause_ms, "Silence between segments")->check(in_range(0, codec::kMaxPauseMs))->capture_default_str();
    cmd->add_option("--segment-chars", a->segment_chars, "Join sentences into segments of up to this many characters")
        ->check(in_range<size_t>(0, UINT32_MAX))
        ->capture_default_str();
    cmd->add_flag("--no-split", a->no_split, "Synthesise the whole text as one segment (Chatterbox: one T3 sequence, as the official "
                                             "code runs it, instead of one per sentence)");
    auto* marked = cmd->add_flag("--watermark", a->watermark,
                                 "Put the Perth watermark on the speech (the default for Chatterbox, as its official package "
                                 "does; needs the checkpoint: docs/watermark.md)");
    cmd->add_flag("--no-watermark", a->no_watermark, "Leave Chatterbox speech without the Perth watermark")->excludes(marked);
    cmd->add_option("--parallel", a->parallel,
                    "Synthesised at once, audio still in order and identical to one after another: segments (Qwen3-TTS, "
                    "whose sessions batch) or sentences through T3 (Chatterbox). 0: the model's choice, 4; 1: one at a time")
        ->check(in_range(0u, 64u))
        ->capture_default_str();
    cmd->add_option("--chatterbox-chunk-tokens", a->chatterbox_chunk_tokens,
                    "Chatterbox: the first sentence goes through S3Gen in chunks while T3 runs, the first after this many "
                    "speech tokens, then whenever they have doubled (earlier first audio with -o -; the audio differs "
                    "slightly from the whole sentence's, docs/chatterbox-s3gen.md). 0: each sentence whole")
        ->check(in_range(0, 10000))
        ->capture_default_str();
    cmd->add_option("-T,--threads", a->threads, "CPU threads (0: one per core)")->check(thread_count())->capture_default_str();
    add_device_option(cmd, a->device);
    add_decoder_precision_option(cmd, a->decoder_precision);
    cmd->add_option("--decoder-threads", a->decoder_threads, "Threads of the speech decoder, which shares the cores "
                                                             "with generation (0: as --threads)")
        ->check(thread_count())
        ->capture_default_str();
    cmd->add_option("--kv-cache", a->kv_cache, "KV cache type of the talker or T3: f32 (official), f16, q8_0 (heads of a multiple of 32 values)")->capture_default_str();
    auto* norm = cmd->add_option("--normalize", a->normalize, "Level normalisation of file output: none, peak, loudness")
                     ->check(CLI::IsMember({"none", "peak", "loudness"}))
                     ->capture_default_str();
    cmd->add_option("--normalize-db", a->normalize_db, "Target in dBFS (default -1 for peak, -20 RMS for loudness)")
        ->check(in_range(-70.0, 0.0))
        ->needs(norm);
    cmd->add_flag("--timings", a->timings, "Print where the time went");
    cmd->add_flag("-q,--quiet", a->quiet, "Print nothing but errors");
    cmd->callback([a] { run_speak(*a); });
}

}  // namespace talkbox::cli
