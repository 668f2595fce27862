// Streaming S3Gen: HiftStream's chunks equal HiFT on the whole mel (the source phase carried,
// the decoder given its receptive field), and S3GenStream's waveform, rendered from growing token
// prefixes, stays within the measured difference of the whole-sentence waveform (the flow's full
// attention lets later tokens nudge mel frames that were already settled).
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>

#include "chatterbox/hift_stream.h"
#include "chatterbox/pipeline.h"
#include "chatterbox/s3gen_goldens.h"
#include "chatterbox/s3gen_stream.h"
#include "chatterbox/convert/s3gen_sources.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "support/loaded_model.h"
#include "support/tiny_turbo.h"
#include "talkbox/error.h"

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

// Streamed vs whole-sentence mel with the same draws, prefixes of 16 tokens then every 6: max
// |diff| relative to max |mel| and SNR (measured: 1.4 % / 44.5 dB case_a, 1.8 % / 43.9 dB case_b,
// 1.0 % / 47.6 dB Turbo; docs/chatterbox-s3gen.md). A stream whose renders gave a frame other
// draws than the whole sentence's would be far off.
constexpr double kMelRelError = 0.03;
constexpr double kMelSnrDb = 40.0;
// The same with windowed renders (S3GenWindow: half the prompt, 6 settled tokens): the flow sees
// less (measured: 24 % / 24.3 dB case_a, 25 % / 23.4 dB case_b, 13 % / 31.2 dB Turbo).
constexpr double kWindowedMelRelError = 0.35;
constexpr double kWindowedMelSnrDb = 20.0;

Backend& backend() {
    static Backend b(1);  // one thread: tiny graphs, barriers would dominate
    return b;
}

S3Gen& multilingual_s3gen() {
    static const auto src = safetensors_source(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"));
    static S3Gen s3gen(*src, backend(), [] {
        FlowConfig c;
        c.estimator_heads = nlohmann::json::parse(read_text(s3gen_golden_dir("config.json"))).at("tiny").at("est_num_heads").get<int>();
        return c;
    }());
    return s3gen;
}

S3Gen& turbo_s3gen() {
    static const GgufFile file(converted_turbo());
    static S3Gen s3gen(file, backend());
    return s3gen;
}

S3GenNoise golden_noise(const S3GenCase& c) {
    S3GenNoise n;
    n.cfm = c.cfm_noise.data;
    n.hift.phase = c.sine_phase.data;
    n.hift.randn = c.sine_randn.data;
    return n;
}

// Signal-to-difference ratio in dB.
double snr_db(const std::vector<float>& got, const std::vector<float>& want) {
    double s = 0, d = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        s += static_cast<double>(want[i]) * want[i];
        d += static_cast<double>(got[i] - want[i]) * (got[i] - want[i]);
    }
    return d == 0 ? INFINITY : 10.0 * std::log10(s / d);
}

// Frames [f0, f1) of a bin-major [80, frames] mel.
std::vector<float> mel_frames(const std::vector<float>& mel, int64_t frames, int64_t f0, int64_t f1) {
    std::vector<float> out(static_cast<size_t>(80 * (f1 - f0)));
    for (int64_t c = 0; c < 80; ++c)
        for (int64_t f = f0; f < f1; ++f) out[static_cast<size_t>(c * (f1 - f0) + f - f0)] = mel[static_cast<size_t>(c * frames + f)];
    return out;
}

// The golden mel through HiftStream in chunks of `chunk` frames; `first_out` receives the number
// of frames pushed when the first samples came out.
std::vector<float> stream_hift(const S3GenCase& c, int64_t chunk, int64_t* first_out = nullptr) {
    const int64_t frames = c.mel.shape[2];
    HiftStream stream(multilingual_s3gen().hift(), HiftNoiseTape::from(golden_noise(c).hift));
    std::vector<float> wav;
    for (int64_t f = 0; f < frames; f += chunk) {
        const int64_t to = std::min(frames, f + chunk);
        const std::vector<float> out = stream.push(mel_frames(c.mel.data, frames, f, to), to - f);
        if (first_out && wav.empty() && !out.empty()) *first_out = to;
        EXPECT_EQ(static_cast<int64_t>(wav.size() + out.size()), stream.emitted_samples());
        wav.insert(wav.end(), out.begin(), out.end());
    }
    const std::vector<float> rest = stream.finish();
    wav.insert(wav.end(), rest.begin(), rest.end());
    return wav;
}

class HiftStreamTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HiftStreamTest, ChunksEqualTheWholeMel) {
    const S3GenCase c = load_s3gen_case(GetParam());
    const int64_t frames = c.mel.shape[2];
    std::vector<float> whole = multilingual_s3gen().hift().synthesize(c.mel.data, frames, golden_noise(c).hift);
    apply_trim_fade(whole);
    for (int64_t chunk : {1, 7, 13, 25}) {
        int64_t first = -1;
        const std::vector<float> streamed = stream_hift(c, chunk, &first);
        ASSERT_EQ(streamed.size(), whole.size()) << "chunk " << chunk;
        // Same frames, same draws, same phase: only the windows' float rounding may differ (a reset
        // phase or a decoder window without its context is off by ~1e-1).
        const float diff = max_abs_diff(streamed, whole);
        std::printf("[ stream   ] %s HiFT in chunks of %lld frames: max |diff| %.3g, first samples after %lld of %lld frames\n",
                    c.name.c_str(), static_cast<long long>(chunk), diff, static_cast<long long>(first),
                    static_cast<long long>(frames));
        EXPECT_LE(diff, 1e-5) << "chunk " << chunk;
        // Audio leaves before the mel ends: the right context is all a chunk waits for.
        EXPECT_GT(first, 0);
        EXPECT_LE(first, std::min(frames, ((HiftStream::kF0Context + HiftStream::kDecoderContext + 1) / chunk + 1) * chunk));
    }
}

TEST_P(HiftStreamTest, RejectsMalformedMelAndTooShortInjectedNoise) {
    const S3GenCase c = load_s3gen_case(GetParam());
    HiftStream stream(multilingual_s3gen().hift(), HiftNoiseTape::from(golden_noise(c).hift));
    EXPECT_THROW(stream.push(std::vector<float>(79), 1), Error);
    // One frame more than the injected draws cover.
    const int64_t frames = c.mel.shape[2] + 1;
    std::vector<float> mel(static_cast<size_t>(80 * frames), 0.5f);
    HiftStream longer(multilingual_s3gen().hift(), HiftNoiseTape::from(golden_noise(c).hift));
    longer.push(mel, frames);
    try {
        longer.finish();
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("injected noise"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(S3Gen, HiftStreamTest, ::testing::Values("case_a", "case_b"));

struct Streamed {
    std::vector<float> wav, mel;
    std::vector<size_t> chunk_sizes;
    int renders = 0;
};

// tokens rendered as prefixes of `first` tokens, then every `every` more, then all of them
// (`tail`: the sentence's closing tokens that only the final render sees, Turbo's silence).
Streamed stream_s3gen(S3GenStream& stream, const std::vector<int32_t>& tokens, size_t first, size_t every, size_t tail = 0) {
    Streamed s;
    const size_t body = tokens.size() - tail;
    for (size_t n = first; n < body; n += every) {
        const std::vector<float> out = stream.render({tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n)}, false);
        s.chunk_sizes.push_back(out.size());
        s.wav.insert(s.wav.end(), out.begin(), out.end());
    }
    const std::vector<float> out = stream.render(tokens, true);
    s.chunk_sizes.push_back(out.size());
    s.wav.insert(s.wav.end(), out.begin(), out.end());
    s.renders = stream.renders();
    s.mel = stream.mel();
    return s;
}

// The mel's difference relative to the whole mel's largest magnitude (the waveform's own SNR is
// pessimistic: the source integrates f0, so a small early f0 difference shifts every later sample's phase).
double mel_error(const Streamed& s, const S3GenOutput& whole) { return max_abs_diff(s.mel, whole.mel) / max_abs(whole.mel); }

void report(const std::string& label, const Streamed& s, const S3GenOutput& whole) {
    std::printf("[ stream   ] %s: %d renders, first chunk %zu samples; mel max |diff| %.3g of max |mel| %.3g (SNR %.1f dB); "
                "wav max |diff| %.3g, SNR %.1f dB (max |x| %.3g)\n",
                label.c_str(), s.renders, s.chunk_sizes.front(), max_abs_diff(s.mel, whole.mel), max_abs(whole.mel),
                snr_db(s.mel, whole.mel), max_abs_diff(s.wav, whole.wav), snr_db(s.wav, whole.wav), max_abs(whole.wav));
}

// The streamed waveform is exactly HiFT (+ trim/fade) on the mel the stream settled: the
// waveform's own difference from the whole sentence's comes from the mel alone (its SNR is low
// because the source integrates f0, so a small early f0 difference shifts every later sample's
// phase; a reset phase or a decoder window without context would show here).
void expect_hift_of_settled_mel(S3Gen& s3gen, const Streamed& s, const HiftNoise& noise) {
    const int64_t frames = static_cast<int64_t>(s.mel.size() / 80);
    std::vector<float> wav = s3gen.hift().synthesize(s.mel, frames, noise);
    apply_trim_fade(wav);
    ASSERT_EQ(s.wav.size(), wav.size());
    EXPECT_LE(max_abs_diff(s.wav, wav), 1e-5);
}

TEST(S3GenStreamTest, OneFinalRenderIsTheWholeSentenceBitForBit) {
    const S3GenCase c = load_s3gen_case("case_a");
    const FlowPrompt prompt{c.prompt_tokens, c.prompt_feat.data, c.embedding.data};
    const S3GenOutput whole = multilingual_s3gen().synthesize(c.speech_tokens, prompt, golden_noise(c));
    S3GenStream stream(multilingual_s3gen(), prompt, golden_noise(c), 0);
    EXPECT_EQ(stream.render(c.speech_tokens, true), whole.wav);
}

TEST(S3GenStreamTest, MultilingualPrefixesStayNearTheWholeSentence) {
    for (const char* name : {"case_a", "case_b"}) {
        const S3GenCase c = load_s3gen_case(name);
        const FlowPrompt prompt{c.prompt_tokens, c.prompt_feat.data, c.embedding.data};
        const S3GenOutput whole = multilingual_s3gen().synthesize(c.speech_tokens, prompt, golden_noise(c));
        S3GenStream stream(multilingual_s3gen(), prompt, golden_noise(c), 0);
        const Streamed s = stream_s3gen(stream, c.speech_tokens, 16, 6);
        ASSERT_EQ(s.wav.size(), whole.wav.size());
        report(std::string(name) + " multilingual, prefixes 16 + 6k", s, whole);
        ASSERT_EQ(s.mel.size(), whole.mel.size());
        EXPECT_GT(s.chunk_sizes.front(), 0u) << "the first prefix gives audio";
        EXPECT_LE(mel_error(s, whole), kMelRelError);
        EXPECT_GE(snr_db(s.mel, whole.mel), kMelSnrDb);
        expect_hift_of_settled_mel(multilingual_s3gen(), s, golden_noise(c).hift);
    }
}

TEST(S3GenStreamTest, TurboPrefixesStayNearTheWholeSentence) {
    const S3GenCase c = load_s3gen_case("case_turbo");  // its tokens and prompt; the converted tiny Turbo model
    const FlowPrompt prompt{c.prompt_tokens, c.prompt_feat.data, c.embedding.data};
    S3GenStream stream(turbo_s3gen(), prompt, {}, 11);
    const S3GenNoise noise = stream.whole_noise(c.speech_tokens.size());
    const S3GenOutput whole = turbo_s3gen().synthesize(c.speech_tokens, prompt, noise);
    const Streamed s = stream_s3gen(stream, c.speech_tokens, 16, 6, 3);
    ASSERT_EQ(s.wav.size(), whole.wav.size());
    report("turbo, prefixes 16 + 6k", s, whole);
    ASSERT_EQ(s.mel.size(), whole.mel.size());
    EXPECT_GT(s.chunk_sizes.front(), 0u);
    EXPECT_LE(mel_error(s, whole), kMelRelError);
    EXPECT_GE(snr_db(s.mel, whole.mel), kMelSnrDb);
    expect_hift_of_settled_mel(turbo_s3gen(), s, noise.hift);
}

// A prompt whose mel holds exactly 2 frames per token (plus `odd` frames of the first speech token,
// as embed_ref can leave), from a golden case's.
FlowPrompt even_prompt(const S3GenCase& c, int64_t odd = 0) {
    FlowPrompt p{c.prompt_tokens, c.prompt_feat.data, c.embedding.data};
    const size_t frames = 2 * p.tokens.size() + static_cast<size_t>(odd);
    p.feat.resize(80 * frames, 0.25f);
    return p;
}

// Columns [f0, end) of a bin-major [80, frames] noise.
std::vector<float> noise_from(const std::vector<float>& cfm, int64_t f0) {
    const int64_t frames = static_cast<int64_t>(cfm.size() / 80);
    return mel_frames(cfm, frames, f0, frames);
}

// The first windowed render (nothing settled yet) is the flow over the voice's last prompt tokens,
// with their mel and their noise rows: bit for bit a whole-prefix stream on that shorter prompt.
// With fewer steps for the first render, the shorter stream's render takes as many.
TEST(S3GenStreamWindow, TheFirstRenderIsTheFlowOverTheVoicesLastPromptTokens) {
    const S3GenCase c = load_s3gen_case("case_a");
    const FlowPrompt voice = even_prompt(c);
    const int64_t tp = static_cast<int64_t>(voice.tokens.size()), keep = tp / 2, p0 = tp - keep;
    ASSERT_GT(keep, 0);
    FlowPrompt tail = voice;
    tail.tokens.erase(tail.tokens.begin(), tail.tokens.begin() + p0);
    tail.feat.erase(tail.feat.begin(), tail.feat.begin() + 80 * 2 * p0);
    const S3GenNoise noise = golden_noise(c);
    S3GenNoise tail_noise = noise;
    tail_noise.cfm = noise_from(noise.cfm, 2 * p0);
    for (int first_steps : {0, 4}) {
        SCOPED_TRACE(first_steps);
        S3GenStream windowed(multilingual_s3gen(), voice, noise, 0, 0, nullptr, S3GenWindow{static_cast<int>(keep), 4}, first_steps);
        S3GenStream shorter(multilingual_s3gen(), tail, tail_noise, 0, first_steps);
        const std::vector<int32_t> prefix(c.speech_tokens.begin(), c.speech_tokens.begin() + 20);
        const std::vector<float> got = windowed.render(prefix, false);
        EXPECT_EQ(got, shorter.render(prefix, false));
        EXPECT_EQ(windowed.mel(), shorter.mel());
        EXPECT_GT(windowed.mel().size(), 0u);
    }
}

// A later windowed render is the flow over [the voice's last prompt tokens with their mel ; the
// last settled speech tokens with the mel the stream settled for them ; the tokens since], with
// each frame's own noise row, and settles the frames after those already out: bit for bit, with
// and without the odd prompt frame (generated frame g sits at 2·Tp + odd + g on the timeline).
TEST(S3GenStreamWindow, ALaterRenderIsTheFlowOverTheTailTheSettledContextAndTheRest) {
    for (int64_t odd : {0, 1}) {
        SCOPED_TRACE(odd);
        const S3GenCase c = load_s3gen_case("case_a");
        const FlowPrompt voice = even_prompt(c, odd);
        const int64_t tp = static_cast<int64_t>(voice.tokens.size()), keep = tp / 2, p0 = tp - keep, context = 4;
        const S3GenNoise noise = golden_noise(c);
        S3GenStream stream(multilingual_s3gen(), voice, noise, 0, 0, nullptr, S3GenWindow{static_cast<int>(keep), static_cast<int>(context)});
        const int64_t first = 20, second = 26;
        stream.render({c.speech_tokens.begin(), c.speech_tokens.begin() + first}, false);
        const std::vector<float> mel1 = stream.mel();
        const int64_t sent1 = static_cast<int64_t>(mel1.size() / 80);
        ASSERT_EQ(sent1, 2 * first - odd - S3GenStream::kHeldBackFrames);
        const int64_t k = (sent1 + odd) / 2, c0 = k - context;
        FlowPrompt window{{voice.tokens.begin() + p0, voice.tokens.end()},
                          {voice.feat.begin() + 80 * 2 * p0, voice.feat.begin() + 80 * 2 * tp},
                          voice.embedding};
        window.tokens.insert(window.tokens.end(), c.speech_tokens.begin() + c0, c.speech_tokens.begin() + k);
        const std::vector<float> ctx = mel_frames(mel1, sent1, 2 * c0 - odd, 2 * k - odd);  // [80, 2·context]
        for (int64_t f = 0; f < 2 * context; ++f)
            for (int64_t b = 0; b < 80; ++b) window.feat.push_back(ctx[static_cast<size_t>(b * 2 * context + f)]);
        const int64_t frames = static_cast<int64_t>(noise.cfm.size() / 80);
        std::vector<float> z = mel_frames(noise.cfm, frames, 2 * p0, 2 * tp);
        const std::vector<float> z_ctx = mel_frames(noise.cfm, frames, 2 * (tp + c0), 2 * (tp + k));
        const std::vector<float> z_new = mel_frames(noise.cfm, frames, 2 * (tp + k), 2 * (tp + second));
        std::vector<float> z_all;  // bin-major [80, rows]: interleave the three column ranges per bin
        const int64_t a = 2 * keep, b = 2 * context, n = 2 * (second - k);
        for (int64_t bin = 0; bin < 80; ++bin) {
            z_all.insert(z_all.end(), z.begin() + bin * a, z.begin() + (bin + 1) * a);
            z_all.insert(z_all.end(), z_ctx.begin() + bin * b, z_ctx.begin() + (bin + 1) * b);
            z_all.insert(z_all.end(), z_new.begin() + bin * n, z_new.begin() + (bin + 1) * n);
        }
        const std::vector<float> want = multilingual_s3gen().flow().inference(
            {c.speech_tokens.begin() + k, c.speech_tokens.begin() + second}, window, z_all);  // generated frames from 2k - odd
        stream.render({c.speech_tokens.begin(), c.speech_tokens.begin() + second}, false);
        const std::vector<float> mel2 = stream.mel();
        const int64_t sent2 = static_cast<int64_t>(mel2.size() / 80);
        ASSERT_EQ(sent2, 2 * second - odd - S3GenStream::kHeldBackFrames);
        EXPECT_EQ(mel_frames(mel2, sent2, 0, sent1), mel1);  // what was out stays
        const int64_t skip = sent1 - (2 * k - odd);
        EXPECT_EQ(mel_frames(mel2, sent2, sent1, sent2), mel_frames(want, n, skip, skip + sent2 - sent1));
    }
}

// Windowed renders (the voice's last prompt tokens, a few settled tokens, the rest) stay near the
// whole sentence, nearly as near as whole-prefix renders (measured on the tiny models: see the
// printed figures and docs/chatterbox-s3gen.md); the waveform is still exactly HiFT on the mel
// settled. With the odd prompt frame embed_ref can leave, the frames line up the same way.
TEST(S3GenStreamWindow, WindowedRendersStayNearTheWholeSentence) {
    struct Run {
        const char* name;
        bool turbo;
        int64_t odd;
    };
    for (const Run& run : {Run{"case_a", false, 0}, Run{"case_b", false, 1}, Run{"case_turbo", true, 0}, Run{"case_turbo", true, 1}}) {
        const S3GenCase c = load_s3gen_case(run.name);
        S3Gen& s3gen = run.turbo ? turbo_s3gen() : multilingual_s3gen();
        const FlowPrompt voice = even_prompt(c, run.odd);
        const S3GenWindow window{static_cast<int>(voice.tokens.size() / 2), 6};
        S3GenStream stream(s3gen, voice, {}, 5, 0, nullptr, window);
        const S3GenNoise noise = stream.whole_noise(c.speech_tokens.size());
        const S3GenOutput whole = s3gen.synthesize(c.speech_tokens, voice, noise);
        const Streamed s = stream_s3gen(stream, c.speech_tokens, 16, 6, run.turbo ? 3 : 0);
        const std::string label = std::string(run.name) + (run.odd ? " (odd prompt frame)" : "") + " windowed " +
                                  std::to_string(window.prompt_tokens) + " + " + std::to_string(window.context_tokens) + " tokens";
        report(label, s, whole);
        ASSERT_EQ(s.mel.size(), whole.mel.size());
        ASSERT_EQ(s.wav.size(), whole.wav.size());
        EXPECT_GT(s.chunk_sizes.front(), 0u);
        EXPECT_LE(mel_error(s, whole), kWindowedMelRelError) << label;
        EXPECT_GE(snr_db(s.mel, whole.mel), kWindowedMelSnrDb) << label;
        expect_hift_of_settled_mel(s3gen, s, noise.hift);
    }
}

TEST(S3GenStreamWindow, RefusesNegativeSizes) {
    const S3GenCase c = load_s3gen_case("case_a");
    EXPECT_THROW(S3GenStream(multilingual_s3gen(), even_prompt(c), {}, 0, 0, nullptr, S3GenWindow{-1, 4}), Error);
    EXPECT_THROW(S3GenStream(multilingual_s3gen(), even_prompt(c), {}, 0, 0, nullptr, S3GenWindow{4, -1}), Error);
    EXPECT_THROW(S3GenStream(multilingual_s3gen(), even_prompt(c), {}, 0, -1), Error);
    try {
        S3GenStream(multilingual_s3gen(), even_prompt(c), {}, 0, 0, nullptr, {}, -2);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("-2 for the first render"), std::string::npos) << e.what();
    }
}

// The first render's ODE steps (PipelineStreaming::first_render_steps): first audio waits on it.
// Whole-prefix renders depend on nothing rendered before, so each one's frames are exactly a flow
// call over its prefix with the same draws: K steps for the first render, the default after.
TEST(S3GenStreamFirstSteps, TheFirstRenderTakesItsStepsAndLaterOnesTheDefault) {
    const S3GenCase c = load_s3gen_case("case_a");
    const FlowPrompt prompt{c.prompt_tokens, c.prompt_feat.data, c.embedding.data};
    const S3GenNoise noise = golden_noise(c);
    const int64_t noise_frames = static_cast<int64_t>(noise.cfm.size() / 80), tp = static_cast<int64_t>(prompt.tokens.size());
    const int64_t tpf = static_cast<int64_t>(prompt.feat.size() / 80);
    constexpr int kFirstSteps = 4;
    // The flow's generated frames [80, 2·(Tp + n) − Tpf] for the first n tokens.
    const auto flow = [&](int64_t n, int steps) {
        return multilingual_s3gen().flow().inference({c.speech_tokens.begin(), c.speech_tokens.begin() + n}, prompt,
                                                     mel_frames(noise.cfm, noise_frames, 0, 2 * (tp + n)), 0, steps);
    };
    S3GenStream stream(multilingual_s3gen(), prompt, noise, 0, 0, nullptr, {}, kFirstSteps);
    const int64_t first = 16, second = 22, gen1 = 2 * (tp + first) - tpf, gen2 = 2 * (tp + second) - tpf;
    stream.render({c.speech_tokens.begin(), c.speech_tokens.begin() + first}, false);
    const std::vector<float> mel1 = stream.mel();
    const int64_t sent1 = static_cast<int64_t>(mel1.size() / 80);
    ASSERT_GT(sent1, 0);
    EXPECT_EQ(mel1, mel_frames(flow(first, kFirstSteps), gen1, 0, sent1));
    EXPECT_NE(mel1, mel_frames(flow(first, 0), gen1, 0, sent1));  // the steps change the frames
    stream.render({c.speech_tokens.begin(), c.speech_tokens.begin() + second}, false);
    const std::vector<float> mel2 = stream.mel();
    const int64_t sent2 = static_cast<int64_t>(mel2.size() / 80);
    ASSERT_GT(sent2, sent1);
    EXPECT_EQ(mel_frames(mel2, sent2, 0, sent1), mel1);
    EXPECT_EQ(mel_frames(mel2, sent2, sent1, sent2), mel_frames(flow(second, 0), gen2, sent1, sent2));
    EXPECT_EQ(stream.renders(), 2);
}

// The pipeline's first-render steps against the default steps, same draws (tiny fixtures): the first
// render's settled mel, whole-prefix and windowed (half the prompt; printed for 3 to 8 steps,
// bounded for the pipeline's 5: measured 1.9-2.0 % of max |mel|, SNR 37.8-38.3 dB), and the
// streamed sentence against the whole one, which stays within the bounds of the default-step
// streams above (measured 24.2 dB case_a, 23.8 dB case_b).
constexpr double kFirstRenderMelRelError = 0.04;
constexpr double kFirstRenderMelSnrDb = 35.0;

TEST(S3GenStreamFirstSteps, TheFirstRenderStaysNearTheDefaultStepsRender) {
    const int pipeline_steps = PipelineStreaming{}.first_render_steps;
    ASSERT_GT(pipeline_steps, 0);
    // Its estimator times are every other time of the default grid (PipelineStreaming's reason for 5).
    const Flow& flow = multilingual_s3gen().flow();
    const std::vector<float> fewer_ts = flow.time_span(pipeline_steps), default_ts = flow.time_span(flow.default_steps());
    ASSERT_EQ(default_ts.size() - 1, 2 * (fewer_ts.size() - 1));
    for (size_t k = 0; k < fewer_ts.size(); ++k) EXPECT_EQ(fewer_ts[k], default_ts[2 * k]) << k;
    for (const char* name : {"case_a", "case_b"}) {
        const S3GenCase c = load_s3gen_case(name);
        const FlowPrompt voice = even_prompt(c);
        for (const S3GenWindow window : {S3GenWindow{}, S3GenWindow{static_cast<int>(voice.tokens.size() / 2), 6}}) {
            const std::vector<int32_t> prefix(c.speech_tokens.begin(), c.speech_tokens.begin() + 16);
            S3GenStream reference(multilingual_s3gen(), voice, {}, 5, 0, nullptr, window);
            reference.render(prefix, false);
            const std::vector<float> want = reference.mel();
            for (int steps = 3; steps <= 8; ++steps) {
                S3GenStream fewer(multilingual_s3gen(), voice, {}, 5, 0, nullptr, window, steps);
                fewer.render(prefix, false);
                const std::vector<float> got = fewer.mel();
                ASSERT_EQ(got.size(), want.size());
                const double rel = max_abs_diff(got, want) / max_abs(want), snr = snr_db(got, want);
                std::printf("[ stream   ] %s %s first render (%zu frames), %d steps vs %d: mel max |diff| %.2f%% of max |mel|, "
                            "SNR %.1f dB\n",
                            name, window.prompt_tokens ? "windowed" : "whole-prefix", got.size() / 80, steps,
                            multilingual_s3gen().flow().default_steps(), 100 * rel, snr);
                if (steps != pipeline_steps) continue;
                EXPECT_LE(rel, kFirstRenderMelRelError) << name;
                EXPECT_GE(snr, kFirstRenderMelSnrDb) << name;
            }
        }
        // The whole streamed sentence with the first render's fewer steps, windowed as the pipeline does.
        const S3GenWindow window{static_cast<int>(voice.tokens.size() / 2), 6};
        S3GenStream stream(multilingual_s3gen(), voice, {}, 5, 0, nullptr, window, pipeline_steps);
        const S3GenNoise noise = stream.whole_noise(c.speech_tokens.size());
        const S3GenOutput whole = multilingual_s3gen().synthesize(c.speech_tokens, voice, noise);
        const Streamed s = stream_s3gen(stream, c.speech_tokens, 16, 6);
        report(std::string(name) + " windowed, first render " + std::to_string(pipeline_steps) + " steps", s, whole);
        ASSERT_EQ(s.mel.size(), whole.mel.size());
        EXPECT_LE(mel_error(s, whole), kWindowedMelRelError) << name;
        EXPECT_GE(snr_db(s.mel, whole.mel), kWindowedMelSnrDb) << name;
        expect_hift_of_settled_mel(multilingual_s3gen(), s, noise.hift);
    }
}

// T3 holds a job whose progress is not ready, and only that job: the job's next token comes
// after the release (events, not timing).
TEST(S3GenStreamPipeline, T3WaitsForAJobsProgress) {
    static Pipeline p(converted_turbo(), 1, "");
    const T3& t3 = p.t3();
    struct Held final : T3Progress {
        std::mutex m;
        std::condition_variable cv;
        std::vector<std::string> events;
        size_t hold_at = 5;
        std::atomic<bool> held{false};
        void token(const std::vector<int32_t>& predicted) override {
            std::lock_guard<std::mutex> lock(m);
            events.push_back("token " + std::to_string(predicted.size()));
            if (predicted.size() == hold_at) {
                held = true;
                cv.notify_all();
            }
        }
        bool ready() const override { return !held; }
    } progress;
    const std::vector<int32_t> text = p.text().text_tokens(p.text().encode("Hello there, a test.", ""), t3.hparams().start_text,
                                                           t3.hparams().stop_text);
    T3Options o = t3.default_options();
    o.seed = 3;
    o.min_new_tokens = o.max_new_tokens = 12;
    std::thread releaser([&] {
        std::unique_lock<std::mutex> lock(progress.m);
        progress.cv.wait(lock, [&] { return progress.held.load(); });
        progress.events.push_back("release");
        progress.held = false;
        lock.unlock();
        t3.wake();
    });
    const T3Conditioning& cond = p.builtin_voice().t3;
    std::vector<int32_t> predicted;
    t3.generate_batch({T3Job{&text, &cond, o, nullptr, nullptr, &progress}}, 1,
                      [&](size_t, std::vector<int32_t>&& ids) { predicted = std::move(ids); });
    releaser.join();
    ASSERT_GT(predicted.size(), progress.hold_at + 1);
    const auto at = [&](const std::string& e) { return std::find(progress.events.begin(), progress.events.end(), e) - progress.events.begin(); };
    EXPECT_EQ(at("release"), at("token 5") + 1);
    EXPECT_LT(at("release"), at("token 6"));
    // The tokens are those of the job alone.
    EXPECT_EQ(predicted, t3.generate(text, cond, o));
}

// Pipeline::synthesize_batch with streaming: the first sentence's audio comes in chunks, the first
// from a prefix while T3 still runs (its render holds T3), all of them before the result; together
// they are the result's waveform, with the whole sentence's sample count. A sentence shorter than
// the first chunk is rendered whole, bit for bit as without streaming.
class StreamedPipeline : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamedPipeline, ChunksComeFirstAndAddUpToTheSentence) {
    const bool turbo = GetParam() == "turbo";
    Pipeline p(turbo ? converted_turbo() : converted_chatterbox("multilingual"), 1, "");
    T3Options o = p.t3().default_options();
    o.seed = 9;
    o.min_new_tokens = o.max_new_tokens = 40;
    const PipelineJob job{"Hello world, the sun is out again.", turbo ? "" : "en", &p.builtin_voice(), o, nullptr};
    std::vector<std::string> events;
    std::vector<float> chunks;
    PipelineStreaming streaming;
    streaming.first_tokens = 8;
    streaming.on_chunk = [&](size_t j, const float* pcm, size_t n) {
        EXPECT_EQ(j, 0u);
        events.push_back("chunk");
        chunks.insert(chunks.end(), pcm, pcm + n);
    };
    PipelineResult streamed;
    p.synthesize_batch({job}, 1, true, [&](size_t, PipelineResult&& r) {
        events.push_back("result");
        streamed = std::move(r);
    }, streaming);
    EXPECT_TRUE(streamed.streamed);
    ASSERT_GE(events.size(), 3u);  // renders at 8, 16, 32 tokens (some may settle nothing yet) and the last
    EXPECT_EQ(events.back(), "result");
    EXPECT_EQ(chunks, streamed.wav);
    const PipelineResult whole = p.synthesize(job.text, job.language, p.builtin_voice(), o);
    EXPECT_EQ(streamed.s3gen_tokens, whole.s3gen_tokens);
    EXPECT_EQ(streamed.wav.size(), whole.wav.size());
    EXPECT_GT(streamed.wav.size(), 0u);
    // The first chunk is out before T3's last token: the render at 32 tokens of 40 has audio.
    EXPECT_GE(std::count(events.begin(), events.end(), std::string("chunk")), 2);

    // Fewer tokens than the first chunk: today's whole-sentence audio.
    o.min_new_tokens = o.max_new_tokens = 6;
    events.clear();
    PipelineResult short_one;
    p.synthesize_batch({PipelineJob{job.text, job.language, &p.builtin_voice(), o, nullptr}}, 1, true,
                       [&](size_t, PipelineResult&& r) { short_one = std::move(r); }, streaming);
    EXPECT_FALSE(short_one.streamed);
    EXPECT_TRUE(events.empty());
    EXPECT_EQ(short_one.wav, p.synthesize(job.text, job.language, p.builtin_voice(), o).wav);
}

// The pipeline's streamed audio is an S3GenStream's over the same voice, seed and window, rendered at
// the same token counts (first_tokens, then doubling, then all), whose first render takes
// first_render_steps (multilingual; Turbo keeps its 2 meanflow steps), with vocode()'s last-token cut.
TEST_P(StreamedPipeline, TheFirstRenderTakesTheStreamingsSteps) {
    const bool turbo = GetParam() == "turbo";
    const std::string path = turbo ? converted_turbo() : converted_chatterbox("multilingual");
    Pipeline p(path, 1, "");
    T3Options o = p.t3().default_options();
    o.seed = 9;
    o.min_new_tokens = o.max_new_tokens = 40;
    PipelineStreaming streaming;
    streaming.first_tokens = 8;
    streaming.first_render_steps = 3;
    std::vector<float> chunks;
    streaming.on_chunk = [&](size_t, const float* pcm, size_t n) { chunks.insert(chunks.end(), pcm, pcm + n); };
    PipelineResult streamed;
    p.synthesize_batch({PipelineJob{"Hello world, the sun is out again.", turbo ? "" : "en", &p.builtin_voice(), o, nullptr}}, 1,
                       true, [&](size_t, PipelineResult&& r) { streamed = std::move(r); }, streaming);
    ASSERT_TRUE(streamed.streamed);
    ASSERT_EQ(chunks, streamed.wav);

    const GgufFile file(path);
    S3Gen s3gen(file, backend());
    S3GenStream stream(s3gen, p.builtin_voice().flow, {}, o.seed, 0, nullptr, streaming.window,
                       turbo ? 0 : streaming.first_render_steps);
    std::vector<float> want;
    size_t next_at = static_cast<size_t>(streaming.first_tokens);
    for (size_t n = 1; n < streamed.speech_tokens.size(); ++n) {  // T3's progress after each token but the last
        const std::vector<int32_t> settled = p.t3().settled_tokens({streamed.speech_tokens.begin(), streamed.speech_tokens.begin() + n});
        if (settled.size() < next_at) continue;
        next_at = 2 * settled.size();
        const std::vector<float> out = stream.render(settled, false);
        want.insert(want.end(), out.begin(), out.end());
    }
    const std::vector<float> rest = stream.render(streamed.s3gen_tokens, true);
    want.insert(want.end(), rest.begin(), rest.end());
    if (!turbo) want.resize(std::min(want.size(), (streamed.s3gen_tokens.size() - 1) * 960));
    EXPECT_GE(stream.renders(), 3);
    EXPECT_EQ(streamed.wav, want);
}

INSTANTIATE_TEST_SUITE_P(Chatterbox, StreamedPipeline, ::testing::Values("multilingual", "turbo"),
                         [](const auto& info) { return info.param; });

// ModelOptions::s3gen_chunk_tokens through Session::speak: the first sentence's audio in several
// callbacks (the second sentence's in one), the result counting them all with a first-audio time,
// and the same tokens as without streaming; a negative chunk is refused.
TEST(S3GenStreamSession, SpeakStreamsTheFirstSentence) {
    SpeechRequest r;
    r.text = "Hello world, the sun is out again. We can test it now!";
    r.sampling.seed = 4;
    r.max_frames = 40;
    const auto speak = [&](int chunk, std::vector<size_t>& calls) {
        ModelOptions o{1, 1};
        o.s3gen_chunk_tokens = chunk;
        LoadedModel m(converted_turbo(), o);
        return m.session.speak(r, [&](const float*, size_t n) { calls.push_back(n); });
    };
    std::vector<size_t> whole_calls, streamed_calls;
    const SpeechResult whole = speak(0, whole_calls), streamed = speak(8, streamed_calls);
    EXPECT_EQ(whole_calls.size(), 2u);  // one per sentence
    EXPECT_GE(streamed_calls.size(), 3u);
    EXPECT_EQ(streamed.frames, whole.frames);
    size_t sum = 0;
    for (size_t n : streamed_calls) sum += n;
    EXPECT_EQ(streamed.samples, sum);
    EXPECT_EQ(streamed.samples, whole.samples);
    EXPECT_GT(streamed.timings.first_audio_ms, 0.0);
    // The second sentence is rendered whole: its audio is the last callback, as without streaming.
    EXPECT_EQ(streamed_calls.back(), whole_calls.back());

    ModelOptions bad{1, 1};
    bad.s3gen_chunk_tokens = -1;
    try {
        LoadedModel m(converted_turbo(), bad);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("S3Gen chunk"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace talkbox::chatterbox
