// Speech encoder (src/qwen3tts/codec/encoder): codes of every 24 kHz fixture clip against the goldens, the
// float intermediates of en_3p5s / en_short_0p3s / long_12s, the batch goldens as far as they
// apply to one clip at a time, the distance margin of every argmin decision, bad input, speed.
// The 44.1/48 kHz and FLAC copies of en_3p5s need the audio reader and resampler (src/audio/),
// so they are tested with voice cloning (tests/voice/voice_file_test.cpp), not here.
#include "qwen3tts/codec/encoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"

namespace talkbox::codec {
namespace {

using Codes = std::vector<std::vector<int32_t>>;

std::string audio_path(const std::string& name) { return testing::fixtures_dir() + "/qwen3tts/audio/" + name; }
std::string golden_path(const std::string& name) {
    return testing::fixtures_dir() + "/qwen3tts/goldens/encoder/" + name;
}

uint32_t le(const std::string& b, size_t at, int bytes) {
    uint32_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
    return v;
}

// A 24 kHz PCM16 WAV as soundfile reads it: int16 / 32768, channels averaged.
std::vector<float> read_wav24k(const std::string& name) {
    const std::string b = testing::read_text(audio_path(name));
    if (b.size() < 12 || b.compare(0, 4, "RIFF") != 0 || b.compare(8, 4, "WAVE") != 0) {
        throw std::runtime_error(name + ": not a RIFF/WAVE file");
    }
    uint32_t channels = 0;
    for (size_t at = 12; at + 8 <= b.size();) {
        const std::string id = b.substr(at, 4);
        const size_t size = le(b, at + 4, 4), body = at + 8;
        if (body + size > b.size()) throw std::runtime_error(name + ": truncated chunk " + id);
        if (id == "fmt ") {
            channels = le(b, body + 2, 2);
            if (le(b, body, 2) != 1 || le(b, body + 4, 4) != 24000 || le(b, body + 14, 2) != 16 || channels == 0) {
                throw std::runtime_error(name + ": not 24 kHz PCM16");
            }
        } else if (id == "data") {
            if (channels == 0) throw std::runtime_error(name + ": data before fmt");
            const size_t frames = size / (2 * channels);
            std::vector<float> out(frames);
            for (size_t i = 0; i < frames; ++i) {
                float sum = 0;
                for (uint32_t c = 0; c < channels; ++c) {
                    sum += static_cast<float>(static_cast<int16_t>(le(b, body + 2 * (i * channels + c), 2))) / 32768.0f;
                }
                out[i] = sum / static_cast<float>(channels);
            }
            return out;
        }
        at = body + size + (size & 1);
    }
    throw std::runtime_error(name + ": no data chunk");
}

Codes codes_of(const nlohmann::json& j) { return j.get<Codes>(); }

Codes golden_codes(const std::string& clip) {
    return codes_of(nlohmann::json::parse(testing::read_text(golden_path("codes_" + clip + ".json")))["codes"]);
}

// The 12 s input of codes_long_12s.json: the four clips twice, back to back, cut to 288000.
std::vector<float> long_12s() {
    std::vector<float> out;
    for (int rep = 0; rep < 2; ++rep) {
        for (const char* c : {"en_odd_29999.wav", "zh_2s.wav", "en_3p5s.wav", "en_short_0p3s.wav"}) {
            const std::vector<float> w = read_wav24k(c);
            out.insert(out.end(), w.begin(), w.end());
        }
    }
    out.resize(288000);
    return out;
}

// The kept codebooks on the host (embed = embed_sum / max(usage, 1e-5)), for margin checks.
std::vector<std::vector<float>> host_codebooks(const GgufFile& file, int count) {
    std::vector<std::vector<float>> books;
    for (int q = 0; q < count; ++q) {
        const std::string p = q == 0 ? "codec.enc.rvq_semantic.cb.0." : "codec.enc.rvq_acoustic.cb." + std::to_string(q - 1) + ".";
        const auto& es = file.tensor(p + "embed_sum");
        const auto& us = file.tensor(p + "usage");
        const int64_t dim = es.shape[0], size = es.shape[1];
        std::vector<float> e(static_cast<size_t>(dim * size)), u(static_cast<size_t>(size));
        std::memcpy(e.data(), es.data, e.size() * 4);
        std::memcpy(u.data(), us.data, u.size() * 4);
        for (int64_t j = 0; j < size; ++j)
            for (int64_t d = 0; d < dim; ++d) e[j * dim + d] /= std::max(u[j], 1e-5f);
        books.push_back(std::move(e));
    }
    return books;
}

struct Decision {
    int32_t best = -1;
    double margin = 0;  // (d2nd - d1st) / (|x|² + |e_best|²) with squared distances, the README's measure
};

Decision nearest(const std::vector<float>& book, const std::vector<double>& x) {
    const size_t dim = x.size(), size = book.size() / dim;
    double x2 = 0;
    for (double v : x) x2 += v * v;
    double d1 = std::numeric_limits<double>::max(), d2 = d1, e2best = 0;
    Decision r;
    for (size_t j = 0; j < size; ++j) {
        double dist = 0, e2 = 0;
        for (size_t d = 0; d < dim; ++d) {
            const double e = book[j * dim + d];
            dist += (x[d] - e) * (x[d] - e);
            e2 += e * e;
        }
        if (dist < d1) {
            d2 = d1;
            d1 = dist;
            r.best = static_cast<int32_t>(j);
            e2best = e2;
        } else if (dist < d2) {
            d2 = dist;
        }
    }
    r.margin = (d2 - d1) / (x2 + e2best);
    return r;
}

class CodecEncoderTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new testing::TempDir;
        const std::string path = dir_->file("base.gguf");
        convert_snapshot({testing::qwen_fixture("tiny-0.6B-Base"), path, WeightType::F32, nullptr});
        file_ = new GgufFile(path);
        hparams_ = new qwen3tts::Hparams(qwen3tts::Hparams::from_gguf(file_->meta()));
        backend_ = new Backend(2);
        encoder_ = new CodecEncoder(*file_, *hparams_, *backend_);
        books_ = new std::vector<std::vector<float>>(host_codebooks(*file_, encoder_->num_quantizers()));
    }
    static void TearDownTestSuite() {
        delete books_;
        delete encoder_;
        delete backend_;
        delete hparams_;
        delete file_;
        delete dir_;
    }

    // Re-derives every decision on the host in float64 from the engine's latents and codes:
    // checks the engine picked the nearest code of its own latent and returns the smallest margin.
    static double check_decisions(const Capture& captured, const Codes& codes) {
        const std::vector<float>& semantic = captured.at("semantic_latent").data;
        const std::vector<float>& acoustic = captured.at("acoustic_latent").data;
        const size_t frames = codes.size(), dim = semantic.size() / frames;
        double worst = 1;
        for (size_t f = 0; f < frames; ++f) {
            std::vector<double> x(dim), r(dim);
            for (size_t d = 0; d < dim; ++d) {
                x[d] = semantic[d * frames + f];
                r[d] = acoustic[d * frames + f];
            }
            for (size_t q = 0; q < codes[f].size(); ++q) {
                const Decision dec = nearest((*books_)[q], q == 0 ? x : r);
                EXPECT_EQ(dec.best, codes[f][q]) << "frame " << f << " codebook " << q;
                worst = std::min(worst, dec.margin);
                if (q == 0) continue;
                for (size_t d = 0; d < dim; ++d) r[d] -= (*books_)[q][codes[f][q] * dim + d];
            }
        }
        return worst;
    }

    // Encodes, compares with the golden codes and prints the margin figure.
    static void expect_golden(const std::string& clip, const std::vector<float>& wav) {
        Capture captured;
        const Codes got = encoder_->encode(wav, &captured);
        const Codes want = golden_codes(clip);
        ASSERT_EQ(got.size(), want.size()) << clip;
        int differ = 0;
        for (size_t f = 0; f < want.size(); ++f) {
            ASSERT_EQ(got[f].size(), 16u);
            for (size_t q = 0; q < 16; ++q) {
                if (got[f][q] != want[f][q]) {
                    if (++differ <= 5) ADD_FAILURE() << clip << " frame " << f << " codebook " << q << ": " << got[f][q]
                                                     << " != golden " << want[f][q];
                }
            }
        }
        EXPECT_EQ(differ, 0) << clip << ": codes differ";
        const double margin = check_decisions(captured, got);
        std::printf("[ encoder ] %-16s %3zu frames, codes %s, smallest argmin margin %.3g\n", clip.c_str(), got.size(),
                    differ ? "DIFFER" : "identical", margin);
    }

    static void expect_close(const std::string& what, const std::vector<float>& got, const testing::NpyArray& want) {
        ASSERT_EQ(got.size(), want.data.size()) << what;
        const float diff = testing::max_abs_diff(got, want.data), scale = testing::max_abs(want.data);
        std::printf("[ encoder ] %-34s max|diff| %.3g, max|golden| %.3g, ratio %.3g\n", what.c_str(), diff, scale,
                    diff / scale);
        EXPECT_LE(diff, 1e-5f * scale) << what;
    }

    static testing::TempDir* dir_;
    static GgufFile* file_;
    static qwen3tts::Hparams* hparams_;
    static Backend* backend_;
    static CodecEncoder* encoder_;
    static std::vector<std::vector<float>>* books_;
};

testing::TempDir* CodecEncoderTest::dir_ = nullptr;
GgufFile* CodecEncoderTest::file_ = nullptr;
qwen3tts::Hparams* CodecEncoderTest::hparams_ = nullptr;
Backend* CodecEncoderTest::backend_ = nullptr;
CodecEncoder* CodecEncoderTest::encoder_ = nullptr;
std::vector<std::vector<float>>* CodecEncoderTest::books_ = nullptr;

TEST_F(CodecEncoderTest, Geometry) {
    EXPECT_EQ(encoder_->sample_rate(), 24000);
    EXPECT_EQ(encoder_->samples_per_frame(), 1920);
    EXPECT_EQ(encoder_->num_quantizers(), 16);
}

TEST_F(CodecEncoderTest, CodesOfEveryClip) {
    for (const char* clip : {"en_3p5s", "en_3p5s_stereo", "en_odd_29999", "en_short_0p3s", "zh_2s"}) {
        expect_golden(clip, read_wav24k(std::string(clip) + ".wav"));
    }
}

TEST_F(CodecEncoderTest, CodesOfLong12s) {
    // 300 frames at 25 Hz: more than the 250-frame sliding window (not applied) and several conv windows.
    const std::vector<float> wav = long_12s();
    expect_golden("long_12s", wav);
    Capture captured;
    encoder_->encode(wav, &captured);
    expect_close("long_12s transformer_out", captured.at("transformer_out").data, testing::load_npy(golden_path("long_12s.transformer_out.npy")));
}

TEST_F(CodecEncoderTest, IntermediatesOfEn3p5s) {
    Capture t;
    encoder_->encode(read_wav24k("en_3p5s.wav"), &t);
    const auto npy = [](const std::string& n) { return testing::load_npy(golden_path("en_3p5s." + n + ".npy")); };
    ASSERT_EQ(t.size(), 5u);
    for (const CapturedTensor& c : t.tensors()) expect_close("en_3p5s " + c.name, c.data, npy(c.name));
}

TEST_F(CodecEncoderTest, IntermediatesOfShortClip) {
    Capture t;
    encoder_->encode(read_wav24k("en_short_0p3s.wav"), &t);
    const auto npy = [](const std::string& n) { return testing::load_npy(golden_path("en_short_0p3s.trace/" + n + ".npy")); };
    // This trace names the SEANet and transformer outputs by their last layers' module paths.
    expect_close("en_short_0p3s encoder.layers.14", t.at("conv_encoder_out").data, npy("encoder.layers.14"));
    expect_close("en_short_0p3s transformer.layers.1", t.at("transformer_out").data, npy("encoder_transformer.layers.1"));
    for (const char* name : {"downsample_out", "semantic_latent", "acoustic_latent"})
        expect_close(std::string("en_short_0p3s ") + name, t.at(name).data, npy(name));
}

// codes_batch.json encodes four clips as one zero-padded batch. One clip at a time gives the same
// frames except the last frame of a clip whose length is not a multiple of 1920 (equal_to_single).
TEST_F(CodecEncoderTest, BatchGoldensAsFarAsTheyApply) {
    const auto batch = nlohmann::json::parse(testing::read_text(golden_path("codes_batch.json")));
    ASSERT_EQ(batch["clips"].size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        const std::string clip = batch["clips"][i].get<std::string>();
        const Codes want = codes_of(batch["codes"][i]);
        const Codes got = encoder_->encode(read_wav24k(clip.substr(clip.find('/') + 1)));
        ASSERT_EQ(got.size(), want.size()) << clip;
        for (size_t f = 0; f + 1 < want.size(); ++f) EXPECT_EQ(got[f], want[f]) << clip << " frame " << f;
        EXPECT_EQ(got.back() == want.back(), batch["equal_to_single"][i].get<bool>()) << clip << " last frame";
    }
}

// Every golden clip has an even number of 25 Hz frames, so none exercises the downsample's right
// replicate padding. en_3p5s cut to 81000 samples has 85: its last frame pads with a copy of frame
// 84. Frames 0..41 only see samples both clips share, so they equal the golden; frame 42 was
// produced once with the port (python3, shared/reference): load the tiny encoder.* weights of
// tiny-0.6B-Base/speech_tokenizer into qref.codec_encoder.Qwen3TTSTokenizerV2EncodeModel and run
// tokenizer_encode(model, [read_wav("en_3p5s.wav")[:81000]])[0][-1].
TEST_F(CodecEncoderTest, OddFrameCountReplicatesTheLastColumn) {
    std::vector<float> wav = read_wav24k("en_3p5s.wav");
    wav.resize(81000);
    Capture captured;
    const Codes got = encoder_->encode(wav, &captured);
    const Codes golden = golden_codes("en_3p5s");
    ASSERT_EQ(got.size(), 43u);
    for (size_t f = 0; f < 42; ++f) EXPECT_EQ(got[f], golden[f]) << "frame " << f;
    const std::vector<int32_t> last = {2007, 1230, 516, 1092, 1571, 1142, 1717, 1731, 1235, 44, 827, 741, 374, 167, 886, 996};
    EXPECT_EQ(got[42], last);
    std::printf("[ encoder ] en_3p5s[:81000]   43 frames, smallest argmin margin %.3g\n", check_decisions(captured, got));
}

TEST_F(CodecEncoderTest, GraphsAreReusedAcrossCallsAndLengths) {
    const std::vector<float> en = read_wav24k("en_3p5s.wav"), zh = read_wav24k("zh_2s.wav");
    const Codes first = encoder_->encode(en);
    encoder_->encode(zh);
    EXPECT_EQ(encoder_->encode(en), first);
    EXPECT_EQ(encoder_->encode(en), first);
    EXPECT_EQ(first, golden_codes("en_3p5s"));
}

TEST_F(CodecEncoderTest, TinyInputsGiveOneFrame) {
    for (size_t n : {1u, 2u, 959u, 960u, 961u, 1920u}) {
        const Codes c = encoder_->encode(std::vector<float>(n, 0.25f));
        EXPECT_EQ(c.size(), (n + 1919) / 1920) << n;
        for (const auto& frame : c)
            for (int32_t v : frame) EXPECT_TRUE(v >= 0 && v < 2048);
    }
}

TEST_F(CodecEncoderTest, RejectsBadInput) {
    const auto message = [](const std::vector<float>& wav) {
        try {
            encoder_->encode(wav);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
            return std::string(e.what());
        }
        return std::string("<no error>");
    };
    EXPECT_NE(message({}).find("empty"), std::string::npos);
    std::vector<float> wav(5000, 0.1f);
    wav[4321] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_NE(message(wav).find("sample 4321 is not finite"), std::string::npos);
    wav[4321] = std::numeric_limits<float>::infinity();
    EXPECT_NE(message(wav).find("sample 4321"), std::string::npos);
    EXPECT_NE(message(std::vector<float>(CodecEncoder::kMaxSeconds * 24000 + 1)).find("at most 600 s"), std::string::npos);
}

TEST_F(CodecEncoderTest, RejectsInconsistentModels) {
    const auto message = [](const qwen3tts::Hparams& h) {
        try {
            CodecEncoder e(*file_, h, *backend_);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Format);
            return std::string(e.what());
        }
        return std::string("<no error>");
    };
    qwen3tts::Hparams h = *hparams_;
    h.encoder_valid_quantizers = 40;
    EXPECT_NE(message(h).find("keeps 40 codebooks of 32"), std::string::npos);
    h = *hparams_;
    h.codec_encoder.hidden = 48;
    EXPECT_NE(message(h).find("tensor 'codec.enc.conv.14.weight' has shape"), std::string::npos);
}

TEST_F(CodecEncoderTest, Speed12s) {
    const std::vector<float> wav = long_12s();
    encoder_->encode(wav);  // builds the graphs
    const auto t0 = std::chrono::steady_clock::now();
    const int runs = 3;
    for (int i = 0; i < runs; ++i) encoder_->encode(wav);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / runs;
    std::printf("[ encoder ] 12 s clip, tiny model, %d threads: %.1f ms per encode\n", backend_->threads(), ms);
}

}  // namespace
}  // namespace talkbox::codec
