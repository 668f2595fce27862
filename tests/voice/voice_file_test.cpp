// Voice cloning and voice files: create_voice against the end-to-end clone goldens (both Base
// sizes, x-vector and in-context), the resampled / FLAC / stereo copies of the reference clip
// through the reader and resampler, the save/load round trip, corrupt files, and the checks an
// engine makes before using a voice.
#include "talkbox/voice_file.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "qwen3tts/codec/encoder.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "qwen3tts/voice_section.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"

namespace talkbox {
namespace {

namespace fs = std::filesystem;
using Codes = std::vector<std::vector<int32_t>>;

std::string fixture(const std::string& rel) { return testing::fixtures_dir() + "/qwen3tts/" + rel; }


Codes encoder_golden(const std::string& clip) {
    return nlohmann::json::parse(testing::read_text(fixture("goldens/encoder/codes_" + clip + ".json")))["codes"].get<Codes>();
}

size_t codes_differing(const Codes& a, const Codes& b) {
    size_t n = a.size() == b.size() ? 0 : 1;
    for (size_t f = 0; f < std::min(a.size(), b.size()); ++f)
        for (size_t q = 0; q < std::min(a[f].size(), b[f].size()); ++q) n += a[f][q] != b[f][q];
    return n;
}

// The message of the Error `f` throws, after checking its kind.
std::string error_of(const std::function<void()>& f, ErrorKind kind) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(error_kind_name(e.kind()), std::string(error_kind_name(kind))) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class VoiceFileTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new testing::TempDir;
        for (const char* name : {"tiny-0.6B-Base", "tiny-1.7B-Base", "tiny-0.6B-CustomVoice"}) {
            convert_snapshot({testing::qwen_fixture(name), model(name), WeightType::F32, nullptr});
        }
    }
    static void TearDownTestSuite() { delete dir_; }

    static std::string model(const std::string& name) { return dir_->file(name + ".gguf"); }
    static qwen3tts::Hparams hparams(const std::string& name) {
        return qwen3tts::Hparams::from_gguf(GgufFile(model(name)).meta());
    }
    static Voice icl_voice(const std::string& model_name = "tiny-0.6B-Base") {
        return create_voice(model(model_name), fixture("audio/en_3p5s.wav"), "The quick brown fox jumps over the lazy dog.", 1);
    }

    static testing::TempDir* dir_;
};

testing::TempDir* VoiceFileTest::dir_ = nullptr;

void expect_embedding(const std::string& what, const std::vector<float>& got, const std::string& golden_npy) {
    const auto g = testing::load_npy(golden_npy);
    ASSERT_EQ(got.size(), g.data.size()) << what;
    const double cos = testing::cosine(got, g.data);
    const float err = testing::max_abs_diff(got, g.data);
    std::printf("[ voice ] %-40s embedding: 1-cos %.3g, max abs error %.3g (max |golden| %.3g)\n", what.c_str(), 1 - cos, err,
                testing::max_abs(g.data));
    EXPECT_GE(cos, 0.99999) << what;
    EXPECT_LE(err, 1e-4f) << what;
}

// Every clone case of goldens/e2e: the x-vector and (in-context) the reference codes that the
// official create_voice_clone_prompt computed from the fixture's own encoders.
TEST_F(VoiceFileTest, CloneGoldensOfBothBaseSizes) {
    size_t cases = 0;
    for (const auto& variant : fs::directory_iterator(fixture("goldens/e2e/clone"))) {
        for (const auto& dir : fs::directory_iterator(variant.path())) {
            const auto c = nlohmann::json::parse(testing::read_text(dir.path() / "case.json"));
            const std::string what = variant.path().filename().string() + "/" + dir.path().filename().string();
            const bool icl = c["mode"] == "icl";
            const std::string audio = fixture(c["ref_audio"].get<std::string>());
            const Voice v = create_voice(model(c["checkpoint"].get<std::string>()), audio,
                                         icl ? std::optional(c["ref_text"].get<std::string>()) : std::nullopt, 1);
            const bool big = c["checkpoint"] == "tiny-1.7B-Base";
            EXPECT_EQ(v.model_size, big ? "1.7b" : "0.6b") << what;
            EXPECT_EQ(v.embedding_dim, big ? 128u : 64u) << what;
            EXPECT_EQ(v.x_vector_only, !icl) << what;
            expect_embedding(what, v.embedding, (dir.path() / "spk_embedding.npy").string());
            if (icl) {
                const Codes want = c["ref_codes_encoded"].get<Codes>();
                EXPECT_EQ(v.ref_codes, want) << what << ": " << codes_differing(v.ref_codes, want) << " codes differ";
                std::printf("[ voice ] %-40s ref codes: %zu frames, %zu differ\n", what.c_str(), v.ref_codes.size(),
                            codes_differing(v.ref_codes, want));
                EXPECT_EQ(v.ref_text, c["ref_text"].get<std::string>());
            } else {
                EXPECT_TRUE(v.ref_codes.empty() && v.ref_text.empty()) << what;
            }
            EXPECT_EQ(v.source_audio, audio);
            EXPECT_DOUBLE_EQ(v.source_seconds, c["ref_audio_samples"].get<double>() / 24000) << what;
            ++cases;
        }
    }
    EXPECT_EQ(cases, 9u);  // the README's table: a missing case must not pass silently
}

// The copies of en_3p5s through the audio reader (FLAC, stereo mix) and the resampler (44.1/48 kHz).
// FLAC and stereo have encoder goldens of their own. The 44.1/48 kHz copies do not (their 24 kHz
// waveform is not en_3p5s's): their reference is the official resampled waveform
// (goldens/speaker/wav24k_*.npy) through the codec encoder, which matches the official encoder
// code for code on every 24 kHz golden (tests/codec/encoder_test.cpp).
TEST_F(VoiceFileTest, CopiesOfTheReferenceClipThroughReaderAndResampler) {
    const std::string text = "The quick brown fox jumps over the lazy dog.";
    const GgufFile file(model("tiny-0.6B-Base"));
    const qwen3tts::Hparams hp = qwen3tts::Hparams::from_gguf(file.meta());
    const Backend backend(1);
    codec::CodecEncoder encoder(file, hp, backend);
    const Codes en_3p5s = encoder_golden("en_3p5s");
    const std::map<std::string, Codes> want = {
        {"en_3p5s.flac", en_3p5s},
        {"en_3p5s_stereo.wav", encoder_golden("en_3p5s_stereo")},
        {"en_3p5s_44k1.wav", encoder.encode(testing::load_npy(fixture("goldens/speaker/wav24k_en_3p5s_44k1.npy")).data)},
        {"en_3p5s_48k.wav", encoder.encode(testing::load_npy(fixture("goldens/speaker/wav24k_en_3p5s_48k.npy")).data)},
    };
    for (const auto& [clip, codes] : want) {
        for (const std::string size : {"0.6B", "1.7B"}) {
            const Voice v = create_voice(model("tiny-" + size + "-Base"), fixture("audio/" + clip), text, 1);
            std::string key = clip.substr(0, clip.find('.'));
            if (contains(clip, ".flac")) key += "_flac";
            expect_embedding(clip + " " + size, v.embedding,
                             fixture("goldens/speaker/emb_" + key + "_hidden" + (size == "0.6B" ? "64" : "128") + ".npy"));
            EXPECT_EQ(v.ref_codes, codes) << clip << ": " << codes_differing(v.ref_codes, codes) << " codes differ";
            std::printf("[ voice ] %-40s ref codes: %zu frames, %zu differ from the reference, %zu from en_3p5s's\n",
                        (clip + " " + size).c_str(), v.ref_codes.size(), codes_differing(v.ref_codes, codes),
                        codes_differing(v.ref_codes, en_3p5s));
        }
    }
}

TEST_F(VoiceFileTest, SaveLoadRoundTrip) {
    testing::TempDir out;
    std::vector<std::string> warnings;
    const Voice xvec = create_voice(model("tiny-1.7B-Base"), fixture("audio/zh_2s.wav"), std::nullopt, 1, &warnings);
    EXPECT_TRUE(warnings.empty());
    for (const Voice& v : {icl_voice(), xvec}) {
        const std::string path = out.file(v.x_vector_only ? "x.voice" : "icl.voice");
        save_voice(v, path);
        const Voice r = load_voice(path);
        EXPECT_EQ(r.model_size, v.model_size);
        EXPECT_EQ(r.embedding_dim, v.embedding_dim);
        EXPECT_EQ(r.x_vector_only, v.x_vector_only);
        EXPECT_EQ(r.embedding, v.embedding);  // bit for bit
        EXPECT_EQ(r.ref_codes, v.ref_codes);
        EXPECT_EQ(r.ref_text, v.ref_text);
        EXPECT_EQ(r.source_audio, v.source_audio);
        EXPECT_EQ(r.source_seconds, v.source_seconds);
        std::printf("[ voice ] %s: %ju bytes\n", fs::path(path).filename().c_str(), static_cast<uintmax_t>(fs::file_size(path)));
        EXPECT_LT(fs::file_size(path), 8192u);
    }
    size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(out.path())) ++files;
    EXPECT_EQ(files, 2u);  // no temporary files left behind
}

TEST_F(VoiceFileTest, ShortClipGivesAWarning) {
    std::vector<std::string> warnings;
    const Voice v = create_voice(model("tiny-0.6B-Base"), fixture("audio/en_short_0p3s.wav"), std::nullopt, 1, &warnings);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0], "is only 0.30 s long")) << warnings[0];
    expect_embedding("en_short_0p3s hidden64", v.embedding, fixture("goldens/speaker/emb_en_short_0p3s_hidden64.npy"));
}

TEST_F(VoiceFileTest, VoiceMustFitTheModel) {
    const Voice big = icl_voice("tiny-1.7B-Base"), small = icl_voice();
    EXPECT_NO_THROW(qwen3tts::check_voice_fits(small, hparams("tiny-0.6B-Base")));
    EXPECT_NO_THROW(qwen3tts::check_voice_fits(big, hparams("tiny-1.7B-Base")));
    EXPECT_EQ(error_of([&] { qwen3tts::check_voice_fits(big, hparams("tiny-0.6B-Base"), "voice 'x.voice'"); },
                       ErrorKind::InvalidArgument),
              "voice 'x.voice' was made for a 1.7b model (embedding 128 wide), this model is 0.6b (64)");
    EXPECT_EQ(error_of([&] { qwen3tts::check_voice_fits(small, hparams("tiny-1.7B-Base"), "voice 'y.voice'"); },
                       ErrorKind::InvalidArgument),
              "voice 'y.voice' was made for a 0.6b model (embedding 64 wide), this model is 1.7b (128)");
    EXPECT_EQ(error_of([&] { qwen3tts::check_voice_fits(small, hparams("tiny-0.6B-CustomVoice"), "voice 'y.voice'"); },
                       ErrorKind::InvalidArgument),
              "voice 'y.voice' needs a Base model (only Base models clone voices); this model is CustomVoice");
    Voice v = small;
    v.ref_codes[7][3] = 2048;
    EXPECT_EQ(error_of([&] { qwen3tts::check_voice_fits(v, hparams("tiny-0.6B-Base")); }, ErrorKind::InvalidArgument),
              "the voice: reference frame 7 codebook 3 holds code 2048, this model's codebooks have 2048 entries");
    v = small;
    for (auto& frame : v.ref_codes) frame.resize(8);
    EXPECT_EQ(error_of([&] { qwen3tts::check_voice_fits(v, hparams("tiny-0.6B-Base")); }, ErrorKind::InvalidArgument),
              "the voice has 8 codes per reference frame, this model uses 16");
}

TEST_F(VoiceFileTest, OnlyBaseModelsCreateVoices) {
    const std::string msg = error_of(
        [&] { create_voice(model("tiny-0.6B-CustomVoice"), fixture("audio/en_3p5s.wav"), std::nullopt, 1); },
        ErrorKind::Unsupported);
    EXPECT_EQ(msg, "'" + model("tiny-0.6B-CustomVoice") +
                       "' is Qwen3-TTS 0.6b CustomVoice, which does not clone voices (clone with a model that takes voice files)");
}

TEST_F(VoiceFileTest, InContextCloningNeedsATranscript) {
    for (const std::string text : {"", "  \n\t"}) {
        const std::string msg = error_of([&] { create_voice(model("tiny-0.6B-Base"), fixture("audio/en_3p5s.wav"), text, 1); },
                                         ErrorKind::InvalidArgument);
        EXPECT_EQ(msg, "the reference transcript is empty: in-context cloning needs the exact words of the reference audio "
                       "(or use x-vector-only mode)");
    }
    std::string msg = error_of([&] { create_voice(model("tiny-0.6B-Base"), fixture("audio/en_3p5s.wav"), "ok \xff", 1); },
                               ErrorKind::InvalidArgument);
    EXPECT_TRUE(contains(msg, "not valid UTF-8") && contains(msg, "byte offset 3")) << msg;
    msg = error_of([&] { create_voice(model("tiny-0.6B-Base"), fixture("audio/en_3p5s.wav"), std::string("a\0b", 3), 1); },
                   ErrorKind::InvalidArgument);
    EXPECT_EQ(msg, "the reference transcript contains a NUL character");
}

TEST_F(VoiceFileTest, BadReferenceAudio) {
    testing::TempDir tmp;
    testing::write_text(tmp.file("notes.wav"), "not audio at all");
    EXPECT_TRUE(contains(error_of([&] { create_voice(model("tiny-0.6B-Base"), tmp.file("missing.wav"), std::nullopt, 1); },
                                  ErrorKind::NotFound),
                         "missing.wav"));
    EXPECT_TRUE(contains(error_of([&] { create_voice(model("tiny-0.6B-Base"), tmp.file("notes.wav"), std::nullopt, 1); },
                                  ErrorKind::Format),
                         "notes.wav"));
}

TEST_F(VoiceFileTest, CloningStopsWhenCancelledOrPastItsDeadline) {
    const std::string text = "The quick brown fox jumps over the lazy dog.";
    const std::atomic<bool> cancelled{true};
    EXPECT_EQ(error_of([&] { create_voice(model("tiny-0.6B-Base"), fixture("audio/en_3p5s.wav"), text, 1, nullptr, {&cancelled}); },
                       ErrorKind::Cancelled),
              "voice cloning was cancelled (before loading the model)");
    const CloneStop late{nullptr, std::chrono::steady_clock::now()};
    EXPECT_EQ(error_of([&] { create_voice(model("tiny-0.6B-Base"), fixture("audio/en_3p5s.wav"), text, 1, nullptr, late); },
                       ErrorKind::Cancelled),
              "voice cloning ran past its deadline (before loading the model)");
    // A flag that is not set and a deadline ahead change nothing.
    const std::atomic<bool> running{false};
    const CloneStop ahead{&running, std::chrono::steady_clock::now() + std::chrono::hours(1)};
    EXPECT_EQ(create_voice(model("tiny-0.6B-Base"), fixture("audio/en_3p5s.wav"), text, 1, nullptr, ahead).ref_codes,
              icl_voice().ref_codes);
}

// The codec encoder is the long stage of in-context cloning: it polls before every window.
TEST_F(VoiceFileTest, CodecEncoderPollsBetweenWindowsAndStopsWhenThePollThrows) {
    const GgufFile file(model("tiny-0.6B-Base"));
    const qwen3tts::Hparams hp = qwen3tts::Hparams::from_gguf(file.meta());
    const Backend backend(1);
    codec::CodecEncoder encoder(file, hp, backend);
    const std::vector<float> clip(24000 * 12, 0.1f);  // 300 frames at 25 Hz: 5 windows of 60
    int polls = 0;
    encoder.encode(clip, nullptr, nullptr, [&] { ++polls; });
    EXPECT_EQ(polls, 6);  // 5 windows + the transformer
    polls = 0;
    EXPECT_EQ(error_of([&] { encoder.encode(clip, nullptr, nullptr, [&] {
                  if (++polls == 2) throw Error(ErrorKind::Cancelled, "stop");
              }); },
                       ErrorKind::Cancelled),
              "stop");
    EXPECT_EQ(polls, 2);
}

TEST_F(VoiceFileTest, SaveRefusesInconsistentVoicesAndLeavesNoFile) {
    testing::TempDir out;
    const Voice good = icl_voice();
    const std::string path = out.file("v.voice");
    const auto refused = [&](const Voice& v, const std::string& why) {
        const std::string msg = error_of([&] { save_voice(v, path); }, ErrorKind::InvalidArgument);
        EXPECT_EQ(msg, "cannot save the voice as '" + path + "': " + why);
        EXPECT_FALSE(fs::exists(path));
    };
    Voice v = good;
    v.embedding.pop_back();
    refused(v, "the embedding has 63 values, embedding_dim says 64");
    v = good;
    v.embedding[5] = NAN;
    refused(v, "embedding value 5 is not finite");
    v = good;
    v.ref_codes[2].pop_back();
    refused(v, "reference frame 2 has 15 codes, frame 0 has 16");
    v = good;
    v.ref_codes[1][0] = -1;
    refused(v, "reference frame 1 holds a negative code in codebook 0");
    v = good;
    v.ref_codes.clear();
    refused(v, "an in-context voice needs the reference clip's frames");
    v = good;
    v.x_vector_only = true;
    refused(v, "an x-vector-only voice has no reference frames or transcript");
    v = good;
    v.model_size.clear();
    refused(v, "no model size");

    save_voice(good, path);  // a failed save leaves the previous file intact
    v = good;
    v.ref_text.clear();
    EXPECT_THROW(save_voice(v, path), Error);
    EXPECT_EQ(load_voice(path).ref_text, good.ref_text);
    EXPECT_EQ(error_of([&] { save_voice(good, out.file("no/such/dir/v.voice")); }, ErrorKind::Io),
              "cannot write '" + out.file("no/such/dir/v.voice") + "': cannot create a temporary file in '" +
                  out.file("no/such/dir") + "': No such file or directory");
}

// Rewrites a valid voice file with `edit` applied to a copy of its metadata and tensor list.
struct GgufEdit {
    gguf_context* meta;
    std::vector<ggml_tensor*>& tensors;
    ggml_context* scratch;  // for new tensors (data allocated)
};

void rewrite(const std::string& from, const std::string& to, const std::function<void(GgufEdit&)>& edit) {
    ggml_context* data = nullptr;
    gguf_context* src = gguf_init_from_file(from.c_str(), {false, &data});
    ASSERT_NE(src, nullptr);
    gguf_context* dst = gguf_init_empty();
    gguf_set_kv(dst, src);
    std::vector<ggml_tensor*> tensors;
    for (ggml_tensor* t = ggml_get_first_tensor(data); t; t = ggml_get_next_tensor(data, t)) {
        if (gguf_find_tensor(src, ggml_get_name(t)) >= 0) tensors.push_back(t);  // not ggml's blob of all the data
    }
    ggml_context* scratch = ggml_init({1 << 20, nullptr, false});
    GgufEdit e{dst, tensors, scratch};
    edit(e);
    for (ggml_tensor* t : tensors) gguf_add_tensor(dst, t);
    ASSERT_TRUE(gguf_write_to_file(dst, to.c_str(), false));
    gguf_free(dst);
    gguf_free(src);
    ggml_free(scratch);
    ggml_free(data);
}

ggml_tensor* named(ggml_tensor* t, const char* name) {
    ggml_set_name(t, name);
    return t;
}

TEST_F(VoiceFileTest, CorruptVoiceFilesGivePreciseErrors) {
    testing::TempDir tmp;
    const std::string good = tmp.file("good.voice"), bad = tmp.file("bad.voice");
    save_voice(icl_voice(), good);
    const auto load_error = [&](ErrorKind kind) { return error_of([&] { load_voice(bad); }, kind); };
    const auto edited = [&](const std::function<void(GgufEdit&)>& edit, ErrorKind kind) {
        rewrite(good, bad, edit);
        return load_error(kind);
    };
    const std::string where = "'" + bad + "'";

    EXPECT_TRUE(contains(error_of([&] { load_voice(tmp.file("none.voice")); }, ErrorKind::NotFound), "none.voice"));
    testing::write_text(bad, "");
    EXPECT_TRUE(contains(load_error(ErrorKind::Format), "is not a valid GGUF file"));
    testing::write_text(bad, "RIFF....WAVEfmt this is no voice");
    EXPECT_TRUE(contains(load_error(ErrorKind::Format), "is not a valid GGUF file"));
    const std::string bytes = testing::read_text(good);
    testing::write_text(bad, bytes.substr(0, bytes.size() - 100));  // truncated inside the tensor data
    EXPECT_TRUE(contains(load_error(ErrorKind::Format), where)) << load_error(ErrorKind::Format);
    EXPECT_EQ(error_of([&] { load_voice(model("tiny-0.6B-Base")); }, ErrorKind::Format),
              "'" + model("tiny-0.6B-Base") + "' is not a talkbox voice file (general.architecture is 'qwen3tts'; it is a "
                                              "model, pass it with -m)");

    EXPECT_EQ(edited([](GgufEdit& e) { gguf_remove_key(e.meta, "talkbox-voice.mode"); }, ErrorKind::NotFound),
              where + ": missing metadata key 'talkbox-voice.mode'");
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_str(e.meta, "talkbox-voice.mode", "zero_shot"); }, ErrorKind::Format),
              where + ": unknown mode 'zero_shot' (expected x_vector_only or icl)");
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_u32(e.meta, "talkbox-voice.version", 2); }, ErrorKind::Unsupported),
              where + " was written by a newer talkbox (voice format 2; this build reads up to 1)");
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_str(e.meta, "talkbox-voice.family", "kokoro"); }, ErrorKind::Unsupported),
              where + ": a voice for 'kokoro' models; this build makes and uses voices for 'qwen3tts', 'chatterbox'");
    // A Qwen voice relabelled as a Chatterbox one lacks the Chatterbox tensors.
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_str(e.meta, "talkbox-voice.family", "chatterbox"); }, ErrorKind::NotFound),
              where + ": missing tensor 'voice.t3.speaker_emb'");
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_u32(e.meta, "talkbox-voice.model_size", 6); }, ErrorKind::Format),
              where + ": metadata key 'talkbox-voice.model_size' has type u32, expected str");
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_str(e.meta, "talkbox-voice.ref_text", " "); }, ErrorKind::Format),
              where + ": the reference transcript is empty: in-context cloning needs the exact words of the reference "
                      "audio (or use x-vector-only mode)");
    EXPECT_EQ(edited([](GgufEdit& e) { e.tensors.pop_back(); }, ErrorKind::NotFound),
              where + ": missing tensor 'voice.ref_codes'");
    EXPECT_EQ(edited([](GgufEdit& e) { e.tensors[0] = named(ggml_new_tensor_1d(e.scratch, GGML_TYPE_F16, 64), "voice.embedding"); },
                     ErrorKind::Format),
              where + ": tensor 'voice.embedding' is f16 [64], expected f32 with at most 1 dimension");
    EXPECT_EQ(edited([](GgufEdit& e) { e.tensors[0] = named(ggml_new_tensor_2d(e.scratch, GGML_TYPE_F32, 32, 2), "voice.embedding"); },
                     ErrorKind::Format),
              where + ": tensor 'voice.embedding' is f32 [32, 2], expected f32 with at most 1 dimension");
    EXPECT_EQ(edited([](GgufEdit& e) { static_cast<float*>(e.tensors[0]->data)[9] = INFINITY; }, ErrorKind::Format),
              where + ": embedding value 9 is not finite");
    EXPECT_EQ(edited([](GgufEdit& e) { e.tensors[1] = named(ggml_new_tensor_3d(e.scratch, GGML_TYPE_I32, 16, 4, 2), "voice.ref_codes"); },
                     ErrorKind::Format),
              where + ": tensor 'voice.ref_codes' is i32 [16, 4, 2], expected i32 with at most 2 dimensions");
    EXPECT_EQ(edited([](GgufEdit& e) { static_cast<int32_t*>(e.tensors[1]->data)[16 * 3 + 5] = -7; }, ErrorKind::Format),
              where + ": reference frame 3 holds a negative code in codebook 5");

    // One reference frame: GGUF drops the trailing dimension of size 1, the voice keeps [1][16].
    rewrite(good, bad, [](GgufEdit& e) {
        ggml_tensor* one = named(ggml_new_tensor_1d(e.scratch, GGML_TYPE_I32, 16), "voice.ref_codes");
        for (int q = 0; q < 16; ++q) static_cast<int32_t*>(one->data)[q] = q;
        e.tensors[1] = one;
    });
    const Voice one = load_voice(bad);
    ASSERT_EQ(one.ref_codes.size(), 1u);
    EXPECT_EQ(one.ref_codes[0][15], 15);
}

// A Chatterbox voice made by hand (no model needed): the shapes of docs/voice-format.md.
Voice chatterbox_voice() {
    Voice v;
    v.family = "chatterbox";
    v.model_size = "chatterbox-0123456789abcdef";
    ChatterboxConditionals& c = v.chatterbox;
    c.speaker_emb.assign(256, 0.01f);
    c.cond_prompt_speech_tokens = {1, 2, 3, 4};
    c.prompt_token = {5, 6, 7, 8, 9, 10};
    c.prompt_feat_frames = 12;
    c.prompt_feat.assign(12 * 80, -3.0f);
    c.embedding.assign(192, 0.02f);
    return v;
}

// A raw GGUF v3 header: magic, version, tensor and key counts, then `rest` (keys, tensor infos).
std::string le(uint64_t v, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out += char(i < 8 ? (v >> (8 * i)) & 0xff : 0);  // wider fields: zero-extended
    return out;
}
std::string gguf_header(uint64_t n_tensors, uint64_t n_kv, const std::string& rest = "") {
    return "GGUF" + le(3, 4) + le(n_tensors, 8) + le(n_kv, 8) + rest;
}
std::string gguf_str(const std::string& s) { return le(s.size(), 8) + s; }
constexpr uint32_t kGgufString = 8, kGgufArray = 9;

// Crafted voice files: every one a precise error, none a crash or a huge allocation.
TEST(CraftedVoiceFiles, LyingGgufHeadersAreFormatErrors) {
    testing::TempDir tmp;
    const std::string bad = tmp.file("bad.voice");
    const auto refused = [&](const std::string& bytes) {
        testing::write_text(bad, bytes);
        const auto start = std::chrono::steady_clock::now();
        const std::string msg = error_of([&] { load_voice(bad); }, ErrorKind::Format);
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
        return msg;
    };
    const std::string arch = gguf_str("general.architecture") + le(kGgufString, 4);
    EXPECT_TRUE(contains(refused("GGU"), "is not a valid GGUF file"));                     // truncated magic
    EXPECT_TRUE(contains(refused("GGUF" + le(3, 4) + le(1, 3)), "is not a valid GGUF file"));  // truncated counts
    EXPECT_TRUE(contains(refused("GGUF" + le(99, 4) + le(0, 16)), "is not a valid GGUF file"));  // unknown version
    EXPECT_TRUE(contains(refused(gguf_header(uint64_t(1) << 62, 0)), "is not a valid GGUF file"));  // 2^62 tensors
    EXPECT_TRUE(contains(refused(gguf_header(0, uint64_t(1) << 62)), "is not a valid GGUF file"));  // 2^62 keys
    // A key name and a string value claiming 2^60 bytes.
    EXPECT_TRUE(contains(refused(gguf_header(0, 1, le(uint64_t(1) << 60, 8) + "general")), "is not a valid GGUF file"));
    EXPECT_TRUE(contains(refused(gguf_header(0, 1, arch + le(uint64_t(1) << 60, 8) + "talkbox-voice")),
                         "is not a valid GGUF file"));
    // An array of 2^61 strings, and of 2^62 u32.
    EXPECT_TRUE(contains(refused(gguf_header(0, 1, gguf_str("x") + le(kGgufArray, 4) + le(kGgufString, 4) + le(uint64_t(1) << 61, 8))),
                         "is not a valid GGUF file"));
    EXPECT_TRUE(contains(refused(gguf_header(0, 1, gguf_str("x") + le(kGgufArray, 4) + le(4, 4) + le(uint64_t(1) << 62, 8))),
                         "is not a valid GGUF file"));
    // A tensor of 2^31 x 2^31 floats in a 100-byte file.
    const std::string tensor = gguf_str("voice.embedding") + le(2, 4) + le(uint64_t(1) << 31, 8) + le(uint64_t(1) << 31, 8) +
                               le(0, 4) + le(0, 8);
    const std::string msg = refused(gguf_header(1, 1, arch + gguf_str("talkbox-voice") + tensor));
    EXPECT_TRUE(contains(msg, "is not a valid GGUF file") || contains(msg, "lies past the end of the file")) << msg;
}

TEST(CraftedVoiceFiles, BadChatterboxVoicesAreFormatErrors) {
    testing::TempDir tmp;
    const std::string good = tmp.file("good.voice"), bad = tmp.file("bad.voice");
    save_voice(chatterbox_voice(), good);
    ASSERT_EQ(load_voice(good).chatterbox.prompt_feat_frames, 12);
    const std::string where = "'" + bad + "'";
    const auto edited = [&](const std::function<void(GgufEdit&)>& edit, ErrorKind kind) {
        rewrite(good, bad, edit);
        return error_of([&] { load_voice(bad); }, kind);
    };
    const auto tensor = [](GgufEdit& e, const char* name) {
        for (ggml_tensor*& t : e.tensors) {
            if (std::string(ggml_get_name(t)) == name) return &t;
        }
        throw std::runtime_error(std::string("no tensor ") + name);
    };
    EXPECT_EQ(edited([&](GgufEdit& e) { static_cast<float*>((*tensor(e, "voice.gen.prompt_feat"))->data)[17] = NAN; },
                     ErrorKind::Format),
              where + ": the prompt mel value 17 is not finite");
    EXPECT_EQ(edited([&](GgufEdit& e) { static_cast<float*>((*tensor(e, "voice.t3.speaker_emb"))->data)[0] = NAN; },
                     ErrorKind::Format),
              where + ": the speaker embedding value 0 is not finite");
    EXPECT_EQ(edited([&](GgufEdit& e) { static_cast<int32_t*>((*tensor(e, "voice.gen.prompt_token"))->data)[2] = 6561; },
                     ErrorKind::Format),
              where + ": prompt speech token 6561 is outside the S3 codebook [0, 6561)");
    EXPECT_EQ(edited([&](GgufEdit& e) { *tensor(e, "voice.gen.prompt_feat") = named(ggml_new_tensor_2d(e.scratch, GGML_TYPE_F32, 81, 12), "voice.gen.prompt_feat"); },
                     ErrorKind::Format),
              where + ": tensor 'voice.gen.prompt_feat' is [81, 12], expected [80, frames]");
    EXPECT_EQ(edited([&](GgufEdit& e) { *tensor(e, "voice.t3.emotion_adv") = named(ggml_new_tensor_1d(e.scratch, GGML_TYPE_F32, 2), "voice.t3.emotion_adv"); },
                     ErrorKind::Format),
              where + ": tensor 'voice.t3.emotion_adv' must hold one value");
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_u32(e.meta, "talkbox-voice.version", 0); }, ErrorKind::Format),
              where + ": voice format version 0 does not exist");
    EXPECT_EQ(edited([](GgufEdit& e) { gguf_set_val_str(e.meta, "general.architecture", "talkbox-voicez"); }, ErrorKind::Format),
              where + " is not a talkbox voice file (general.architecture is 'talkbox-voicez')");
    const std::string bytes = testing::read_text(good);
    for (const size_t cut : {size_t(10), size_t(40), bytes.size() / 2, bytes.size() - 1}) {
        testing::write_text(bad, bytes.substr(0, cut));
        EXPECT_TRUE(contains(error_of([&] { load_voice(bad); }, ErrorKind::Format), where)) << "cut at " << cut;
    }
}

}  // namespace
}  // namespace talkbox
