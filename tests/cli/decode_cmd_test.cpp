// `talkbox decode`: codes JSON → WAV through the CLI, compared with the decoder goldens.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace talkbox {
namespace {

using testing::load_npy;
using testing::max_abs_diff;
using testing::run_talkbox;

std::string golden(const std::string& rel) { return testing::fixtures_dir() + "/qwen3tts/goldens/decoder/" + rel; }

struct Wav {
    uint16_t format = 0, channels = 0, bits = 0;
    uint32_t rate = 0;
    std::vector<float> samples;
};

uint32_t u32(const std::string& b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
}
uint16_t u16(const std::string& b, size_t at) {
    uint16_t v;
    std::memcpy(&v, b.data() + at, 2);
    return v;
}

// A strict little reader: RIFF/WAVE, fmt then (optionally fact then) data, sizes consistent.
Wav read_wav(const std::string& path) {
    const std::string b = testing::read_text(path);
    Wav w;
    EXPECT_EQ(b.substr(0, 4), "RIFF");
    EXPECT_EQ(u32(b, 4), b.size() - 8);
    EXPECT_EQ(b.substr(8, 4), "WAVE");
    size_t at = 12;
    while (at + 8 <= b.size()) {
        const std::string id = b.substr(at, 4);
        const uint32_t size = u32(b, at + 4);
        if (id == "fmt ") {
            w.format = u16(b, at + 8);
            w.channels = u16(b, at + 10);
            w.rate = u32(b, at + 12);
            w.bits = u16(b, at + 22);
            EXPECT_EQ(u32(b, at + 16), w.rate * w.bits / 8);
            EXPECT_EQ(u16(b, at + 20), w.bits / 8);
        } else if (id == "data") {
            EXPECT_EQ(at + 8 + size, b.size());
            for (size_t i = at + 8; i + w.bits / 8 <= at + 8 + size; i += w.bits / 8) {
                if (w.bits == 16) {
                    w.samples.push_back(static_cast<int16_t>(u16(b, i)) / 32767.0f);
                } else {
                    float f;
                    std::memcpy(&f, b.data() + i, 4);
                    w.samples.push_back(f);
                }
            }
        }
        at += 8 + size;
    }
    return w;
}

class DecodeCommandTest : public ::testing::Test {
protected:
    static std::string model() { return testing::converted_fixture("tiny-0.6B-Base"); }
};

TEST_F(DecodeCommandTest, FloatWavEqualsTheGolden) {
    testing::TempDir out;
    const auto r = run_talkbox("decode -m " + model() + " " + golden("decode_40/codes.json") + " -o " +
                               out.file("a.wav") + " --format wav32 -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("40 frames"), std::string::npos) << r.err;
    const Wav w = read_wav(out.file("a.wav"));
    EXPECT_EQ(w.format, 3);
    EXPECT_EQ(w.channels, 1);
    EXPECT_EQ(w.rate, 24000u);
    EXPECT_EQ(w.bits, 32);
    EXPECT_LE(max_abs_diff(w.samples, load_npy(golden("decode_40/wav.npy")).data), 1e-4f);
}

TEST_F(DecodeCommandTest, PcmWavIsTheGoldenWithin16BitQuantisation) {
    testing::TempDir out;
    const auto r = run_talkbox("decode -m " + model() + " " + golden("decode_40/codes.json") + " -o " + out.file("a.wav") + " -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Wav w = read_wav(out.file("a.wav"));
    EXPECT_EQ(w.format, 1);
    EXPECT_EQ(w.bits, 16);
    EXPECT_LE(max_abs_diff(w.samples, load_npy(golden("decode_40/wav.npy")).data), 0.5f / 32767 + 1e-4f);
}

TEST_F(DecodeCommandTest, OfficialAndStreamingDecodeOf320Frames) {
    testing::TempDir out;
    const std::string codes = golden("decode_320/codes.json");
    auto r = run_talkbox("decode -m " + model() + " " + codes + " -o " + out.file("a.wav") + " --format wav32 -t 1 -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_LE(max_abs_diff(read_wav(out.file("a.wav")).samples, load_npy(golden("decode_320/wav.npy")).data), 1e-4f);

    r = run_talkbox("decode -m " + model() + " " + codes + " -o " + out.file("b.raw") + " --format raw32 --streaming --chunk 7 -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string raw = testing::read_text(out.file("b.raw"));
    std::vector<float> pcm(raw.size() / 4);
    std::memcpy(pcm.data(), raw.data(), pcm.size() * 4);
    EXPECT_LE(max_abs_diff(pcm, load_npy(golden("decode_320_unchunked/wav.npy")).data), 1e-4f);
}

TEST_F(DecodeCommandTest, BadInputFailsCleanlyWithoutOutput) {
    testing::TempDir out;
    const std::string wav = out.file("x.wav");
    testing::write_text(out.file("bad_code.json"), "{\"frames\": [[" + std::string("1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4096") + "]]}");
    testing::write_text(out.file("short.json"), "[[1, 2, 3]]");
    testing::write_text(out.file("ragged.json"), "{\"frames\": [[1, 2], [1]]}");
    testing::write_text(out.file("empty.json"), "{\"frames\": []}");
    testing::write_text(out.file("text.json"), "{\"frames\": [[1, \"2\"]]}");
    const struct {
        std::string args, message;
    } cases[] = {
        {out.file("bad_code.json") + " -m " + model(), "codec frame 0: code 4096 of codebook 15 is outside [0, 2047]"},
        {out.file("short.json") + " -m " + model(), "codec frame 0 has 3 codes, expected 16"},
        {out.file("ragged.json") + " -m " + model(), "frame 1 has 1 codes but frame 0 has 2"},
        {out.file("empty.json") + " -m " + model(), "holds no frames"},
        {out.file("text.json") + " -m " + model(), "frame 0, codebook 1: expected an integer, got \"2\""},
        {out.file("missing.json") + " -m " + model(), "missing.json"},
        {golden("decode_40/codes.json") + " -m " + out.file("nomodel.gguf"), "nomodel.gguf"},
        {golden("decode_40/codes.json") + " -m " + model() + " --format aiff", "unknown audio format 'aiff'"},
        {golden("decode_40/codes.json") + " -m " + model() + " --streaming --chunk 0", "--chunk: must be a whole number in [1, 1000], got '0'"},
    };
    for (const auto& c : cases) {
        const auto r = run_talkbox("decode " + c.args + " -o " + wav);
        EXPECT_EQ(r.exit_code, 1) << c.args;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_FALSE(std::filesystem::exists(wav)) << c.args;
    }
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(out.path()), {}), 5);  // the inputs only
}

// speak --codes-out records the long-form segments: each is decoded on its own (as speak decoded
// it) and the pause between them is put back.
TEST_F(DecodeCommandTest, SegmentsAreDecodedOnTheirOwnWithThePauseBetween) {
    testing::TempDir out;
    const auto frames = nlohmann::json::parse(testing::read_text(golden("decode_40/codes.json")));
    const nlohmann::json first(frames.begin(), frames.begin() + 15), second(frames.begin() + 15, frames.end());
    const auto decode = [&](const nlohmann::json& codes, const std::string& name) {
        testing::write_text(out.file(name + ".json"), codes.dump());
        const auto r = run_talkbox("decode -m " + model() + " " + out.file(name + ".json") + " -o " + out.file(name + ".raw") +
                                   " --format raw32");
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return testing::read_text(out.file(name + ".raw"));
    };
    nlohmann::json both = {{"frames", frames}, {"segments", {{15}, {frames.size() - 15}}}, {"pause_ms", 100}};
    const std::string joined = decode(both, "both");
    const std::string expected = decode({{"frames", first}}, "first") + std::string(2400 * sizeof(float), '\0') +
                                 decode({{"frames", second}}, "second");
    EXPECT_EQ(joined.size(), expected.size());
    EXPECT_TRUE(joined == expected) << "not the two segments decoded apart with 100 ms (2400 samples) between them";
}

}  // namespace
}  // namespace talkbox
