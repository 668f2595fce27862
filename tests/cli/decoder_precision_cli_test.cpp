// --decoder-precision: every command that decodes speech takes it; a precision that does not exist
// is refused with the choices; `decode --decoder-precision int8` gives the same samples bit for bit
// on every int8 kernel set this CPU runs (TALKBOX_KERNELS), not F32's samples but close to them, and
// is refused where no int8 kernels run (TALKBOX_KERNELS=ggml) and for Chatterbox.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "audio_compare.h"
#include "core/packed_kernels.h"
#include "core/packed_matmul.h"
#include "support/test_support.h"

using namespace talkbox::testing;

namespace {

std::vector<float> read_raw32(const std::string& path) {
    const std::string bytes = read_text(path);
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
}

class DecoderPrecisionCli : public ::testing::Test {
protected:
    TempDir tmp_;
    std::string model_ = converted_fixture("tiny-0.6B-Base");
    std::string codes_ = fixtures_dir() + "/qwen3tts/goldens/decoder/decode_40/codes.json";

    CommandResult decode(const std::string& env, const std::string& precision, const std::string& out) const {
        return run_program(env + TALKBOX_BINARY, "decode -m " + model_ + " " + codes_ + " -t 1 -q --format raw32 -o " +
                                                     tmp_.file(out) + " --decoder-precision " + precision);
    }
};

TEST_F(DecoderPrecisionCli, EveryDecodingCommandTakesIt) {
    for (const char* cmd : {"speak", "serve", "bench", "decode"}) {
        const auto r = run_talkbox(std::string(cmd) + " --help");
        EXPECT_NE(r.out.find("--decoder-precision"), std::string::npos) << cmd;
    }
}

TEST_F(DecoderPrecisionCli, AnUnknownPrecisionIsRefusedWithTheChoices) {
    const auto r = decode("", "bf16", "bad.raw");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--decoder-precision: bf16 not in {f32,int8}"), std::string::npos) << r.err;
}

TEST_F(DecoderPrecisionCli, Int8IsTheSameOnEveryKernelSetAndCloseToF32) {
    const auto f32 = decode("", "f32", "f32.raw");
    ASSERT_EQ(f32.exit_code, 0) << f32.err;
    const std::vector<float> reference = read_raw32(tmp_.file("f32.raw"));
    std::vector<float> first;
    for (const auto* set : talkbox::packed::runnable_kernel_sets()) {
        const std::string name = set->name;
        const auto r = decode("TALKBOX_KERNELS=" + name + " ", "int8", name + ".raw");
        ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
        const std::vector<float> int8 = read_raw32(tmp_.file(name + ".raw"));
        ASSERT_EQ(int8.size(), reference.size()) << name;
        if (first.empty()) {
            first = int8;
            const auto d = talkbox::bench::compare_audio(reference, int8);
            std::printf("[ int8     ] decode_40 against f32: SNR %.1f dB, log-mel L1 %.4f, max |diff| %.3g\n", d.snr_db,
                        d.log_mel_l1, d.max_abs);
            EXPECT_GT(d.max_abs, 0.0) << "int8 decoded exactly F32's samples: the int8 path did not run";
            EXPECT_GE(d.snr_db, 30.0);  // 31.9 measured; codec_test's Int8DecoderTest says why the margin
        } else {
            EXPECT_EQ(int8, first) << name << " differs from " << talkbox::packed::runnable_kernel_sets().front()->name;
        }
    }
    ASSERT_FALSE(first.empty()) << "this CPU runs no int8 kernel set";
}

TEST_F(DecoderPrecisionCli, Int8IsRefusedWithoutInt8KernelsAndForChatterbox) {
    const auto ggml = decode("TALKBOX_KERNELS=ggml ", "int8", "ggml.raw");
    EXPECT_EQ(ggml.exit_code, 1);
    EXPECT_NE(ggml.err.find("the int8 speech decoder needs the CPU backend on a CPU with AVX2"), std::string::npos) << ggml.err;
    const auto chatterbox = run_talkbox("bench -m " + converted_chatterbox("multilingual") +
                                        " -t 1 --frames 2 --repeat 1 --decoder-precision int8");
    EXPECT_EQ(chatterbox.exit_code, 1);
    EXPECT_NE(chatterbox.err.find("decoder precision 'int8': Chatterbox models decode in f32 only"), std::string::npos)
        << chatterbox.err;
}

}  // namespace
