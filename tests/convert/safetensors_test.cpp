// The safetensors reader: valid files, and the malformed headers a hostile or truncated file can carry.
#include <gtest/gtest.h>

#include <cstring>

#include "convert/safetensors.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox;
using talkbox::testing::make_safetensors;
using talkbox::testing::make_safetensors_with_header;
using talkbox::testing::RawTensor;

namespace {

std::string parse_error(const std::vector<uint8_t>& bytes) {
    try {
        SafetensorsFile f(bytes.data(), bytes.size(), "test.safetensors");
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Format);
        return e.what();
    }
    return "<no error>";
}

std::vector<uint8_t> f32_bytes(std::initializer_list<float> values) {
    std::vector<uint8_t> out(values.size() * 4);
    std::memcpy(out.data(), values.begin(), out.size());
    return out;
}

}  // namespace

TEST(Safetensors, ReadsTensorsAndConvertsFloatTypes) {
    // 1.5 in F16 = 0x3E00, in BF16 = 0x3FC0.
    const auto bytes = make_safetensors({
        {"a", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
        {"h", "F16", {1}, {0x00, 0x3E}},
        {"b", "BF16", {1}, {0xC0, 0x3F}},
    });
    SafetensorsFile f(bytes.data(), bytes.size(), "mem");
    ASSERT_EQ(f.tensors().size(), 3u);
    ASSERT_NE(f.find("a"), nullptr);
    EXPECT_EQ(f.find("a")->shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(f.metadata().at("format"), "pt");
    float v[4];
    safetensors_to_f32(*f.find("a"), v);
    EXPECT_EQ(v[3], 4.0f);
    safetensors_to_f32(*f.find("h"), v);
    EXPECT_EQ(v[0], 1.5f);
    safetensors_to_f32(*f.find("b"), v);
    EXPECT_EQ(v[0], 1.5f);
    EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(Safetensors, ScalarAndEmptyTensorsAreValid) {
    const auto bytes = make_safetensors({{"s", "F32", {}, f32_bytes({7})}, {"e", "F32", {0, 4}, {}}});
    SafetensorsFile f(bytes.data(), bytes.size(), "mem");
    EXPECT_EQ(f.find("s")->element_count(), 1);
    EXPECT_EQ(f.find("e")->element_count(), 0);
}

TEST(SafetensorsCorrupt, TooShortForAHeader) {
    EXPECT_NE(parse_error({1, 2, 3}).find("too short for a safetensors header"), std::string::npos);
}

TEST(SafetensorsCorrupt, HeaderLengthPastEndOfFile) {
    auto bytes = make_safetensors_with_header("{}", 0);
    bytes[0] = 200;  // claims a 200-byte header in a 10-byte file
    EXPECT_NE(parse_error(bytes).find("header length 200 runs past the end of the file"), std::string::npos);
}

TEST(SafetensorsCorrupt, AbsurdHeaderLength) {
    auto bytes = make_safetensors_with_header("{}", 0);
    bytes[7] = 0x7f;
    EXPECT_NE(parse_error(bytes).find("exceeds 100 MB"), std::string::npos);
}

TEST(SafetensorsCorrupt, MalformedJsonHeaderNamesTheByte) {
    const auto err = parse_error(make_safetensors_with_header("{\"a\": {\"dtype\": ", 0));
    EXPECT_NE(err.find("': header: malformed JSON at byte 17"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, HeaderIsNotAnObject) {
    EXPECT_NE(parse_error(make_safetensors_with_header("[1, 2]", 0)).find("header is not a JSON object"), std::string::npos);
}

TEST(SafetensorsCorrupt, OffsetsPastTheEndOfTheData) {
    const auto err = parse_error(
        make_safetensors_with_header(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8));
    EXPECT_NE(err.find("tensor 'w': data_offsets end 16 lies past the end of the data (8 bytes)"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, ShapeDisagreesWithByteCount) {
    const auto err = parse_error(
        make_safetensors_with_header(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", 16));
    EXPECT_NE(err.find("tensor 'w': shape [3] of F32 needs 12 bytes but data_offsets span 16"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, UnknownDtype) {
    const auto err = parse_error(
        make_safetensors_with_header(R"({"w": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}})", 4));
    EXPECT_NE(err.find("tensor 'w': unknown dtype 'F99'"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, NegativeDimension) {
    const auto err = parse_error(
        make_safetensors_with_header(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4));
    EXPECT_NE(err.find("non-integer or negative"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, ReversedOffsets) {
    const auto err = parse_error(
        make_safetensors_with_header(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8));
    EXPECT_NE(err.find("are reversed"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, OverlappingTensors) {
    const auto err = parse_error(make_safetensors_with_header(
        R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
        12));
    EXPECT_NE(err.find("tensors 'a' and 'b' overlap"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, ShapeProductOverflows) {
    const auto err = parse_error(make_safetensors_with_header(
        R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4));
    EXPECT_NE(err.find("overflows"), std::string::npos) << err;
}

TEST(SafetensorsCorrupt, MissingFields) {
    EXPECT_NE(parse_error(make_safetensors_with_header(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4))
                  .find("missing or non-string 'dtype'"),
              std::string::npos);
    EXPECT_NE(parse_error(make_safetensors_with_header(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4))
                  .find("missing or non-array 'shape'"),
              std::string::npos);
    EXPECT_NE(parse_error(make_safetensors_with_header(R"({"w": {"dtype": "F32", "shape": [1]}})", 4))
                  .find("'data_offsets' must be [begin, end]"),
              std::string::npos);
}

TEST(Safetensors, NonFloatDtypeCannotBeConverted) {
    const auto bytes = make_safetensors({{"i", "I64", {1}, std::vector<uint8_t>(8, 0)}});
    SafetensorsFile f(bytes.data(), bytes.size(), "mem");
    float out;
    try {
        safetensors_to_f32(*f.find("i"), &out);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
        EXPECT_NE(std::string(e.what()).find("tensor 'i' has dtype I64; only F32, F16 and BF16"), std::string::npos);
    }
}
