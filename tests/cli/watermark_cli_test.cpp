// The Perth watermark on the command line: `talkbox watermark detect|embed`, Chatterbox speech
// marked by default (--no-watermark), Qwen3-TTS speech with --watermark, and the one warning when
// the checkpoint is missing. The checkpoint is the random-weight one of tests/data/perth; the
// environment variable TALKBOX_WATERMARK points the binary at it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "audio/audio_reader.h"
#include "convert/gguf_writer.h"
#include "convert/perth_checkpoint.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "hub/fake_hub.h"
#include "support/test_support.h"
#include "talkbox/audio.h"
#include "talkbox/watermark.h"

namespace talkbox {
namespace {

using namespace talkbox::testing;

std::string perth_data(const std::string& name) { return std::string(TALKBOX_SOURCE_DIR) + "/tests/data/perth/" + name; }

// A copy of `from` whose three decoder branches always answer 5 (weights 0, mark bias 5): a
// detector that finds the mark everywhere, for the "watermarked" verdict and exit status.
void write_always_marked(const std::string& from, const std::string& to) {
    const GgufFile src(from);
    std::unique_ptr<gguf_context, GgufContextDeleter> gguf(gguf_init_empty());
    gguf_set_val_str(gguf.get(), "general.architecture", "perth");
    for (const char* key : {"perth.sample_rate", "perth.n_fft", "perth.hop_size", "perth.max_wmark_freq", "perth.hidden_size", "perth.step"})
        gguf_set_val_u32(gguf.get(), key, src.meta().get_u32(key));
    std::vector<PlannedTensor> planned;
    for (const GgufTensorInfo& t : src.tensors()) {
        const bool last = t.name.rfind("decoder.", 0) == 0 && t.name.find("_layers.6.") != std::string::npos;
        const bool bias = t.name.find(".bias") != std::string::npos;
        const GgufTensorInfo* info = &t;
        planned.push_back({t.name, t.type, t.shape, [info, last, bias](std::vector<uint8_t>& out) {
                               out.assign(info->data, info->data + info->nbytes);
                               if (!last) return;
                               std::vector<float> v(info->nbytes / sizeof(float), 0.0f);
                               if (bias) v[1] = 5.0f;  // [attention, mark]
                               std::memcpy(out.data(), v.data(), info->nbytes);
                           }});
    }
    write_gguf_file(gguf.get(), planned, to, {});
}

class WatermarkCli : public ::testing::Test {
protected:
    void SetUp() override {
        convert_perth_checkpoint(perth_data("perth_tiny.pth.tar"), dir_.file("perth.gguf"));
        write_always_marked(dir_.file("perth.gguf"), dir_.file("always.gguf"));
        audio::write_audio(dir_.file("clean.wav"), load_npy(perth_data("signal_24k.npy")).data, 24000, audio::SampleFormat::Wav32);
    }
    // talkbox with TALKBOX_WATERMARK set to `checkpoint`.
    CommandResult run_with(const std::string& checkpoint, const std::string& args) {
        return run_program("TALKBOX_WATERMARK=" + checkpoint + " " + std::string(TALKBOX_BINARY), args);
    }
    std::vector<float> samples(const std::string& name) { return audio::read_audio_file(dir_.file(name)).samples; }
    TempDir dir_;
};

TEST_F(WatermarkCli, DetectPrintsTheConfidenceAndSaysSoInItsExitStatus) {
    auto r = run_talkbox("watermark detect " + dir_.file("clean.wav") + " --checkpoint " + dir_.file("perth.gguf") + " --json");
    EXPECT_EQ(r.exit_code, 3) << r.err;  // read, not marked
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const nlohmann::json goldens = read_json_file(perth_data("goldens.json"));
    const nlohmann::json& want = goldens["detector"]["signal_24k"];
    EXPECT_EQ(j["readable"], true);
    EXPECT_EQ(j["detected"], false);
    EXPECT_NEAR(j["confidence"].get<double>(), want["confidence"].get<double>(), 1e-6);
    EXPECT_NEAR(j["raw"].get<double>(), want["raw"].get<double>(), 1e-6);

    r = run_with(dir_.file("always.gguf"), "watermark detect " + dir_.file("clean.wav"));  // the checkpoint from the environment
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, dir_.file("clean.wav") + ": watermarked (confidence 1.000)\n");

    audio::write_audio(dir_.file("silence.wav"), std::vector<float>(24000, 0.0f), 24000, audio::SampleFormat::Wav16);
    r = run_with(dir_.file("always.gguf"), "watermark detect " + dir_.file("silence.wav") + " --json");
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["readable"], false) << r.out;
}

TEST_F(WatermarkCli, WithoutTheCheckpointDetectNamesThePullToRun) {
    const auto r = run_with(dir_.file("none.gguf"), "watermark detect " + dir_.file("clean.wav"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no watermark checkpoint at " + dir_.file("none.gguf") + ": fetch it first: `talkbox pull resemble-ai/Perth` (or `talkbox watermark convert perth_net_250000.pth.tar` on a copy; docs/watermark.md)"),
              std::string::npos)
        << r.err;
}

TEST_F(WatermarkCli, ConvertTakesOnlyTheReleasedCheckpointUnlessTold) {
    const std::string tiny = perth_data("perth_tiny.pth.tar"), dest = dir_.file("home/watermark/perth.gguf");
    auto r = run_with(dest, "watermark convert " + tiny);
    EXPECT_EQ(r.exit_code, 1);
    const std::string blob = read_json_file(perth_data("goldens.json"))["checkpoint_git_blob"];
    EXPECT_NE(r.err.find("'" + tiny + "' is not the released Perth checkpoint: its git blob id is " + blob +
                         ", the one at resemble-ai/Perth@f369a01 is 22fbc47e03a4df700425819e9b5a1f81304f3a60"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(dest));
    r = run_with(dest, "watermark convert " + tiny + " --any-checkpoint");  // to $TALKBOX_WATERMARK, its folder made
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, dest + "\n");
    EXPECT_NE(r.err.find("converted the Perth watermark (hidden size 16, step 1234)"), std::string::npos) << r.err;
    EXPECT_EQ(Watermarker(dest).detect(samples("clean.wav"), 24000).raw, Watermarker(dir_.file("perth.gguf")).detect(samples("clean.wav"), 24000).raw);
}

// `pull resemble-ai/Perth` from a mirror (the fake hub serving a file): anything but the pinned
// git blob is refused and nothing is written; a server error is reported with the URL.
TEST_F(WatermarkCli, PullAcceptsOnlyThePinnedBlob) {
    FakeHub hub;
    hub.add_file("mirror/perth", "perth_net_250000.pth.tar", read_text(perth_data("perth_tiny.pth.tar")));
    const std::string url = hub.endpoint() + "/mirror/perth/resolve/main/perth_net_250000.pth.tar";
    const std::string dest = dir_.file("home/watermark/perth.gguf");
    auto r = run_program("TALKBOX_PERTH_URL=" + url + " TALKBOX_WATERMARK=" + dest + " " + std::string(TALKBOX_BINARY),
                         "pull resemble-ai/Perth");
    EXPECT_EQ(r.exit_code, 1);
    const std::string blob = read_json_file(perth_data("goldens.json"))["checkpoint_git_blob"];
    EXPECT_NE(r.err.find(url + " did not send the released Perth checkpoint: its git blob id is " + blob), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is 22fbc47e03a4df700425819e9b5a1f81304f3a60; nothing was written"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dest));
    r = run_program("TALKBOX_PERTH_URL=" + hub.endpoint() + "/mirror/perth/resolve/main/missing.pth.tar TALKBOX_WATERMARK=" + dest + " " +
                        std::string(TALKBOX_BINARY),
                    "pull resemble-ai/Perth");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("cannot download the Perth checkpoint: "), std::string::npos) << r.err;
}

TEST_F(WatermarkCli, EmbedWritesWhatTheLibraryMarks) {
    const auto r = run_talkbox("watermark embed " + dir_.file("clean.wav") + " -o " + dir_.file("marked.wav") +
                               " --format wav32 --checkpoint " + dir_.file("perth.gguf"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Watermarker w(dir_.file("perth.gguf"));
    const std::vector<float> want = w.embed(samples("clean.wav"), 24000);
    const std::vector<float> got = samples("marked.wav");
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(max_abs_diff(got, want), 0.0f);
}

TEST_F(WatermarkCli, ChatterboxSpeechIsMarkedUnlessTurnedOff) {
    const std::string speak = "speak -m " + converted_chatterbox() + " --language en --seed 3 -q -t 'Hello there.' --format wav32 -o ";
    auto r = run_with(dir_.file("perth.gguf"), speak + dir_.file("marked.wav"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    r = run_with(dir_.file("perth.gguf"), speak + dir_.file("clean-speech.wav") + " --no-watermark");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // One sentence, one segment: the marked speech is the clean speech through Watermarker::embed.
    const Watermarker w(dir_.file("perth.gguf"));
    const std::vector<float> clean = samples("clean-speech.wav"), marked = samples("marked.wav");
    const std::vector<float> want = w.embed(clean, 24000);
    ASSERT_EQ(marked.size(), want.size());
    EXPECT_LT(max_abs_diff(marked, want), 1e-6f);
    EXPECT_GT(max_abs_diff(std::vector<float>(clean.begin(), clean.begin() + marked.size()), marked), 1e-5f);
}

// `talkbox vc` marks as ChatterboxVC.generate does, unless --no-watermark.
TEST_F(WatermarkCli, VoiceConversionIsMarkedUnlessTurnedOff) {
    const std::string vc = "vc -m " + converted_chatterbox() + " --source " + qwen_fixture("audio/zh_2s.wav") + " --seed 3 -t 1 --format wav32 -o ";
    auto r = run_with(dir_.file("perth.gguf"), vc + dir_.file("marked.wav"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("50 speech tokens, watermarked"), std::string::npos) << r.err;
    r = run_with(dir_.file("perth.gguf"), vc + dir_.file("clean-vc.wav") + " --no-watermark");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("watermarked"), std::string::npos) << r.err;
    const Watermarker w(dir_.file("perth.gguf"));
    const std::vector<float> clean = samples("clean-vc.wav"), marked = samples("marked.wav");
    const std::vector<float> want = w.embed(clean, 24000);
    ASSERT_EQ(marked.size(), want.size());
    EXPECT_LT(max_abs_diff(marked, want), 1e-6f);
    EXPECT_GT(max_abs_diff(std::vector<float>(clean.begin(), clean.begin() + marked.size()), marked), 1e-5f);
    // Without the checkpoint: unmarked, and said.
    r = run_with(dir_.file("none.gguf"), vc + dir_.file("unmarked.wav"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("talkbox: WARNING: speech is NOT watermarked"), std::string::npos) << r.err;
    EXPECT_EQ(samples("unmarked.wav"), clean);
}

TEST_F(WatermarkCli, AMissingCheckpointIsSaidOnceAndSpeechGoesOnUnmarked) {
    const std::string speak = "speak -m " + converted_chatterbox() + " --language en --seed 3 --segment-chars 0 -t 'Hello there. Fine.' --format wav32 -o ";
    auto r = run_with(dir_.file("none.gguf"), speak + dir_.file("a.wav"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string warning = "talkbox: WARNING: speech is NOT watermarked: there is no watermark checkpoint at " + dir_.file("none.gguf");
    EXPECT_NE(r.err.find(warning), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("WARNING", r.err.find("WARNING") + 1), std::string::npos) << "said more than once:\n" << r.err;
    r = run_with(dir_.file("none.gguf"), speak + dir_.file("b.wav") + " --no-watermark");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("WARNING"), std::string::npos) << r.err;
    EXPECT_EQ(samples("a.wav"), samples("b.wav"));
}

TEST_F(WatermarkCli, QwenSpeechIsMarkedOnlyWhenAsked) {
    const std::string speak = "speak -m " + converted_fixture("tiny-0.6B-CustomVoice") + " --speaker " + "ryan" +
                              " --seed 3 -q -t 'Hello there.' --format wav32 -o ";
    auto r = run_with(dir_.file("perth.gguf"), speak + dir_.file("plain.wav"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_with(dir_.file("perth.gguf"), speak + dir_.file("marked.wav") + " --watermark");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Watermarker w(dir_.file("perth.gguf"));
    const std::vector<float> want = w.embed(samples("plain.wav"), 24000), marked = samples("marked.wav");
    ASSERT_EQ(marked.size(), want.size());
    EXPECT_LT(max_abs_diff(marked, want), 1e-6f);
    r = run_with(dir_.file("perth.gguf"), speak + dir_.file("x.wav") + " --watermark --no-watermark");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("excludes"), std::string::npos) << r.err;
}

TEST(WatermarkHelp, FlagsAreDocumented) {
    EXPECT_NE(run_talkbox("speak --help").out.find("--no-watermark"), std::string::npos);
    EXPECT_NE(run_talkbox("serve --help").out.find("--no-watermark"), std::string::npos);
    EXPECT_NE(run_talkbox("vc --help").out.find("--no-watermark"), std::string::npos);
    const auto r = run_talkbox("watermark detect --help");
    EXPECT_NE(r.out.find("exit status 0: marked, 3: not marked"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace talkbox
