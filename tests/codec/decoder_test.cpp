// Codec decoder parity with the official goldens (fixtures/qwen3tts/goldens/decoder/): every
// intermediate of decode_40, the official chunked decode of 320 frames, exact streaming against
// one pass over 320 frames, a batch item, and bad input.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "audio_compare.h"
#include "talkbox/codes.h"
#include "qwen3tts/codec/decoder.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "qwen3tts/hparams.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"

namespace talkbox::codec {
namespace {

using testing::load_npy;
using testing::max_abs;
using testing::max_abs_diff;

constexpr float kWavTolerance = 1e-4f;
constexpr float kTapTolerance = 1e-5f;  // relative to the tap's max |value|
constexpr double kInt8MinSnrDb = 30.0;  // the int8 decoder against F32 on the tiny fixture (issue 32's bar)

std::string golden(const std::string& rel) { return testing::fixtures_dir() + "/qwen3tts/goldens/decoder/" + rel; }

class DecoderTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        file_ = new GgufFile(testing::converted_fixture("tiny-0.6B-Base"));
        backend_ = new Backend(1);  // one thread: the suite runs beside other tests
        decoder_ = new CodecDecoder(*file_, qwen3tts::Hparams::from_gguf(file_->meta()), *backend_);
    }
    static void TearDownTestSuite() {
        delete decoder_;
        delete backend_;
        delete file_;
    }

    static GgufFile* file_;
    static Backend* backend_;
    static CodecDecoder* decoder_;
};

GgufFile* DecoderTest::file_ = nullptr;
Backend* DecoderTest::backend_ = nullptr;
CodecDecoder* DecoderTest::decoder_ = nullptr;

TEST_F(DecoderTest, EveryTapOfDecode40MatchesTheGolden) {
    const Frames frames = read_codes_json(golden("decode_40/codes.json"));
    ASSERT_EQ(frames.size(), 40u);
    Capture captured;
    const std::vector<float> wav = decoder_->forward(frames, &captured);
    const char* expected[] = {"quantizer", "pre_conv", "pre_transformer_input_proj", "pre_transformer_layer0",
                              "pre_transformer_layer1", "pre_transformer", "upsample0_transconv",
                              "upsample0_convnext", "upsample1_transconv", "upsample1_convnext", "decoder0",
                              "decoder1", "decoder2", "decoder3", "decoder4", "decoder5", "decoder6"};
    ASSERT_EQ(captured.size(), std::size(expected));
    for (size_t i = 0; i < captured.size(); ++i) {
        const CapturedTensor& tap = captured.tensors()[i];
        ASSERT_EQ(tap.name, expected[i]);
        const testing::NpyArray g = load_npy(golden("decode_40/" + tap.name + ".npy"));
        ASSERT_EQ(g.shape, tap.shape) << tap.name;
        const float err = max_abs_diff(tap.data, g.data), scale = max_abs(g.data);
        EXPECT_LE(err, kTapTolerance * scale) << tap.name << ": max |diff| " << err << ", max |golden| " << scale;
        std::printf("[ tap      ] %-28s max|diff| %.3g (%.3g of max|golden| %.3g)\n", tap.name.c_str(), err, err / scale, scale);
    }
    const testing::NpyArray g = load_npy(golden("decode_40/wav.npy"));
    const float err = max_abs_diff(wav, g.data);
    EXPECT_LE(err, kWavTolerance);
    std::printf("[ wav      ] decode_40 forward max|diff| %.3g\n", err);
}

TEST_F(DecoderTest, OfficialDecodeOf40Frames) {
    const std::vector<float> wav = decoder_->decode(read_codes_json(golden("decode_40/codes.json")));
    const float err = max_abs_diff(wav, load_npy(golden("decode_40/wav.npy")).data);
    EXPECT_LE(err, kWavTolerance);
    std::printf("[ wav      ] decode_40 max|diff| %.3g\n", err);
}

TEST_F(DecoderTest, OfficialChunkedDecodeOf320Frames) {
    const Frames frames = read_codes_json(golden("decode_320/codes.json"));
    ASSERT_EQ(frames.size(), 320u);
    const std::vector<float> wav = decoder_->decode(frames);
    ASSERT_EQ(wav.size(), 320u * 1920u);
    const float err = max_abs_diff(wav, load_npy(golden("decode_320/wav.npy")).data);
    EXPECT_LE(err, kWavTolerance);
    std::printf("[ wav      ] decode_320 (chunked) max|diff| %.3g\n", err);
    // The 25-frame context does not reach the receptive field: the chunked path must differ from one pass.
    const float vs_one_pass = max_abs_diff(wav, load_npy(golden("decode_320_unchunked/wav.npy")).data);
    EXPECT_GT(vs_one_pass, 0.1f);
}

TEST_F(DecoderTest, ForwardOver320FramesMatchesTheUnchunkedGolden) {
    const std::vector<float> wav = decoder_->forward(read_codes_json(golden("decode_320/codes.json")));
    const float err = max_abs_diff(wav, load_npy(golden("decode_320_unchunked/wav.npy")).data);
    EXPECT_LE(err, kWavTolerance);
    std::printf("[ wav      ] decode_320_unchunked (one graph) max|diff| %.3g\n", err);
}

class StreamingTest : public DecoderTest, public ::testing::WithParamInterface<size_t> {};

TEST_P(StreamingTest, MatchesOnePassOver320Frames) {
    const size_t chunk = GetParam();
    const Frames frames = read_codes_json(golden("decode_320/codes.json"));
    const std::vector<float> expected = load_npy(golden("decode_320_unchunked/wav.npy")).data;
    StreamingDecoder stream(*decoder_, chunk);
    std::vector<float> wav;
    // Push uneven batches (1, 2, 3, ... frames) so that queueing across pushes is exercised too.
    for (size_t i = 0, n = 1; i < frames.size(); i += n, ++n) {
        const Frames batch(frames.begin() + static_cast<std::ptrdiff_t>(i),
                           frames.begin() + static_cast<std::ptrdiff_t>(std::min(frames.size(), i + n)));
        const std::vector<float> pcm = stream.push(batch);
        ASSERT_EQ(pcm.size(), (stream.frames_decoded() * 1920) - wav.size());
        ASSERT_EQ(stream.frames_received() - stream.frames_decoded(), stream.frames_received() % chunk);
        wav.insert(wav.end(), pcm.begin(), pcm.end());
    }
    const std::vector<float> tail = stream.flush();
    wav.insert(wav.end(), tail.begin(), tail.end());
    ASSERT_EQ(stream.frames_decoded(), frames.size());
    ASSERT_EQ(wav.size(), frames.size() * 1920);
    const float err = max_abs_diff(wav, expected);
    EXPECT_LE(err, kWavTolerance) << "chunk " << chunk;
    std::printf("[ stream   ] chunk %zu vs decode_320_unchunked max|diff| %.3g\n", chunk, err);

    // A reset starts a new stream that reproduces the first frames.
    stream.reset();
    std::vector<float> again = stream.push(Frames(frames.begin(), frames.begin() + 12));
    const std::vector<float> rest = stream.flush();
    again.insert(again.end(), rest.begin(), rest.end());
    ASSERT_EQ(again.size(), 12u * 1920u);
    EXPECT_LE(max_abs_diff(again, std::vector<float>(expected.begin(), expected.begin() + 12 * 1920)), kWavTolerance);
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, StreamingTest, ::testing::Values(1, 2, 5, 12));

TEST_F(DecoderTest, BatchItemDecodesAlone) {
    const Frames frames = read_codes_json(golden("decode_batch/codes_1.json"));
    ASSERT_EQ(frames.size(), 25u);
    const float err = max_abs_diff(decoder_->decode(frames), load_npy(golden("decode_batch/wav_1.npy")).data);
    EXPECT_LE(err, kWavTolerance);
    std::printf("[ wav      ] decode_batch wav_1 max|diff| %.3g\n", err);
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
    try {
        f();
        ADD_FAILURE() << "expected an error mentioning '" << needle << "'";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST_F(DecoderTest, BadCodesAreRejectedWithAPreciseError) {
    Frames frames(3, Frame(16, 5));
    expect_error([&] { decoder_->decode({}); }, "no codec frames");
    frames[1][7] = 2048;
    expect_error([&] { decoder_->decode(frames); }, "codec frame 1: code 2048 of codebook 7 is outside [0, 2047]");
    frames[1][7] = -1;
    expect_error([&] { decoder_->decode(frames); }, "code -1 of codebook 7");
    frames[1][7] = 5;
    frames[2].pop_back();
    expect_error([&] { decoder_->decode(frames); }, "codec frame 2 has 15 codes, expected 16");
    expect_error([&] { decoder_->forward(frames); }, "codec frame 2 has 15 codes");

    // A stream names frames by their position in the stream and queues nothing from a bad push.
    StreamingDecoder stream(*decoder_, 2);
    EXPECT_EQ(stream.push(Frames(3, Frame(16, 1))).size(), 2u * 1920u);
    expect_error([&] { stream.push(frames); }, "codec frame 5 has 15 codes");
    EXPECT_EQ(stream.frames_received(), 3u);
    EXPECT_EQ(stream.flush().size(), 1920u);
    expect_error([&] { StreamingDecoder(*decoder_, 0); }, "frames per chunk");
}

// `frames` decoded in steps of `chunk`, pushed 7 at a time (queueing across pushes).
std::vector<float> stream(CodecDecoder& decoder, const Frames& frames, size_t chunk) {
    StreamingDecoder s(decoder, chunk);
    std::vector<float> wav;
    for (size_t i = 0; i < frames.size(); i += 7) {
        const std::vector<float> pcm = s.push(Frames(frames.begin() + static_cast<std::ptrdiff_t>(i),
                                                     frames.begin() + static_cast<std::ptrdiff_t>(std::min(frames.size(), i + 7))));
        wav.insert(wav.end(), pcm.begin(), pcm.end());
    }
    const std::vector<float> tail = s.flush();
    wav.insert(wav.end(), tail.begin(), tail.end());
    return wav;
}

// The opt-in int8 decoder (decoder.h DecoderPrecision::Int8): near the F32 decoder but not equal
// to it (an int8 path that did not run, or a broken one, fails), and streaming in int8 matches one
// int8 pass over all frames as closely as F32 streaming matches one F32 pass.
class Int8DecoderTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        file_ = new GgufFile(testing::converted_fixture("tiny-0.6B-Base"));
        backend_ = new Backend(1);
        const auto hp = qwen3tts::Hparams::from_gguf(file_->meta());
        f32_ = new CodecDecoder(*file_, hp, *backend_);
        int8_ = new CodecDecoder(*file_, hp, *backend_, DecoderPrecision::Int8);
    }
    static void TearDownTestSuite() {
        delete int8_;
        delete f32_;
        delete backend_;
        delete file_;
    }
    static GgufFile* file_;
    static Backend* backend_;
    static CodecDecoder *f32_, *int8_;
};

GgufFile* Int8DecoderTest::file_ = nullptr;
Backend* Int8DecoderTest::backend_ = nullptr;
CodecDecoder* Int8DecoderTest::f32_ = nullptr;
CodecDecoder* Int8DecoderTest::int8_ = nullptr;

TEST_F(Int8DecoderTest, StaysNearTheF32DecoderWithoutEqualingIt) {
    EXPECT_EQ(int8_->precision(), DecoderPrecision::Int8);
    for (const char* name : {"decode_40", "decode_320"}) {
        const Frames frames = read_codes_json(golden(std::string(name) + "/codes.json"));
        const std::vector<float> f32 = f32_->decode(frames), int8 = int8_->decode(frames);
        const auto d = bench::compare_audio(f32, int8);
        std::printf("[ int8     ] %s against f32: SNR %.1f dB, log-mel L1 %.4f, max |diff| %.3g\n", name, d.snr_db,
                    d.log_mel_l1, d.max_abs);
        EXPECT_GT(d.max_abs, 0.0) << name << ": the int8 decoder gave exactly F32's samples";
        // 31.9 dB measured on decode_320 (issue 32's target: 30); the bound leaves room for the F32
        // layers rounding differently on another CPU (each such difference can move an int8
        // rounding: ~43 dB from one pass, the streaming test below), and it fails a broken int8 path
        // or one whose second weight terms did not run (29.6 dB).
        EXPECT_GE(d.snr_db, kInt8MinSnrDb) << name;
        EXPECT_LE(d.log_mel_l1, 0.1) << name;
    }
}

// The int8 convolutions quantise each input sample on its own, so they give a column the same
// result whatever the step; what differs between steps is only what F32 streaming has too, the
// transformer's products rounding differently with the step length (~1e-5 here), and in int8
// such a difference can move a sample's quantisation by one step. The streamed audio must stay
// much nearer to one int8 pass than int8 is to F32 (on this tiny random model, which amplifies
// every rounding; decoder_bench prints the figure for the full-size model).
TEST_F(Int8DecoderTest, StreamingMatchesOnePassInTheSamePrecision) {
    const Frames frames = read_codes_json(golden("decode_320/codes.json"));
    const std::vector<float> f32_pass = f32_->forward(frames), int8_pass = int8_->forward(frames);
    const double quantisation_snr = bench::compare_audio(f32_pass, int8_pass).snr_db;
    for (const size_t chunk : {1, 5, 12}) {
        const std::vector<float> f32_stream = stream(*f32_, frames, chunk), int8_stream = stream(*int8_, frames, chunk);
        ASSERT_EQ(int8_stream.size(), int8_pass.size());
        const auto d = bench::compare_audio(int8_pass, int8_stream);
        std::printf("[ stream   ] chunk %zu against one pass: f32 max |diff| %.3g; int8 max |diff| %.3g, SNR %.1f dB "
                    "(int8 against f32: %.1f dB)\n",
                    chunk, max_abs_diff(f32_stream, f32_pass), d.max_abs, d.snr_db, quantisation_snr);
        EXPECT_LE(max_abs_diff(f32_stream, f32_pass), kWavTolerance);
        EXPECT_GE(d.snr_db, quantisation_snr + 6.0) << "chunk " << chunk;
    }
}

// In a quantised model the int8 decoder also multiplies the Q8_0 matrices (the transformer's, the
// upsamplers' pointwise MLPs) on the int8 panel kernels, where the F32 decoder keeps ggml's
// product: near the F32 decoder of the same file, and streamed near one pass, as above.
TEST(Int8DecoderOfAQuantisedModel, StaysNearTheF32DecoderAndStreamsNearOnePass) {
    testing::TempDir dir;
    ConvertOptions opt;
    opt.snapshot_dir = testing::qwen_fixture("tiny-0.6B-Base");
    opt.output_path = dir.file("tiny-q8_0.gguf");
    opt.type = WeightType::Q8_0;
    convert_snapshot(opt);
    const GgufFile file(opt.output_path);
    const Backend backend(1);
    const auto hp = qwen3tts::Hparams::from_gguf(file.meta());
    CodecDecoder f32(file, hp, backend), int8(file, hp, backend, DecoderPrecision::Int8);
    const Frames frames = read_codes_json(golden("decode_320/codes.json"));
    const std::vector<float> f32_pass = f32.forward(frames), int8_pass = int8.forward(frames);
    const auto d = bench::compare_audio(f32_pass, int8_pass);
    const auto s = bench::compare_audio(int8_pass, stream(int8, frames, 5));
    std::printf("[ q8_0     ] int8 against f32: SNR %.1f dB, max |diff| %.3g; int8 streamed (5) against one pass: %.1f dB\n",
                d.snr_db, d.max_abs, s.snr_db);
    EXPECT_GT(d.max_abs, 0.0) << "the int8 decoder gave exactly F32's samples";
    EXPECT_GE(d.snr_db, kInt8MinSnrDb);
    EXPECT_GE(s.snr_db, d.snr_db + 6.0);
}

TEST(DecoderPrecision, NamesParseAndOthersAreRefused) {
    EXPECT_EQ(parse_decoder_precision("f32"), DecoderPrecision::F32);
    EXPECT_EQ(parse_decoder_precision("int8"), DecoderPrecision::Int8);
    EXPECT_STREQ(decoder_precision_name(DecoderPrecision::Int8), "int8");
    try {
        parse_decoder_precision("bf16");
        ADD_FAILURE() << "bf16 was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_STREQ(e.what(), "decoder precision 'bf16' is not one of f32, int8");
    }
}

// F16 / Q8_0 conversions round the transformer and ConvNeXt matrices (and, for the products, the
// activations): reported, with a bound that only catches a broken path.
class QuantisedDecoderTest : public ::testing::TestWithParam<WeightType> {};

TEST_P(QuantisedDecoderTest, StaysCloseToTheGoldens) {
    testing::TempDir dir;
    ConvertOptions opt;
    opt.snapshot_dir = testing::qwen_fixture("tiny-0.6B-Base");
    opt.output_path = dir.file("tiny.gguf");
    opt.type = GetParam();
    convert_snapshot(opt);
    const GgufFile file(opt.output_path);
    const Backend backend(1);
    CodecDecoder decoder(file, qwen3tts::Hparams::from_gguf(file.meta()), backend);

    Capture captured;
    const float e40 = max_abs_diff(decoder.forward(read_codes_json(golden("decode_40/codes.json")), &captured),
                                   load_npy(golden("decode_40/wav.npy")).data);
    float worst_tap = 0;
    std::string worst;
    for (const CapturedTensor& tap : captured.tensors()) {
        const testing::NpyArray g = load_npy(golden("decode_40/" + tap.name + ".npy"));
        const float rel = max_abs_diff(tap.data, g.data) / max_abs(g.data);
        if (rel > worst_tap) worst_tap = rel, worst = tap.name;
    }
    const Frames frames = read_codes_json(golden("decode_320/codes.json"));
    const float e320 = max_abs_diff(decoder.decode(frames), load_npy(golden("decode_320/wav.npy")).data);
    StreamingDecoder stream(decoder, 5);
    std::vector<float> wav = stream.push(frames);
    const std::vector<float> tail = stream.flush();
    wav.insert(wav.end(), tail.begin(), tail.end());
    const float es = max_abs_diff(wav, load_npy(golden("decode_320_unchunked/wav.npy")).data);
    std::printf("[ %-8s ] decode_40 %.3g (worst tap %s %.3g of max), decode_320 %.3g, streaming(5) vs unchunked %.3g\n",
                weight_type_name(GetParam()), e40, worst.c_str(), worst_tap, e320, es);
    EXPECT_LT(std::max({e40, e320, es}), GetParam() == WeightType::F16 ? 0.05f : 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantisedDecoderTest, ::testing::Values(WeightType::F16, WeightType::Q8_0),
                         [](const auto& info) { return std::string(weight_type_name(info.param)); });

}  // namespace
}  // namespace talkbox::codec
