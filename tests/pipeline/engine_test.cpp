// The Model/Session API on the Base golden cases (x-vector and in-context clones built from the goldens'
// embedding and reference codes), streaming delivery, cancellation and request errors.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "support/golden_cases.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "support/loaded_model.h"
#include "talkbox/model.h"
#include "talkbox/error.h"

using namespace talkbox;
using namespace talkbox::testing;

namespace {

class EngineTest : public ::testing::Test {
protected:
    static void TearDownTestSuite() { models_.clear(); }
    static LoadedModel& loaded(const std::string& variant) {
        auto& m = models_[variant];
        if (!m) m = std::make_unique<LoadedModel>(converted_fixture(variant));
        return *m;
    }
    static Session& engine(const std::string& variant) { return loaded(variant).session; }
    static SpeechRequest request_for(const GoldenCase& c) {
        const auto& j = c.json;
        SpeechRequest r;
        r.text = j["text"];
        r.language = j["language"];
        r.text_mode = j["text_mode"] == "streaming" ? TextMode::Streaming : TextMode::NonStreaming;
        r.sampling.greedy = true;
        r.max_frames = 15;
        if (c.variant.find("Base") == std::string::npos) {
            if (j["speaker"].is_string()) r.speaker = j["speaker"];
            if (j["instruct"].is_string()) r.instruct = j["instruct"];
            return r;
        }
        auto v = std::make_shared<Voice>();
        v->model_size = c.variant.find("0.6B") != std::string::npos ? "0.6b" : "1.7b";
        v->embedding = load_npy(c.dir + "/spk_embedding.npy").data;
        v->embedding_dim = static_cast<uint32_t>(v->embedding.size());
        v->x_vector_only = !j["icl_mode"].get<bool>();
        if (!v->x_vector_only) {
            v->ref_codes = j["ref_codes"].get<std::vector<std::vector<int32_t>>>();
            v->ref_text = j["ref_text"];
        }
        r.voice = v;
        return r;
    }
    static std::map<std::string, std::unique_ptr<LoadedModel>> models_;
};
std::map<std::string, std::unique_ptr<LoadedModel>> EngineTest::models_;

}  // namespace

TEST_F(EngineTest, BaseClonesMatchTheGoldenFramesAndAudio) {
    size_t checked = 0;
    for (const auto& c : talker_golden_cases()) {
        if (c.variant.find("Base") == std::string::npos) continue;
        std::vector<float> audio;
        size_t callbacks = 0, first = 0;
        const auto r = engine(c.variant).speak(request_for(c), [&](const float* pcm, size_t n) {
            audio.insert(audio.end(), pcm, pcm + n);
            if (callbacks++ == 0) first = n;
        });
        EXPECT_EQ(r.frames, c.frames()) << c.name;
        EXPECT_EQ(r.stop_reason, c.json["stopped_by"] == "eos" ? StopReason::Eos : StopReason::MaxFrames) << c.name;
        if (r.official_leading_sample) audio.insert(audio.begin(), *r.official_leading_sample);
        const auto want = load_npy(c.decoded_wav());
        ASSERT_EQ(audio.size(), want.data.size()) << c.name;
        EXPECT_LE(max_abs_diff(audio, want.data), 1e-4f) << c.name;
        EXPECT_GT(callbacks, 1u) << "audio arrives in pieces while generating";
        EXPECT_EQ(first, 1920u) << c.name << ": the first audio leaves after one frame (StreamOptions::first_chunk_frames)";
        EXPECT_EQ(r.samples, 1920 * r.frames.size());
        ++checked;
    }
    EXPECT_EQ(checked, 5u);
}

TEST_F(EngineTest, FirstChunkSizeChangesOnlyWhenAudioLeaves) {
    for (const auto& c : talker_golden_cases()) {
        if (c.name != "base_xvec_english_stream") continue;  // no reference frames: chunks start at frame 0
        std::vector<float> reference;
        for (const auto& [stream, first_samples] : {std::pair{StreamOptions{4, 64, 1}, 1920u}, std::pair{StreamOptions{4, 64, 0}, 4 * 1920u},
                                                    std::pair{StreamOptions{3, 64, 2}, 2 * 1920u}, std::pair{StreamOptions{2, 64, 5}, 2 * 1920u}}) {
            std::vector<float> audio;
            size_t first = 0;
            engine(c.variant).speak(request_for(c), [&](const float* pcm, size_t n) {
                if (audio.empty()) first = n;
                audio.insert(audio.end(), pcm, pcm + n);
            }, stream);
            EXPECT_EQ(first, first_samples) << c.name << " chunk " << stream.frames_per_chunk << ", first " << stream.first_chunk_frames;
            if (reference.empty()) reference = audio;
            ASSERT_EQ(audio.size(), reference.size());
            EXPECT_LE(max_abs_diff(audio, reference), 1e-4f) << c.name << ": the chunking must not change the audio";
        }
        return;
    }
    FAIL() << "golden case base_xvec_english_stream not found";
}

// Model::decode(frames, stream): the decoder alone as speak() streams (talkbox bench --streams times
// it): the same samples as speak's audio of those frames, for any chunking.
TEST_F(EngineTest, StreamedDecodeGivesSpeaksAudio) {
    for (const auto& c : talker_golden_cases()) {
        if (c.name != "base_xvec_english_stream") continue;  // no reference frames: speak's audio is all the frames'
        for (const StreamOptions stream : {StreamOptions{4, 64, 1}, StreamOptions{3, 64, 0}}) {
            std::vector<float> spoken;
            const SpeechResult r = engine(c.variant).speak(request_for(c), [&](const float* pcm, size_t n) {
                spoken.insert(spoken.end(), pcm, pcm + n);
            }, stream);
            const std::vector<float> decoded = loaded(c.variant).model.decode(r.frames, stream);
            ASSERT_EQ(decoded.size(), spoken.size()) << "chunk " << stream.frames_per_chunk;
            EXPECT_EQ(decoded, spoken) << "chunk " << stream.frames_per_chunk;
        }
        const Model& model = loaded(c.variant).model;
        EXPECT_THROW(model.decode(std::vector<Frame>(2, Frame(16, 0)), StreamOptions{0, 64, 1}), Error);
        try {
            model.decode(std::vector<Frame>{Frame(3, 0)}, StreamOptions{});
            ADD_FAILURE() << "a frame of 3 codes was decoded";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
        }
        return;
    }
    FAIL() << "golden case base_xvec_english_stream not found";
}

TEST_F(EngineTest, GenerateAloneGivesTheSameFrames) {
    for (const auto& c : talker_golden_cases()) {
        if (c.name != "base_xvec_chinese_nonstream") continue;
        size_t seen = 0;
        const auto r = engine(c.variant).generate(request_for(c), [&](const Frame&) { ++seen; });
        EXPECT_EQ(r.frames, c.frames());
        EXPECT_EQ(seen, r.frames.size());
    }
}

TEST_F(EngineTest, SeededSamplingIsReproducibleAndCancellationStops) {
    Session& e = engine("tiny-0.6B-CustomVoice");
    SpeechRequest r;
    r.text = "A sampled sentence for the seed test.";
    r.speaker = "serena";
    r.sampling.seed = 1234;
    r.max_frames = 12;
    const auto a = e.generate(r), b = e.generate(r);
    EXPECT_EQ(a.frames, b.frames);
    EXPECT_EQ(a.seed, 1234u);
    std::atomic<bool> cancel{false};
    size_t frames = 0;
    const auto c = e.speak(r, [&](const float*, size_t) { cancel = true; }, {1, 4}, &cancel);
    frames = c.frames.size();
    EXPECT_EQ(c.stop_reason, StopReason::Cancelled);
    EXPECT_LT(frames, 12u);
}

// A fixed-length request (min_frames = max_frames, as `talkbox bench` makes) streams exactly that
// many frames of audio from a case that the model ends with EOS after 8 frames.
TEST_F(EngineTest, MinFramesGivesAFixedLengthPastEos) {
    for (const auto& c : talker_golden_cases()) {
        if (c.name != "cv_vivian_auto_nonstream") continue;
        ASSERT_EQ(c.json["stopped_by"], "eos");
        SpeechRequest r = request_for(c);
        r.max_frames = r.min_frames = 30;
        r.stall_frames = 1;
        size_t samples = 0;
        const auto res = engine(c.variant).speak(r, [&](const float*, size_t n) { samples += n; });
        EXPECT_EQ(res.frames.size(), 30u);
        EXPECT_EQ(res.stop_reason, StopReason::MaxFrames);
        EXPECT_EQ(samples, 1920u * 30u);
        const auto golden = c.frames();
        EXPECT_EQ(std::vector<Frame>(res.frames.begin(), res.frames.begin() + golden.size()), golden);
        return;
    }
    FAIL() << "case cv_vivian_auto_nonstream not found";
}

TEST_F(EngineTest, InvalidRequestsAreClearErrors) {
    const auto error_of = [](const std::function<void()>& f) -> std::string {
        try {
            f();
        } catch (const Error& e) {
            return e.what();
        }
        return "<no error>";
    };
    Session& base = engine("tiny-0.6B-Base");
    SpeechRequest r;
    r.text = "Hello.";
    EXPECT_NE(error_of([&] { base.generate(r); }).find("give a voice file"), std::string::npos);
    auto v = std::make_shared<Voice>();
    v->model_size = "1.7b";
    v->embedding.assign(128, 0.0f);
    v->embedding_dim = 128;
    r.voice = v;
    EXPECT_NE(error_of([&] { base.generate(r); }).find("made for a 1.7b model"), std::string::npos);
    Session& cv = engine("tiny-0.6B-CustomVoice");
    r.voice = v;
    EXPECT_NE(error_of([&] { cv.generate(r); }).find("a cloned voice is not a setting of Qwen3-TTS 0.6b CustomVoice"), std::string::npos);
    r.voice = nullptr;
    r.text = "";
    EXPECT_NE(error_of([&] { cv.generate(r); }).find("empty"), std::string::npos);
}

// Not pass/fail: how far F16 and Q8_0 weights move greedy generation from the F32 goldens
// (identical frames and codebook codes per case, printed for the record).
TEST_F(EngineTest, ReportsAgreementOfQuantisedModels) {
    for (WeightType type : {WeightType::F16, WeightType::Q8_0}) {
        std::map<std::string, std::unique_ptr<LoadedModel>> engines;
        size_t frames = 0, identical_frames = 0, codes = 0, identical_codes = 0;
        for (const auto& c : talker_golden_cases()) {
            auto& e = engines[c.variant];
            if (!e) {
                e = std::make_unique<LoadedModel>(converted_fixture(c.variant, weight_type_name(type)));
            }
            const auto got = e->session.generate(request_for(c)).frames;
            const auto want = c.frames();
            frames += want.size();
            for (size_t f = 0; f < want.size(); ++f) {
                const bool same = f < got.size() && got[f] == want[f];
                identical_frames += same;
                for (size_t k = 0; k < want[f].size(); ++k, ++codes) identical_codes += f < got.size() && got[f][k] == want[f][k];
                if (!same) break;  // later frames follow a different history
            }
        }
        std::printf("[ report ] %s weights: %zu of %zu golden frames identical up to each case's first divergence (%zu of %zu codes "
                    "in the compared frames)\n",
                    weight_type_name(type), identical_frames, frames, identical_codes, codes);
        EXPECT_GT(frames, 0u);
    }
}

namespace {

// One Model, several Sessions on their own threads at once: each stream gives exactly what it gives
// alone (the weights are shared and read only; each session has its own caches and decoder state).
TEST_F(EngineTest, SessionsSharingAModelRunConcurrentlyAndMatchRunningAlone) {
    const Model& model = loaded("tiny-0.6B-CustomVoice").model;
    const auto& speakers = model.capabilities().speakers;
    ASSERT_GE(speakers.size(), 2u);
    std::vector<SpeechRequest> requests(4);
    for (size_t i = 0; i < requests.size(); ++i) {
        requests[i].text = i % 2 ? "A second, different sentence to speak." : "Hello there, this is the first stream.";
        requests[i].speaker = speakers[i % 2];
        requests[i].sampling.seed = 100 + i;
        requests[i].max_frames = 10 + 2 * static_cast<uint32_t>(i);
    }
    std::vector<std::vector<float>> alone(requests.size()), together(requests.size());
    std::vector<std::vector<Frame>> alone_frames(requests.size()), together_frames(requests.size());
    {
        Session s(model);
        for (size_t i = 0; i < requests.size(); ++i) {
            alone_frames[i] = s.speak(requests[i], [&](const float* p, size_t n) { alone[i].insert(alone[i].end(), p, p + n); }).frames;
        }
    }
    std::vector<std::unique_ptr<Session>> sessions;
    for (size_t i = 0; i < requests.size(); ++i) sessions.push_back(std::make_unique<Session>(model));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < requests.size(); ++i) {
        threads.emplace_back([&, i] {
            together_frames[i] =
                sessions[i]->speak(requests[i], [&](const float* p, size_t n) { together[i].insert(together[i].end(), p, p + n); }).frames;
        });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(together_frames[i], alone_frames[i]) << "stream " << i;
        EXPECT_EQ(together[i], alone[i]) << "stream " << i;  // bit-identical audio
        EXPECT_FALSE(alone[i].empty());
    }
}

}  // namespace
